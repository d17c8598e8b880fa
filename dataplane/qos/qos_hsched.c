/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * edgeplane's own hierarchical scheduler (ep_qos.h, impl "ep"): the five
 * levels and the configuration of rte_sched, without its cost.
 *
 * Why not rte_sched on the vBNG downlink: rte_sched's enqueue + dequeue
 * measured 214 cycles of the worker's 379 a packet (AMD Zen 4, 4096 pipes,
 * 504 B frames; docs/bng.md), as much as DPDK's qos_sched scheduler thread
 * spends on everything, so a worker that also parses, looks up and
 * encapsulates could not keep up with it.  Where it goes: a four-stage
 * grinder pipeline over 8 grinders (a pipe's whole state copied into the
 * grinder, per-queue prefetch stages), a queue array and a queue-extra
 * array apart from the pipe, port time kept in bytes and resynchronised
 * with a division, and credits re-derived on every grinder switch.  Here
 * (measured in test_qos's same-input comparison and test_bng_cycles):
 *
 *   enqueue   one write to the pipe's second line (queue write counter,
 *             non-empty mask) and one slot; into an empty pipe, the packet
 *             itself goes in that line (solo, no slot line: the
 *             uncongested case, one line a packet fewer) and the
 *             active-pipe bitmap (rte_bitmap) is set
 *   dequeue   next active pipe from a 64-bit slab of the bitmap (the next
 *             one prefetched), refill its token bucket from the TSC with
 *             one multiply (rate in bytes per cycle, 32.32 fixed point; no
 *             division per packet or per pipe), reset its TC credits if
 *             its tc_period is over, then send from the highest-priority
 *             non-empty traffic class for as long as every level's credits
 *             cover the frame: port, subport (bucket and TC), pipe (bucket
 *             and TC).  Best effort's four queues are picked by the least
 *             WRR tokens (bytes x 65536 / weight).  A pipe holding one
 *             packet (solo) is sent without the queue loop: one credit
 *             check, no slot, no queue choice, no WRR update (in
 *             test_bng_cycles 27.3 -> 21.5 cycles a packet;
 *             docs/benchmarks/bng-downlink-passes-later.md, "The
 *             record's first line")
 *
 * Per-pipe state is two cache lines (struct hs_pipe): line 0 is what only
 * the dequeue reads (buckets and TC credits), line 1 what both touch
 * (queue counters, non-empty mask, WRR tokens).  Queue counters are 8-bit,
 * so queues hold at most 128 packets here (rte_sched: 4096).
 *
 * What differs from rte_sched (docs/bng.md, "Our scheduler"):
 *   - the port rate is a token bucket of 32 MTUs refilled from the TSC;
 *     rte_sched's port rate is the clock that converts time into bytes
 *   - a pipe, once visited, sends until its credits, its queues or the
 *     caller's burst run out (rte_sched's grinder does the same per
 *     traffic class); pipes are visited round robin from the bitmap, and
 *     one its subport stopped before it sent keeps its turn
 *   - no best-effort oversubscription controller (tc_ov): an instance with
 *     a subport that asks for it, or queues over 128 packets, gets
 *     rte_sched (impl "auto", the default)
 *   - time is the caller's TSC (`now`), so tests drive it
 */
/* rte_bitmap's slab helpers and rte_sched's PIE inlines (ep_qos.h) are
 * still experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <string.h>

#include <rte_bitmap.h>
#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "ep_qos.h"

#define N_TC    RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE      /* 13 */
#define TC_BE   RTE_SCHED_TRAFFIC_CLASS_BE              /* 12 */
#define N_Q     16                                      /* 12 strict + 4 best effort */
#define BE_MASK 0xf000u
#define FP      32                                      /* credits: 32.32 fixed point */
#define MAX_QSIZE 128                                   /* 8-bit queue counters */
#define PORT_TB_MTUS 32

/* A token bucket's parameters, precomputed for the TSC. */
struct hs_tb {
	uint64_t rate_fp;               /* bytes per TSC cycle << FP */
	uint64_t size_fp;               /* bucket size << FP */
	uint64_t full_cycles;           /* cycles from empty to full: the refill bound */
	uint64_t tc_period;             /* TSC cycles */
	uint32_t tc_credits[N_TC];      /* bytes per tc_period */
};

