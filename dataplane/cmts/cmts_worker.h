/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Worker contexts of the vCMTS pipelines (private to dataplane/cmts):
 * what a downstream and an upstream worker own, and how a downstream
 * packet's state travels in its ep_meta between stages.
 *
 * A downstream packet can leave the burst it arrived in -- it waits in a
 * service-flow or bonding-group queue, or in the crypto device -- and a
 * worker reports a quiescent state after every burst, so a CM record
 * pointer must not outlive the burst.  The packet carries the CM id and
 * every stage reads the current record (one load from the record array,
 * which is hot): a CM deleted while its packets wait drops them.
 *
 *   ep_meta.user     bits 0-31  CM id
 *                         32-35 service flow
 *                         36-38 traffic priority
 *                         39    came from a bonding-group queue
 *                         40-47 downstream channel
 *   ep_meta.nexthop  filter -> classify: the classifier match (ACL userdata)
 *                    ch_sched -> framing: the DS packet sequence number
 */
#ifndef EP_CMTS_WORKER_H
#define EP_CMTS_WORKER_H

#include <rte_config.h>
#ifdef RTE_ARCH_X86
#include <immintrin.h>
#endif

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_crypto.h>
#include <rte_hash_crc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "cmts.h"
#include "acl/ep_acl_node.h"

#define CMTS_PSP_MAX_SEGS 16      /**< DOCSIS frames per DEPI PSP packet */

#define DSM_CM(u)        ((uint32_t)(u))
#define DSM_SF(u)        ((uint8_t)(((u) >> 32) & 0x0f))
#define DSM_PRIO(u)      ((uint8_t)(((u) >> 36) & 0x07))
#define DSM_FROM_BG      (1ull << 39)
#define DSM_CH(u)        ((uint8_t)((u) >> 40))
#define DSM_MAKE(cm, sf, prio) ((uint64_t)(cm) | (uint64_t)(sf) << 32 | (uint64_t)(prio) << 36)
#define DSM_SET_CH(u, ch) (((u) & ~(0xffull << 40)) | (uint64_t)(ch) << 40)

/*
 * A FIFO of mbufs for the schedulers' queues.  Not an rte_ring: the
 * scheduler must look at the head packet (its length decides whether the
 * flow or the channel has room for it) before taking it, which the
 * single-producer/single-consumer ring offers only through its zero-copy
 * API; one worker is producer and consumer here, so an array with two
 * indices is the whole queue.
 */
struct cmts_fifo {
	uint16_t head, n, mask, active;
	struct rte_mbuf **slot;
};

static inline bool
cmts_fifo_push(struct cmts_fifo *q, struct rte_mbuf *m)
{
	if (q->n > q->mask)
		return false;
	q->slot[(q->head + q->n++) & q->mask] = m;
	return true;
}

static inline struct rte_mbuf *
cmts_fifo_peek(const struct cmts_fifo *q)
{
	return q->n != 0 ? q->slot[q->head] : NULL;
}

static inline struct rte_mbuf *
cmts_fifo_pop(struct cmts_fifo *q)
{
	struct rte_mbuf *m = q->slot[q->head];

	q->head = (uint16_t)((q->head + 1) & q->mask);
	q->n--;
	return m;
}

/** A downstream channel as one worker drives it. */
struct cmts_ds_chan {
	/* Scheduling: the channel is modelled as a queue drained at its rate. */
	uint64_t free_at;               /**< TSC when what was sent so far has left */
	uint64_t cyc_per_kb;            /**< TSC cycles per 1024 bytes at the channel rate */
	uint64_t horizon;               /**< backlog allowed beyond now, TSC cycles */
	uint64_t pkts, bytes;           /**< DOCSIS frames and their bytes */
	/* DEPI */
	uint8_t type;                   /**< enum cmts_ch_type */
	uint8_t flow_id;
	uint16_t seq;                   /**< DEPI sequence number */
	uint32_t session;
	uint64_t depi_pkts;
	uint64_t psp_segs[8];           /**< DEPI packets with 1..7 and 8+ PSP segments */
	/* PSP packing within a burst: frames chained behind the head. */
	struct rte_mbuf *psp_head, *psp_tail;
	uint16_t psp_n;
	uint32_t psp_len;
	/* D-MPT: the DEPI packet being filled with TS packets. */
	struct rte_mbuf *mpt;
	uint16_t mpt_ts;                /**< TS packets in mpt (the last one partial) */
	uint16_t mpt_fill;              /**< payload bytes used in the last TS packet */
	uint8_t mpt_cc;
	bool mpt_pusi;                  /**< a frame starts in the last TS packet */
	uint64_t mpt_pkts;
};

