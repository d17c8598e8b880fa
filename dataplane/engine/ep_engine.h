/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The engine: ports, workers, pipelines.  Control-path header: pipelines use
 * it from their setup/build functions and control-socket handlers, never from
 * a stage function.
 *
 *   config file --> ports (rte_dev_probe, one rx queue per polling worker,
 *                   one tx queue per worker)
 *               --> pipeline types' setup (shared tables)
 *               --> workers: each runs one pipeline = ordered stages
 *                   rx burst -> stage -> stage -> ... -> tx burst
 *               --> control socket on the main lcore
 */
#ifndef EP_ENGINE_H
#define EP_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <rte_ether.h>
#include <rte_ring.h>
#include <rte_rcu_qsbr.h>

#include "ep_addr.h"
#include "ep_config.h"
#include "ep_err.h"
#include "ep_power.h"
#include "ep_stage.h"

#define EP_MAX_PORTS     16
/** ep_worker.rx_port: no one port for the burst, each packet's in_port says. */
#define EP_RX_PORT_META  UINT16_MAX
#define EP_MAX_WORKERS   16
#define EP_MAX_STAGES    16
#define EP_MAX_RX        8     /**< rx queues one worker polls */
#define EP_MAX_ADDRS     8     /**< addresses per port per family */

struct ep_engine;
struct ep_worker;
struct ep_ctl_client;
struct ep_instance;
struct ep_rapl;

/** An address assigned to a port, with its prefix (connected subnet). */
struct ep_addr4 { uint32_t addr; uint8_t plen; };         /* addr: network order */
struct ep_addr6 { uint8_t addr[16]; uint8_t plen; };

struct ep_port {
	char name[32];                  /**< [port NAME] */
	char device[256];               /**< DPDK device string as configured */
	int device_line;                /**< its line in the config file */
	uint16_t index;                 /**< logical index, config order */
	uint16_t port_id;               /**< DPDK port id */
	struct rte_ether_addr mac;
	uint16_t n_rxq, n_txq;
	uint16_t rx_desc, tx_desc;
	struct rte_mempool *pool;
	struct ep_addr4 v4[EP_MAX_ADDRS];
	int n_v4;
	struct ep_addr6 v6[EP_MAX_ADDRS];
	int n_v6;
	uint16_t mtu;                   /**< IP MTU ([port] mtu, default 1500): larger packets
	                                 *   are fragmented or answered with ICMP */
	uint16_t priv_size;             /**< its mbufs' private area: EP_META_SIZE, or
	                                 *   EP_META_SIZE_LINE (frames start on a line) */
	/** Its driver's rx copies each frame into a fresh mbuf on the polling
	 *  core (net_pcap, net_af_packet, net_tap; net_null writes its own):
	 *  the frames arrive in that core's cache, and a type's rx_lookahead
	 *  does not apply (measured on net_pcap: 1.035 of the cycles, the
	 *  copies of the burst ahead crowding the current one's lines). */
	bool rx_copies;
	bool mac_set;                   /**< `mac =` given: set it on the device */
	bool started;
	/** Its kernel interface (net_af_packet, net_af_xdp) was not
	 *  promiscuous before the start: clear IFF_PROMISC at stop. */
	bool promisc_restore;
	char kernel_if[16];             /**< that interface's name (IF_NAMESIZE) */
};

struct ep_worker_stats {
	uint64_t busy_cycles;   /**< polls that found packets, and their processing */
	uint64_t idle_cycles;   /**< empty polls (pauses not included) */
	uint64_t sleeps;        /**< pauses taken, by any policy's mechanism */
	uint64_t sleep_cycles;  /**< TSC cycles spent paused */
	uint64_t polls;         /**< rx polls */
	uint64_t empty_polls;
	uint64_t rx_pkts;
	uint64_t tx_pkts;
	uint64_t msgs;          /**< control messages handled between bursts */
};

/**
 * A message to a worker, run on the worker between two bursts.  This is one
 * of the three ways configuration reaches the fast path (ep_rcu.h).  The
 * sender waits for `done` when it needs the result.
 */
struct ep_worker_msg {
	void (*fn)(struct ep_worker *w, void *arg);
	void *arg;
	uint32_t done;          /**< set to 1 (release) by the worker after fn */
};

