/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cmts-ds stages from lookup to crypto (the schedulers are in
 * cmts_sched.c, DEPI in cmts_depi.c), and the downstream worker.
 *
 *   lookup    Ethernet, VLANs, IPv4 (lengths, not the checksum: ds_parse
 *             says why), IPv6 with extension headers (the proto helpers'
 *             walk), then the SG's address table (struct cmts_addr_tab:
 *             open addressing, one line per IPv4 lookup; the rte_hash of
 *             16-byte keys, IPv4-mapped, when it is missing); the CM record and the
 *             worker's state of it are prefetched for the stages after
 *   submgmt   the CPE entry of the destination: its MAC, when the operator
 *             gave one, must be the frame's destination; the source must
 *             not be one of the CM's own addresses (a reflection or a
 *             spoofed packet: it cannot come from the CM through the network)
 *   filter    the shared ACL module (dataplane/acl): the filter instance
 *             with the CM's two filter groups as two lanes (deny wins; no
 *             match: the SG's default action); then the CM's classifiers
 *             on the same keys (IPv4: the record's compiled table, IPv6:
 *             the classifier instance with the CM id), whose match is
 *             kept in ep_meta.nexthop for the classify stage
 *   classify  classifier match -> SF (SF 0 when none matched or the SF is
 *             gone), per-CM matched/unmatched counters
 *   framing   the CM's header template (cmts_cm.c), LEN, the SF's traffic
 *             priority and the bonded flow's packet sequence number; the
 *             HCS is the template's HCS updated byte by byte (ep_docsis.h);
 *             4 bytes appended for the CRC the crypto stage writes
 *   crypto    one rte_security DOCSIS operation per frame: CRC-32 over the
 *             Ethernet frame, then AES-128 from byte 12 (after the MACs)
 *             through the CRC; the burst is enqueued whole and the stage
 *             continues with the frames that completed, which may be
 *             earlier bursts' (cmts_crypto.c)
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <rte_cpuflags.h>
#include <rte_cryptodev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_security.h>
#include <rte_vect.h>

#include "ep_docsis.h"
#include "ep_parse.h"
#include "ep_rcu.h"
#include "ep_rx.h"
#include "cmts.h"
#include "cmts_worker.h"

#define PREFETCH_AHEAD 8
/*
 * The bytes of a frame the lookup and the filter's key read: Ethernet, one
 * VLAN tag, IPv4 without options, the L4 ports.  A port's frames start
 * half-way into a line (EP_META_SIZE: room for the DOCSIS header in the
 * same line), so these 42 bytes span two lines and the IPv4 destination
 * (bytes 30-33) straddles them: both are prefetched 8 frames ahead.
 */
#define DS_HEAD_END (RTE_ETHER_HDR_LEN + 4 + 20 + 4)
#define CMTS_IV_OFF (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))
/* Headroom the framing stage leaves for DEPI: Ethernet, IPv4, L2TPv3
 * session and sub-layer, the largest PSP segment table. */
#define DEPI_HEADROOM (14 + 20 + 8 + 2 * CMTS_PSP_MAX_SEGS)

static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* ---- lookup ---- */

/*
 * What the downstream needs of a frame: Ethernet and VLANs (ep_parse_l2),
 * the IPv4 or IPv6 header's lengths, the L4 offset and whether its ports
 * are there.  Not the IPv4 header checksum: a MAC data plane carries what
 * the router in front of it sent, as a switch would (the CPE checks it),
 * and the check is ~8 of the ~100 cycles the downstream has beside the
 * crypto.  IPv6 extension headers take the proto helpers' walk.
 */
