/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Traffic generator (`pipeline = gen`) and sink (`pipeline = sink`) for
 * benchmarks (RFC 2544 section 26.1 throughput, RFC 2544 latency, iMix) and
 * tests.  See README.md for the configuration keys and control commands.
 *
 * Frame sizes follow RFC 2544 (section 9): a size is the Ethernet frame
 * *including* the 4-byte FCS, so `size = 64` puts 60 bytes in the mbuf (the
 * NIC or the kernel appends the FCS).  A VLAN tag is inside the frame size.
 *
 * Every generated frame is Ethernet [802.1Q] / IPv4 or IPv6 / UDP followed by
 * the 18-byte payload header below, then zero bytes up to the frame size:
 *
 *   offset 0   magic   u32  EP_GEN_MAGIC ("EPG1")
 *          4   flow    u16  flow index, 0..flows-1
 *          6   seq     u48  per-flow sequence number, from 0 at gen-start
 *         12   tsc     u48  low 48 bits of the TSC when the burst was built
 *
 * all little-endian.  18 bytes is what a 64-byte IPv4 frame leaves after its
 * headers (60 - 14 - 20 - 8), which is why the fields are 48-bit: 2^48
 * packets per flow last 32 days at 100 Mpps, and the TSC part wraps after
 * 2^48 cycles (26 hours at 3 GHz) which matters only for latencies, taken
 * modulo 2^48.  The smallest frames are therefore 64 (IPv4), 68 (IPv4 +
 * VLAN), 84 (IPv6) and 88 bytes (IPv6 + VLAN).
 */
#ifndef EP_GEN_H
#define EP_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "ep_err.h"
#include "ep_hist.h"
#include "ep_stage.h"
#include "ep_stamp.h"

#define EP_GEN_MAGIC        EP_STAMP_MAGIC /**< "EPG1" (proto/ep_stamp.h: its readers) */
#define EP_GEN_HDR_LEN      EP_STAMP_LEN /**< payload header bytes on the wire */
#define EP_GEN_MAX_FLOWS    65536       /**< flow ids fit the u16 field */
#define EP_GEN_MAX_CLASSES  16          /**< distinct sizes in one profile */
#define EP_GEN_MAX_SCHED    65536       /**< iMix period limit, packets */
#define EP_GEN_MAX_FRAME    1522        /**< largest size: 1518 + a VLAN tag */
#define EP_GEN_FCS_LEN      RTE_ETHER_CRC_LEN
#define EP_GEN_MAX_RATE     1000000000ull /**< pps; bounds the pacing arithmetic */
#define EP_GEN_MASK48       EP_STAMP_MASK48
#define EP_GEN_TPL_LEN      96          /**< template bytes copied per packet */

/** The payload header as read and written (wire layout above). */
struct ep_gen_hdr {
	uint32_t magic;
	uint16_t flow;
	uint8_t seq[6];
	uint8_t tsc[6];
} __rte_packed;

static inline void
ep_gen_hdr_make(struct ep_gen_hdr *h, uint16_t flow, uint64_t seq, uint64_t tsc)
{
	uint64_t s = rte_cpu_to_le_64(seq), t = rte_cpu_to_le_64(tsc);

	h->magic = rte_cpu_to_le_32(EP_GEN_MAGIC);
	h->flow = rte_cpu_to_le_16(flow);
	memcpy(h->seq, &s, 6);
	memcpy(h->tsc, &t, 6);
}

static inline uint64_t
ep_gen_u48(const uint8_t *p)
{
	uint64_t v = 0;

	memcpy(&v, p, 6);
	return rte_le_to_cpu_64(v);
}

/* ------------------------------------------------------------------------ */
/* Sizes, parameters and the profile (control path).                        */

/** Frame sizes and their weights: "64", "imix-up", "64,512:2,1518:1". */
struct ep_gen_sizes {
	uint16_t size[EP_GEN_MAX_CLASSES];    /**< frame size, bytes, FCS included */
	uint32_t weight[EP_GEN_MAX_CLASSES];  /**< relative share of packets */
	int n;
};

int ep_gen_sizes_parse(const char *spec, struct ep_gen_sizes *out, struct ep_err *err);

