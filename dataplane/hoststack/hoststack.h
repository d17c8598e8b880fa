/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The `hoststack` pipeline: a UDP/IP host stack that terminates datagrams
 * for applications attached through the preload library (hs_abi.h).
 *
 *   rx -> parse -> neigh -> reasm -> icmp -> udp -------------> socket rx ring
 *          |        |        |        |       |  (other worker: hand-off ring)
 *          |        |        |        |       +-> redirect: tx to the central node
 *          |        |        |        |       +-> no socket: ICMP port unreachable
 *          |        |        |        +-> echo reply; errors -> SO_ERROR
 *          |        |        +-> fragments held (rte_ip_frag), whole datagram on
 *          |        +-> ARP reply / NA; neighbours learnt
 *          +-> not for us: named drops
 *
 *   service (every loop): hand-off ring -> sockets; doorbells -> active
 *   sockets; their tx rings -> UDP/IP -> fragments -> neighbour -> tx
 *
 *   control thread: attach socket (hs_attach.c), socket table (hs_sock.c),
 *   control commands (hs_ctl.c); workers never wait for it.
 *
 * How each table reaches the workers (ep_rcu.h):
 *
 *   table                   writer (control thread)         reader (worker)
 *   sockets by id           pointer array, release store;   acquire load per use
 *                           freed after a grace period
 *   connected 5-tuples,     rte_hash, lock-free readers,    rte_hash_lookup_data
 *   bound (addr, port)      RCU-QSBR reclaim; a bound key's
 *                           value is an immutable group,
 *                           replaced whole
 *   routes, own addresses   immutable snapshot, published,  one acquire load per burst
 *                           old freed after a grace period
 *   policy (rte_acl)        built aside, published          rte_acl_classify per burst
 *   per-worker lists        messages between bursts         worker-private
 *   (apps to poll, active   (ep_worker_call)
 *   sockets), neighbours
 */
#ifndef EP_HOSTSTACK_H
#define EP_HOSTSTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <rte_acl.h>
#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_ip_frag.h>
#include <rte_meter.h>
#include <rte_ring.h>

#include "ep_engine.h"
#include "ep_err.h"
#include "ep_stage.h"
#include "hs_abi.h"

#define HS_MAX_PORT_ADDRS  (EP_MAX_PORTS * EP_MAX_ADDRS * 2)
#define HS_MAX_ROUTES      256
#define HS_MAX_TERMINATE   256
#define HS_MAX_POLICY      1024
#define HS_NEIGH_QUEUE     64      /**< frames held per unresolved neighbour (Linux holds unres_qlen_bytes, 208 KiB) */
#define HS_TX_BUDGET       64      /**< datagrams one socket may send per service round */
#define HS_PORTQ           512     /**< frames waiting for a port (back-pressure, see hs_flush_ports) */
#define HS_MAX_FRAGS       48      /**< fragments of one datagram (64 KiB over a 1280-byte MTU) */

/* ------------------------------------------------------------------------ */
/* Addresses, routes, neighbours (hs_route.c)                                 */
/* ------------------------------------------------------------------------ */

/** An address in one form for both families: IPv4 in the first 4 bytes. */
struct hs_ip {
	uint8_t b[16];
};

/** What the host stack reads for routing: own addresses, connected
 *  subnets, static routes.  Immutable once published. */
struct hs_rt_entry {
	uint8_t family;         /**< 4 or 6 */
	uint8_t plen;
	uint16_t port;          /**< logical tx port */
	struct hs_ip prefix;
	struct hs_ip gw;        /**< all-zero: on-link */
	bool connected;
};

struct hs_own_addr {
	uint8_t family;
	uint8_t plen;
	uint16_t port;
	struct hs_ip ip;
};

struct hs_routes {
	uint32_t gen;
	int n_rt;
	struct hs_rt_entry rt[HS_MAX_ROUTES];   /**< longest prefix first */
	int n_own;
	struct hs_own_addr own[HS_MAX_PORT_ADDRS];
	uint16_t mtu[EP_MAX_PORTS];
	struct rte_ether_addr mac[EP_MAX_PORTS];
};

/** A route lookup's answer: where a datagram to @p dst leaves. */
struct hs_nexthop {
	uint16_t port;
	uint8_t family;
	bool local;             /**< dst is one of our own addresses: hairpin */
	struct hs_ip via;       /**< neighbour to resolve (dst when on-link) */
	struct hs_ip src;       /**< source address the stack would choose */
};