static __rte_always_inline int
ds_parse(const struct rte_mbuf *mb, struct ep_meta *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(mb, const uint8_t *), *ip;
	uint32_t seg = RTE_MIN(mb->data_len, mb->pkt_len), frame = mb->pkt_len, off, hl, tl;
	uint16_t et;
	int rc;

	m->flags = 0;
	rc = ep_parse_l2(p, seg, m, &et);
	if (unlikely(rc != 0))
		return rc;
	off = m->l3_off;
	if (unlikely(et != RTE_ETHER_TYPE_IPV4)) {
		if (et == RTE_ETHER_TYPE_IPV6)
			return ep_parse_ipv6(p, seg, frame, m);
		return EP_DROP_ETHERTYPE_UNSUPPORTED;
	}
	ip = p + off;
	m->l3_type = EP_L3_IPV4;
	if (unlikely(seg < off + 20))
		return EP_DROP_IPV4_TRUNCATED;
	if (unlikely((ip[0] >> 4) != 4))
		return EP_DROP_IPV4_BAD_VERSION;
	hl = (uint32_t)(ip[0] & 0x0f) * 4;
	if (unlikely(hl < 20 || off + hl > seg))
		return EP_DROP_IPV4_BAD_IHL;
	tl = (uint32_t)(ip[2] << 8 | ip[3]);
	if (unlikely(tl < hl || off + tl > frame))
		return EP_DROP_IPV4_BAD_TOTAL_LENGTH;
	m->l3_len = (uint16_t)tl;
	m->l4_proto = ip[9];
	m->l4_off = (uint16_t)(off + hl);
	if (unlikely((ip[6] & 0x3f) | ip[7])) {
		m->flags |= EP_META_F_FRAGMENT;
		if (((ip[6] & 0x1f) | ip[7]) != 0)
			return 0;               /* not the first fragment: no ports */
	}
	return ep_parse_l4(m, off + hl, RTE_MIN(off + tl, seg));
}

/*
 * The lines the lookup needs, with write intent, as every prefetch of a
 * frame's lines here: the pipeline writes each of them (ep_meta in lookup,
 * the data from byte 12 in the crypto; below, the mbuf's second line --
 * `next` -- in DEPI and when the mbuf is freed, the headroom in framing;
 * the mbuf's lengths in framing).  A line another core
 * wrote last (a generator, or the core that freed the mbuf) is fetched
 * once in the exclusive state, instead of shared and then again to own
 * it, which is what a read prefetch followed by the store costs.  As
 * built, though, rte_prefetch0_write is a plain PREFETCHT0: it is
 * __builtin_prefetch(p, 1), which GCC emits as PREFETCHW only for a target
 * with PRFCHW, and Debian's libdpdk cflags end in -march=corei7.  A real
 * PREFETCHW (inline assembly) measured worse on the Xeon guest, 1.065 in
 * alternating rounds, lookup 68 -> 85 (docs/benchmarks/cmts-history.md,
 * "The Xeon round"):
 * the read prefetch stays.
 */
static __rte_always_inline void
prefetch_frame(struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);

	rte_prefetch0_write(p);
	rte_prefetch0_write(p + DS_HEAD_END - 1);
	rte_prefetch0_write(ep_meta(m));
}

/*
 * Frame @p i's CM, @p id from the address table (0: none): the record's
 * two hot lines (struct cmts_cm) and the worker's line of the CM asked for
 * the next stages, the id in ep_meta.user.  Returns 1 when it drops.
 */
static __rte_always_inline uint16_t
lookup_found(struct cmts_ds *d, const struct cmts_sg *sg, struct rte_mbuf **pkts, uint16_t *next,
	     uint16_t i, uint32_t id)
{
	const struct cmts_cm *cm;

	if (unlikely(id == 0)) {
		next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UNKNOWN_CPE);
		return 1;
	}
	cm = sg->cms[id];
	rte_prefetch0(cm);
	rte_prefetch0(cm->cpe4);
	rte_prefetch0(&d->dyn[id]);
	ep_meta(pkts[i])->user = id;
	return 0;
}