/**
 * A schedule of size classes whose period matches the weights exactly
 * (period = sum of weights / their gcd), shuffled with a fixed seed so that
 * every run sends the same order.  Returns the period, or -1 with err set
 * (period above EP_GEN_MAX_SCHED).  @p out has EP_GEN_MAX_SCHED entries.
 */
int ep_gen_schedule_build(const struct ep_gen_sizes *sz, uint8_t *out, struct ep_err *err);

/** Which header field flow i changes. */
enum ep_gen_vary {
	EP_GEN_VARY_DST = 0,   /**< destination address + i (default: a router spreads it) */
	EP_GEN_VARY_SPORT,     /**< UDP source port + i (one destination, an ECMP/RSS spread) */
	EP_GEN_VARY_BOTH,      /**< both */
};

/** Everything a generator is configured with; owned by the control thread. */
struct ep_gen_params {
	uint16_t tx_port;                  /**< logical port index */
	struct rte_ether_addr src_mac;     /**< the tx port's MAC */
	struct rte_ether_addr dst_mac;
	bool have_dst_mac;
	int family;                        /**< 4 or 6; 0 until src/dst are set */
	uint8_t src[16], dst[16];          /**< network order; IPv4 in the first 4 bytes */
	int src_family, dst_family;
	uint16_t sport, dport;
	uint32_t flows;
	enum ep_gen_vary vary;
	int32_t vlan;                      /**< TCI, or -1 for untagged */
	uint64_t rate_pps;                 /**< 0: as fast as possible */
	uint64_t count;                    /**< packets per run, 0: unlimited */
	bool start;                        /**< send from start-up */
	char size_spec[128];
};

void ep_gen_params_init(struct ep_gen_params *p);
/**
 * Set one parameter from its text form: rate_pps, size, flows, src, dst,
 * dst_mac, sport, dport, count, start, vlan, vary.  The configuration file
 * and the control socket both come here.  -1 with err on a bad value or an
 * unknown key.
 */
int ep_gen_param_set(struct ep_gen_params *p, const char *key, const char *val,
		     struct ep_err *err);
/** True if @p key changes the packet templates (rebuild needed). */
bool ep_gen_param_is_template(const char *key);

/** One flow's headers, lengths and checksums left for the per-packet fill. */
struct ep_gen_flow_tpl {
	uint8_t hdr[EP_GEN_TPL_LEN]; /**< Ethernet..UDP; length and checksum fields 0 */
	uint32_t sum;                /**< unfolded one's complement sum: IPv4 header, or
				      *   IPv6 pseudo-header + UDP header, lengths 0 */
} __rte_cache_aligned;

/** Immutable once built; a worker swaps in a new one by message. */
struct ep_gen_profile {
	uint32_t n_flows;
	bool v6;
	uint8_t l2_len;            /**< 14 or 18 */
	uint8_t hdr_len;           /**< offset of the payload header */
	uint8_t n_classes;
	uint16_t frame_len[EP_GEN_MAX_CLASSES]; /**< bytes in the mbuf: size - FCS */
	uint32_t sched_len;
	struct ep_gen_flow_tpl *tpl;            /**< n_flows entries */
	char size_spec[128];
	uint8_t sched[];                        /**< sched_len class indices */
};

/** Validate @p p and build the templates; NULL with err set. */
struct ep_gen_profile *ep_gen_profile_build(const struct ep_gen_params *p, int socket,
					    struct ep_err *err);
void ep_gen_profile_free(struct ep_gen_profile *pr);

/* ------------------------------------------------------------------------ */
/* Pacing: a token bucket in TSC cycles (fast path, pure arithmetic).       */

/**
 * Credit is kept in packet·Hz units (one packet costs @c hz), so adding
 * delta_cycles × rate is exact integer arithmetic with no drift over any run
 * length.  delta × rate stays below 2^64 because delta is clamped to one
 * second (≤ 5e9 cycles) and rate ≤ 1e9.  The bucket holds @c depth packets:
 * after a pause the generator catches up by at most that many.
 */
struct ep_gen_pace {
	uint64_t hz;          /**< TSC cycles per second */
	uint64_t rate_pps;    /**< 0: no limit */
	uint64_t depth;       /**< bucket size, packets */
	uint64_t min_batch;   /**< do not send fewer than this while credit builds */
	uint64_t last_tsc;
	uint64_t credit;      /**< packets × hz */
};

