/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The generator pipeline (`pipeline = gen`): configuration, build, teardown
 * and the gen-start / gen-stop / gen-set / gen-stats control commands.
 *
 * Worker state changes only by message (ep_worker_call): a handler first
 * does everything that can fail for every selected worker (parse, validate,
 * build new templates aside), then sends each worker one message that swaps
 * the profile pointer, sets the rate and count, and copies the counters back.
 * The replaced profile is freed after the message returns: the worker holds
 * no reference to it across bursts, so no grace period is needed.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "gen.h"

#define GEN_POOL_MBUFS  8191   /* in flight: tx descriptors, ring ports, a DUT's bursts */
#define GEN_CALL_MS     1000
#define GEN_DEPTH_MARGIN_US 100
#define GEN_SINK_STAGE  1      /* after gen_tx: where a tester worker's received frames enter */

static const char *const gen_keys[] = {
	"rate_pps", "size", "flows", "src", "dst", "dst_mac", "sport", "dport", "count",
	"start", "vlan", "vary",
};

struct ep_gen *
ep_gen_create(const struct ep_gen_params *p, struct rte_mempool *pool, uint16_t burst,
	      uint32_t depth_us, int socket, struct ep_err *err)
{
	struct ep_gen *g = rte_zmalloc_socket("ep_gen", sizeof(*g), RTE_CACHE_LINE_SIZE, socket);

	if (g == NULL) {
		ep_err_set(err, "out of memory");
		return NULL;
	}
	g->seq = rte_zmalloc_socket("ep_gen_seq", sizeof(g->seq[0]) * EP_GEN_MAX_FLOWS,
				    RTE_CACHE_LINE_SIZE, socket);
	if (g->seq == NULL) {
		ep_err_set(err, "out of memory");
		ep_gen_free(g);
		return NULL;
	}
	g->prof = ep_gen_profile_build(p, socket, err);
	if (g->prof == NULL) {
		ep_gen_free(g);
		return NULL;
	}
	g->params = *p;
	g->pool = pool;
	g->tx_port = p->tx_port;
	g->burst = burst;
	g->depth_us = depth_us;
	g->count = p->count;
	g->alloc_drops = &g->alloc_drops_local;
	ep_gen_pace_init(&g->pace, rte_get_tsc_hz(), p->rate_pps, burst, depth_us, rte_rdtsc());
	return g;
}

/* The mempool is not freed here: ports are stopped after pipeline teardown
 * and a driver may still hold our mbufs in its tx ring; rte_eal_cleanup()
 * releases the memory. */
void
ep_gen_free(struct ep_gen *g)
{
	if (g == NULL)
		return;
	ep_gen_profile_free(g->prof);
	rte_free(g->seq);
	rte_free(g);
}

static struct ep_pipeline_type gen_type;

static int
worker_socket(const struct ep_worker *w)
{
	unsigned int s = rte_lcore_to_socket_id(w->lcore);

	return s < RTE_MAX_NUMA_NODES ? (int)s : SOCKET_ID_ANY;
}

static uint16_t
gen_source(struct ep_worker *w, struct rte_mbuf **pkts, uint16_t max)
{
	return ep_gen_produce(w->pipeline_ctx, pkts, max, rte_rdtsc());
}

/*
 * A gen worker with `rx = <port>` is a whole tester in one thread: it sends
 * and counts what comes back.  Two tester processes (a generator and a
 * sink) are two more polling threads on the machine the DUT runs on; on a
 * 2-core host they took turns with the DUT's worker on its core (the
 * sink, woken by every burst the DUT sent, preempted it), so the DUT was
 * measured on the CPU time the tester left it.  One worker, pinned to one
 * core, leaves the other core to the DUT.
 *
 * The service hook, after each generated burst: receive from every rx
 * queue and run the frames through the "sink" stage (stage 1; the source's
 * bursts leave at stage 0, gen_tx, and never reach it).
 */