uint16_t
cmts_ds_lookup_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	struct cmts_sg *sg = d->sg;
	const struct cmts_addr_tab *t = ep_rcu_read(&sg->addr_tab);
	uint64_t hits = 0, v6 = 0;
	uint16_t np = 0, out = 0;
	/* in_port is written here, with the rest of the meta line
	 * (ds_type.stage_sets_in_port), not by the engine's pass after rx,
	 * which stored to all 32 cold meta lines before anything read them;
	 * a burst handed in (tests, ep_worker_run_burst) keeps its in_port.
	 * On the Xeon guest, with the frame's first two lines prefetched:
	 * 0.960 in alternating rounds (rx 28 -> 17, lookup 80 -> 87 cycles a
	 * frame); on the EPYC, before that prefetch, it measured worse
	 * (docs/benchmarks/cmts-history.md, "The Xeon round"). */
	const uint16_t port = d->w != NULL ? d->w->rx_port : EP_RX_PORT_META;

	/* The mbufs first (one line each, needed to find the data), then the
	 * data and meta lines a few packets ahead: frames written by another
	 * core (a NIC's DMA, a generator) arrive cold, and a miss here costs
	 * ~100-200 cycles on this machine. */
	for (uint16_t i = 0; i < n; i++)
		rte_prefetch0_write(pkts[i]);
	for (uint16_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
		prefetch_frame(pkts[i]);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_meta *md = ep_meta(m);
		const uint8_t *l3;
		int rc;

		if (i + PREFETCH_AHEAD < n)
			prefetch_frame(pkts[i + PREFETCH_AHEAD]);
		/*
		 * The rest of the frame toward L2, for the crypto stage: the
		 * cipher walks 16 frames at once in its lanes, more streams
		 * than the hardware prefetcher follows, and each cold line
		 * stalls a lane.  Issued here, the lines arrive while filter,
		 * classify and the schedulers run.  test_cmts_cycles with
		 * EP_CYCLES_COLD=1: crypto 617 -> 480-500 cycles a frame;
		 * warm, ~8 cycles more in lookup
		 * (docs/benchmarks/cmts-history.md).  With write
		 * intent (the cipher writes them): see prefetch_frame.
		 */
		cmts_prefetch_rest(m);
		if (port != EP_RX_PORT_META)
			md->in_port = port;
		rc = ds_parse(m, md);
		if (unlikely(rc != 0)) {
			next[i] = EP_NEXT_DROP(rc);
			out++;
			continue;
		}
		l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l3_off);
		if (likely(t != NULL)) {
			/* The address table: its home slot now, asked for
			 * while the next frames parse; probed below. */
			if (likely(md->l3_type == EP_L3_IPV4)) {
				uint32_t a;

				memcpy(&a, l3 + 16, 4);
				d->a4[np] = rte_be_to_cpu_32(a);
				d->home[np] = cmts_addr4_home(t, d->a4[np]);
				rte_prefetch0(&t->s4[d->home[np]]);
			} else {
				v6 |= 1ull << np;
				d->hkey_ptr[np] = l3 + 24;
				d->home[np] = cmts_addr6_home(t, l3 + 24);
				rte_prefetch0(&t->s6[d->home[np]]);
			}
		} else if (likely(md->l3_type == EP_L3_IPV4)) {
			memcpy(d->hkey[np], v4_mapped, 12);
			memcpy(d->hkey[np] + 12, l3 + 16, 4);
			d->hkey_ptr[np] = d->hkey[np];
		} else {
			memcpy(d->hkey[np], l3 + 24, 16);
			d->hkey_ptr[np] = d->hkey[np];
		}
		d->pos[np++] = i;
	}
	/* The probe and the CM's lines in one pass over the found frames
	 * (the home slots were asked for in the parse loop above). */
	if (likely(t != NULL)) {
		for (uint16_t j = 0; j < np; j++) {
			uint32_t id = likely(!((v6 >> j) & 1)) ?
				cmts_addr4_find(t, d->a4[j], d->home[j]) :
				cmts_addr6_find(t, d->hkey_ptr[j], d->home[j]);

			out += lookup_found(d, sg, pkts, next, d->pos[j], id);
		}
	} else if (np != 0) {
		rte_hash_lookup_bulk_data(sg->addr, d->hkey_ptr, np, &hits, d->hdata);
		for (uint16_t j = 0; j < np; j++)
			out += lookup_found(d, sg, pkts, next, d->pos[j],
					    (hits >> j) & 1 ? (uint32_t)(uintptr_t)d->hdata[j] : 0);
	}
	d->lookup_hit += n - out;
	d->lookup_miss += np - (n - out);
	return out;
}

/* ---- subscriber management ---- */

