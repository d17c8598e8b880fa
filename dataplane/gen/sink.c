/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sink pipeline (`pipeline = sink`, `rx = <port>`): one stage that
 * consumes every packet, and the sink-stats / sink-reset commands.
 *
 * The control thread never reads the worker's counters in place: a message
 * copies counters and histogram (42 KB, a few microseconds on the worker)
 * into a buffer the handler owns, and percentiles are computed from that
 * copy.  No lock and no atomic on the fast path.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "gen.h"

#define SINK_CALL_MS 1000

static struct ep_pipeline_type sink_type;

static int
sink_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	unsigned int socket = rte_lcore_to_socket_id(w->lcore);
	struct ep_sink *s = ep_sink_create(socket < RTE_MAX_NUMA_NODES ? (int)socket :
					   SOCKET_ID_ANY);

	if (s == NULL)
		return ep_err_set(err, "worker %s: out of memory for the sink", w->name);
	if (ep_worker_add_stage(w, "sink", ep_sink_stage, s, err) < 0) {
		ep_sink_free(s);
		return -1;
	}
	w->pipeline_ctx = s;
	return 0;
}

static void
sink_teardown(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w->type == &sink_type) {
			ep_sink_free(w->pipeline_ctx);
			w->pipeline_ctx = NULL;
		}
	}
}

static struct ep_pipeline_type sink_type = {
	.name = "sink",
	.build = sink_build,
	.teardown = sink_teardown,
};
EP_PIPELINE_REGISTER(sink_type);

struct sink_copy {
	struct ep_sink_counters c;
	struct ep_hist lat;
	bool reset;                    /* in: zero the sink after copying */
};

static void
sink_msg_run(struct ep_worker *w, void *arg)
{
	struct ep_sink *s = ep_worker_sink(w);
	struct sink_copy *cp = arg;

	cp->c = s->c;
	cp->lat = s->lat;
	if (cp->reset)
		ep_sink_reset(s);
}

static json_t *
sink_json(const struct ep_engine *e, const struct ep_sink_counters *c, const struct ep_hist *h)
{
	uint64_t hz = e->tsc_hz;

	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:o, s:o}",
			 "rx_pkts", (json_int_t)c->rx_pkts,
			 "rx_bytes", (json_int_t)c->rx_bytes,
			 "lost_pkts", (json_int_t)c->lost_pkts,
			 "reordered_pkts", (json_int_t)c->reordered_pkts,
			 "duplicate_pkts", (json_int_t)c->duplicate_pkts,
			 "foreign_pkts", (json_int_t)c->foreign_pkts,
			 "latency_invalid_pkts", (json_int_t)c->latency_invalid_pkts,
			 "latency_samples", (json_int_t)h->count,
			 "latency_min_ns", (json_int_t)(h->count ? ep_cyc_to_ns(h->min, hz) : 0),
			 "latency_mean_ns", (json_int_t)(h->count ? ep_cyc_to_ns(h->sum / h->count,
										     hz) : 0),
			 "latency_p50_ns", (json_int_t)ep_cyc_to_ns(ep_hist_percentile(h, 500), hz),
			 "latency_p99_ns", (json_int_t)ep_cyc_to_ns(ep_hist_percentile(h, 990), hz),
			 "latency_p999_ns", (json_int_t)ep_cyc_to_ns(ep_hist_percentile(h, 999), hz),
			 "latency_max_ns", (json_int_t)(h->count ? ep_cyc_to_ns(h->max, hz) : 0),
			 "first_rx_ns", ep_gen_time_json(e, c->first_rx_tsc),
			 "last_rx_ns", ep_gen_time_json(e, c->last_rx_tsc));
}

static int
sink_cmd(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err, bool reset)
{
	struct ep_worker *ws[EP_MAX_WORKERS];
	struct sink_copy *cp = NULL, *tot = NULL;
	json_t *list;
	int n, rc = -1;

	if (ep_gen_only_worker(req, err) < 0)
		return -1;
	n = ep_gen_select_workers(e, req, "sink", ws, err);
	if (n < 0)
		return -1;
	tot = calloc(1, sizeof(*tot));
	if (tot == NULL)
		return ep_err_set(err, "out of memory");
	ep_hist_reset(&tot->lat);
	list = json_array();
	for (int i = 0; i < n; i++) {
		json_t *o;

		cp = calloc(1, sizeof(*cp));
		if (cp == NULL) {
			ep_err_set(err, "out of memory");
			goto out;
		}
		cp->reset = reset;
		if (ep_worker_call(ws[i], sink_msg_run, cp, SINK_CALL_MS, err) < 0) {
			cp = NULL;      /* the worker may still write it: leave it */
			goto out;
		}
		o = sink_json(e, &cp->c, &cp->lat);
		json_object_set_new(o, "worker", json_string(ws[i]->name));
		json_array_append_new(list, o);
		tot->c.rx_pkts += cp->c.rx_pkts;
		tot->c.rx_bytes += cp->c.rx_bytes;
		tot->c.lost_pkts += cp->c.lost_pkts;
		tot->c.reordered_pkts += cp->c.reordered_pkts;
		tot->c.duplicate_pkts += cp->c.duplicate_pkts;
		tot->c.foreign_pkts += cp->c.foreign_pkts;
		tot->c.latency_invalid_pkts += cp->c.latency_invalid_pkts;
		if (cp->c.first_rx_tsc != 0 &&
		    (tot->c.first_rx_tsc == 0 || cp->c.first_rx_tsc < tot->c.first_rx_tsc))
			tot->c.first_rx_tsc = cp->c.first_rx_tsc;
		tot->c.last_rx_tsc = RTE_MAX(tot->c.last_rx_tsc, cp->c.last_rx_tsc);
		ep_hist_merge(&tot->lat, &cp->lat);
		free(cp);
		cp = NULL;
	}
	/* sink-reset reports what it cleared: the totals of the trial. */
	json_object_set_new(result, "tsc_hz", json_integer((json_int_t)e->tsc_hz));
	json_object_set_new(result, "reset", json_boolean(reset));
	{
		json_t *t = sink_json(e, &tot->c, &tot->lat);

		json_object_update(result, t);
		json_decref(t);
	}
	json_object_set(result, "workers", list);
	rc = 0;
out:
	json_decref(list);
	free(cp);
	free(tot);
	return rc;
}

static int
cmd_sink_stats(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	return sink_cmd(e, req, result, err, false);
}

static int
cmd_sink_reset(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	return sink_cmd(e, req, result, err, true);
}

static struct ep_ctl_cmd c_sink_stats = { "sink-stats", "[worker=NAME]",
	"sink counters: received, lost, reordered, duplicates, foreign, latency percentiles",
	cmd_sink_stats, NULL };
static struct ep_ctl_cmd c_sink_reset = { "sink-reset", "[worker=NAME]",
	"zero the sink's counters, latency histogram and flow sequences (returns the old ones)",
	cmd_sink_reset, NULL };
EP_CTL_REGISTER(c_sink_stats);
EP_CTL_REGISTER(c_sink_reset);