struct hs_prof {
	struct hs_tb tb;
	uint32_t wrr_cost[4];           /* 65536 / weight: WRR tokens per byte */
};

/* Exactly two lines (the assertion below): the enqueue's fields from qmask on
 * all in line 1, which is the one line it touches.  In this order: with
 * qmask after the union, the 8-byte-aligned union started at 80 and qw
 * ran to 132, a third line a pipe (192 bytes), best effort's write
 * counters alone in it -- a second line, never prefetched, for every
 * best-effort packet enqueued. */
struct hs_pipe {
	/* Line 0: buckets (dequeue only). */
	uint64_t tb_time;               /* TSC of the last refill */
	uint64_t tb_credits;            /* bytes << FP */
	uint64_t tc_time;               /* TSC when the TC credits are next reset */
	uint32_t tc_credits[N_TC];      /* bytes left this tc_period (10 on line 0) */
	/* Line 1: queues (enqueue and dequeue). */
	uint16_t qmask;                 /* non-empty queues: bit q */
	uint8_t prof;                   /* slot of its profile */
	uint8_t has_solo;
	union {
		uint32_t wrr_tokens[4];
		/* With has_solo: the pipe's only packet, in queue
		 * ctz(qmask), kept here instead of in its slot (hs_slot). */
		struct rte_mbuf *solo;
	};
	uint8_t qr[N_Q], qw[N_Q];       /* read and write counters, 0 again when empty */
} __rte_cache_aligned;

_Static_assert(sizeof(struct hs_pipe) == 2 * RTE_CACHE_LINE_SIZE &&
	       offsetof(struct hs_pipe, qmask) >= RTE_CACHE_LINE_SIZE,
	       "a pipe is two lines, the enqueue's fields in the second");

struct hs_subport {
	uint64_t tb_time, tb_credits, tc_time;
	uint32_t tc_credits[N_TC];
	struct hs_tb tb;
};

struct ep_hsched {
	/* Written by the worker on every call. */
	uint64_t port_time, port_credits;
	uint64_t slab;                  /* active pipes of the bitmap slab left to visit */
	uint32_t slab_pos;
	uint32_t n_active;              /* pipes in the bitmap */
	uint32_t scans;                 /* slabs fetched */
	uint64_t tc_pkts[N_TC], tc_dropped[N_TC];
	/* Fixed once built. */
	struct hs_pipe *pipes;
	struct rte_mbuf **slots;        /* [pipe][queue][position]: hs_slot() */
	struct rte_bitmap *active;
	struct hs_subport *sub;
	struct hs_prof *prof;           /* [EP_SCHED_MAX_PROFILES] */
	struct hs_tb port_tb;           /* rate and size only */
	uint64_t hz;
	uint32_t n_pipes, pipes_log2, n_subports;
	uint32_t qsize, qsize_log2;
	uint32_t overhead;
};

/* The slot of queue @p q of pipe @p gid at counter value @p pos:
 * [pipe][queue][position].  A pipe's first packet is not written here at
 * all (hs_pipe.solo), and a queue that empties starts again at position 0
 * (pipe_visit): a queue that holds a few packets at a time keeps writing
 * its first line instead of walking its ring through a 16 (qsize 32) or
 * 32 MiB (qsize 64) array, and a backlogged one reads 8 slots a line. */
static __rte_always_inline struct rte_mbuf **
hs_slot(const struct ep_hsched *h, uint32_t gid, uint32_t q, uint32_t pos)
{
	return &h->slots[((gid << 4 | q) << h->qsize_log2) | (pos & (h->qsize - 1))];
}

bool
ep_hsched_supports(const struct ep_sched *s, struct ep_err *err)
{
	if (s->p.qsize > MAX_QSIZE)
		return ep_err_set(err, "scheduler %s: impl ep keeps queues of up to %d packets "
				  "(hqos_qsize %u): use impl rte_sched", s->name, MAX_QSIZE,
				  s->p.qsize), false;
	for (uint32_t i = 0; i < s->n_subports; i++)
		if (s->sub[i].in_use && s->sub[i].tc_ov)
			return ep_err_set(err, "scheduler %s: subport %u: tc_ov needs impl rte_sched",
					  s->name, i), false;
	return true;
}