/** The filter stage's verdicts and classifier values over a burst
 *  (cmts_ds.c: the IPv4 frames by cmts_cls4_match_*). */
struct cmts_ds;
struct cmts_fg4;
struct ep_acl_set;
typedef uint16_t cmts_filter_burst_fn(struct cmts_ds *d, const struct ep_acl_set *fs,
				      const struct ep_acl_set *cs, const struct cmts_fg4 *fg4,
				      struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/** Downstream worker. */
struct cmts_ds {
	struct cmts_sg *sg;
	struct ep_worker *w;
	struct cmts_ds_dyn *dyn;        /**< [max_cms + 1] */
	uint16_t rpd_port;
	uint8_t n_ch;
	/* Stage indices for ep_worker_run_from and stages' drop counters. */
	int st_ch_sched, st_framing, st_crypto, st_depi;
	struct ep_stage *stage_crypto, *stage_depi, *stage_sf, *stage_ch;
	struct cmts_ds_chan ch[CMTS_MAX_DS_CH];
	uint8_t bg_n[CMTS_MAX_BG];      /**< channels per bonding group (copied) */
	uint8_t bg_ch[CMTS_MAX_BG][CMTS_MAX_DS_CH];
	/* Scheduler queues: one per (CM, SF), one per (bonding group, priority). */
	struct cmts_fifo *sfq;          /**< [(max_cms + 1) * CMTS_MAX_SF] */
	struct cmts_fifo bgq[CMTS_MAX_BG][CMTS_PRIOS];
	uint32_t *active[CMTS_PRIOS];   /**< SF queue indices with packets, by priority */
	uint32_t n_active[CMTS_PRIOS];
	uint32_t queued;                /**< packets in all scheduler queues */
	uint64_t sched_drops;
	/* DEPI header template (Ethernet, IPv4, session/sub-layer added per channel). */
	uint8_t depi_tpl[14 + 20];
	uint16_t depi_tpl_csum;         /**< IPv4 checksum of the template with total length 0 */
	uint32_t depi_mtu;
	uint16_t mpt_max_ts;
	struct rte_mempool *pool;       /**< D-MPT packets */
	/* Crypto: this worker's queue pair and its operations. */
	uint16_t qp;
	struct rte_mempool *op_pool;
	struct rte_crypto_op **op_free;
	uint32_t n_op_free;
	uint32_t in_flight;
	bool crypto_ran;                /**< the crypto stage ran since the last service call */
	uint64_t enq_total, deq_total;  /**< deq_total is read by the control thread */
	uint64_t crc_generated;
	/* Scratch for one burst. */
	struct ep_acl_scratch acl __rte_cache_aligned;
	uint16_t fg_ids[EP_BURST_MAX * CMTS_MAX_FG_PER_CM];  /**< filter lanes per frame */
	uint16_t cm_ids[EP_BURST_MAX];
	uint32_t fg_res[EP_BURST_MAX * CMTS_MAX_FG_PER_CM];
	uint32_t cls_res[EP_BURST_MAX];     /**< the IPv6 frames' classifier ACL results */
	cmts_filter_burst_fn *filter_burst; /**< verdicts: scalar or AVX-512, by the CPU */
	uint8_t hkey[EP_BURST_MAX][16];
	uint32_t a4[EP_BURST_MAX];          /**< IPv4 destinations (host order) */
	uint32_t home[EP_BURST_MAX];        /**< their home slots in sg->addr_tab */
	const void *hkey_ptr[EP_BURST_MAX];
	void *hdata[EP_BURST_MAX];
	uint16_t pos[EP_BURST_MAX];
	/* Counters (cmts-stats). */
	uint64_t lookup_hit, lookup_miss;
	uint64_t filter_permit, filter_deny, filter_unmatched;
	uint64_t cls_matched, cls_unmatched;
} __rte_cache_aligned;


/* ---- upstream ---- */

#define CMTS_US_MAX_FRAMES 4096     /**< DOCSIS frames one burst of UEPI packets may carry */

/** An upstream channel as one worker receives it. */
struct cmts_us_chan {
	bool in_use;
	bool seq_valid;
	bool in_burst;                  /**< between a header segment and a trailer */
	bool skip;                      /**< lost sync: ignore bytes until the next burst */
	uint16_t next_seq;
	uint16_t sid;                   /**< the burst's scheduled SID */
	uint32_t session;
	struct rte_mbuf *part;          /**< a frame cut at a packet's end: its first bytes */
	uint64_t pkts, seq_errors, bursts;
	uint64_t reasm_ok, reasm_fail;
};

/** A UEPI packet of the current burst (ep_meta.user is its index). */
struct cmts_us_pkt {
	uint8_t ch;
	bool gap;                       /**< a sequence number was skipped before it */
	bool hdr_seg, trl_seg;          /**< a burst starts / ends in it */
	uint16_t sid;                   /**< from the header segment */
	uint16_t pay_off, pay_len;      /**< burst bytes it carries */
	uint16_t f0, nf;                /**< its frames in the frame table */
};

/** A DOCSIS frame of the current burst. */
struct cmts_us_frame {
	struct rte_mbuf *m;             /**< the UEPI packet, or its own (reassembled) mbuf */
	uint16_t off;                   /**< MAC header offset in m */
	uint16_t len;                   /**< whole DOCSIS frame */
	uint16_t hdr_len;
	uint16_t sid;
	uint16_t verdict;               /**< 0, or the drop reason decided for it */
	uint8_t kseq;
	bool enc, own;
	uint32_t cm;
};

/** Upstream worker. */
struct cmts_us {
	struct cmts_sg *sg;
	struct ep_worker *w;
	uint16_t net_port;
	struct rte_ether_addr rpd_port_mac;
	struct cmts_us_chan ch[CMTS_MAX_US_CH];
	struct cmts_us_dyn *dyn;        /**< [max_cms + 1] */
	struct rte_mempool *pool;       /**< reassembled and copied frames */
	struct ep_stage *stage[8];      /**< for frame drops, by stage index */
	/* Crypto. */
	uint16_t qp;
	struct rte_mempool *op_pool;
	struct rte_crypto_op **op_free;
	uint32_t n_op_free;
	/* The burst. */
	uint16_t n_pd;
	uint32_t n_fr;
	struct cmts_us_pkt pd[EP_BURST_MAX];
	struct cmts_us_frame *fr;       /**< [CMTS_US_MAX_FRAMES] */
	/* Counters (cmts-stats). */
	uint64_t l2tp_valid, l2tp_invalid;
	uint64_t frames, hcs_ok, hcs_fail, crc_ok, crc_fail, decrypted;
	uint64_t frames_per_pkt[8];     /**< UEPI packets with 0..6, 7+ frames */
};

uint16_t cmts_us_verify_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_us_decap_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_us_reasm_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_us_extract_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_us_decrypt_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_us_cm_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_us_forward_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/* Stages (cmts_ds.c, cmts_sched.c, cmts_depi.c). */
uint16_t cmts_ds_lookup_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_submgmt_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_filter_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_classify_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_sf_sched_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_ch_sched_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_framing_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_crypto_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_ds_depi_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/**
 * Every line of a frame's data after the first toward L2, with write
 * intent: both directions' crypto rewrites the frame in place, and its
 * multi-buffer lanes walk 16 frames at once, more streams than the
 * hardware prefetcher follows; issued at the first stage, the lines arrive
 * while the stages before the crypto run.
 */
static __rte_always_inline void
cmts_prefetch_rest(struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);

	for (uint32_t o = RTE_CACHE_LINE_SIZE; o < m->data_len; o += RTE_CACHE_LINE_SIZE)
		rte_prefetch1_write(p + o);
}