/** One next hop whose link-layer address a worker knows or is learning. */
struct hs_neigh {
	uint8_t family;
	uint8_t state;          /**< HS_NB_* */
	uint16_t port;
	struct hs_ip ip;
	struct rte_ether_addr mac;
	uint8_t n_queued;
	uint8_t probes;
	uint64_t probe_tsc;     /**< when the last ARP request / NS left */
	uint64_t seen_tsc;      /**< when it was last confirmed */
	struct rte_mbuf *queued[HS_NEIGH_QUEUE];
};

enum { HS_NB_FREE = 0, HS_NB_STATIC, HS_NB_REACHABLE, HS_NB_INCOMPLETE };

/* ------------------------------------------------------------------------ */
/* Sockets (hs_sock.c)                                                        */
/* ------------------------------------------------------------------------ */

/* Hash keys are 8-byte aligned (rte_hash_crc reads them 8 bytes at a
 * time) and zeroed whole before they are filled: padding is hashed too. */
struct hs_key_conn {
	uint8_t family;
	uint8_t pad[3];
	uint16_t lport, rport;  /**< network order */
	struct hs_ip laddr, raddr;
} __attribute__((aligned(8)));

struct hs_key_bind {
	uint8_t family;
	uint8_t pad;
	uint16_t port;          /**< network order */
	struct hs_ip addr;      /**< all-zero: wildcard */
} __attribute__((aligned(8)));

/** Sockets bound to one (address, port): immutable, replaced whole. */
struct hs_group {
	uint32_t n;
	bool reuseport;         /**< every member has SO_REUSEPORT: spread by 4-tuple hash */
	uint32_t ids[];         /**< oldest first; unicast goes to the newest otherwise */
};

/** Per-socket counters, written only by the owning worker. */
struct hs_sock_stats {
	uint64_t rx_dgrams, rx_bytes;
	uint64_t tx_dgrams, tx_bytes;
	uint64_t rx_ring_full;
	uint64_t rx_low_prio_shed;
	uint64_t rx_policy_drop;
	uint64_t tx_policy_drop;
	uint64_t tx_no_route;
	uint64_t tx_bad_desc;
	uint64_t wakeups;       /**< wake bytes written */
};

struct hs_app;

/** The dp's private record of a socket. */
struct hs_sock {
	uint32_t id, gen;
	uint16_t worker;        /**< hs worker index that owns the rings */
	uint8_t family;         /**< 4 or 6: the socket's domain */
	bool v6only;
	int wake_fd;            /**< dp end of the application's socketpair */
	int shm_fd;             /**< memfd of the region */
	uint64_t ino, dev;      /**< the application end, for IDENTIFY */
	struct hs_app *app;     /**< creator (for listing only) */
	uint32_t pid, uid;      /**< of the process that opened it */

	struct hs_sock_shm *shm;
	uint32_t region_size;
	struct hs_desc *rx_desc, *tx_desc;
	uint8_t *rx_data, *tx_data;
	uint32_t rx_slots, tx_slots, rx_bytes, tx_bytes;   /* private copies */

	/* Authoritative state (the shm copy is for the application). */
	uint32_t state;         /**< HS_ST_* */
	struct hs_sockaddr local, peer;
	bool in_bind_table;     /**< member of a bound group */
	struct hs_key_bind bkey[2];   /**< bound keys (a dual-stack wildcard has two) */
	int n_bkey;
	bool in_conn_table;
	struct hs_key_conn ckey;
	bool bind_addr_locked;  /**< bind() chose the address (kept by connect(AF_UNSPEC)) */
	bool bind_port_locked;  /**< bind() chose the port */

	/* Worker side (owner only). */
	struct hs_sockaddr wv_local, wv_peer;   /**< the owner's copy (hs_worker_sync) */
	uint32_t wv_state;
	uint32_t rx_prod, rx_cons_seen, rx_head;
	uint32_t *rx_shadow_off;        /**< private offsets of queued rx datagrams */
	uint32_t tx_cons;
	bool active;                    /**< in the worker's active list */
	uint64_t touch_seq;             /**< == the worker's: already in its touched list */
	bool broken;                    /**< the application corrupted an index: no longer served */
	uint8_t prio;                   /**< tx priority (policy), 0..7 */
	uint32_t rt_gen;                /**< route cache of a connected socket */
	struct hs_nexthop nh;
	struct hs_sock_stats st;
};