/* ---- parameters into TSC units ---- */

static void
tb_build(struct hs_tb *t, uint64_t hz, uint64_t rate, uint64_t size, const uint64_t *tc_rate,
	 uint64_t tc_period_ms)
{
	uint64_t tcp = tc_period_ms * hz / 1000;

	t->rate_fp = (uint64_t)(((unsigned __int128)rate << FP) / hz);
	if (t->rate_fp == 0)
		t->rate_fp = 1;
	size = RTE_MIN(size, (uint64_t)INT32_MAX);
	t->size_fp = size << FP;
	t->full_cycles = t->size_fp / t->rate_fp + 1;
	t->tc_period = tcp != 0 ? tcp : 1;
	for (int c = 0; c < N_TC; c++)
		t->tc_credits[c] = (uint32_t)RTE_MIN(tc_rate[c] * tc_period_ms / 1000,
						     (uint64_t)UINT32_MAX);
}

void
ep_hsched_profile_set(struct ep_hsched *h, uint32_t slot, const struct rte_sched_pipe_params *p)
{
	struct hs_prof *pr = &h->prof[slot];

	tb_build(&pr->tb, h->hz, p->tb_rate, p->tb_size, p->tc_rate, p->tc_period);
	for (int q = 0; q < 4; q++)
		pr->wrr_cost[q] = (65536u + p->wrr_weights[q] / 2) / RTE_MAX(p->wrr_weights[q], 1);
}

/* Credits of a bucket refilled from @p *time to @p now, capped at its size. */
static __rte_always_inline uint64_t
tb_refill(const struct hs_tb *t, uint64_t credits, uint64_t *time, uint64_t now)
{
	uint64_t dt = now - *time;

	if (unlikely((int64_t)dt <= 0))
		return credits;         /* a caller's clock behind ours: no time passed */
	*time = now;
	if (unlikely(dt >= t->full_cycles))
		return t->size_fp;
	credits += dt * t->rate_fp;
	return credits < t->size_fp ? credits : t->size_fp;
}

void
ep_hsched_pipe_config(struct ep_hsched *h, uint32_t subport, uint32_t pipe, uint32_t slot)
{
	struct hs_pipe *p = &h->pipes[subport << h->pipes_log2 | pipe];
	const struct hs_prof *pr = &h->prof[slot];

	/* As rte_sched_pipe_config: half a bucket, a fresh TC period.  Queued
	 * packets stay. */
	p->prof = (uint8_t)slot;
	p->tb_time = h->port_time;
	p->tb_credits = pr->tb.size_fp / 2;
	p->tc_time = h->port_time + pr->tb.tc_period;
	memcpy(p->tc_credits, pr->tb.tc_credits, sizeof(p->tc_credits));
}

/* ---- build ---- */