/*
 * The lines of a downstream frame only the last stages touch: the mbuf's
 * second (`next`: DEPI chains through it, the tx free reads it) and the
 * headroom line in front of the frame (DEPI's headers, and the MAC header
 * where a frame starts less than its length into its line).  Asked for one
 * line a frame in two compute stages, classify and ch_sched, not both for
 * the whole burst at the top of the filter stage: 64 misses issued back to
 * back held every fill buffer, and the stage waited on them (perf: ~60 %
 * of its samples on those two prefetches).  bench.cmts_ab on the Intel
 * Xeon, 16 rounds: 0.973, filter 41 -> 34 cycles a frame
 * (docs/benchmarks/cmts-history.md, "The spread prefetch round").  With
 * write intent as the lookup's (prefetch_frame in cmts_ds.c says what
 * that builds to).
 */
static __rte_always_inline void
cmts_prefetch_mbuf_next(struct rte_mbuf *m)
{
	rte_prefetch0_write((uint8_t *)m + RTE_CACHE_LINE_SIZE);
}

static __rte_always_inline void
cmts_prefetch_headroom(struct rte_mbuf *m)
{
	rte_prefetch0_write(rte_pktmbuf_mtod(m, uint8_t *) - RTE_CACHE_LINE_SIZE);
}