/* ------------------------------------------------------------------------ */
/* Applications and the attach socket (hs_attach.c)                           */
/* ------------------------------------------------------------------------ */

struct hs_app {
	uint32_t id;
	uint32_t pid, uid;
	int conn_fd;            /**< attach connection; -1 once it hung up */
	int shm_fd;
	struct hs_app_shm *shm;
	uint32_t region_size;
	uint32_t db_slots;
	uint32_t n_socks;       /**< live sockets created by it */
	struct hs_app *next_app;
};

/* ------------------------------------------------------------------------ */
/* Policy (hs_policy.c)                                                       */
/* ------------------------------------------------------------------------ */

enum hs_dir { HS_DIR_RX = 1, HS_DIR_TX = 2, HS_DIR_BOTH = 3 };

struct hs_policy_rule {
	char name[32];
	uint8_t dir;            /**< enum hs_dir */
	uint8_t family;         /**< 0 both, 4, 6 (from the prefixes) */
	struct hs_ip src, dst;  /**< remote / local prefixes as the direction sees them */
	uint8_t src_plen, dst_plen;
	uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
	int16_t dscp;           /**< -1: any */
	uint8_t priority;       /**< 0..7 */
	bool drop;
	bool has_rate;
	uint64_t rate_bps;      /**< bits per second */
	uint64_t burst_bytes;
	bool redirect;
	uint8_t redirect_family;
	struct hs_ip redirect_to;
	uint32_t slot;          /**< meter slot, stable while the rule lives */
	uint32_t mgen;          /**< changes when the rule's own rate or burst does */
	struct rte_meter_srtcm_profile prof;
};

/** A built rule set.  Immutable once published. */
struct hs_policy {
	uint32_t n;
	struct rte_acl_ctx *ctx4, *ctx6;        /**< receive path */
	struct rte_acl_ctx *ctx4_tx, *ctx6_tx;  /**< send path */
	struct hs_policy_rule rules[];
};

#define HS_POLICY_SLOTS HS_MAX_POLICY

/* ------------------------------------------------------------------------ */
/* The stack (hs_stack.c) and per-worker contexts                             */
/* ------------------------------------------------------------------------ */

struct hs_term_rule {
	uint8_t family;         /**< 0: any address */
	struct hs_ip addr;
	bool any_addr;
	uint16_t lo, hi;        /**< host order */
};

struct hs_params {
	char attach_path[108];
	char attach_group[64];
	uint32_t max_sockets;
	uint32_t rx_slots, tx_slots;
	uint32_t rx_bytes, tx_bytes;
	uint32_t db_slots;
	uint16_t eph_lo, eph_hi;
	uint32_t reasm_ms;
	uint32_t reasm_entries;
	uint32_t icmp_rate;     /**< ICMP errors per second per worker */
	uint32_t shed_watermark_pct;    /**< rx ring fill above which low priority is shed */
	uint8_t shed_priority;  /**< priorities below it are shed above the watermark */
	uint8_t default_priority;       /**< of datagrams no policy rule matches */
	uint32_t max_wait_us;   /**< longest a sleeping worker waits for a kick */
	uint32_t spin_us;       /**< after the last packet, yield the CPU instead of sleeping this long */
	uint16_t mtu[EP_MAX_PORTS];
};

struct hs_wctx;

struct hs_stack {
	struct ep_engine *e;
	struct hs_params p;

	/* sockets */
	struct hs_sock **socks;         /**< by id; published with release stores */
	uint32_t *sock_gen;             /**< next generation per slot */
	uint32_t n_live;
	uint32_t next_id;
	struct rte_hash *conn;          /**< hs_key_conn -> socket id */
	struct rte_hash *bind;          /**< hs_key_bind -> struct hs_group * */
	uint32_t eph_next;
	void *port_users;               /**< sockets per port: bind conflict check (hs_sock.c) */

	/* tables */
	struct hs_routes *routes;       /**< published */
	struct hs_routes *routes_cfg;   /**< control copy the next snapshot is made from */
	struct hs_term_rule term[HS_MAX_TERMINATE];
	int n_term;
	struct hs_policy *policy;       /**< published */
	struct hs_policy_rule *prules;  /**< control copy, in order */
	uint32_t n_prules;
	uint32_t slot_gen[HS_POLICY_SLOTS];
	/* static neighbours, pushed to every worker */
	struct hs_neigh static_nb[64];
	int n_static_nb;

