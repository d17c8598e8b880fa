/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * QoS: policers and hierarchical schedulers in named instances any
 * pipeline creates (the vBNG's uplink policers and downlink HQoS; a
 * vCMTS's service flows: subport = channel or bonding group, pipe = cable
 * modem, traffic classes and queues = service flows).  Control-path header;
 * the per-packet helpers are in ep_qos_node.h.
 *
 * Policers (qos_meter.c): DPDK's rte_meter two-rate three-colour markers,
 * RFC 2698 trTCM and RFC 4115 (its EIR variant), split as the library
 * splits them: a shared, precomputed *profile* (rates turned into TSC
 * periods and bytes per period once) and a small per-flow *context* each
 * worker keeps.  Profiles live in a named table, published through an
 * array of pointers; a changed profile is a new one, and a worker notices
 * the pointer changed and re-arms its contexts (full buckets).
 *
 * Schedulers (qos_sched.c): five levels, as DPDK's rte_sched has them
 *
 *   port (rate) -> subport (rate, its pipes) -> pipe (its profile) ->
 *   13 traffic classes (0-11 strict priority, 12 best effort) ->
 *   queues (one per strict TC; 4 WRR queues in best effort)
 *
 * An instance (struct ep_sched) is the tree's description: subports,
 * named pipe profiles, which pipe of which subport is allocated with which
 * profile.  Each worker that schedules owns one rte_sched port built from
 * it (rte_sched is single-threaded), so all agree on subport and pipe ids.
 * After start a port is only touched by its worker: pipe configuration,
 * new profile slots and statistics reads arrive as messages
 * (ep_worker_call) and run between two bursts.
 *
 * Two implementations of one instance (ep_sched_params.impl): our own
 * (qos_hsched.c: the same levels and configuration at about a third of
 * rte_sched's cycles, no tc_ov, queues up to 128 packets) and rte_sched.
 * "auto" (the default) takes ours unless the instance needs what only
 * rte_sched has.  Workers use ep_qos_node.h's ep_sched_pkt_write,
 * ep_sched_enqueue and ep_sched_dequeue, which call either.
 *
 * Units: rates in bytes per second inside (rte_meter, rte_sched), bit/s
 * in text ("20M"); sizes in bytes ("64K", K = 1024).
 */
#ifndef EP_QOS_H
#define EP_QOS_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_meter.h>
#include <rte_sched.h>

#include "ep_err.h"

struct ep_engine;
struct rte_mbuf;
struct ep_worker;

#define EP_QOS_NAME_LEN 32

/* ---- text ---- */

/** "20M" (bit/s; k, M, G = 10^3, 10^6, 10^9).  0 or -1. */
int ep_qos_parse_rate(const char *s, uint64_t *bps);
/** "64K" (bytes; K, M, G = 2^10, 2^20, 2^30).  0 or -1. */
int ep_qos_parse_size(const char *s, uint64_t *bytes);
/** Call @p fn for each "key=value" of @p spec (values without blanks). */
int ep_qos_each_kv(const char *spec,
		   int (*fn)(void *arg, const char *k, const char *v, struct ep_err *err),
		   void *arg, struct ep_err *err);

/* ---- DSCP -> traffic class and queue ---- */

/** A map entry: traffic class << 2 | best-effort queue. */
#define EP_QOS_TCQ(tc, q) ((uint8_t)((tc) << 2 | (q)))
/** RFC 4594's classes onto rte_sched's: EF and VOICE-ADMIT first, network
 *  control next, AFx1-x3 of one class share a TC, CS1 and LE (RFC 8622) go
 *  to the last best-effort queue, everything else best effort. */
void ep_qos_dscp_map_default(uint8_t map[64]);
/** "ef:0 cs6:1 10:12.3 ..." on top of @p map. */
int ep_qos_dscp_map_parse(uint8_t map[64], const char *spec, struct ep_err *err);

/* ---- policers ---- */

#define EP_POLICER_MAX 256

enum ep_policer_mode { EP_POLICER_RFC2698 = 0, EP_POLICER_RFC4115 = 1 };

/** A policer profile: immutable once published. */
struct ep_policer {
	uint8_t mode;                   /**< enum ep_policer_mode */
	uint8_t yellow_dscp[64];        /**< DSCP of a yellow packet, by its DSCP */
	union {
		struct rte_meter_trtcm_profile p2698;
		struct rte_meter_trtcm_rfc4115_profile p4115;
	};
	/* As configured, for listing (bytes/s and bytes). */
	uint64_t cir, cbs, pir, pbs;    /**< pir/pbs are eir/ebs in RFC 4115 mode */
	int yellow;                     /**< -1 bump (AFx1 -> AFx2 -> AFx3), -2 cs0, else a DSCP */
	char name[EP_QOS_NAME_LEN];
};

/** A named table of policer profiles. */
struct ep_policers {
	char name[EP_QOS_NAME_LEN];
	struct ep_engine *e;
	struct ep_policer *pol[EP_POLICER_MAX];     /**< read by workers */
	uint32_t n;
	/** Frees a replaced profile once no worker can hold it; NULL: wait
	 *  for a grace period and free. */
	void (*retire)(void *arg, void *obj);
	void *retire_arg;
};

struct ep_policers *ep_policers_create(struct ep_engine *e, const char *name,
				       struct ep_err *err);
void ep_policers_free(struct ep_policers *t);
/** Index of profile @p name, or -1. */
int ep_policer_find(const struct ep_policers *t, const char *name);
/** Add or change profile @p name: "cir=20M cbs=64K pir=40M pbs=128K
 *  [mode=rfc2698|rfc4115] [yellow=bump|cs0|<dscp>]" (eir/ebs for pir/pbs in
 *  RFC 4115 mode).  Built and checked aside; published whole or not at all. */
int ep_policer_set(struct ep_policers *t, const char *name, const char *spec,
		   struct ep_err *err);
/** The same with rates in bytes/s (tests, callers with numbers). */
int ep_policer_set_raw(struct ep_policers *t, const char *name, enum ep_policer_mode mode,
		       uint64_t cir, uint64_t cbs, uint64_t pir, uint64_t pbs, int yellow,
		       struct ep_err *err);

/* ---- schedulers ---- */

#define EP_SCHED_MAX_SUBPORTS 16
#define EP_SCHED_MAX_PROFILES 256   /**< named pipe profiles, and rte_sched slots */
#define EP_SCHED_NO_PROFILE   UINT16_MAX

/** Which scheduler a port of the instance runs. */
enum ep_sched_impl {
	EP_SCHED_IMPL_AUTO = 0,         /**< ours, rte_sched if a subport has tc_ov or qsize > 128 */
	EP_SCHED_IMPL_EP,               /**< ours (qos_hsched.c) */
	EP_SCHED_IMPL_RTE,              /**< DPDK's rte_sched */
};

/** "auto", "ep", "rte_sched" -> enum ep_sched_impl; -1 if none. */
int ep_sched_impl_parse(const char *s);
extern const char *const ep_sched_impl_names[3];

/** Port-wide parameters. */
struct ep_sched_params {
	uint32_t impl;                  /**< enum ep_sched_impl */
	uint64_t rate;                  /**< bytes/s */
	uint32_t mtu;
	uint32_t frame_overhead;        /**< bytes rte_sched adds per frame (preamble, IFG, FCS) */
	uint32_t qsize;                 /**< packets per queue, a power of two */
};

struct ep_sched_subport {
	bool in_use;
	bool tc_ov;                     /**< best-effort oversubscription: pipes share by tc_ov_weight */
	uint32_t n_pipes;
	struct rte_sched_subport_profile_params prof;
	uint32_t *pipe_free;            /**< stack of free pipe ids */
	uint32_t n_free;
	uint16_t *pipe_prof;            /**< [n_pipes]: profile of each pipe in use, or EP_SCHED_NO_PROFILE */
};

/** A named pipe profile. */
struct ep_sched_profile {
	char name[EP_QOS_NAME_LEN];
	struct rte_sched_pipe_params p; /**< bytes/s */
	uint32_t slot;                  /**< its rte_sched profile slot, the same in every port */
};

struct ep_hsched;

/** One worker's scheduling port of an instance: ours (hs) or rte_sched's
 *  (port), the other NULL. */
struct ep_sched_port {
	struct ep_hsched *hs;
	struct rte_sched_port *port;
	uint32_t pipes_log2;            /**< ours: a pipe's id is subport << pipes_log2 | pipe */
	struct ep_sched *s;
	struct ep_worker *w;
	uint32_t n_slots;               /**< profile slots this port has (see ep_sched_profile_set) */
	/* Statistics accumulated from rte_sched (which clears on read). */
	uint64_t tc_pkts[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE];
	uint64_t tc_dropped[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE];
};

struct ep_sched {
	char name[EP_QOS_NAME_LEN];
	struct ep_engine *e;
	struct ep_sched_params p;
	struct ep_sched_subport sub[EP_SCHED_MAX_SUBPORTS];
	uint32_t n_subports;
	uint32_t max_pipes;             /**< largest subport, a power of two: rte_sched's pipes per subport */
	struct ep_sched_profile prof[EP_SCHED_MAX_PROFILES];
	uint32_t n_prof;
	/* rte_sched's pipe profile table, the same in every subport of every
	 * port: a changed profile takes a new slot (rte_sched has no edit). */
	struct rte_sched_pipe_params slot[EP_SCHED_MAX_PROFILES];
	uint32_t n_slots;
	struct ep_sched_port *ports[16];
	int n_ports;
};

/** One pipe to configure: (subport, pipe) gets profile @p prof (an index
 *  of ep_sched.prof). */
struct ep_sched_pipe_cfg { uint32_t subport, pipe; uint16_t prof; };

void ep_sched_params_default(struct ep_sched_params *p);
/** An instance with one pipe profile, "default" (the whole port rate). */
struct ep_sched *ep_sched_create(struct ep_engine *e, const char *name,
				 const struct ep_sched_params *p, struct ep_err *err);
void ep_sched_free(struct ep_sched *s);
/** Pipes a subport spec asks for (4096 unless `pipes=` says; 0: invalid
 *  spec).  Parse only: callable before the EAL. */
uint32_t ep_sched_spec_pipes(const char *spec);
/** Bytes one scheduling port of these parameters and subports (pipes of
 *  each) takes: rte_sched_port_get_memory_footprint of the shape
 *  ep_sched_port_create builds, 0 if rte_sched refuses it.  Before the EAL. */
uint64_t ep_sched_port_memory(const struct ep_sched_params *p, const uint32_t *pipes,
			      uint32_t n_subports);
/** Subport @p id: "rate=1G pipes=4096 [tb_size=] [tc_rates=r0,..,r12]
 *  [tc_period=ms] [tc_ov=on|off]"; before any port is built only. */
int ep_sched_subport_set(struct ep_sched *s, uint32_t id, const char *spec,
			 struct ep_err *err);
/** Pipe profile @p name: "rate=100M [tb_size=] [tc_rates=r0,..,r12]
 *  [tc_period=ms] [wrr=w0,w1,w2,w3] [tc_ov_weight=]" (NULL spec: the port
 *  rate).  Validated, its slot added to every port, then the pipes that
 *  use the profile are moved to it; nothing changes if any step fails. */
int ep_sched_profile_set(struct ep_sched *s, const char *name, const char *spec,
			 struct ep_err *err);
/** Index of profile @p name, or -1. */
int ep_sched_profile_find(const struct ep_sched *s, const char *name);

/** The rte_sched port of worker @p w, built from the instance's tables
 *  (pipes in use configured). */
struct ep_sched_port *ep_sched_port_create(struct ep_sched *s, struct ep_worker *w,
					   int socket, struct ep_err *err);
void ep_sched_port_free(struct ep_sched_port *sp);

/**
 * Pipes, planned then applied.  ep_sched_pipe_reserve takes a free pipe of
 * @p subport on the control side only (no port changes); ep_sched_pipes_apply
 * configures pipes on every port and records their profiles, or fails (a
 * worker did not answer, rte_sched refused) and records nothing; a reserved
 * pipe that is not wanted after all goes back with ep_sched_pipe_release.
 */
int ep_sched_pipe_reserve(struct ep_sched *s, uint32_t subport, uint32_t *pipe,
			  struct ep_err *err);
void ep_sched_pipe_release(struct ep_sched *s, uint32_t subport, uint32_t pipe);
int ep_sched_pipes_apply(struct ep_sched *s, const struct ep_sched_pipe_cfg *c, uint32_t n,
			 struct ep_err *err);
/** Read (and clear) rte_sched's subport statistics on every port into it. */
int ep_sched_stats_collect(struct ep_sched *s, struct ep_err *err);

/* ---- our scheduler (qos_hsched.c); the worker that owns it only ---- */

/** Whether ours can run instance @p s (err says why not). */
bool ep_hsched_supports(const struct ep_sched *s, struct ep_err *err);
struct ep_hsched *ep_hsched_create(const struct ep_sched *s, int socket, struct ep_err *err);
/** Frees the packets still queued too. */
void ep_hsched_free(struct ep_hsched *h);
uint64_t ep_hsched_memory(uint32_t n_subports, uint32_t max_pipes, uint32_t qsize);
/** Profile slot @p slot gets parameters @p p (bytes/s, ms). */
void ep_hsched_profile_set(struct ep_hsched *h, uint32_t slot,
			   const struct rte_sched_pipe_params *p);
/** Pipe (subport, pipe) uses slot @p slot: half a bucket, a fresh TC period. */
void ep_hsched_pipe_config(struct ep_hsched *h, uint32_t subport, uint32_t pipe,
			   uint32_t slot);
/** Packets with their path in mbuf->hash.sched (ep_sched_pkt_write) into
 *  their queues; a full queue's are freed (tail drop).  Returns how many
 *  were queued. */
uint32_t ep_hsched_enqueue(struct ep_hsched *h, struct rte_mbuf **pkts, uint32_t n);
/** Up to @p n packets the hierarchy lets go at TSC @p now. */
uint32_t ep_hsched_dequeue(struct ep_hsched *h, struct rte_mbuf **pkts, uint32_t n,
			   uint64_t now);
/** Packets queued and tail-dropped per traffic class since created. */
void ep_hsched_stats(const struct ep_hsched *h, uint64_t *tc_pkts, uint64_t *tc_dropped);
/** Packets in queue @p q (0-11 strict TCs, 12-15 best effort) of a pipe. */
uint32_t ep_hsched_queue_len(const struct ep_hsched *h, uint32_t subport, uint32_t pipe,
			     uint32_t q);

/** How long a configuration message waits for a worker, in ms. */
#define EP_QOS_CALL_TIMEOUT_MS 1000

#endif