/*
 * The first of CM table @p t's classifiers an IPv4 frame with key @p k
 * (the ACL module's keyed layout, network order) matches: its
 * CMTS_CLS_VALUE + 1, or 0.  Why not the classifier ACL for IPv4: its trie
 * holds every CM's classifiers (4800 rules in the default profile), and a
 * frame's walk through it, with the CM id in the key, cost ~53 of the
 * filter stage's ~115 cycles a frame (docs/cmts.md); a CM has at most 16
 * classifiers, one AVX-512 compare per field (256 bits) covers them all.  IPv6 frames
 * keep the ACL (128-bit prefixes, few frames).
 *
 * Two bodies: a scalar loop for any x86, and AVX-512 (F, BW, VL) compiled
 * for that target only -- Debian's libdpdk cflags end in -march=corei7,
 * which overrides the project's -march=native -- and chosen at start-up
 * from the CPU's flags (cmts_ds_build), as rte_acl chooses its methods.
 */
static __rte_always_inline uint32_t
cmts_cls4_hit(const struct cmts_cls4 *t, uint32_t m)
{
	return m != 0 ? 1u + t->value[rte_bsf32(m)] : 0;
}

static __rte_always_inline uint32_t
cmts_cls4_match_scalar(const struct cmts_cls4 *t, const struct ep_acl_key4_set *k)
{
	uint16_t dport = rte_be_to_cpu_16(k->dport), sport = rte_be_to_cpu_16(k->sport);
	uint32_t src, dst, m = 0;

	memcpy(&src, k->src, 4);
	memcpy(&dst, k->dst, 4);
	src = rte_be_to_cpu_32(src);
	dst = rte_be_to_cpu_32(dst);
	for (int j = 0; j < CMTS_MAX_CLS; j++)
		m |= (uint32_t)(((t->valid >> j) & 1) &&
				dport >= t->dport_lo[j] && dport <= t->dport_hi[j] &&
				sport >= t->sport_lo[j] && sport <= t->sport_hi[j] &&
				(k->proto & t->proto_mask[j]) == t->proto[j] &&
				k->tos >= t->tos_lo[j] && k->tos <= t->tos_hi[j] &&
				(src & t->src_mask[j]) == t->src[j] &&
				(dst & t->dst_mask[j]) == t->dst[j]) << j;
	return cmts_cls4_hit(t, m);
}

#ifdef RTE_ARCH_X86
#define CMTS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* Lanes whose prefix holds address @p a (network order): two 256-bit
 * halves, the width the EAL allows by default. */
static __rte_always_inline CMTS_AVX512 uint32_t
cmts_cls4_prefix_avx512(const uint8_t a[4], const uint32_t *val, const uint32_t *mask)
{
	uint32_t w;
	__m256i v;

	memcpy(&w, a, 4);
	v = _mm256_set1_epi32((int)rte_be_to_cpu_32(w));
	return _mm256_cmpeq_epi32_mask(_mm256_and_si256(v, _mm256_loadu_si256((const void *)mask)),
				       _mm256_loadu_si256((const void *)val)) |
	       (uint32_t)_mm256_cmpeq_epi32_mask(
			_mm256_and_si256(v, _mm256_loadu_si256((const void *)(mask + 8))),
			_mm256_loadu_si256((const void *)(val + 8))) << 8;
}