uint16_t
cmts_ds_submgmt_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md = ep_meta(m);
		const struct cmts_cm *cm = cmts_cm_of(d->sg, DSM_CM(md->user));
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *), *l3 = p + md->l3_off;
		const uint8_t *src, *dst;
		int to = -1, from = 0;

		if (unlikely(cm == NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UNKNOWN_CPE);
			out++;
			continue;
		}
		/* The CM's classifier lines the filter stage matches IPv4
		 * frames against (cmts_cls4_match_*: the dport line, the
		 * protocol and value line), asked for one stage ahead: the
		 * lookup's prefetch of them measured worse (its parse waits
		 * behind every line it asks for), here bench.cmts_ab 0.986
		 * (docs/benchmarks/cmts-history.md). */
		rte_prefetch0(cm->cls4.dport_lo);
		rte_prefetch0(cm->cls4.proto);
		if (likely(md->l3_type == EP_L3_IPV4)) {
			uint32_t s4, d4, hit_to = 0, hit_from = 0;

			/* The CM's IPv4 addresses from its line 1: four
			 * compares each way, no loop over the CPE entries --
			 * on x86 one SSE2 compare each way (GCC built the
			 * scalar eight as ~40 instructions of sete, shift and
			 * or; docs/benchmarks/cmts-history.md, "The front
			 * stages round"). */
			memcpy(&s4, l3 + 12, 4);
			memcpy(&d4, l3 + 16, 4);
#ifdef RTE_ARCH_X86
			RTE_BUILD_BUG_ON(CMTS_MAX_CPE != 4);    /* one 128-bit compare */
			{
				__m128i c = _mm_load_si128((const __m128i *)cm->cpe4);

				hit_to = (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(
					_mm_cmpeq_epi32(c, _mm_set1_epi32((int)d4))));
				hit_from = (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(
					_mm_cmpeq_epi32(c, _mm_set1_epi32((int)s4))));
			}
#else
			for (int k = 0; k < CMTS_MAX_CPE; k++) {
				hit_to |= (uint32_t)(cm->cpe4[k] == d4) << k;
				hit_from |= (uint32_t)(cm->cpe4[k] == s4) << k;
			}
#endif
			hit_to &= cm->cpe4_mask;
			from = (hit_from & cm->cpe4_mask) != 0;
			to = hit_to != 0 ? (int)rte_bsf32(hit_to) : -1;
		} else {
			src = l3 + 8;
			dst = l3 + 24;
			for (int k = 0; k < cm->n_cpe; k++) {
				const struct cmts_cpe *c = &cm->cpe[k];

				if (c->family != 6)
					continue;
				if (memcmp(c->addr, dst, 16) == 0)
					to = k;
				from |= memcmp(c->addr, src, 16) == 0;
			}
		}
		if (unlikely(from)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_SPOOFED_SOURCE);
			out++;
		} else if (unlikely(to >= 0 && (cm->cpe_mac_mask & (1u << to)) &&
				    !ep_mac_eq(p, &cm->cpe_mac[to]))) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_DST_MAC_MISMATCH);
			out++;
		}
	}
	return out;
}

/* ---- filter (and the classifier lookup) ---- */

/*
 * The IPv4 frames' classifiers, from their CM's compiled table, and with
 * @p fg4 their two filter groups (struct cmts_fg4: the first matching lane
 * of each group, cmts_fg4_verdict); the other frames' verdicts from the
 * ACL results the stage left in d->fg_res and d->cls_res.  One pass over
 * the burst gives each frame its verdict, its drop or its classifier value
 * (ep_meta.nexthop, for classify) and the counters: the CM's record is
 * read once a frame, where an id pass, the match pass and a verdict pass
 * read it (and the frame's ep_meta) three times
 * (docs/benchmarks/cmts-history.md, "The front stages round").  One
 * body, two compilations (cmts_worker.h says why), the stage calls the
 * one cmts_ds_build picked.  A CM gone since the
 * lookup matches nothing (the classify stage drops its frames).
 */
#define FILTER_BURST(name, attr, match)						\
static attr uint16_t								\
name(struct cmts_ds *d, const struct ep_acl_set *fs, const struct ep_acl_set *cs,	\
     const struct cmts_fg4 *fg4, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)	\
{										\
	uint64_t permit = 0, deny = 0, unmatched = 0;				\
	uint16_t out = 0;							\
										\
	for (uint16_t i = 0; i < n; i++) {					\
		struct ep_meta *md = ep_meta(pkts[i]);				\
		const struct cmts_cm *cm = cmts_cm_of(d->sg, DSM_CM(md->user));	\
		uint32_t val;							\
		int matched, no;						\
										\
		if (likely(md->l3_type == EP_L3_IPV4)) {			\
			const struct ep_acl_key4_set *k = &d->acl.key[i].v4s;	\
										\
			val = likely(cm != NULL) ? match(&cm->cls4, k) : 0;	\
			if (likely(fg4 != NULL)) {				\
				uint8_t fv = cmts_fg4_verdict(			\
					match(&fg4->g[likely(cm != NULL) ? cm->fg[0] : 0], k), \
					match(&fg4->g[likely(cm != NULL) ? cm->fg[1] : 0], k)); \
										\
				matched = fv & CMTS_FV_MATCHED;			\
				no = matched ? fv & CMTS_FV_DENY : fs->default_deny; \
			} else {						\
				no = ep_acl_lanes_deny(fs, &d->fg_res[2 * i], &matched); \
			}							\
		} else {							\
			no = ep_acl_lanes_deny(fs, &d->fg_res[2 * i], &matched); \
			val = d->cls_res[i] != 0 ? 1 + ep_acl_res_value(cs, d->cls_res[i]) : 0; \
		}								\
		unmatched += !matched;						\
		if (unlikely(no)) {						\
			deny++;							\
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_FILTER_DENY);	\
			out++;							\
			continue;						\
		}								\
		permit++;							\
		md->nexthop = val;						\
	}									\
	d->filter_permit += permit;						\
	d->filter_deny += deny;							\
	d->filter_unmatched += unmatched;					\
	return out;								\
}
FILTER_BURST(filter_burst_scalar, , cmts_cls4_match_scalar)
#ifdef RTE_ARCH_X86
FILTER_BURST(filter_burst_avx512, CMTS_AVX512, cmts_cls4_match_avx512)
#endif