static uint16_t
gen_service(struct ep_worker *w)
{
	struct rte_mbuf *pkts[EP_BURST_MAX];
	uint16_t got = 0;

	for (int i = 0; i < w->n_rx; i++) {
		const struct ep_rx_queue *rq = &w->rx[i];
		uint16_t n = rte_eth_rx_burst(w->engine->ports[rq->port].port_id, rq->queue, pkts,
					      w->burst);

		if (n == 0)
			continue;
		for (uint16_t k = 0; k < n; k++)
			ep_meta(pkts[k])->in_port = rq->port;
		w->rx_stage.stats.calls++;
		w->rx_stage.stats.pkts_in += n;
		w->rx_stage.stats.pkts_out += n;
		w->stats.rx_pkts += n;
		ep_worker_run_from(w, GEN_SINK_STAGE, pkts, n);
		got = (uint16_t)(got + n);
	}
	return got;
}

/*
 * The `sleep` policy's pause for a generator: until the next batch is due
 * (ep_gen_pace_due_us) or @p us, whichever is first.  A control message
 * ends it too (the worker's message eventfd), and with rx queues so does
 * a returning frame (ppoll on their sockets), so a sink's frame waits for
 * no timer.  Ports without a socket (ring, memif): the timer alone.
 */
static void
gen_wait(struct ep_worker *w, uint32_t us)
{
	const struct ep_gen *g = w->pipeline_ctx;
	struct pollfd fds[EP_MAX_RX + 1];
	uint32_t due = g != NULL && g->running ? ep_gen_pace_due_us(&g->pace, rte_rdtsc()) : 0;
	int n = g != NULL && g->sink != NULL ? ep_worker_rx_fds(w, fds, EP_MAX_RX) : 0;
	struct timespec ts;
	uint64_t v;

	if (g != NULL && g->running && due < us)
		us = due > 0 ? due : 1;
	ts = (struct timespec){ .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	fds[n].fd = w->power->msg_fd;
	fds[n].events = POLLIN;
	fds[n].revents = 0;
	if (ppoll(fds, (nfds_t)n + 1, &ts, NULL) > 0 && (fds[n].revents & POLLIN) != 0 &&
	    read(fds[n].fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: the worker is awake anyway */
	}
}

struct ep_port *
ep_gen_tx_port(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, "tx", err);
	struct ep_port *port;

	if (kv == NULL) {
		if (err->msg[0] == '\0')
			ep_cfg_section_error(e->cfg, w->cfg, err, "missing 'tx = <port>'");
		return NULL;
	}
	port = ep_port_by_name(e, kv->val);
	if (port == NULL)
		ep_cfg_error(e->cfg, kv, err, "no [port %s]", kv->val);
	return port;
}

static int
gen_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct ep_cfg *cfg = e->cfg;
	const struct ep_cfg_kv *kv;
	struct ep_gen_params p;
	struct ep_port *port;
	struct ep_err e2 = { "" };
	struct rte_mempool *pool;
	struct ep_gen *g;
	char name[RTE_MEMPOOL_NAMESIZE];
	int socket = worker_socket(w);

	ep_gen_params_init(&p);
	port = ep_gen_tx_port(e, w, err);
	if (port == NULL)
		return -1;
	p.tx_port = port->index;
	p.src_mac = port->mac;
	for (size_t i = 0; i < RTE_DIM(gen_keys); i++) {
		kv = ep_cfg_get(cfg, w->cfg, gen_keys[i], err);
		if (kv == NULL) {
			if (err->msg[0] != '\0')
				return -1;
			continue;
		}
		if (ep_gen_param_set(&p, gen_keys[i], kv->val, &e2) < 0)
			return ep_cfg_error(cfg, kv, err, "%s", e2.msg);
	}
	snprintf(name, sizeof(name), "ep_gen_%u", w->id);
	pool = rte_pktmbuf_pool_create(name, GEN_POOL_MBUFS, 256, EP_META_SIZE,
				       RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (pool == NULL)
		return ep_cfg_section_error(cfg, w->cfg, err, "mbuf pool of %u: %s",
					    GEN_POOL_MBUFS, rte_strerror(rte_errno));
	g = ep_gen_create(&p, pool, w->burst, w->poll.max_sleep_us + GEN_DEPTH_MARGIN_US, socket,
			  &e2);
	if (g == NULL) {
		rte_mempool_free(pool);
		return ep_cfg_section_error(cfg, w->cfg, err, "%s", e2.msg);
	}
	snprintf(g->worker, sizeof(g->worker), "%s", w->name);
	if (ep_worker_add_stage(w, "gen_tx", ep_gen_tx_stage, g, err) < 0) {
		ep_gen_free(g);
		rte_mempool_free(pool);
		return -1;
	}
	/* Allocation failures show in the engine's per-stage drop counters
	 * too; the stage array lives in the worker, so the pointer is stable. */
	g->alloc_drops = &w->stages[w->n_stages - 1].stats.drops[EP_DROP_GEN_ALLOC_FAILED];
	if (w->n_rx > 0) {
		g->sink = ep_sink_create(socket);
		if (g->sink == NULL ||
		    ep_worker_add_stage(w, "sink", ep_sink_stage, g->sink, err) < 0) {
			if (g->sink == NULL)
				ep_err_set(err, "worker %s: out of memory for the sink", w->name);
			ep_sink_free(g->sink);
			ep_gen_free(g);
			rte_mempool_free(pool);
			return -1;
		}
	}
	w->pipeline_ctx = g;
	if (p.start)
		ep_gen_start(g, rte_rdtsc());
	g->tx_full_base = w->tx_stage.stats.drops[EP_DROP_TX_FULL];
	return 0;
}

static void
gen_teardown(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w->type == &gen_type) {
			if (w->pipeline_ctx != NULL)
				ep_sink_free(((struct ep_gen *)w->pipeline_ctx)->sink);
			ep_gen_free(w->pipeline_ctx);
			w->pipeline_ctx = NULL;
		}
	}
}