struct ep_hsched *
ep_hsched_create(const struct ep_sched *s, int socket, struct ep_err *err)
{
	struct ep_hsched *h;
	uint32_t bmp_size;
	uint64_t now = rte_get_tsc_cycles();

	if (!ep_hsched_supports(s, err))
		return NULL;
	h = rte_zmalloc_socket("ep_hsched", sizeof(*h), RTE_CACHE_LINE_SIZE, socket);
	if (h == NULL)
		return ep_err_set(err, "scheduler %s: out of memory", s->name), NULL;
	h->hz = rte_get_tsc_hz();
	h->n_subports = s->n_subports;
	h->pipes_log2 = rte_log2_u32(s->max_pipes);
	h->n_pipes = s->n_subports << h->pipes_log2;
	h->qsize = s->p.qsize;
	h->qsize_log2 = rte_log2_u32(s->p.qsize);
	h->overhead = s->p.frame_overhead;
	h->port_time = now;
	bmp_size = rte_bitmap_get_memory_footprint(h->n_pipes);
	h->pipes = rte_zmalloc_socket("ep_hsched_pipes", sizeof(h->pipes[0]) * h->n_pipes,
				      RTE_CACHE_LINE_SIZE, socket);
	h->slots = rte_malloc_socket("ep_hsched_slots",
				     sizeof(h->slots[0]) * h->n_pipes * N_Q * h->qsize,
				     RTE_CACHE_LINE_SIZE, socket);
	h->sub = rte_zmalloc_socket("ep_hsched_sub", sizeof(h->sub[0]) * h->n_subports,
				    RTE_CACHE_LINE_SIZE, socket);
	h->prof = rte_zmalloc_socket("ep_hsched_prof", sizeof(h->prof[0]) * EP_SCHED_MAX_PROFILES,
				     RTE_CACHE_LINE_SIZE, socket);
	{
		void *mem = rte_zmalloc_socket("ep_hsched_bmp", bmp_size, RTE_CACHE_LINE_SIZE,
					       socket);

		h->active = mem != NULL ? rte_bitmap_init(h->n_pipes, mem, bmp_size) : NULL;
		if (h->active == NULL)
			rte_free(mem);
	}
	if (h->pipes == NULL || h->slots == NULL || h->sub == NULL || h->prof == NULL ||
	    h->active == NULL) {
		ep_hsched_free(h);
		return ep_err_set(err, "scheduler %s: out of memory for %u pipes", s->name,
				  h->n_pipes), NULL;
	}
	h->port_tb.rate_fp = (uint64_t)(((unsigned __int128)s->p.rate << FP) / h->hz);
	h->port_tb.size_fp = (uint64_t)PORT_TB_MTUS * s->p.mtu << FP;
	h->port_tb.full_cycles = h->port_tb.size_fp / RTE_MAX(h->port_tb.rate_fp, 1ull) + 1;
	h->port_credits = h->port_tb.size_fp;
	for (uint32_t i = 0; i < s->n_subports; i++) {
		const struct rte_sched_subport_profile_params *sp = &s->sub[i].prof;
		struct hs_subport *hs = &h->sub[i];

		tb_build(&hs->tb, h->hz, sp->tb_rate, sp->tb_size, sp->tc_rate, sp->tc_period);
		hs->tb_time = now;
		hs->tb_credits = hs->tb.size_fp;
		hs->tc_time = now + hs->tb.tc_period;
		memcpy(hs->tc_credits, hs->tb.tc_credits, sizeof(hs->tc_credits));
	}
	for (uint32_t k = 0; k < s->n_slots; k++)
		ep_hsched_profile_set(h, k, &s->slot[k]);
	for (uint32_t i = 0; i < s->n_subports; i++)
		for (uint32_t j = 0; j < s->sub[i].n_pipes; j++)
			if (s->sub[i].pipe_prof[j] != EP_SCHED_NO_PROFILE)
				ep_hsched_pipe_config(h, i, j, s->prof[s->sub[i].pipe_prof[j]].slot);
	return h;
}

void
ep_hsched_free(struct ep_hsched *h)
{
	if (h == NULL)
		return;
	/* Packets still queued go back to their pools. */
	for (uint32_t gid = 0; h->pipes != NULL && h->slots != NULL && gid < h->n_pipes; gid++) {
		struct hs_pipe *sp = &h->pipes[gid];

		if (sp->has_solo) {
			rte_pktmbuf_free(sp->solo);
			sp->qr[__builtin_ctz(sp->qmask)]++;
			sp->has_solo = 0;
		}
		for (uint32_t q = 0; q < N_Q; q++)
			for (struct hs_pipe *p = &h->pipes[gid]; p->qr[q] != p->qw[q]; p->qr[q]++)
				rte_pktmbuf_free(*hs_slot(h, gid, q, p->qr[q]));
	}
	if (h->active != NULL)
		rte_free(h->active);
	rte_free(h->prof);
	rte_free(h->sub);
	rte_free(h->slots);
	rte_free(h->pipes);
	rte_free(h);
}

uint64_t
ep_hsched_memory(uint32_t n_subports, uint32_t max_pipes, uint32_t qsize)
{
	uint64_t n = (uint64_t)n_subports * rte_align32pow2(max_pipes);

	return n * (sizeof(struct hs_pipe) + (uint64_t)N_Q * qsize * sizeof(struct rte_mbuf *)) +
	       rte_bitmap_get_memory_footprint((uint32_t)n) + sizeof(struct ep_hsched) +
	       sizeof(struct hs_prof) * EP_SCHED_MAX_PROFILES +
	       sizeof(struct hs_subport) * n_subports;
}

