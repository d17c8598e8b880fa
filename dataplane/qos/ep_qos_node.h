/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * QoS fast path: a policer's per-flow context and the colour check; a
 * scheduling port's packet path, enqueue and dequeue (ours or rte_sched,
 * one predictable branch a call).
 *
 * A context is the rte_meter state of one flow (a subscriber, a service
 * flow) on one worker, written by that worker only, plus the profile it was
 * armed for: when the published profile pointer differs (a new flow, a
 * changed profile), the context is re-armed with full buckets before the
 * packet is measured.  rte_meter's colour check is two 64-bit divisions a
 * packet; the clock is the TSC a stage already read (w->stage_tsc).
 */
#ifndef EP_QOS_NODE_H
#define EP_QOS_NODE_H

#include <string.h>

#include <rte_mbuf.h>
#include <rte_meter.h>
#include <rte_sched.h>

#include "ep_ip.h"
#include "ep_qos.h"

struct ep_policer_ctx {
	union {
		struct rte_meter_trtcm m2698;
		struct rte_meter_trtcm_rfc4115 m4115;
	};
	const struct ep_policer *pol;   /**< profile the meter is armed for */
};

/** The published profile @p idx of @p t (worker side, once per packet). */
static __rte_always_inline struct ep_policer *
ep_policer_read(const struct ep_policers *t, uint16_t idx)
{
	return __atomic_load_n(&t->pol[idx], __ATOMIC_ACQUIRE);
}

/** Colour of a packet of @p len bytes at TSC @p now (colour blind). */
static __rte_always_inline enum rte_color
ep_policer_color(struct ep_policer_ctx *c, struct ep_policer *p, uint64_t now, uint32_t len)
{
	if (unlikely(c->pol != p)) {
		/* New flow or new profile: buckets full from now. */
		if (p->mode == EP_POLICER_RFC2698)
			rte_meter_trtcm_config(&c->m2698, &p->p2698);
		else
			rte_meter_trtcm_rfc4115_config(&c->m4115, &p->p4115);
		c->m2698.time_tc = c->m2698.time_tp = now;
		c->pol = p;
	}
	return p->mode == EP_POLICER_RFC2698 ?
		rte_meter_trtcm_color_blind_check(&c->m2698, &p->p2698, now, len) :
		rte_meter_trtcm_rfc4115_color_blind_check(&c->m4115, &p->p4115, now, len);
}

/** Remark a yellow packet's DSCP as the profile says (RFC 1624 update). */
static __rte_always_inline void
ep_policer_remark_yellow(const struct ep_policer *p, uint8_t *l3, uint8_t l3_type)
{
	uint8_t dscp = ep_ip_dscp(l3, l3_type);

	if (p->yellow_dscp[dscp] != dscp)
		ep_ip_set_dscp(l3, l3_type, p->yellow_dscp[dscp]);
}

/* ---- schedulers ---- */

/** Ours (sp->hs set): the path's class part, the 64 bits of
 *  mbuf->hash.sched for traffic class @p tc and best-effort queue @p q with
 *  pipe 0 -- a per-DSCP table of these makes a packet's path one OR and one
 *  64-bit store (ep_hsched_path_write). */
static inline uint64_t
ep_hsched_class_path(uint32_t tc, uint32_t q)
{
	/* Queue 0-11: the strict TCs, 12-15: best effort's four. */
	const struct rte_mbuf_sched s = {
		.queue_id = tc < RTE_SCHED_TRAFFIC_CLASS_BE ? tc : tc + (q & 3),
		.traffic_class = (uint8_t)tc,
		.color = RTE_COLOR_GREEN,
	};
	uint64_t w;

	RTE_BUILD_BUG_ON(sizeof(s) != sizeof(w));
	memcpy(&w, &s, sizeof(w));
	return w;
}

/** Ours: the path of class path @p cls (ep_hsched_class_path) in pipe
 *  (subport, pipe) of a port whose pipes are 1 << @p pipes_log2 a subport,
 *  stored in one go. */
static __rte_always_inline void
ep_hsched_path_write(struct rte_mbuf *m, uint32_t pipes_log2, uint32_t subport,
		     uint32_t pipe, uint64_t cls)
{
	uint64_t w = cls | (uint64_t)((subport << pipes_log2 | pipe) << 4);

	memcpy(&m->hash.sched, &w, sizeof(w));
}

/** Record packet @p m's path: (subport, pipe), traffic class @p tc (0-12)
 *  and, in best effort, queue @p q (0-3). */
static __rte_always_inline void
ep_sched_pkt_write(const struct ep_sched_port *sp, struct rte_mbuf *m, uint32_t subport,
		   uint32_t pipe, uint32_t tc, uint32_t q)
{
	if (likely(sp->hs != NULL)) {
		ep_hsched_path_write(m, sp->pipes_log2, subport, pipe, ep_hsched_class_path(tc, q));
	} else {
		rte_sched_port_pkt_write(sp->port, m, subport, pipe, tc, q, RTE_COLOR_GREEN);
	}
}

/** The path ep_sched_pkt_write recorded. */
static inline void
ep_sched_pkt_read(const struct ep_sched_port *sp, const struct rte_mbuf *m, uint32_t *subport,
		  uint32_t *pipe, uint32_t *tc, uint32_t *q)
{
	if (sp->hs != NULL) {
		uint32_t id = m->hash.sched.queue_id;

		*subport = id >> 4 >> sp->pipes_log2;
		*pipe = (id >> 4) & ((1u << sp->pipes_log2) - 1);
		*tc = m->hash.sched.traffic_class;
		*q = *tc == RTE_SCHED_TRAFFIC_CLASS_BE ? (id & 15) - RTE_SCHED_TRAFFIC_CLASS_BE : 0;
	} else {
		rte_sched_port_pkt_read_tree_path(sp->port, m, subport, pipe, tc, q);
	}
}

/** Into their queues; what a full queue refuses is freed (tail drop, the
 *  caller counts n - returned under its reason). */
static __rte_always_inline uint32_t
ep_sched_enqueue(struct ep_sched_port *sp, struct rte_mbuf **pkts, uint32_t n)
{
	if (likely(sp->hs != NULL))
		return ep_hsched_enqueue(sp->hs, pkts, n);
	return (uint32_t)rte_sched_port_enqueue(sp->port, pkts, n);
}

/** Up to @p n packets the hierarchy lets go; ours reads time from @p now
 *  (TSC), rte_sched reads the TSC itself. */
static __rte_always_inline uint32_t
ep_sched_dequeue(struct ep_sched_port *sp, struct rte_mbuf **pkts, uint32_t n, uint64_t now)
{
	if (likely(sp->hs != NULL))
		return ep_hsched_dequeue(sp->hs, pkts, n, now);
	return (uint32_t)rte_sched_port_dequeue(sp->port, pkts, n);
}

#endif