static struct ep_pipeline_type gen_type = {
	.name = "gen",
	.build = gen_build,
	.source = gen_source,
	.service = gen_service,
	.wait = gen_wait,
	.wait_covers_rx = true,     /* with rx: its ppoll has the rx sockets */
	.source_polls_rx = true,
	.teardown = gen_teardown,
};
EP_PIPELINE_REGISTER(gen_type);

struct ep_sink *
ep_worker_sink(const struct ep_worker *w)
{
	if (w->type == &gen_type)
		return w->pipeline_ctx != NULL ? ((struct ep_gen *)w->pipeline_ctx)->sink : NULL;
	if (strcmp(w->type->name, "sink") == 0)
		return w->pipeline_ctx;
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Control commands.                                                        */

int
ep_gen_select_workers(struct ep_engine *e, json_t *req, const char *type,
		      struct ep_worker **out, struct ep_err *err)
{
	json_t *v = json_object_get(req, "worker");
	const char *name = NULL;
	int n = 0;

	if (v != NULL) {
		if (!json_is_string(v))
			return ep_err_set(err, "field 'worker' must be a string");
		name = json_string_value(v);
	}
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		/* "sink": every worker with a sink, a gen worker with rx too. */
		bool is = strcmp(type, "sink") == 0 ? ep_worker_sink(w) != NULL :
			  strcmp(w->type->name, type) == 0 && w->pipeline_ctx != NULL;

		if (is && (name == NULL || strcmp(w->name, name) == 0))
			out[n++] = w;
	}
	if (n == 0)
		return name ? ep_err_set(err, "no %s worker named '%s'", type, name) :
			      ep_err_set(err, "no %s worker", type);
	return n;
}

int
ep_gen_only_worker(json_t *req, struct ep_err *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(req, key, v)
		if (strcmp(key, "cmd") != 0 && strcmp(key, "worker") != 0)
			return ep_err_set(err, "unexpected field '%s' (this command takes only worker)",
					  key);
	return 0;
}

json_t *
ep_gen_time_json(const struct ep_engine *e, uint64_t tsc)
{
	if (tsc == 0)
		return json_null();
	return json_integer((json_int_t)ep_cyc_to_ns(tsc > e->start_tsc ? tsc - e->start_tsc : 0,
							 e->tsc_hz));
}

enum gen_op { GEN_START, GEN_STOP, GEN_SET, GEN_STATS };

/* One message does every operation: what it carries in, what it copies out. */
struct gen_msg {
	struct ep_gen_profile *prof;   /* in: new profile or NULL; out: the replaced one */
	bool set_rate, set_count, start, stop;
	uint64_t rate_pps, count;
	struct ep_gen_counters c;      /* out */
	bool running;
	uint64_t tx_full_pkts;
	uint64_t now;
};