/* ---- fast path ---- */

uint32_t
ep_hsched_enqueue(struct ep_hsched *h, struct rte_mbuf **pkts, uint32_t n)
{
	uint32_t ok = 0, qmax = h->qsize;

	for (uint32_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint32_t id = m->hash.sched.queue_id, gid = id >> 4, q = id & (N_Q - 1);
		uint32_t tc = m->hash.sched.traffic_class;
		struct hs_pipe *p;

		if (i + 4 < n)
			rte_prefetch0(&h->pipes[(pkts[i + 4]->hash.sched.queue_id >> 4) &
						(h->n_pipes - 1)].wrr_tokens);
		if (unlikely(gid >= h->n_pipes || tc > TC_BE)) {
			rte_pktmbuf_free(m);
			h->tc_dropped[TC_BE]++;
			continue;
		}
		p = &h->pipes[gid];
		if (unlikely((uint8_t)(p->qw[q] - p->qr[q]) >= qmax)) {
			/* Tail drop: the caller counts it under its reason. */
			rte_pktmbuf_free(m);
			h->tc_dropped[tc]++;
			continue;
		}
		if (p->qmask == 0) {
			/* Into an empty pipe: kept in the pipe's line (solo),
			 * no slot line.  Best effort's WRR tokens are reset as
			 * each queue turns non-empty, so while the pipe holds
			 * one packet they carry nothing and lend it their bytes. */
			p->solo = m;
			p->has_solo = 1;
			p->qw[q]++;
			p->qmask = (uint16_t)(1u << q);
			rte_bitmap_set(h->active, gid);
			h->n_active++;
			h->tc_pkts[tc]++;
			ok++;
			continue;
		}
		if (p->has_solo) {
			/* A second packet: the first one to its slot. */
			uint32_t q0 = (uint32_t)__builtin_ctz(p->qmask);

			*hs_slot(h, gid, q0, p->qr[q0]) = p->solo;
			p->has_solo = 0;
			memset(p->wrr_tokens, 0, sizeof(p->wrr_tokens));
		}
		*hs_slot(h, gid, q, p->qw[q]) = m;
		p->qw[q]++;
		if (!(p->qmask & (1u << q))) {
			p->qmask |= (uint16_t)(1u << q);
			if (q >= TC_BE)
				p->wrr_tokens[q - TC_BE] = 0;
		}
		h->tc_pkts[tc]++;
		ok++;
	}
	return ok;
}

/* The next pipe of the bitmap, round robin, or -1; the one after it is
 * prefetched. */
static __rte_always_inline int64_t
next_pipe(struct ep_hsched *h)
{
	uint32_t bit;
	int64_t gid;

	if (h->slab == 0) {
		uint32_t pos = 0;
		uint64_t slab = 0;

		if (rte_bitmap_scan(h->active, &pos, &slab) == 0)
			return -1;
		h->slab_pos = pos;
		h->slab = slab;
		h->scans++;
	}
	bit = (uint32_t)__builtin_ctzll(h->slab);
	h->slab &= h->slab - 1;
	gid = h->slab_pos + bit;
	if (h->slab != 0) {
		const struct hs_pipe *nx = &h->pipes[h->slab_pos + __builtin_ctzll(h->slab)];

		rte_prefetch0(nx);
		rte_prefetch0(&nx->wrr_tokens);
	}
	return gid;
}

/* Best effort's queue with the least WRR tokens among @p mask's. */
static __rte_always_inline uint32_t
wrr_pick(const struct hs_pipe *p, uint32_t mask)
{
	uint32_t best = 0, min = UINT32_MAX;

	for (uint32_t b = mask >> TC_BE; b != 0; b &= b - 1) {
		uint32_t q = (uint32_t)__builtin_ctz(b);

		if (p->wrr_tokens[q] < min) {
			min = p->wrr_tokens[q];
			best = q;
		}
	}
	return TC_BE + best;
}

enum { HS_GO, HS_SUBPORT_TC, HS_SUBPORT_EMPTY, HS_PORT_EMPTY };
enum { HS_TAKEN, HS_STOP, HS_CLASS_WAITS };