/*
 * The SG's filter instance of the shared ACL module (one rte_acl_classify
 * per family and burst) with the CM's two filter groups as the two lanes
 * of each frame's key, for the IPv6 frames and, while some group has more
 * than 16 IPv4 rules (no lane tables), every frame; the IPv6 frames'
 * classifiers through the classifier instance with the CM id.  Then the
 * verdicts (the burst function above).  Deny in either group wins; no
 * match in either: the SG's filter_default (the instance's default
 * action).  The classifier's value (index and SF) waits in
 * ep_meta.nexthop for classify.
 */
uint16_t
cmts_ds_filter_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	const struct ep_acl_set *fs = ep_acl_read(d->sg->filter_acl);
	const struct ep_acl_set *cs = ep_acl_read(d->sg->cls_acl);
	const struct cmts_fg4 *fg4 = ep_rcu_read(&d->sg->fg4);

	/* One key pass for every match (the layouts differ only in the ids). */
	ep_acl_keys_build(fs, &d->acl, pkts, n);
	if (unlikely(fg4 == NULL || d->acl.n6 != 0)) {
		uint16_t n4 = d->acl.n4;

		for (uint16_t i = 0; i < n; i++) {
			uint32_t id = DSM_CM(ep_meta(pkts[i])->user);
			const struct cmts_cm *cm = cmts_cm_of(d->sg, id);

			d->fg_ids[2 * i] = likely(cm != NULL) ? cm->fg[0] : 0;
			d->fg_ids[2 * i + 1] = likely(cm != NULL) ? cm->fg[1] : 0;
			d->cm_ids[i] = (uint16_t)id;
		}
		/* With the lane tables, the filter ACL for the IPv6 frames
		 * only (the IPv4 slots read EP_ACL_NOT_IP). */
		if (fg4 != NULL)
			d->acl.n4 = 0;
		ep_acl_classify_keys(fs, &d->acl, d->fg_ids, d->fg_res);
		if (d->acl.n6 != 0) {
			/* The classifier ACL for the IPv6 frames only: the
			 * IPv4 frames take their CM's compiled table. */
			d->acl.n4 = 0;
			ep_acl_classify_keys(cs, &d->acl, d->cm_ids, d->cls_res);
		}
		d->acl.n4 = n4;
	}
	return d->filter_burst(d, fs, cs, fg4, pkts, next, n);
}

/* AVX-512 F, BW and VL at 256 bits when the CPU has them and the EAL
 * allows 256-bit vectors (its default on x86). */
static cmts_filter_burst_fn *
filter_pick(void)
{
#ifdef RTE_ARCH_X86
	if (rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
	    rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512BW) > 0 &&
	    rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512VL) > 0 &&
	    rte_vect_get_max_simd_bitwidth() >= RTE_VECT_SIMD_256)
		return filter_burst_avx512;
#endif
	return filter_burst_scalar;
}

/* ---- classify ---- */

uint16_t
cmts_ds_classify_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct ep_meta *md = ep_meta(pkts[i]);
		const struct cmts_cm *cm = cmts_cm_of(d->sg, DSM_CM(md->user));
		struct cmts_ds_dyn *y;
		uint32_t ud = md->nexthop;
		uint8_t sf = 0;

		if (unlikely(cm == NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UNKNOWN_CPE);
			out++;
			continue;
		}
		y = cmts_ds_dyn_of(d, cm);
		if (ud != 0) {
			sf = CMTS_CLS_VALUE_SF(ud - 1);
			if (unlikely(!(cm->sf_in_use & (1u << sf))))
				sf = 0;
			y->cls_matched++;
		} else {
			y->cls_unmatched++;
		}
		cmts_prefetch_mbuf_next(pkts[i]);
		rte_prefetch0(&y->sf[sf]);
		if (cm->sf_shaped & (1u << sf))
			rte_prefetch0(&cm->sf_prof[sf]);
		md->user = DSM_MAKE(cm->id, sf, cm->sf_prio[sf]);
	}
	return out;
}