/** A pipeline type ("router", "gen", "sink"): registered at start-up. */
struct ep_pipeline_type {
	const char *name;
	/** Once, after ports are up, before workers: shared tables from config
	 *  (the type's own section, e.g. [router]).  May be NULL. */
	int (*setup)(struct ep_engine *e, struct ep_err *err);
	/** Per worker: add stages with ep_worker_add_stage(). */
	int (*build)(struct ep_engine *e, struct ep_worker *w, struct ep_err *err);
	/** Optional source replacing rx (the generator): fill up to @p max
	 *  packets and return how many; set ep_meta in_port. */
	uint16_t (*source)(struct ep_worker *w, struct rte_mbuf **pkts, uint16_t max);
	/** Optional: called on every loop iteration after rx, for work that is
	 *  not driven by arriving packets (a scheduler's dequeue, timers).
	 *  Returns the packets it moved; non-zero counts as busy and keeps the
	 *  worker from pausing.  Timed as the worker's "service" stage. */
	uint16_t (*service)(struct ep_worker *w);
	/** Optional: replaces the nanosleep of the `sleep` polling policy (the
	 *  default; sleep-rx and cpu-wait keep their own waits), for a pipeline
	 *  that can be woken by its own descriptors (an application's
	 *  doorbell).  Called RCU-offline; must return within about @p us
	 *  microseconds and may return earlier. */
	void (*wait)(struct ep_worker *w, uint32_t us);
	/** The wait hook also waits on the rx queues' sockets
	 *  (ep_worker_rx_fds): where every rx queue has one, `auto` makes the
	 *  worker event-driven as it makes sleep-rx workers (auto's idle_polls
	 *  and max_sleep_us, SCHED_FIFO 1), the hook doing the waiting. */
	bool wait_covers_rx;
	/** A source that also receives: its worker may have `rx = <port>`,
	 *  which the engine's loop does not poll (it polls the source); the
	 *  pipeline's service hook receives from w->rx[] itself (a tester
	 *  that sends and counts the returning frames in one worker). */
	bool source_polls_rx;
	/** Frames received for this type get no header pushed in front of
	 *  them (no encapsulation on the fast path): a port polled only by
	 *  such types gets mbufs whose frames start on a cache line
	 *  (EP_META_SIZE_LINE), others keep them half a line in (EP_META_SIZE,
	 *  where a pushed header of up to 32 bytes stays in the frame's line). */
	bool rx_line_aligned;
	/** The type's first stage writes ep_meta.in_port of every packet it
	 *  is given, from ep_worker.rx_port when that names a port (a burst
	 *  from rx), else keeping the in_port the caller set
	 *  (ep_worker_run_burst, ep_worker_run_from): the engine then skips
	 *  its own pass that writes in_port into each received packet's
	 *  meta line, and the stage that already writes that line does it.
	 *  Such a stage also knows the burst's port once, for checks it
	 *  would otherwise look up per packet (the destination MAC).  A type
	 *  none of whose stages reads in_port of a burst from rx (xconnect:
	 *  the burst's port is rx_port) sets it too: no line of the private
	 *  area is written. */
	bool stage_sets_in_port;
	/** Receive one burst ahead (worker.c, "Lookahead"): each rx queue's
	 *  next burst is taken before the current one runs, and the lines its
	 *  parse will read (the mbuf's first two, the ep_meta line, the
	 *  frame's first 64 bytes) are prefetched a slice at a time between
	 *  the current burst's stages.  For a worker fed by another core (a
	 *  ring), whose every frame and mbuf line is a cross-core miss: the
	 *  misses overlap the current burst's work instead of stalling the
	 *  parse.  A burst waits at most one burst's processing; none is held
	 *  through an empty poll. */
	bool rx_lookahead;
	/** Optional: devargs for a port this type's workers poll, appended
	 *  to its device string when the engine probes it (before setup():
	 *  read the type's section directly).  Write ",key=value..." or
	 *  nothing into @p buf (@p len bytes); -1 with @p err on a bad
	 *  configuration.  The router's XDP fast path adds net_af_xdp's
	 *  xdp_prog here (router/xdp_fast.c). */
	int (*port_devargs)(struct ep_engine *e, const struct ep_port *p, char *buf, size_t len,
			    struct ep_err *err);
	/** Once at shutdown, after workers stopped.  May be NULL. */
	void (*teardown)(struct ep_engine *e);
	/** Optional: bytes of DPDK memory setup() and @p n_workers builds will
	 *  allocate, estimated from the configuration before the EAL starts
	 *  (parse only; no call that needs the EAL).  `[engine] memory = auto`
	 *  sums these to choose hugepages or ordinary pages (memory.c). */
	uint64_t (*memory)(struct ep_engine *e, int n_workers);
	struct ep_pipeline_type *next_type;
};

