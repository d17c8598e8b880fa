/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * In-process micro-run at the per-instance scale of Intel's vBNG white paper: 4096 subscribers,
 * one flow each (uplink: to 4096 scattered internet destinations, as the
 * bench's), a 150-rule uplink ACL that no packet matches, 128-byte
 * QinQ uplink frames and 496-byte downlink frames (504 B on the access
 * wire).  Bursts of 32 go through the real stages with the engine's stage
 * accounting; the per-stage cycles per packet (minimum over trials) are
 * printed, never asserted (two shared cores: timings are noise-prone).  What is checked: every
 * packet comes out, on the right port.
 */
#include "test_bng.h"

#include <rte_cycles.h>

#define N_SUBS 4096
#define BURST 32
#define ROUNDS 100         /* bursts per trial */
#define TRIALS 60          /* the minimum over trials is reported: on a shared
			    * machine preemption only ever adds cycles */

static struct tb *
bed(const char *extra)
{
	char *text = malloc(64 * 1024);
	struct ep_err err;
	size_t o = 0;
	struct tb *t;

	o += (size_t)sprintf(text + o, "max_subscribers = %d\nhqos_qsize = 64\n"
			     "hqos_port_rate = 100G\nsubport = 0 rate=100G pipes=%d\n"
			     "pipe = std rate=100M\n"
			     "policer = std cir=100M cbs=256K pir=200M pbs=512K\n%s", N_SUBS, N_SUBS,
			     extra);
	/* 150 deny rules, none matching the traffic (UDP 198.19.x -> 198.51.x,
	 * ports 30000+ -> 20000+): every packet walks the whole set. */
	for (int i = 0; i < 50; i++)
		o += (size_t)sprintf(text + o, "acl = deny proto tcp dport %d\n", 1 + i * 3);
	for (int i = 0; i < 50; i++)
		o += (size_t)sprintf(text + o, "acl = deny proto udp sport %d-%d\n", 100 + i * 7,
				     102 + i * 7);
	for (int i = 0; i < 50; i++)
		o += (size_t)sprintf(text + o, "acl = deny dst 10.%d.0.0/16\n", i);
	t = tb_try(text, &err);
	if (t == NULL)
		printf("    test bed: %s\n", err.msg);
	free(text);
	return t;
}

/* 4096 QinQ lines; with @p pppoe, a PPPoE session on each (session id
 * i + 1, client MAC 02:10:00:00:hi:lo), as the bench's PPPoE case. */
static void
add_subs(struct tb *t, bool pppoe)
{
	struct bng_sub_req *r = calloc(N_SUBS, sizeof(*r));
	struct ep_err err;
	char line[256];

	for (int i = 0; i < N_SUBS; i++) {
		char sess[24] = "";

		if (pppoe)
			snprintf(sess, sizeof(sess), " pppoe=%d", i + 1);
		snprintf(line, sizeof(line), "id=%d qinq=%d.%d%s ipv4=198.19.%d.%d "
			 "ipv6=2001:db8:%x::/56 mac=02:10:00:00:%02x:%02x policer=std pipe=std",
			 i + 1, 100 + i / 1024, 1 + i % 1024, sess, 1 + i / 256, i % 256,
			 0x1000 + i, i >> 8, i & 0xff);
		bng_sub_req_parse(&r[i], line, &err);
	}
	EP_CHECK_EQ(bng_sub_add(t->b, r, N_SUBS, NULL, &err), 0);
	free(r);
}

struct best { double stage[EP_MAX_STAGES]; double service; };

static void
reset(struct ep_worker *w)
{
	for (int i = 0; i < w->n_stages; i++)
		memset(&w->stages[i].stats, 0, sizeof(w->stages[i].stats));
}

static void
best_init(struct best *b)
{
	for (int i = 0; i < EP_MAX_STAGES; i++)
		b->stage[i] = 1e18;
	b->service = 1e18;
}

/* Fold one trial's stage accounting into the per-stage minimum, reset it. */
static void
trial_end(struct best *b, struct ep_worker *w, uint64_t service_cycles, uint64_t pkts)
{
	for (int i = 0; i < w->n_stages; i++) {
		const struct ep_stage_stats *s = &w->stages[i].stats;

		if (s->pkts_in != 0)
			b->stage[i] = RTE_MIN(b->stage[i], (double)s->cycles / (double)s->pkts_in);
		memset(&w->stages[i].stats, 0, sizeof(w->stages[i].stats));
	}
	if (pkts != 0)
		b->service = RTE_MIN(b->service, (double)service_cycles / (double)pkts);
}

static void
report(const char *what, struct ep_worker *w, const struct best *b, bool service)
{
	double total = 0;

	printf("    %s, cycles/packet by stage (min of %d trials):", what, TRIALS);
	for (int i = 0; i < w->n_stages; i++) {
		printf(" %s %.1f", w->stages[i].name, b->stage[i]);
		total += b->stage[i];
	}
	if (service) {
		printf(" dequeue %.1f", b->service);
		total += b->service;
	}
	printf(" = %.1f (%.2f Mpps/core at %.1f GHz, rx/tx not included)\n", total,
	       (double)rte_get_tsc_hz() / total / 1e6, (double)rte_get_tsc_hz() / 1e9);
}

/*
 * The uplink at the white paper's scale with @p extra config lines (NULL: the bed
 * as it is), IPoE or (@p pppoe) PPPoE sessions on the QinQ lines; fills
 * @p best.  Returns the worker's test bed, to be freed by the caller after
 * reporting, or NULL when the config was refused.
 */
static struct tb *
run_uplink(const char *extra, bool pppoe, struct best *best)
{
	struct tb *t = bed(extra ? extra : "");
	uint8_t (*f)[128];
	uint64_t sent = 0;

	if (t == NULL)
		return NULL;
	f = malloc(N_SUBS * 128);
	add_subs(t, pppoe);
	for (int i = 0; i < N_SUBS; i++) {
		char sip[32], dip[32];
		const uint8_t mac[6] = { 0x02, 0x10, 0, 0, (uint8_t)(i >> 8), (uint8_t)i };
		struct tb_pkt p = { .src = mac, .n_vlans = 2, .vid = { 100 + i / 1024, 1 + i % 1024 },
				    .pppoe = pppoe, .session = (uint16_t)(i + 1), .ip = 4,
				    .sip = sip, .dip = dip, .sport = 30000 + i, .dport = 20000 + i,
				    .payload = 128 - 14 - 8 - 28 - (pppoe ? 8 : 0) };
		uint32_t h = (uint32_t)i * 2654435761u;

		snprintf(sip, sizeof(sip), "198.19.%d.%d", 1 + i / 256, i % 256);
		/* One internet destination per flow, scattered as the bench's
		 * are (4096 /24s: the route's tbl24 lines miss as they do there);
		 * first octet 11-110: no martian, no ACL rule matches. */
		snprintf(dip, sizeof(dip), "%u.%u.%u.%u", 11 + (h >> 24) % 100, (h >> 16) & 0xff,
			 (h >> 8) & 0xff, 1 + h % 254);
		EP_CHECK_EQ(tb_frame(f[i], &p), 128);
	}
	best_init(best);
	for (int r = 0; r < ROUNDS * (TRIALS + 1); r++) {
		struct rte_mbuf *m[BURST];
		struct ep_txbuf *tx = &t->up->txbuf[TB_CORE];

		if (r % ROUNDS == 0) {
			/* The first trial only warms the caches. */
			if (r > ROUNDS)
				trial_end(best, t->up, 0, 0);
			else
				reset(t->up);
		}
		for (int i = 0; i < BURST; i++)
			m[i] = ep_test_mbuf(f[(r * BURST + i) % N_SUBS], 128);
		/* As received on the access port: in_port as the worker loop
		 * has it (bng-uplink's parse writes it). */
		ep_worker_run_rx_burst(t->up, TB_ACCESS, m, BURST);
		sent += tx->n;
		rte_pktmbuf_free_bulk(tx->pkts, tx->n);
		tx->n = 0;
		t->up->tx_pending = 0;
	}
	trial_end(best, t->up, 0, 0);
	EP_CHECK_EQ(sent, (uint64_t)ROUNDS * (TRIALS + 1) * BURST);
	free(f);
	return t;
}

EP_TEST(cycles_uplink_4k_subscribers_128B_qinq_150_acl_rules)
{
	struct best best;
	struct tb *t = run_uplink(NULL, false, &best);

	EP_CHECK(t != NULL);
	if (t == NULL)
		return;
	report("uplink", t->up, &best, false);
	tb_free(t);
}

/* The same with a PPPoE session on each line (the bench's pppoe-128). */
EP_TEST(cycles_uplink_4k_subscribers_128B_qinq_pppoe_150_acl_rules)
{
	struct best best;
	struct tb *t = run_uplink(NULL, true, &best);

	EP_CHECK(t != NULL);
	if (t == NULL)
		return;
	report("uplink pppoe", t->up, &best, false);
	tb_free(t);
}

/* The same run under each rte_acl classify method the machine allows
 * (`acl_classify`): every packet still passes the 150 rules (checked in
 * run_uplink), and the acl stage's cost is printed per method. */
EP_TEST(cycles_uplink_acl_stage_by_classify_method)
{
	static const char *const names[] = { "avx512x16", "avx2", "sse", "scalar" };

	for (size_t i = 0; i < RTE_DIM(names); i++) {
		char line[64];
		struct best best;
		struct tb *t;

		snprintf(line, sizeof(line), "acl_classify = %s\n", names[i]);
		t = run_uplink(line, false, &best);
		if (t == NULL) {
			printf("    acl_classify = %s: not usable here\n", names[i]);
			continue;
		}
		for (int s = 0; s < t->up->n_stages; s++)
			if (strcmp(t->up->stages[s].name, "acl") == 0)
				printf("    acl_classify = %-9s acl stage %.1f cycles/packet (min of %d "
				       "trials)\n", names[i], best.stage[s], TRIALS);
		tb_free(t);
	}
}

EP_TEST(cycles_downlink_4k_subscribers_504B_hqos)
{
	struct tb *t = bed("");
	struct bng_down *d;

	EP_CHECK(t != NULL);
	if (t == NULL)
		return;
	uint8_t (*f)[496] = malloc(N_SUBS * 496);
	uint64_t out = 0, deq = 0, tdeq = 0, tsvc = 0;
	struct best best;

	add_subs(t, false);
	d = t->down->pipeline_ctx;
	for (int i = 0; i < N_SUBS; i++) {
		char dip[32];
		struct tb_pkt p = { .dst = tb_core_mac, .src = tb_core_nh_mac, .ip = 4,
				    .sip = "198.51.100.1", .dip = dip, .sport = 20000 + i,
				    .dport = 30000 + i, .dscp = (uint8_t)((i % 4) * 8),
				    .payload = 496 - 14 - 28 };

		snprintf(dip, sizeof(dip), "198.19.%d.%d", 1 + i / 256, i % 256);
		EP_CHECK_EQ(tb_frame(f[i], &p), 496);
	}
	best_init(&best);
	for (int r = 0; r < ROUNDS * (TRIALS + 1); r++) {
		struct rte_mbuf *m[BURST];
		uint64_t t0;
		uint16_t k;

		if (r % ROUNDS == 0) {
			if (r > ROUNDS)
				trial_end(&best, t->down, tsvc, tdeq);
			else
				reset(t->down);
			tsvc = tdeq = 0;
		}
		for (int i = 0; i < BURST; i++) {
			m[i] = ep_test_mbuf(f[(r * BURST + i) % N_SUBS], 496);
			ep_meta(m[i])->in_port = TB_CORE;
		}
		ep_worker_run_burst(t->down, m, BURST);
		t0 = rte_rdtsc();
		k = (uint16_t)ep_sched_dequeue(d->hqos, m, BURST, t0);
		tsvc += rte_rdtsc() - t0;
		deq += k;
		tdeq += k;
		for (uint16_t i = 0; i < k; i++)
			out += rte_pktmbuf_pkt_len(m[i]) == 504;
		rte_pktmbuf_free_bulk(m, k);
	}
	trial_end(&best, t->down, tsvc, tdeq);
	report("downlink", t->down, &best, true);
	EP_CHECK_EQ(out, deq);
	EP_CHECK(deq > (uint64_t)ROUNDS * (TRIALS + 1) * BURST * 9 / 10);
	EP_CHECK_EQ(tb_drops(t->down, EP_DROP_BNG_HQOS_QUEUE_FULL), 0);
	free(f);
	tb_free(t);
}