/* ---- framing ---- */

uint16_t
cmts_ds_framing_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_meta *md = ep_meta(m);
		const struct cmts_cm *cm = cmts_cm_of(d->sg, DSM_CM(md->user));
		uint32_t eth = m->pkt_len, pdu = eth + EP_DOCSIS_CRC_LEN, len;
		unsigned int hl, hn;
		uint8_t *h, tp;
		uint16_t hcs;

		if (unlikely(cm == NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UNKNOWN_CPE);
			out++;
			continue;
		}
		hl = cm->hdr_len;
		if (unlikely(pdu > EP_DOCSIS_PDU_MAX)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_FRAME_TOO_LONG);
			out++;
			continue;
		}
		if (unlikely(m->nb_segs != 1 || rte_pktmbuf_headroom(m) < hl + DEPI_HEADROOM ||
			     rte_pktmbuf_tailroom(m) < EP_DOCSIS_CRC_LEN)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_NO_ROOM);
			out++;
			continue;
		}
		/* One segment, room checked: the lengths by hand, since
		 * rte_pktmbuf_append walks to the last segment through
		 * m->next, a load from the mbuf's second line that the
		 * benchmark showed here as a miss per frame (framing 111 ->
		 * ~40 cycles a frame, docs/benchmarks/cmts-history.md). */
		h = (uint8_t *)rte_pktmbuf_prepend(m, (uint16_t)hl);
		m->data_len = (uint16_t)(m->data_len + EP_DOCSIS_CRC_LEN);
		m->pkt_len += EP_DOCSIS_CRC_LEN;
		/* Headers are 10..17 bytes: two overlapping fixed-size copies
		 * (vector moves) instead of a variable-length memcpy call. */
		if (likely(hl >= 16)) {
			memcpy(h, cm->hdr_tpl, 16);
			memcpy(h + hl - 16, cm->hdr_tpl + hl - 16, 16);
		} else {
			memcpy(h, cm->hdr_tpl, 8);
			memcpy(h + hl - 8, cm->hdr_tpl + hl - 8, 8);
		}
		len = hl - EP_DOCSIS_HDR_MIN + pdu;
		h[2] = (uint8_t)(len >> 8);
		h[3] = (uint8_t)len;
		tp = (uint8_t)(DSM_PRIO(md->user) << 5);
		h[cm->tp_pos] |= tp;
		hn = hl - 3;              /* position of the last byte the HCS covers */
		hcs = (uint16_t)(cm->tpl_hcs ^ ep_crc16_x25_delta(h[2], hn - 2) ^
				 ep_crc16_x25_delta(h[3], hn - 3) ^
				 ep_crc16_x25_delta(tp, hn - cm->tp_pos));
		if (cm->bonded) {
			uint16_t psn = (uint16_t)md->nexthop;

			h[hl - 4] = (uint8_t)(psn >> 8);
			h[hl - 3] = (uint8_t)psn;
			hcs ^= (uint16_t)(ep_crc16_x25_delta((uint8_t)(psn >> 8), 1) ^
					  ep_crc16_x25_delta((uint8_t)psn, 0));
		}
		ep_docsis_put_hcs(h + hl - 2, hcs);
	}
	return out;
}

/* ---- crypto ---- */