/* Every level's credits for @p len bytes of class @p tc, taken if they all
 * cover it (HS_TAKEN).  HS_STOP: the port's, the subport's (*blocked says
 * which) or the pipe's bucket is short, no class of the pipe can go;
 * HS_CLASS_WAITS: this class waits for its next period (*blocked set when
 * it is the subport's), lower ones may go. */
static __rte_always_inline int
credits_take(struct ep_hsched *h, struct hs_subport *sp, struct hs_pipe *p, uint64_t *ptb,
	     uint32_t tc, uint32_t len, int *blocked)
{
	uint64_t len_fp = (uint64_t)len << FP;

	if (len_fp > h->port_credits) {
		*blocked = HS_PORT_EMPTY;
		return HS_STOP;
	}
	if (len_fp > sp->tb_credits) {
		*blocked = HS_SUBPORT_EMPTY;
		return HS_STOP;
	}
	if (len_fp > *ptb)
		return HS_STOP;
	if (len > p->tc_credits[tc] || len > sp->tc_credits[tc]) {
		if (len > sp->tc_credits[tc])
			*blocked = HS_SUBPORT_TC;
		return HS_CLASS_WAITS;
	}
	h->port_credits -= len_fp;
	sp->tb_credits -= len_fp;
	*ptb -= len_fp;
	p->tc_credits[tc] -= len;
	sp->tc_credits[tc] -= len;
	return HS_TAKEN;
}

/* Send from pipe @p gid: returns packets written to @p out (up to @p room);
 * *blocked says when the subport's or the port's bucket ran out, or a
 * class waited for the subport's TC credits. */
static __rte_always_inline uint32_t
pipe_visit(struct ep_hsched *h, uint32_t gid, uint64_t now, struct rte_mbuf **out,
	   uint32_t room, int *blocked)
{
	struct hs_pipe *p = &h->pipes[gid];
	struct hs_subport *sp = &h->sub[gid >> h->pipes_log2];
	const struct hs_prof *pr = &h->prof[p->prof];
	uint32_t mask = p->qmask, sent = 0;
	uint64_t ptb;

	ptb = tb_refill(&pr->tb, p->tb_credits, &p->tb_time, now);
	if (unlikely(now >= p->tc_time)) {
		memcpy(p->tc_credits, pr->tb.tc_credits, sizeof(p->tc_credits));
		p->tc_time = now + pr->tb.tc_period;
	}
	if (p->has_solo) {
		/* The pipe's only packet (the uncongested case): its queue
		 * is the only one and empties, so no slot, no queue choice
		 * and no WRR bookkeeping (an empty queue's tokens are never
		 * read: reset as it turns non-empty, or the next solo's). */
		uint32_t q = (uint32_t)__builtin_ctz(mask);

		if (credits_take(h, sp, p, &ptb, q < TC_BE ? q : TC_BE,
				 p->solo->pkt_len + h->overhead, blocked) == HS_TAKEN) {
			out[sent++] = p->solo;
			p->has_solo = 0;
			memset(p->wrr_tokens, 0, sizeof(p->wrr_tokens));
			p->qr[q] = p->qw[q] = 0;
			p->qmask = 0;
		}
		mask = 0;
	}
	while (mask != 0 && sent < room) {
		uint32_t q = (mask & 0x0fffu) != 0 ? (uint32_t)__builtin_ctz(mask) :
			     wrr_pick(p, mask);
		uint32_t tc = q < TC_BE ? q : TC_BE;
		struct rte_mbuf *m = *hs_slot(h, gid, q, p->qr[q]);
		uint32_t len = m->pkt_len + h->overhead;
		int took = credits_take(h, sp, p, &ptb, tc, len, blocked);

		if (took == HS_STOP)
			break;
		if (took == HS_CLASS_WAITS) {
			mask &= tc == TC_BE ? ~BE_MASK : ~(1u << q);
			continue;
		}
		out[sent++] = m;
		if (++p->qr[q] == p->qw[q]) {
			/* Empty: back to position 0 (hs_slot). */
			p->qr[q] = p->qw[q] = 0;
			p->qmask &= (uint16_t)~(1u << q);
			mask &= ~(1u << q);
		}
		if (q >= TC_BE) {
			uint32_t min = UINT32_MAX;

			p->wrr_tokens[q - TC_BE] += len * pr->wrr_cost[q - TC_BE];
			for (uint32_t b = p->qmask >> TC_BE; b != 0; b &= b - 1)
				min = RTE_MIN(min, p->wrr_tokens[__builtin_ctz(b)]);
			for (uint32_t b = p->qmask >> TC_BE; b != 0; b &= b - 1)
				p->wrr_tokens[__builtin_ctz(b)] -= min;
		}
	}
	p->tb_credits = ptb;
	if (p->qmask == 0) {
		rte_bitmap_clear(h->active, gid);
		h->n_active--;
	}
	return sent;
}