	/* workers */
	struct hs_wctx *w[EP_MAX_WORKERS];
	int n_w;
	uint32_t rr;                    /**< next worker for a new socket */

	/* shared with applications */
	int worker_shm_fd, worker_ro_fd;
	struct hs_worker_shm *wshm;
	uint32_t wshm_size;
	int kick_fd[EP_MAX_WORKERS];

	/* attach server */
	int listen_fd;
	int epfd;                       /**< control-thread epoll: listen, apps, socket ends */
	struct hs_app *apps;
	uint32_t next_app_id;
	struct rte_mempool *indirect_pool;
};

/** Per-worker counters the control socket shows (besides stage drops). */
struct hs_wstats {
	uint64_t icmp_unreach_sent, icmp_unreach_suppressed;
	uint64_t echo_replies;
	uint64_t reasm_done;
	uint64_t handoff_out, handoff_in;
	uint64_t doorbells, rescans;
	uint64_t kicks_seen, waits;
	/** Waits that ran to their timeout, and of those the ones after which
	 *  frames (rx) or doorbells were found at once: a wake-up that did
	 *  not come (the timer covered it). */
	uint64_t wait_timeouts, late_rx, late_doorbell;
	uint64_t arp_requests_sent, ns_sent;
	uint64_t hairpin;
	uint64_t redirected;
	uint64_t fragments_out;
};

struct hs_wctx {
	struct hs_stack *s;
	struct ep_worker *w;
	uint16_t idx;                   /**< hs worker index */
	struct ep_stage *stage_udp;     /**< for drops decided outside a burst */
	struct ep_stage *stage_reasm;

	/* apps whose doorbell ring[idx] this worker pops (messages change it) */
	struct {
		struct hs_app_shm *shm;
		uint32_t *slots;
		uint32_t n_slots;
		uint32_t cons;
		uint32_t app_id;
	} apps[256];
	int n_apps;

	/* sockets with pending tx, by priority */
	uint32_t *active[8];
	uint32_t n_active[8];
	uint32_t active_cap;

	/* hand-off: mbufs for sockets this worker owns, from other workers */
	struct rte_ring *inbox;

	/* reassembly */
	struct rte_ip_frag_tbl *frag;
	struct rte_ip_frag_death_row dr;
	uint64_t reasm_next_tsc;

	/* neighbours (worker-private) */
	struct rte_hash *nb_hash;       /**< hs_ip+family -> index */
	struct hs_neigh *nb;
	uint32_t nb_max;
	uint64_t nb_next_tsc;

	/* ICMP error token bucket */
	uint64_t icmp_tokens, icmp_last_tsc;

	/* policy meters, per rule slot and direction */
	struct rte_meter_srtcm meter[2][HS_POLICY_SLOTS];
	uint32_t meter_gen[HS_POLICY_SLOTS];

	/* sockets whose rx ring got datagrams in this burst: signalled at the end */
	uint32_t touched[EP_BURST_MAX * 2];
	uint32_t n_touched;
	uint64_t touch_seq;             /**< advanced by every hs_signal_touched */

	/* packets for our own addresses produced by the tx path */
	struct rte_mbuf *hairpin[EP_BURST_MAX];
	uint16_t n_hairpin;

	/* frames for each port: sent in bursts; what a full port does not take
	 * waits here, and while it waits no socket ring is drained towards
	 * that port (back-pressure to the application, as a full qdisc
	 * pushes back on a kernel socket) */
	struct rte_mbuf *txq[EP_MAX_PORTS][HS_PORTQ];
	uint16_t n_txq[EP_MAX_PORTS];
	uint64_t txq_stall_tsc[EP_MAX_PORTS];   /**< since when a port took nothing */

	/* which routes snapshot the burst uses */
	const struct hs_routes *rt;

	uint32_t frag_id;               /**< IPv4 identification / IPv6 fragment id */
	uint64_t last_busy_tsc;         /**< when the worker last moved a packet (hs_wait) */
	uint64_t last_rx_pkts;
	bool timed_out;                 /**< the last wait ran to its timeout */
	uint64_t rx_at_wait;            /**< w->stats.rx_pkts when it began */
	struct hs_wstats st;
	uint64_t tsc_hz;
};

/* hs_stack.c */
void hs_params_default(struct hs_params *p);
struct hs_stack *hs_stack_create(struct ep_engine *e, const struct hs_params *p,
				 struct ep_err *err);