uint16_t
cmts_ds_crypto_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	struct cmts *c = d->sg->c;
	struct rte_crypto_op *ops[EP_BURST_MAX], *done[EP_BURST_MAX];
	uint16_t posv[EP_BURST_MAX];
	uint16_t nv = 0, k, got, out = 0, cont = 0;

	d->crypto_ran = true;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct cmts_cm *cm = cmts_cm_of(d->sg, DSM_CM(ep_meta(m)->user));
		struct rte_crypto_op *op;
		struct rte_crypto_sym_op *s;
		const uint8_t *h, *iv;
		void *sess;
		uint32_t hl, eth;

		if (unlikely(cm == NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UNKNOWN_CPE);
			out++;
			continue;
		}
		/* The frame's own header says how long it is and which key
		 * encrypts it (its BPI EH's key sequence): the record read
		 * here may be newer than the one framing read in this burst
		 * (a key activated, BPI switched meanwhile), and the frame
		 * must be encrypted with the key its header names. */
		h = rte_pktmbuf_mtod(m, const uint8_t *);
		hl = 6u + ((h[0] & EP_DOCSIS_FC_EHDR_ON) ? h[1] : 0u);
		sess = NULL;
		iv = NULL;
		if (hl > 6u && (h[4] >> 4) == EP_DOCSIS_EH_BP_DOWN && (h[6] & 0x80) != 0) {
			uint8_t ks = h[5] >> 4;

			/* The record's key sequence from its template on
			 * line 0 (CMTS_TPL_KSEQ), not ds_kseq on a cold line:
			 * bench.cmts_ab 0.995
			 * (docs/benchmarks/cmts-history.md). */
			if (likely(cm->ds_sess != NULL && ks == cm->hdr_tpl[CMTS_TPL_KSEQ] >> 4)) {
				sess = cm->ds_sess;     /* record's line 0: the key stays cold */
				iv = cm->ds_iv;
			} else {
				const struct cmts_key *key = cm->bpi ? cm->key[ks & 1] : NULL;

				if (key == NULL || key->kseq != ks) {
					next[i] = EP_NEXT_DROP(EP_DROP_CMTS_CRYPTO_FAILED);
					out++;
					continue;
				}
				sess = key->sess_ds;
				iv = key->iv;
			}
		}
		if (unlikely(m->pkt_len < hl + EP_DOCSIS_CRC_LEN)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_NO_ROOM);
			out++;
			continue;
		}
		op = d->op_free[--d->n_op_free];
		s = op->sym;
		eth = m->pkt_len - hl - EP_DOCSIS_CRC_LEN;
		op->status = RTE_CRYPTO_OP_STATUS_NOT_PROCESSED;
		op->sess_type = RTE_CRYPTO_OP_SECURITY_SESSION;
		s->m_src = m;
		s->m_dst = NULL;
		s->auth.data.offset = hl;
		s->auth.data.length = eth;
		if (likely(sess != NULL)) {
			s->session = sess;
			memcpy(rte_crypto_op_ctod_offset(op, uint8_t *, CMTS_IV_OFF), iv, 16);
			s->cipher.data.offset = hl + RTE_ETHER_HDR_LEN - RTE_ETHER_TYPE_LEN;
			s->cipher.data.length = eth + EP_DOCSIS_CRC_LEN -
						(RTE_ETHER_HDR_LEN - RTE_ETHER_TYPE_LEN);
		} else {
			s->session = c->crc_only_ds;
			s->cipher.data.offset = hl;
			s->cipher.data.length = 0;
		}
		ops[nv] = op;
		posv[nv++] = i;
	}
	k = nv != 0 ? rte_cryptodev_enqueue_burst(c->cdev, d->qp, ops, nv) : 0;
	d->in_flight += k;
	__atomic_store_n(&d->enq_total, d->enq_total + k, __ATOMIC_RELEASE);
	for (uint16_t j = k; j < nv; j++) {
		/* The queue pair is full: the device is not keeping up. */
		d->op_free[d->n_op_free++] = ops[j];
		next[posv[j]] = EP_NEXT_DROP(EP_DROP_CMTS_CRYPTO_FAILED);
		out++;
	}
	/*
	 * At most k come back: they take the positions of the k frames just
	 * enqueued (in order, so the burst's order of completed frames is
	 * kept); the rest of those positions are in the device.
	 */
	got = k != 0 ? rte_cryptodev_dequeue_burst(c->cdev, d->qp, done, k) : 0;
	d->in_flight -= got;
	__atomic_store_n(&d->deq_total, d->deq_total + got, __ATOMIC_RELEASE);
	for (uint16_t j = 0; j < got; j++) {
		struct rte_crypto_op *op = done[j];
		uint16_t i = posv[j];

		pkts[i] = op->sym->m_src;
		d->op_free[d->n_op_free++] = op;
		if (unlikely(op->status != RTE_CRYPTO_OP_STATUS_SUCCESS)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_CRYPTO_FAILED);
			out++;
		} else {
			cont++;
		}
	}
	for (uint16_t j = got; j < k; j++) {
		next[posv[j]] = EP_NEXT_CONSUMED;
		out++;
	}
	d->crc_generated += cont;
	return out;
}

