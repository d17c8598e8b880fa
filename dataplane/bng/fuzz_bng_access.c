/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the vBNG access-encapsulation parser (bng_access.h) and the
 * access key derived from what it accepts.
 *
 * The frame is copied into a malloc()ed buffer of exactly its length, so a
 * read one byte past the frame lands in ASAN's redzone.  Each input is
 * parsed twice: whole, and as a multi-segment frame whose first segment
 * ends half way (every header must then lie in that first part).  Checks:
 * an accepted frame's L3 offset and length stay inside the frame, and the
 * PPPoE session of an accepted PPPoE frame is never a reserved one.  Where
 * the CPU has AVX-512, the eight-frame paths of the uplink's parse
 * (ep_parse_qinq_x8_check, bng_qinq_pppoe_x8_check) run on the frame in an
 * mbuf, as a lane of its own: a lane they pass must be one the scalar fast
 * path takes, with the same ep_meta, and the other way round; a QinQ IPoE
 * lane they pass finds its VLAN pair's entry in a QinQ map by the vector
 * lookup (bng_qinq_x8_blocks, bng_qinq_x8_entries), and nothing once the
 * entry or the block is gone.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "bng_access.h"

static struct rte_mempool *pool;
static bool x8;         /* ep_parse_x8_usable, asked once: CPUID is a VM exit */
static bool x8_lines;   /* the loads' form, flipped every input: both are fuzzed */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* --no-huge excludes --in-memory in DPDK 22.11: --no-shconf. */
	char *eal[] = { "fuzz_bng_access", "--no-huge", "-m", "64", "--no-shconf", "--no-pci",
			"--no-telemetry", "-l", "0", "--log-level", "*:error", NULL };

	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		abort();
	pool = rte_pktmbuf_pool_create("fuzz_bng", 64, 0, EP_META_SIZE, 10240, 0);
	if (pool == NULL)
		abort();
#ifdef EP_PARSE_X8
	x8 = ep_parse_x8_usable();
#endif
	return 0;
}

static void
one(const uint8_t *frame, uint32_t seg_len, uint32_t frame_len)
{
	struct ep_meta m;
	struct bng_key k;
	int rc;

	memset(&m, 0xa5, sizeof(m));
	rc = bng_parse_access(frame, seg_len, frame_len, &m);
	if (rc != 0)
		return;
	if ((uint32_t)m.l3_off + m.l3_len > frame_len || m.l3_off >= seg_len)
		abort();
	if (m.l3_type != EP_L3_IPV4 && m.l3_type != EP_L3_IPV6)
		abort();
	bng_key_of(frame, &m, &k);
	if (k.pppoe && (k.session == 0 || k.session == 0xffff))
		abort();
}

#ifdef EP_PARSE_X8
/* A QinQ map (struct bng_qinq) with the block of one outer VID. */
static struct bng_qinq qinq;
static uint64_t qinq_blk[BNG_VID_N];

/* The QinQ map's lookup of a lane the x8 IPoE check passed (ep_meta bytes
 * 8..15 @p hi; the scalar parse's ep_meta @p want), against the pair in
 * @p want: its outer VID's block holding an entry at its inner VID and
 * not at the others, then holding none, then no block. */
static EP_X8_TARGET void
x8_qinq_map(__m512i hi, const struct ep_meta *want)
{
	const uint16_t o = want->vlan_tci[0] & 0x0fff, i = want->vlan_tci[1] & 0x0fff;
	const uint64_t data = 0x5a00000000ull | (uint64_t)o << 12 | i | 1u << 24;
	__m512i v;

	qinq.blk[o] = qinq_blk;
	qinq_blk[i] = data;
	if (bng_qinq_x8_entries(1, hi, bng_qinq_x8_blocks(&qinq, 1, hi), &v) != 1 ||
	    (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(v)) != data)
		abort();
	qinq_blk[i] = 0;
	if (bng_qinq_x8_entries(1, hi, bng_qinq_x8_blocks(&qinq, 1, hi), &v) != 0)
		abort();
	qinq.blk[o] = NULL;
	if (bng_qinq_x8_entries(1, hi, bng_qinq_x8_blocks(&qinq, 1, hi), &v) != 0)
		abort();
}

/* The x8 lane of @p m (PPPoE or IPoE per @p pppoe) against the scalar
 * fast path on the same bytes. */
static EP_X8_TARGET void
x8_lane(struct rte_mbuf *m, bool pppoe)
{
	struct ep_parse_x8_in in;
	struct ep_parse_qinq_x8 x;
	struct ep_meta want;
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t min = pppoe ? BNG_PPPOE_X8_MIN : EP_PARSE_QINQ_X8_MIN;
	uint64_t mac = 0;
	int rc;

	if (!pppoe)
		x8_lines = !x8_lines;   /* per input: its IPoE and PPPoE lanes alike */
	memset(ep_meta(m), 0xa5, sizeof(want));
	memset(&want, 0xa5, sizeof(want));
	/* The receiving port's MAC is the frame's own destination, so every
	 * input is compared (with 0, only the rare multicast inputs were). */
	if (m->data_len >= RTE_ETHER_ADDR_LEN)
		memcpy(&mac, p, RTE_ETHER_ADDR_LEN);
	if (pppoe) {
		bng_qinq_pppoe_x8_load(&m, 1, &in, x8_lines);
		bng_qinq_pppoe_x8_check(&in, mac, 0, &x);
		rc = bng_parse_qinq_pppoe_ipv4_plain(p, m->data_len, m->pkt_len, &want);
	} else {
		ep_parse_qinq_x8_load(&m, 1, &in, x8_lines);
		ep_parse_qinq_x8_check(&in, mac, 0, &x);
		rc = ep_parse_qinq_ipv4_plain(p, m->data_len, m->pkt_len, &want);
		want.user = 0;
	}
	ep_parse_qinq_x8_store(&x, in.mb, x.ok, pppoe ? BNG_USER_PPPOE : 0);
	if (!pppoe && (x.ok & 1))
		x8_qinq_map(x.hi, &want);
	want.in_port = 0;
	/* Only a frame shorter than a MAC address can be "not for us" here;
	 * the scalar side is not asked then. */
	if (x.not_for_us)
		return;
	if (rc != 0 || m->data_len < min)
		memset(&want, 0xa5, sizeof(want));
	if ((x.ok & 1) != (rc == 0 && m->data_len >= min && m->pkt_len >= min))
		abort();
	if (memcmp(ep_meta(m), &want, sizeof(want)) != 0)
		abort();
}
#endif

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *frame;

	if (size > 9000)
		return 0;
	frame = malloc(size ? size : 1);
	memcpy(frame, data, size);
	one(frame, (uint32_t)size, (uint32_t)size);
	one(frame, (uint32_t)size / 2, (uint32_t)size);
	free(frame);
#ifdef EP_PARSE_X8
	if (x8 && size <= 2048) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

		if (m == NULL)
			abort();
		memcpy(rte_pktmbuf_append(m, (uint16_t)size), data, size);
		x8_lane(m, false);
		x8_lane(m, true);
		rte_pktmbuf_free(m);
	}
#endif
	return 0;
}