void ep_pipeline_register(struct ep_pipeline_type *t);
const struct ep_pipeline_type *ep_pipeline_find(const char *name);
#define EP_PIPELINE_REGISTER(t) \
	static void __attribute__((constructor)) ep_register_##t(void) { ep_pipeline_register(&(t)); }

struct ep_rx_queue { uint16_t port; uint16_t queue; };   /* port: logical index */

/** The burst received ahead on one rx queue (ep_pipeline_type.rx_lookahead). */
struct ep_rx_ahead {
	uint16_t n;
	struct rte_mbuf *pkts[EP_BURST_MAX];
};

/** Packets a worker queued for one port during the current burst: the
 *  burst's own (at most EP_BURST_MAX) and up to EP_BURST_MAX generated
 *  ones (ep_worker_emit keeps room for the former). */
struct ep_txbuf {
	uint16_t n;
	struct rte_mbuf *pkts[2 * EP_BURST_MAX];
};

struct ep_worker {
	char name[32];                  /**< [worker NAME] */
	unsigned int id;                /**< index, also its RCU-QSBR thread id */
	unsigned int lcore;
	struct ep_engine *engine;
	const struct ep_pipeline_type *type;
	struct ep_cfg_section *cfg;     /**< its [worker] section, for pipeline keys */
	void *pipeline_ctx;             /**< free for the pipeline type */

	struct ep_rx_queue rx[EP_MAX_RX];
	int n_rx;
	uint16_t txq[EP_MAX_PORTS];     /**< this worker's tx queue on each port */

	struct ep_stage rx_stage;       /**< rx accounting: cycles of rx_burst */
	struct ep_stage tx_stage;       /**< tx accounting: tx_burst and tx_full drops */
	struct ep_stage service_stage;  /**< the pipeline's service hook, if any */
	struct ep_stage stages[EP_MAX_STAGES];
	int n_stages;

	struct ep_txbuf txbuf[EP_MAX_PORTS];
	uint32_t tx_pending;            /**< bit per port with queued packets */
	/** TSC when the running stage was called: a stage that needs the time
	 * (a policer's clock) reads it here instead of paying its own rdtsc
	 * (~25 cycles on this machine's EPYC under KVM, once per burst). */
	uint64_t stage_tsc;
	/** The port of the burst the stages run on: a port index when it came
	 *  from rx, EP_RX_PORT_META when ep_meta.in_port of each packet says
	 *  (ep_worker_run_burst, ep_worker_run_from, a source).  See
	 *  ep_pipeline_type.stage_sets_in_port. */
	uint16_t rx_port;
	uint32_t bursts;                /**< bursts polled: every EP_STAGE_TIMED_EVERY-th is timed per stage */
	/** The shares of rx, each stage and tx in the last timed burst that
	 *  ran them all (16-bit fixed point): how the other bursts' time is
	 *  split (worker.c). */
	uint32_t stage_share[EP_MAX_STAGES + 2];
	/** Cycles already booked to a part by code nested in a timed region:
	 *  a stage's or the service hook's own ep_worker_tx (booked to tx), a
	 *  burst the service hook runs through the stages (booked to them).
	 *  The enclosing region books its time less what this grew by, so
	 *  every cycle is in one part only (worker.c). */
	uint64_t booked_inside;
	/** rx_lookahead: each rx queue's burst received ahead, and the one
	 *  whose lines are being prefetched between the stages (pump_pos
	 *  counts its mbufs, then its frames: 2 x pump_n steps). */
	struct ep_rx_ahead ahead[EP_MAX_RX];
	struct rte_mbuf *const *pump;
	uint16_t pump_n, pump_pos, pump_step;

	struct ep_worker_stats stats;
	struct rte_ring *msgq;          /**< struct ep_worker_msg * from the control thread */
	uint16_t burst;
	bool running;
	/** Its polling policy (ep_power.h): written only by the policy-change
	 *  message on the worker, so the loop reads it without synchronisation
	 *  and the control thread (which sends those messages and waits for
	 *  each) reads it after the message's release of `done`. */
	struct ep_poll_cfg poll;
	struct ep_poll_state poll_state;
	uint8_t sample;                 /**< enum ep_sample: what the next busy poll samples */
	struct ep_power *power;         /**< wait resources and telemetry */
} __rte_cache_aligned;