static void
gen_msg_run(struct ep_worker *w, void *arg)
{
	struct ep_gen *g = w->pipeline_ctx;
	struct gen_msg *m = arg;
	uint64_t now = rte_rdtsc();

	if (m->prof != NULL) {
		struct ep_gen_profile *old = g->prof;

		g->prof = m->prof;
		m->prof = old;
		if (g->next_flow >= g->prof->n_flows)
			g->next_flow = 0;
		if (g->next_slot >= g->prof->sched_len)
			g->next_slot = 0;
	}
	if (m->set_count)
		g->count = m->count;
	if (m->set_rate)
		ep_gen_set_rate(g, m->rate_pps, now);
	if (m->stop)
		g->running = false;
	if (m->start) {
		ep_gen_start(g, now);
		g->tx_full_base = w->tx_stage.stats.drops[EP_DROP_TX_FULL];
	}
	if (g->count != 0 && g->c.sent_pkts >= g->count)
		g->running = false;
	m->c = g->c;
	m->running = g->running;
	/* The port refused these after they were built and counted as sent:
	 * a trial with any is not a valid offered load. */
	m->tx_full_pkts = w->tx_stage.stats.drops[EP_DROP_TX_FULL] - g->tx_full_base;
	m->now = now;
}

static json_t *
gen_json(const struct ep_engine *e, const struct ep_worker *w, const struct ep_gen *g,
	 const struct gen_msg *m)
{
	const struct ep_gen_params *p = &g->params;
	uint64_t end = m->running ? m->now : m->c.last_tx_tsc;
	uint64_t el = m->c.start_tsc != 0 && end > m->c.start_tsc ? end - m->c.start_tsc : 0;
	double secs = (double)el / (double)e->tsc_hz;

	return json_pack("{s:s, s:s, s:b, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, "
			 "s:o, s:o, s:o}",
			 "worker", w->name,
			 "tx_port", e->ports[g->tx_port].name,
			 "running", m->running,
			 "rate_pps", (json_int_t)p->rate_pps,
			 "size", p->size_spec,
			 "flows", (json_int_t)p->flows,
			 "count", (json_int_t)p->count,
			 "sent_pkts", (json_int_t)m->c.sent_pkts,
			 "sent_bytes", (json_int_t)m->c.sent_bytes,
			 "alloc_failed_pkts", (json_int_t)m->c.alloc_failed_pkts,
			 "tx_full_pkts", (json_int_t)m->tx_full_pkts,
			 "elapsed_ns", (json_int_t)ep_cyc_to_ns(el, e->tsc_hz),
			 "measured_pps", secs > 0 ? (double)m->c.sent_pkts / secs : 0.0,
			 "start_ns", ep_gen_time_json(e, m->c.start_tsc),
			 "first_tx_ns", ep_gen_time_json(e, m->c.first_tx_tsc),
			 "last_tx_ns", ep_gen_time_json(e, m->c.last_tx_tsc));
}

/* Phase 1 for one worker: the message to send, or -1 with nothing changed. */
static int
gen_prepare(struct ep_worker *w, json_t *req, enum gen_op op, struct ep_gen_params *np,
	    struct gen_msg *m, struct ep_err *err)
{
	struct ep_gen *g = w->pipeline_ctx;
	bool rebuild = false;
	const char *key;
	json_t *v;

	*np = g->params;
	m->start = op == GEN_START;
	m->stop = op == GEN_STOP;
	if (op != GEN_START && op != GEN_SET)
		return ep_gen_only_worker(req, err);
	json_object_foreach(req, key, v) {
		char val[160];

		if (strcmp(key, "cmd") == 0 || strcmp(key, "worker") == 0)
			continue;
		if (strcmp(key, "start") == 0)
			return ep_err_set(err, "'start' is a configuration key: use gen-start");
		if (ep_ctl_value_text(key, v, val, sizeof(val), err) < 0 ||
		    ep_gen_param_set(np, key, val, err) < 0)
			return -1;
		rebuild = rebuild || ep_gen_param_is_template(key);
		m->set_rate = m->set_rate || strcmp(key, "rate_pps") == 0;
		m->set_count = m->set_count || strcmp(key, "count") == 0;
	}
	/* A run starts with the configured rate and count unless overridden. */
	m->set_rate = m->set_rate || op == GEN_START;
	m->set_count = m->set_count || op == GEN_START;
	m->rate_pps = np->rate_pps;
	m->count = np->count;
	if (rebuild) {
		m->prof = ep_gen_profile_build(np, worker_socket(w), err);
		if (m->prof == NULL)
			return -1;
	}
	return 0;
}