void hs_stack_free(struct hs_stack *s);
struct hs_wctx *hs_wctx_create(struct hs_stack *s, struct ep_worker *w, uint16_t idx,
			       struct ep_err *err);
void hs_wctx_free(struct hs_wctx *c);
extern struct hs_stack *hs_global;

/* hs_sock.c: the socket table (control thread) */
struct hs_sock *hs_sock_open(struct hs_stack *s, uint8_t family, int wake_fd, uint64_t dev,
			     uint64_t ino, struct hs_app *app, struct ep_err *err);
void hs_sock_close(struct hs_stack *s, struct hs_sock *k);
int hs_sock_bind(struct hs_stack *s, struct hs_sock *k, const struct hs_sockaddr *a,
		 uint32_t opt_flags);
int hs_sock_connect(struct hs_stack *s, struct hs_sock *k, const struct hs_sockaddr *a);
int hs_sock_autobind(struct hs_stack *s, struct hs_sock *k, uint16_t want_port);
int hs_sock_shutdown(struct hs_stack *s, struct hs_sock *k, int how);
/** Would the stack serve a socket bound to @p a?  (terminate rules) */
bool hs_serves_bind(struct hs_stack *s, const struct hs_sockaddr *a, bool dual);
/** Would it serve a socket sending to @p a?  (a route through a port) */
bool hs_serves_dest(struct hs_stack *s, const struct hs_sockaddr *a);
void hs_port_users_free(struct hs_stack *s);
struct hs_sock *hs_sock_by_ino(struct hs_stack *s, uint64_t dev, uint64_t ino);
/** A socket by id for a worker: NULL when freed or reused. */
static inline struct hs_sock *
hs_sock_get(const struct hs_stack *s, uint32_t id)
{
	if (id >= s->p.max_sockets)
		return NULL;
	return __atomic_load_n(&s->socks[id], __ATOMIC_ACQUIRE);
}
int hs_term_parse(const char *text, struct hs_term_rule *r, struct ep_err *err);
int hs_term_add(struct hs_stack *s, const char *text, struct ep_err *err);
int hs_term_del(struct hs_stack *s, const char *text, struct ep_err *err);
void hs_term_format(const struct hs_term_rule *r, char *buf, size_t n);

/* hs_route.c */
int hs_routes_build(struct hs_stack *s, struct ep_err *err);
int hs_route_add(struct hs_stack *s, const char *prefix, const char *via, struct ep_err *err);
int hs_route_del(struct hs_stack *s, const char *prefix, struct ep_err *err);
int hs_neigh_static_add(struct hs_stack *s, const char *ip, const char *mac,
			struct ep_err *err);
bool hs_route_lookup(const struct hs_routes *rt, uint8_t family, const struct hs_ip *dst,
		     struct hs_nexthop *nh);
bool hs_is_own(const struct hs_routes *rt, uint8_t family, const struct hs_ip *ip,
	       uint16_t *port);
int hs_parse_ip(const char *s, struct hs_ip *ip);
int hs_parse_prefix(const char *s, struct hs_ip *ip, uint8_t *plen, struct ep_err *err);
const char *hs_ip_str(uint8_t family, const struct hs_ip *ip, char *buf, size_t n);
void hs_prefix_mask(uint8_t family, struct hs_ip *ip, uint8_t plen);
bool hs_prefix_match(uint8_t family, const struct hs_ip *a, const struct hs_ip *prefix,
		     uint8_t plen);
/* worker-side neighbour table */
int hs_nb_init(struct hs_wctx *c, uint32_t max, struct ep_err *err);
void hs_nb_free(struct hs_wctx *c);
struct hs_neigh *hs_nb_find(struct hs_wctx *c, uint8_t family, const struct hs_ip *ip);
void hs_nb_learn(struct hs_wctx *c, uint8_t family, const struct hs_ip *ip,
		 const struct rte_ether_addr *mac, uint16_t port, bool stat);
/** Send @p m (an IP packet with room for Ethernet in front) towards
 *  @p via on @p port: queued on the port's batch, or held while the
 *  neighbour is resolved.  Consumes @p m. */
void hs_nb_output(struct hs_wctx *c, struct rte_mbuf *m, uint16_t port, uint8_t family,
		  const struct hs_ip *via);
void hs_nb_timers(struct hs_wctx *c, uint64_t now);