enum ep_memory { EP_MEM_AUTO = 0, EP_MEM_HUGEPAGES, EP_MEM_NO_HUGE };

/* ---- memory estimates for the pipeline types' `memory` hook (memory.c) ---- */
/** Bytes of an rte_hash of @p entries keys of @p key_len bytes. */
uint64_t ep_mem_hash_bytes(uint32_t entries, uint32_t key_len, bool ext_table);
/** Bytes of a mempool of @p n elements of @p elt_size (with per-lcore
 *  caches if @p cache). */
uint64_t ep_mem_pool_bytes(uint32_t n, uint32_t elt_size, uint32_t cache);
/** Bytes of an rte_pktmbuf pool: @p priv private bytes, @p data_room. */
uint64_t ep_mem_pktmbuf_pool_bytes(uint32_t n, uint32_t priv, uint32_t data_room);
/** [worker] sections whose pipeline is @p pipeline. */
int ep_mem_workers_of(const struct ep_engine *e, const char *pipeline);

/** A control-thread callback run on every turn of the control loop. */
struct ep_tick {
	void (*fn)(void *arg, uint64_t now);
	void *arg;
	struct ep_tick *next;
};

struct ep_engine {
	struct ep_cfg *cfg;
	enum ep_memory memory;          /**< [engine] memory */
	uint64_t mem_need;              /**< estimated DPDK memory, bytes (memory.c) */
	uint64_t mem_free_huge;         /**< free hugepage memory at start, bytes */
	bool mem_huge;                  /**< the EAL runs on hugepages */
	char ctl_path[108];
	int ctl_line;                   /**< line of [engine] ctl_socket, 0 if default */
	uint16_t burst;
	struct ep_poll_cfg poll;        /**< [engine] polling policy: the workers' default */
	struct ep_power_caps power_caps;
	struct ep_rapl *rapl;           /**< package energy counters, NULL without RAPL */
	struct ep_port ports[EP_MAX_PORTS];
	int n_ports;
	struct ep_worker *workers[EP_MAX_WORKERS];
	int n_workers;
	struct rte_rcu_qsbr *qsbr;      /**< one QSBR variable; every worker reports to it */
	uint32_t quit;                  /**< set (release) to stop workers */
	uint64_t tsc_hz;
	uint64_t start_tsc;
	unsigned int lcore_plan[EP_MAX_WORKERS]; /**< lcores for the EAL map */
	int n_plan;
	bool eal_up;
	bool launched;
	int ctl_fd;                     /**< listening control socket */
	uint64_t ctl_dev, ctl_ino;      /**< its file: removed at exit only if still ours */
	struct ep_ctl_client *ctl_clients;
	int n_ctl_clients;
	uint64_t ctl_accept_after_ms;   /**< accept paused (out of descriptors) until */
	struct ep_tick *ticks;          /**< housekeeping of the modules' instances */
	struct ep_instance *instances;  /**< the modules' named instances (instance.c) */
	/** What each pipeline type's setup() built, for its build() and
	 *  teardown(): per engine, so several engines (tests) never share. */
	struct {
		const struct ep_pipeline_type *type;
		void *ctx;
	} type_ctx[8];
	int n_type_ctx;
};

/*
 * Named instances of the shared modules (acl/, fib/, qos/): a module
 * registers each instance it creates under its kind ("ACL", "FIB") and
 * name; the names are unique per kind and engine.
 */
#define EP_INSTANCE_NAME_LEN 32
int ep_instance_add(struct ep_engine *e, const char *kind, const char *name, void *obj,
		    struct ep_err *err);
void ep_instance_del(struct ep_engine *e, const void *obj);
void *ep_instance_find(const struct ep_engine *e, const char *kind, const char *name);
/** The instance of @p kind after @p prev (NULL: the first), in creation order. */
void *ep_instance_next(const struct ep_engine *e, const char *kind, const void *prev);

/** The context pipeline type @p t stored in @p e, or NULL. */
void *ep_engine_type_ctx(const struct ep_engine *e, const struct ep_pipeline_type *t);
/** Store (or with NULL, forget) the context of pipeline type @p t. */
int ep_engine_type_ctx_set(struct ep_engine *e, const struct ep_pipeline_type *t, void *ctx);