/* Fields no classifier restricts (t->uses) are skipped: the default
 * profile's classifiers read the dport and protocol lines only. */
static __rte_always_inline CMTS_AVX512 uint32_t
cmts_cls4_match_avx512(const struct cmts_cls4 *t, const struct ep_acl_key4_set *k)
{
	__m256i dp = _mm256_set1_epi16((short)rte_be_to_cpu_16(k->dport));
	__m128i pr = _mm_set1_epi8((char)k->proto);
	uint32_t m;

	m = t->valid &
	    _mm256_cmp_epu16_mask(dp, _mm256_loadu_si256((const void *)t->dport_lo), _MM_CMPINT_NLT) &
	    _mm256_cmp_epu16_mask(dp, _mm256_loadu_si256((const void *)t->dport_hi), _MM_CMPINT_LE) &
	    _mm_cmpeq_epi8_mask(_mm_and_si128(pr, _mm_loadu_si128((const void *)t->proto_mask)),
				_mm_loadu_si128((const void *)t->proto));
	if (m != 0 && (t->uses & CMTS_CLS4_SPORT)) {
		__m256i sp = _mm256_set1_epi16((short)rte_be_to_cpu_16(k->sport));

		m &= _mm256_cmp_epu16_mask(sp, _mm256_loadu_si256((const void *)t->sport_lo),
					   _MM_CMPINT_NLT) &
		     _mm256_cmp_epu16_mask(sp, _mm256_loadu_si256((const void *)t->sport_hi),
					   _MM_CMPINT_LE);
	}
	if (m != 0 && (t->uses & CMTS_CLS4_TOS)) {
		__m128i tos = _mm_set1_epi8((char)k->tos);

		m &= _mm_cmp_epu8_mask(tos, _mm_loadu_si128((const void *)t->tos_lo), _MM_CMPINT_NLT) &
		     _mm_cmp_epu8_mask(tos, _mm_loadu_si128((const void *)t->tos_hi), _MM_CMPINT_LE);
	}
	if (m != 0 && (t->uses & CMTS_CLS4_SRC))
		m &= cmts_cls4_prefix_avx512(k->src, t->src, t->src_mask);
	if (m != 0 && (t->uses & CMTS_CLS4_DST))
		m &= cmts_cls4_prefix_avx512(k->dst, t->dst, t->dst_mask);
	return cmts_cls4_hit(t, m);
}
#endif

/*
 * An IPv4 frame's filter verdict from its two groups' matches in the SG's
 * lane tables (struct cmts_fg4: CMTS_FG4_* + 1 for the group's first
 * matching rule, 0 for none): CMTS_FV_MATCHED when either group matched,
 * CMTS_FV_DENY when either denied -- ep_acl_lanes_deny's rule; with
 * neither, the SG's default action applies.
 */
#define CMTS_FV_MATCHED 1
#define CMTS_FV_DENY    2

static __rte_always_inline uint8_t
cmts_fg4_verdict(uint32_t h0, uint32_t h1)
{
	return (uint8_t)(((h0 | h1) != 0 ? CMTS_FV_MATCHED : 0) |
			 (h0 == 1 + CMTS_FG4_DENY || h1 == 1 + CMTS_FG4_DENY ? CMTS_FV_DENY : 0));
}

/* The downstream's address table (struct cmts_addr_tab): home slots and
 * probes.  The CRC32-C instruction as the hash, as rte_hash's. */
static __rte_always_inline uint32_t
cmts_addr4_home(const struct cmts_addr_tab *t, uint32_t a)
{
	return rte_hash_crc_4byte(a, 0) & t->mask4;
}

/* Two 8-byte words copied out: an address in a packet is not 8-byte
 * aligned, which rte_hash_crc's word loads assume. */
static __rte_always_inline uint32_t
cmts_addr6_home(const struct cmts_addr_tab *t, const uint8_t a[16])
{
	uint64_t w[2];

	memcpy(w, a, 16);
	return rte_hash_crc_8byte(w[1], rte_hash_crc_8byte(w[0], 0)) & t->mask6;
}