uint32_t
ep_hsched_dequeue(struct ep_hsched *h, struct rte_mbuf **pkts, uint32_t n, uint64_t now)
{
	uint32_t out = 0, idle = 0, idle_max, all = (1u << h->n_subports) - 1, full = 0;
	uint64_t deferred = 0;
	uint32_t scans = h->scans;

	h->port_credits = tb_refill(&h->port_tb, h->port_credits, &h->port_time, now);
	if (h->n_active == 0)
		return 0;
	for (uint32_t i = 0; i < h->n_subports; i++) {
		struct hs_subport *sp = &h->sub[i];

		sp->tb_credits = tb_refill(&sp->tb, sp->tb_credits, &sp->tb_time, now);
		if (unlikely(now >= sp->tc_time)) {
			memcpy(sp->tc_credits, sp->tb.tc_credits, sizeof(sp->tc_credits));
			sp->tc_time = now + sp->tb.tc_period;
		}
	}
	/* Pipes that sent nothing (out of their own credits) are passed over;
	 * once every active pipe (at most 64) was in a row, the rest waits for
	 * the next call.  A pipe its subport's credits (bucket or a class's)
	 * stopped before it sent anything keeps its turn: it is visited first
	 * next call (deferred, put back in the slab, and the call does not
	 * wrap around past it), so a subport's pipes share it evenly; when every subport is
	 * out, or the port, the call ends. */
	idle_max = RTE_MIN(h->n_active, 64u);
	while (out < n) {
		int64_t gid;
		uint32_t k, sub;
		int blocked = HS_GO;

		if (deferred != 0 && h->slab == 0)
			break;          /* no wrap-around past a pipe that keeps its turn */
		gid = next_pipe(h);
		if (gid < 0)
			break;
		if (h->scans != scans) {
			deferred = 0;   /* a new slab: the deferred pipes' bits are still in the bitmap */
			scans = h->scans;
		}
		if (h->pipes[gid].qmask == 0)
			continue;       /* emptied after its slab was read */
		sub = (uint32_t)gid >> h->pipes_log2;
		if (full & (1u << sub)) {
			deferred |= 1ull << (gid - h->slab_pos);
			continue;
		}
		k = pipe_visit(h, (uint32_t)gid, now, pkts + out, n - out, &blocked);
		out += k;
		if (unlikely(blocked != HS_GO)) {
			if (k == 0)     /* it had no turn: first next call */
				deferred |= 1ull << (gid - h->slab_pos);
			if (blocked == HS_PORT_EMPTY)
				break;
			if (k != 0)
				continue;
			full |= 1u << sub;
			if (full == all)
				break;
			continue;
		}
		idle = k != 0 ? 0 : idle + 1;
		if (idle >= idle_max)
			break;
	}
	if (h->scans == scans)
		h->slab |= deferred;
	return out;
}

void
ep_hsched_stats(const struct ep_hsched *h, uint64_t *tc_pkts, uint64_t *tc_dropped)
{
	memcpy(tc_pkts, h->tc_pkts, sizeof(h->tc_pkts));
	memcpy(tc_dropped, h->tc_dropped, sizeof(h->tc_dropped));
}

uint32_t
ep_hsched_queue_len(const struct ep_hsched *h, uint32_t subport, uint32_t pipe, uint32_t q)
{
	const struct hs_pipe *p = &h->pipes[subport << h->pipes_log2 | pipe];

	return (uint8_t)(p->qw[q] - p->qr[q]);
}