#define EP_GEN_BATCH_US 20    /**< packets due within this window leave together */

/**
 * (Re)start pacing at @p rate_pps from time @p now with an empty bucket.
 * @p depth_us: how much time the bucket covers (the engine's longest pause
 * plus margin), never less than @p burst packets.
 */
static inline void
ep_gen_pace_init(struct ep_gen_pace *p, uint64_t hz, uint64_t rate_pps, uint16_t burst,
		 uint32_t depth_us, uint64_t now)
{
	uint64_t d = rate_pps * depth_us / 1000000;
	uint64_t b = rate_pps * EP_GEN_BATCH_US / 1000000;

	p->hz = hz;
	p->rate_pps = rate_pps;
	p->depth = d > burst ? d : burst;
	p->min_batch = b < 1 ? 1 : (b > burst ? burst : b);
	p->last_tsc = now;
	p->credit = 0;
}

/**
 * How many packets may leave at TSC @p now, at most @p max.  Returns 0 while
 * fewer than min_batch are due: the source then reports an empty poll and
 * the engine's adaptive polling pauses the worker when the next batch is far
 * (low rates), instead of spinning.  Cost: one 64-bit division per call.
 */
static inline uint16_t
ep_gen_pace_take(struct ep_gen_pace *p, uint64_t now, uint16_t max)
{
	uint64_t delta, cap, n;

	if (p->rate_pps == 0)
		return max;
	delta = now - p->last_tsc;
	p->last_tsc = now;
	cap = p->depth * p->hz;
	if (delta >= p->hz)
		p->credit = cap;
	else
		p->credit += delta * p->rate_pps;
	if (p->credit > cap)
		p->credit = cap;
	n = p->credit / p->hz;
	if (n < p->min_batch)
		return 0;
	if (n > max)
		n = max;
	p->credit -= n * p->hz;
	return (uint16_t)n;
}

/**
 * Microseconds until the next batch (min_batch packets) is due at TSC
 * @p now, at least 1; 0 when one is due already or the rate is unlimited.
 * A generator's pause ends then rather than at the polling policy's next
 * doubling, so the batches leave on time and the bucket stays shallow.
 */
static inline uint32_t
ep_gen_pace_due_us(const struct ep_gen_pace *p, uint64_t now)
{
	uint64_t have, need, cyc, delta = now - p->last_tsc;

	if (p->rate_pps == 0 || delta >= p->hz)   /* a second's credit fills any bucket */
		return 0;
	have = p->credit + delta * p->rate_pps;
	need = p->min_batch * p->hz;
	if (have >= need)
		return 0;
	/* (need - have) / rate cycles, rounded up, in microseconds. */
	cyc = (need - have + p->rate_pps - 1) / p->rate_pps;
	return (uint32_t)(cyc * 1000000 / p->hz) + 1;
}

/* ------------------------------------------------------------------------ */
/* The generator's per-worker state.                                        */

struct ep_gen_counters {
	uint64_t sent_pkts;
	uint64_t sent_bytes;         /**< frame bytes, FCS included */
	uint64_t alloc_failed_pkts;
	uint64_t start_tsc;          /**< last gen-start */
	uint64_t first_tx_tsc;       /**< first burst of this run, 0 if none */
	uint64_t last_tx_tsc;
};

struct ep_gen {
	/* Worker-owned: read and written only by the worker (or by messages,
	 * which run on the worker between bursts). */
	struct ep_gen_profile *prof;
	struct rte_mempool *pool;
	struct ep_gen_pace pace;
	uint64_t *seq;               /**< next sequence number per flow */
	uint32_t next_flow;
	uint32_t next_slot;          /**< position in prof->sched */
	uint16_t tx_port;
	uint16_t burst;
	uint32_t depth_us;
	bool running;
	uint64_t count;              /**< packets in this run, 0: unlimited */
	struct ep_gen_counters c;
	uint64_t *alloc_drops;       /**< the gen_tx stage's GEN_ALLOC_FAILED counter */
	uint64_t tx_full_base;       /**< the worker's tx_full drops at gen-start */
	uint64_t alloc_drops_local;  /**< target of alloc_drops outside an engine */
	/** Frames that come back on the worker's rx ports (`rx =` on a gen
	 *  worker: generator and sink in one worker), or NULL. */
	struct ep_sink *sink;