static int
gen_cmd(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err, enum gen_op op)
{
	struct ep_worker *ws[EP_MAX_WORKERS];
	struct gen_msg *msg[EP_MAX_WORKERS] = { NULL };
	struct ep_gen_params *np;
	uint64_t sent = 0, bytes = 0;
	bool any_running = false;
	json_t *list;
	int n, i, rc = -1;

	n = ep_gen_select_workers(e, req, "gen", ws, err);
	if (n < 0)
		return -1;
	np = calloc((size_t)n, sizeof(*np));
	if (np == NULL)
		return ep_err_set(err, "out of memory");
	/* Phase 1: everything that can fail, for every worker, nothing applied. */
	for (i = 0; i < n; i++) {
		msg[i] = calloc(1, sizeof(*msg[i]));
		if (msg[i] == NULL) {
			ep_err_set(err, "out of memory");
			goto out;
		}
		if (gen_prepare(ws[i], req, op, &np[i], msg[i], err) < 0) {
			char tmp[sizeof(err->msg)];

			snprintf(tmp, sizeof(tmp), "%s", err->msg);
			ep_err_set(err, "worker %s: %s", ws[i]->name, tmp);
			goto out;
		}
	}
	/* Phase 2: one message per worker. */
	list = json_array();
	for (i = 0; i < n; i++) {
		struct ep_gen *g = ws[i]->pipeline_ctx;

		if (ep_worker_call(ws[i], gen_msg_run, msg[i], GEN_CALL_MS, err) < 0) {
			/* The worker may still run the message later: leave it
			 * (and the profile it carries) allocated. */
			msg[i] = NULL;
			json_decref(list);
			goto out;
		}
		ep_gen_profile_free(msg[i]->prof);
		msg[i]->prof = NULL;
		g->params = np[i];
		json_array_append_new(list, gen_json(e, ws[i], g, msg[i]));
		sent += msg[i]->c.sent_pkts;
		bytes += msg[i]->c.sent_bytes;
		any_running = any_running || msg[i]->running;
	}
	json_object_set_new(result, "tsc_hz", json_integer((json_int_t)e->tsc_hz));
	json_object_set_new(result, "running", json_boolean(any_running));
	json_object_set_new(result, "sent_pkts", json_integer((json_int_t)sent));
	json_object_set_new(result, "sent_bytes", json_integer((json_int_t)bytes));
	json_object_set_new(result, "workers", list);
	rc = 0;
out:
	for (i = 0; i < n; i++) {
		if (msg[i] != NULL)
			ep_gen_profile_free(msg[i]->prof);
		free(msg[i]);
	}
	free(np);
	return rc;
}

static int
cmd_gen_start(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	return gen_cmd(e, req, result, err, GEN_START);
}

static int
cmd_gen_stop(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	return gen_cmd(e, req, result, err, GEN_STOP);
}

static int
cmd_gen_set(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	return gen_cmd(e, req, result, err, GEN_SET);
}

static int
cmd_gen_stats(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	return gen_cmd(e, req, result, err, GEN_STATS);
}

#define GEN_SET_ARGS "[rate_pps=N] [count=N] [size=S] [flows=N] [src=IP] [dst=IP] " \
	"[dst_mac=MAC] [sport=N] [dport=N] [vlan=TCI|none] [vary=dst|sport|both]"

static struct ep_ctl_cmd c_gen_start = { "gen-start", "[worker=NAME] " GEN_SET_ARGS,
	"start a generator run: sequences and counters from 0, then send", cmd_gen_start, NULL };
static struct ep_ctl_cmd c_gen_stop = { "gen-stop", "[worker=NAME]",
	"stop sending (counters kept)", cmd_gen_stop, NULL };
static struct ep_ctl_cmd c_gen_set = { "gen-set", "[worker=NAME] " GEN_SET_ARGS,
	"change a generator's parameters, running or not", cmd_gen_set, NULL };
static struct ep_ctl_cmd c_gen_stats = { "gen-stats", "[worker=NAME]",
	"generator counters: sent packets and bytes, rate, running", cmd_gen_stats, NULL };
EP_CTL_REGISTER(c_gen_start);
EP_CTL_REGISTER(c_gen_stop);
EP_CTL_REGISTER(c_gen_set);
EP_CTL_REGISTER(c_gen_stats);