/**
 * Run @p fn(@p arg, TSC now) on the control thread on every turn of the
 * control loop (at least every 20 ms): a module's housekeeping (draining a
 * ring its workers post to, ageing entries).  0 or -1 (no memory).
 */
int ep_engine_tick_add(struct ep_engine *e, void (*fn)(void *arg, uint64_t now), void *arg);
void ep_engine_tick_del(struct ep_engine *e, void (*fn)(void *arg, uint64_t now), void *arg);
/** Run every tick once (the control loop; tests). */
void ep_engine_tick_run(struct ep_engine *e, uint64_t now);

/** Port by name or NULL. */
struct ep_port *ep_port_by_name(struct ep_engine *e, const char *name);

/** Append a stage to a worker's pipeline (build time only). */
int ep_worker_add_stage(struct ep_worker *w, const char *name, ep_stage_fn fn, void *ctx,
			struct ep_err *err);

/**
 * Run a burst through the worker's stages (what the worker loop does after
 * rx).  Packets sent with EP_NEXT_TX wait in w->txbuf until
 * ep_worker_flush_tx().  Returns packets that fell off the end (counted as
 * NO_NEXT and freed).  Exposed for unit tests and in-process benchmarks.
 */
uint16_t ep_worker_run_burst(struct ep_worker *w, struct rte_mbuf **pkts, uint16_t n);
/**
 * ep_worker_run_burst for a burst as received on port @p port: in_port
 * written as the worker loop writes it after rx (by the engine, or by the
 * first stage of a type with stage_sets_in_port; a worker without a type
 * counts as one without it).  For unit tests and in-process benchmarks of
 * the rx path's stages.
 */
uint16_t ep_worker_run_rx_burst(struct ep_worker *w, uint16_t port, struct rte_mbuf **pkts,
				uint16_t n);
/**
 * Run the bursts an rx_lookahead worker received ahead and has not run
 * yet (worker context, or a stopped worker): the worker loop does at exit,
 * so that no received frame is left unaccounted for.
 */
void ep_worker_run_ahead(struct ep_worker *w);
/**
 * The same from stage index @p first on: a pipeline's service hook sends
 * packets it held back (a scheduler's queues, operations completed by an
 * asynchronous device) through the rest of its own pipeline, every stage
 * timed and counted as usual.  Worker context only; call
 * ep_worker_flush_tx() after.
 */
uint16_t ep_worker_run_from(struct ep_worker *w, int first, struct rte_mbuf **pkts, uint16_t n);

struct pollfd;
/**
 * The sockets a pipeline's own wait hook may add to its wait so a frame
 * wakes the worker: one POLLIN entry per rx queue of @p w (net_af_packet
 * and net_af_xdp ports), at most @p max.  Returns the count, or 0 when any
 * of its queues has none (memif, ring, a NIC): then only a timer finds
 * frames.
 */
int ep_worker_rx_fds(const struct ep_worker *w, struct pollfd *fds, int max);
void ep_worker_flush_tx(struct ep_worker *w);

/**
 * Send a packet a stage generated (an ICMP error, an ARP request, a
 * fragment) on logical port @p port with the burst's own tx, after the
 * burst.  Worker context only; counted in the tx stage.
 */
void ep_worker_emit(struct ep_worker *w, uint16_t port, struct rte_mbuf *m);

/**
 * Transmit packets that are not part of the current burst (a scheduler's
 * dequeue, generated replies) on logical port @p port with this worker's tx
 * queue.  Counted in the tx stage; what the port does not take is freed and
 * counted as tx_full.  Worker context only.
 */
void ep_worker_tx(struct ep_worker *w, uint16_t port, struct rte_mbuf **pkts, uint16_t n);

/**
 * The same for a caller that applies back-pressure (a host stack's send
 * path): returns how many the port took; the rest stay the caller's, to
 * offer again later, and are not counted as drops.  Worker context only.
 */
uint16_t ep_worker_tx_keep(struct ep_worker *w, uint16_t port, struct rte_mbuf **pkts,
			   uint16_t n);

/**
 * Run @p fn on worker @p w between two bursts and wait until it ran (control
 * thread only).  Returns -1 with err set if the worker did not answer within
 * @p timeout_ms (it is stuck or stopped).
 */
int ep_worker_call(struct ep_worker *w, void (*fn)(struct ep_worker *, void *), void *arg,
		   unsigned int timeout_ms, struct ep_err *err);

#endif