/** CM id of IPv4 address @p a (host order) from home slot @p h, 0: none. */
static __rte_always_inline uint32_t
cmts_addr4_find(const struct cmts_addr_tab *t, uint32_t a, uint32_t h)
{
	for (;; h = (h + 1) & t->mask4) {
		uint64_t v = t->s4[h];

		if ((uint32_t)(v >> 32) == a && (uint32_t)v != 0)
			return (uint32_t)v;
		if (v == 0)
			return 0;
	}
}

static __rte_always_inline uint32_t
cmts_addr6_find(const struct cmts_addr_tab *t, const uint8_t a[16], uint32_t h)
{
	for (;; h = (h + 1) & t->mask6) {
		const struct cmts_addr6_slot *s = &t->s6[h];

		if (s->id == 0)
			return 0;
		if (memcmp(s->a, a, 16) == 0)
			return s->id;
	}
}

/** The current record of a CM id, NULL when it is gone. */
static __rte_always_inline const struct cmts_cm *
cmts_cm_of(const struct cmts_sg *sg, uint32_t id)
{
	return likely(id != 0 && id <= sg->p.max_cms) ? __atomic_load_n(&sg->cms[id],
									__ATOMIC_ACQUIRE) : NULL;
}

/** An SF's meter profile: rte_meter takes it non-const but only reads it
 *  (the record is immutable). */
static __rte_always_inline struct rte_meter_srtcm_profile *
cmts_sf_prof(const struct cmts_cm *cm, uint8_t s)
{
	return (struct rte_meter_srtcm_profile *)(uintptr_t)&cm->sf_prof[s];
}

/** The worker's state of a CM, reset when the record is a different CM
 *  (frames of the CM before it may still wait in its SF queues). */
static __rte_always_inline struct cmts_ds_dyn *
cmts_ds_dyn_of(struct cmts_ds *d, const struct cmts_cm *cm)
{
	struct cmts_ds_dyn *y = &d->dyn[cm->id];

	if (unlikely(y->gen != cm->gen)) {
		memset(y, 0, sizeof(*y));
		y->gen = cm->gen;
		for (int s = 0; s < CMTS_MAX_SF; s++) {
			if (cm->sf_shaped & (1u << s))
				rte_meter_srtcm_config(&y->sf[s].meter, cmts_sf_prof(cm, s));
			if (d->sfq[cm->id * CMTS_MAX_SF + s].n != 0)
				y->sf_queued |= (uint16_t)(1u << s);
		}
	}
	return y;
}

/* Scheduler internals shared by the stages and the service hook. */
int cmts_sched_init(struct cmts_ds *d, int socket, struct ep_err *err);
void cmts_sched_fini(struct cmts_ds *d);
/* DEPI internals. */
int cmts_depi_init(struct cmts_ds *d, int socket, struct ep_err *err);
void cmts_depi_fini(struct cmts_ds *d);
/* Crypto internals (cmts_crypto.c). */
int cmts_crypto_worker_init(struct cmts *c, struct rte_mempool **pool,
			    struct rte_crypto_op ***free_ops, uint32_t *n_free, uint16_t *qp,
			    const char *name, int socket, struct ep_err *err);
/** What one DOCSIS operation covers: CRC-32 over [crc_off, crc_off +
 *  crc_len) written after it, AES over [cipher_off, cipher_off + cipher_len);
 *  a length of 0 skips that part. */
struct cmts_crypto_range {
	uint32_t crc_off, crc_len, cipher_off, cipher_len;
};
/**
 * One operation on @p len bytes at @p buf, synchronously, through queue
 * pair @p qp (nobody else's): control path only (the generator's frames,
 * tests).  The bytes go through a scratch mbuf of @p mbufs and come back in
 * place.  0, or -1 when the device failed it or nothing was free.
 */
int cmts_crypto_once(struct cmts *c, uint16_t qp, struct rte_mempool *ops,
		     struct rte_mempool *mbufs, void *sess, const uint8_t iv[16], uint8_t *buf,
		     uint32_t len, const struct cmts_crypto_range *r);
void cmts_crypto_worker_fini(struct rte_mempool *pool, struct rte_crypto_op **free_ops,
			     uint32_t n_free);
/** Dequeue completed downstream operations (service hook): returns mbufs
 *  ready for the depi stage, frees failed ones. */
uint16_t cmts_ds_crypto_drain(struct cmts_ds *d, struct rte_mbuf **out, uint16_t max);

#endif