	/* Control-owned: only the control thread touches these. */
	struct ep_gen_params params;
	char worker[32];
};

/** Create a generator from validated @p p (builds the profile).  The pool
 *  must have data room for EP_GEN_MAX_FRAME and EP_META_SIZE private bytes. */
struct ep_gen *ep_gen_create(const struct ep_gen_params *p, struct rte_mempool *pool,
			     uint16_t burst, uint32_t depth_us, int socket, struct ep_err *err);
void ep_gen_free(struct ep_gen *g);

struct ep_engine;
struct ep_worker;
struct ep_port;
/** The port a generator worker's `tx = <port>` names (gen, replay); NULL
 *  with @p err set when the key is missing or names no port. */
struct ep_port *ep_gen_tx_port(struct ep_engine *e, struct ep_worker *w, struct ep_err *err);

/** Begin a run at @p now: sequences and counters from 0, pacing restarted. */
void ep_gen_start(struct ep_gen *g, uint64_t now);
/** New target rate from @p now (does not reset counters). */
void ep_gen_set_rate(struct ep_gen *g, uint64_t rate_pps, uint64_t now);

/**
 * The source body with an injected clock: allocate and fill up to @p max
 * packets due at TSC @p now.  The source callback calls it with rte_rdtsc().
 */
uint16_t ep_gen_produce(struct ep_gen *g, struct rte_mbuf **pkts, uint16_t max, uint64_t now);

/** The stage after the source: every packet to the tx port. */
uint16_t ep_gen_tx_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/* ------------------------------------------------------------------------ */
/* The sink.                                                                */

/**
 * Per flow: the next expected sequence and which of the 64 sequences before
 * it have arrived (bit i: expected - 1 - i), as IPsec anti-replay windows do,
 * which tells a late packet from a duplicate for 64 packets back.
 */
struct ep_sink_flow {
	uint64_t expected;
	uint64_t window;
};

struct ep_sink_counters {
	uint64_t rx_pkts;
	uint64_t rx_bytes;           /**< frame bytes, FCS included (pkt_len + 4) */
	int64_t lost_pkts;           /**< gaps; late arrivals take theirs back */
	uint64_t reordered_pkts;
	uint64_t duplicate_pkts;
	uint64_t foreign_pkts;       /**< no payload header: not from a generator */
	uint64_t latency_invalid_pkts; /**< transmit TSC in the future */
	uint64_t first_rx_tsc, last_rx_tsc;
};

struct ep_sink {
	struct ep_sink_counters c;
	struct ep_hist lat;          /**< cycles */
	struct ep_sink_flow flow[EP_GEN_MAX_FLOWS];
};

struct ep_sink *ep_sink_create(int socket);
void ep_sink_free(struct ep_sink *s);
/** Zero counters, histogram and flow state (before a trial). */
void ep_sink_reset(struct ep_sink *s);
/** Account one payload header received at TSC @p now. */
void ep_sink_account(struct ep_sink *s, const struct ep_gen_hdr *h, uint32_t frame_len,
		     uint64_t now);
/** The sink stage body with an injected clock: consumes every packet. */
uint16_t ep_sink_process(struct ep_sink *s, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
			 uint64_t now);
uint16_t ep_sink_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/* ------------------------------------------------------------------------ */
/* Control commands (gen.c, sink.c).                                        */

struct ep_engine;
struct ep_worker;
struct json_t;

/** Workers running pipeline @p type named by the request's optional
 *  "worker" field (all of them when absent): their number, or -1 with err.
 *  "sink" selects every worker with a sink (ep_worker_sink). */
int ep_gen_select_workers(struct ep_engine *e, struct json_t *req, const char *type,
			  struct ep_worker **out, struct ep_err *err);
/** -1 with err if the request has fields other than "cmd" and "worker". */
int ep_gen_only_worker(struct json_t *req, struct ep_err *err);
/** The sink a worker feeds: a sink worker's, a gen worker's with `rx`
 *  (one-process tester), else NULL. */
struct ep_sink *ep_worker_sink(const struct ep_worker *w);
/** TSC to "ns since the engine started", JSON null for 0 (never happened). */
struct json_t *ep_gen_time_json(const struct ep_engine *e, uint64_t tsc);

#endif
