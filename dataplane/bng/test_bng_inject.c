/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The inject stage: a frame from the control port leaves the access port
 * byte for byte; a runt or an oversized frame is dropped by its reason;
 * a worker that would take frames from another port is refused.
 */
#include "test_bng.h"

#include <string.h>

#include <rte_malloc.h>

#include "bng/bng_inject.h"

static struct ep_worker *
inject_worker(struct tb *t, struct ep_err *err)
{
	struct ep_worker *w = rte_zmalloc("tb_worker", sizeof(*w), RTE_CACHE_LINE_SIZE);

	snprintf(w->name, sizeof(w->name), "inject");
	w->id = 2;
	w->engine = &t->e;
	w->burst = 32;
	w->n_rx = 1;
	w->rx[0].port = TB_CORE;         /* the control port of these tests */
	if (bng_inject_build(t->b, w, err) < 0) {
		rte_free(w);
		return NULL;
	}
	return w;
}

static void
inject_free(struct ep_worker *w)
{
	rte_free(w->pipeline_ctx);
	rte_free(w);
}

EP_TEST(inject_frame_leaves_the_access_port_unchanged)
{
	struct tb *t = tb_new("control_port = core\n");
	struct ep_err err;
	struct ep_worker *w = inject_worker(t, &err);
	/* A PADO-like frame the control plane built, tags included. */
	struct tb_pkt p = { .dst = tb_sub_mac, .src = tb_access_mac, .n_vlans = 2, .vid = { 100, 200 },
			    .ether_type = 0x8863, .payload = 40 };
	uint8_t f[512], out[2048];
	uint16_t len = tb_frame(f, &p), olen = 0;

	EP_CHECK(w != NULL);
	EP_CHECK_EQ(tb_run(t, w, f, len, out, &olen), EP_NEXT_TX(TB_ACCESS));
	EP_CHECK_EQ(olen, len);
	EP_CHECK_MEM(out, f, len);
	inject_free(w);
	tb_free(t);
}

EP_TEST(inject_qinq_frame_leaves_with_an_802_1ad_outer_tag)
{
	struct tb *t = tb_new("control_port = core\n");
	struct ep_err err;
	struct ep_worker *w = inject_worker(t, &err);
	struct tb_pkt p = { .dst = tb_sub_mac, .src = tb_access_mac, .n_vlans = 2, .vid = { 100, 200 },
			    .ether_type = 0x8863, .payload = 40 };
	uint8_t f[512], out[2048];
	uint16_t len = tb_frame(f, &p), olen = 0;

	/* As net_af_packet hands it in: the outer TPID 0x8100. */
	f[12] = 0x81;
	f[13] = 0x00;
	EP_CHECK_EQ(tb_run(t, w, f, len, out, &olen), EP_NEXT_TX(TB_ACCESS));
	EP_CHECK_EQ(out[12], 0x88);
	EP_CHECK_EQ(out[13], 0xa8);
	EP_CHECK_EQ(out[16], 0x81);
	EP_CHECK_MEM(out + 14, f + 14, len - 14);
	inject_free(w);
	tb_free(t);
}

EP_TEST(inject_runt_and_oversized_frames_dropped_by_reason)
{
	struct tb *t = tb_new("control_port = core\n");
	struct ep_err err;
	struct ep_worker *w = inject_worker(t, &err);
	static uint8_t big[1600];

	EP_CHECK(w != NULL);
	EP_CHECK_EQ(tb_run(t, w, big, 13, NULL, NULL), EP_NEXT_DROP(EP_DROP_L2_TRUNCATED));
	EP_CHECK_EQ(tb_run(t, w, big, sizeof(big), NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_INJECT_OVERSIZE));
	/* The largest accepted: 1500 bytes under two tags. */
	EP_CHECK_EQ(tb_run(t, w, big, 1522, NULL, NULL), EP_NEXT_TX(TB_ACCESS));
	inject_free(w);
	tb_free(t);
}

EP_TEST(inject_needs_a_control_port_and_only_polls_it)
{
	struct tb *t = tb_new("");
	struct ep_err err;

	EP_CHECK(inject_worker(t, &err) == NULL);
	EP_CHECK(strstr(err.msg, "control_port") != NULL);
	tb_free(t);
	t = tb_new("control_port = access\n");
	EP_CHECK(inject_worker(t, &err) == NULL);
	EP_CHECK(strstr(err.msg, "control port only") != NULL);
	tb_free(t);
}