/* hs_tx.c: the worker's service hook */
uint16_t hs_service(struct ep_worker *w);
void hs_wait(struct ep_worker *w, uint32_t us);
/** Queue an IP packet (Ethernet header room at the front, l3 at data
 *  start) for output: routed, hairpinned when local, fragmented. */
void hs_output_ip(struct hs_wctx *c, struct rte_mbuf *m, uint8_t family,
		  const struct hs_ip *dst);
/** The same with the route already looked up. */
void hs_output_nh(struct hs_wctx *c, struct rte_mbuf *m, const struct hs_nexthop *nh);
void hs_flush_ports(struct hs_wctx *c);
void hs_flush_port(struct hs_wctx *c, uint16_t port);
void hs_port_queue(struct hs_wctx *c, uint16_t port, struct rte_mbuf *m);
void hs_worker_sync(struct hs_stack *s, struct hs_sock *k);
/** Signal every socket touched in this burst whose reader waits. */
void hs_signal_touched(struct hs_wctx *c);
/** Remember @p k for hs_signal_touched (once per burst). */
static inline void
hs_touch(struct hs_wctx *c, struct hs_sock *k)
{
	if (k->touch_seq == c->touch_seq || c->n_touched == RTE_DIM(c->touched))
		return;
	k->touch_seq = c->touch_seq;
	c->touched[c->n_touched++] = k->id;
}

/* rx stages (hs_rx.c, hs_udp.c) */
uint16_t hs_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t hs_neigh_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t hs_reasm_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t hs_icmp_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t hs_udp_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
/** Copy one received UDP datagram into a socket's rx ring (owner worker). */
int hs_deliver(struct hs_wctx *c, struct hs_sock *k, struct rte_mbuf *m, uint8_t prio);
/** ICMP/ICMPv6 port unreachable about @p m (rate limited). */
void hs_icmp_unreach(struct hs_wctx *c, struct rte_mbuf *m);

struct hs_stage_def { const char *name; ep_stage_fn fn; };
extern const struct hs_stage_def hs_stages[5];

/* hs_policy.c */
int hs_policy_parse(const char *text, struct hs_policy_rule *r, struct ep_err *err);
void hs_policy_format(const struct hs_policy_rule *r, char *buf, size_t n);
int hs_policy_commit(struct hs_stack *s, const struct hs_policy_rule *rules, uint32_t n,
		     struct ep_err *err);
int hs_policy_add(struct hs_stack *s, const char *text, int64_t index, struct ep_err *err);
int hs_policy_del(struct hs_stack *s, const char *name, struct ep_err *err);
void hs_policy_free(struct hs_policy *p);
/** Classify @p n flows (keys from packets or descriptors); res[i] = rule
 *  index + 1, or 0. */
struct hs_flow {
	uint8_t family, proto, dscp;
	struct hs_ip remote, local;
	uint16_t rport, lport;  /**< host order */
};
void hs_policy_classify(const struct hs_policy *p, enum hs_dir dir, const struct hs_flow *f,
			uint32_t n, uint32_t *res);
/** Meter a datagram of @p bytes under rule @p r: true when it may pass. */
bool hs_policy_meter(struct hs_wctx *c, const struct hs_policy_rule *r, enum hs_dir dir,
		     uint32_t bytes, uint64_t now);

/* hs_config.c */
int hs_params_from_config(struct ep_engine *e, struct ep_cfg_section *s, struct hs_params *p,
			  struct ep_err *err);
int hs_load_config(struct hs_stack *s, struct ep_cfg *cfg, struct ep_cfg_section *sec,
		   struct ep_err *err);

/* hs_attach.c */
int hs_attach_open(struct hs_stack *s, struct ep_err *err);
void hs_attach_close(struct hs_stack *s);
void hs_attach_poll(void *arg);

/* Address helpers */
static inline uint32_t
hs_ip_len(uint8_t family)
{
	return family == 4 ? 4 : 16;
}

static inline bool
hs_ip_is_zero(uint8_t family, const struct hs_ip *a)
{
	for (uint32_t i = 0; i < hs_ip_len(family); i++)
		if (a->b[i] != 0)
			return false;
	return true;
}

static inline bool
hs_ip_eq(uint8_t family, const struct hs_ip *a, const struct hs_ip *b)
{
	return memcmp(a->b, b->b, hs_ip_len(family)) == 0;
}

#endif