uint16_t
cmts_ds_crypto_drain(struct cmts_ds *d, struct rte_mbuf **out, uint16_t max)
{
	struct rte_crypto_op *done[EP_BURST_MAX];
	uint16_t got, n = 0;

	max = RTE_MIN(max, EP_BURST_MAX);
	/* With nothing new to submit each dequeue flushes the lanes, and a
	 * flush may hand back one job at a time: collect until the device is
	 * empty, so the frames of one channel still share DEPI packets. */
	while (d->in_flight != 0 && n < max) {
		got = rte_cryptodev_dequeue_burst(d->sg->c->cdev, d->qp, done, max - n);
		if (got == 0)
			break;
		d->in_flight -= got;
		__atomic_store_n(&d->deq_total, d->deq_total + got, __ATOMIC_RELEASE);
		for (uint16_t j = 0; j < got; j++) {
			struct rte_crypto_op *op = done[j];

			d->op_free[d->n_op_free++] = op;
			if (unlikely(op->status != RTE_CRYPTO_OP_STATUS_SUCCESS)) {
				d->stage_crypto->stats.drops[EP_DROP_CMTS_CRYPTO_FAILED]++;
				rte_pktmbuf_free(op->sym->m_src);
				continue;
			}
			out[n++] = op->sym->m_src;
		}
	}
	d->crc_generated += n;
	return n;
}

/* ---- the worker ---- */

void
cmts_ds_free(struct cmts_ds *d)
{
	if (d == NULL)
		return;
	cmts_sched_fini(d);
	cmts_depi_fini(d);
	cmts_crypto_worker_fini(d->op_pool, d->op_free, d->n_op_free);
	rte_free(d->dyn);
	rte_free(d);
}

int
cmts_ds_build(struct cmts_sg *sg, struct ep_worker *w, uint16_t tx, struct ep_err *err)
{
	int socket = (int)rte_lcore_to_socket_id(w->lcore);
	struct cmts_ds *d;
	char name[RTE_MEMPOOL_NAMESIZE];
	static const struct { const char *name; ep_stage_fn fn; } st[] = {
		{ "lookup", cmts_ds_lookup_stage },
		{ "submgmt", cmts_ds_submgmt_stage },
		{ "filter", cmts_ds_filter_stage },
		{ "classify", cmts_ds_classify_stage },
		{ "sf_sched", cmts_ds_sf_sched_stage },
		{ "ch_sched", cmts_ds_ch_sched_stage },
		{ "framing", cmts_ds_framing_stage },
		{ "crypto", cmts_ds_crypto_stage },
		{ "depi", cmts_ds_depi_stage },
	};

	if (sg->n_ds == EP_MAX_WORKERS)
		return ep_err_set(err, "cmts: too many downstream workers");
	d = rte_zmalloc_socket("cmts_ds", sizeof(*d), RTE_CACHE_LINE_SIZE, socket);
	if (d == NULL)
		return ep_err_set(err, "cmts: out of memory for a downstream worker");
	d->sg = sg;
	d->w = w;
	d->rpd_port = tx;
	d->filter_burst = filter_pick();
	d->dyn = rte_zmalloc_socket("cmts_dsdyn", sizeof(d->dyn[0]) * (sg->p.max_cms + 1),
				    RTE_CACHE_LINE_SIZE, socket);
	if (d->dyn == NULL) {
		rte_free(d);
		return ep_err_set(err, "cmts: out of memory for a downstream worker");
	}
	snprintf(name, sizeof(name), "cmts_ops_%u", w->id);
	if (cmts_sched_init(d, socket, err) < 0 || cmts_depi_init(d, socket, err) < 0 ||
	    cmts_crypto_worker_init(sg->c, &d->op_pool, &d->op_free, &d->n_op_free, &d->qp, name,
				    socket, err) < 0) {
		cmts_ds_free(d);
		return -1;
	}
	w->pipeline_ctx = d;
	sg->ds[sg->n_ds++] = d;
	for (size_t i = 0; i < RTE_DIM(st); i++) {
		if (ep_worker_add_stage(w, st[i].name, st[i].fn, d, err) < 0)
			return -1;
		if (st[i].fn == cmts_ds_sf_sched_stage)
			d->stage_sf = &w->stages[w->n_stages - 1];
		else if (st[i].fn == cmts_ds_ch_sched_stage) {
			d->st_ch_sched = w->n_stages - 1;
			d->stage_ch = &w->stages[w->n_stages - 1];
		} else if (st[i].fn == cmts_ds_framing_stage)
			d->st_framing = w->n_stages - 1;
		else if (st[i].fn == cmts_ds_crypto_stage) {
			d->st_crypto = w->n_stages - 1;
			d->stage_crypto = &w->stages[w->n_stages - 1];
		} else if (st[i].fn == cmts_ds_depi_stage) {
			d->st_depi = w->n_stages - 1;
			d->stage_depi = &w->stages[w->n_stages - 1];
		}
	}
	return 0;
}
