/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Subscriber counters, and the `sub-counters` command: the counters of
 * many subscribers in one request, for a control plane that polls them
 * (a PFCP user-plane function measuring usage for its URRs polls every
 * session with one every second; a `sub-get` each would be 64K requests).
 *
 *   sub-counters ids=[1, 2, ...]            (at most 65536)
 *   sub-counters [offset=<n>] [limit=<n>]   (subscribers in id order)
 *
 * The answer is positional, a row per subscriber found, ids that hold no
 * subscriber listed apart:
 *
 *   {"columns": ["id", "green_pkts", "green_bytes", "yellow_pkts",
 *                "yellow_bytes", "red_pkts", "red_bytes", "down_pkts",
 *                "down_bytes"],
 *    "counters": [[1, 10, 1280, 0, 0, 0, 0, 12, 1536], ...],
 *    "missing": [7], "total": 2}
 *
 * Uplink bytes are IP bytes, downlink bytes access frame bytes (as
 * sub-get).  About 60 bytes of JSON a subscriber.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <string.h>

#include "ep_ctl.h"
#include "bng_counters.h"

void
bng_sub_counters(const struct bng *b, const struct bng_sub *s, struct bng_sub_counters *c)
{
	memset(c, 0, sizeof(*c));
	/* Other workers' counters: plain 64-bit loads, never torn on the
	 * 64-bit targets DPDK supports; the green ones inside the worker's
	 * sequence count (bng_up_green_read).  A worker's entry counts for
	 * this subscriber only when its generation is the record's (an id
	 * given to a new subscriber starts from zero). */
	for (int w = 0; w < b->n_up; w++) {
		const struct bng_up_dyn *d = &b->up[w]->dyn[s->id];
		const struct bng_up_cold *o = &b->up[w]->cold[s->id];
		uint64_t gp, gb;

		if (o->gen != s->gen)
			continue;
		bng_up_green_read(d, o, &gp, &gb);
		c->pkts[RTE_COLOR_GREEN] += gp;
		c->bytes[RTE_COLOR_GREEN] += gb;
		for (int k = RTE_COLOR_YELLOW; k <= RTE_COLOR_RED; k++) {
			c->pkts[k] += o->pkts[k];
			c->bytes[k] += o->bytes[k];
		}
		c->spoofed += o->spoofed;
	}
	for (int w = 0; w < b->n_down; w++) {
		const struct bng_down_dyn *d = &b->down[w]->dyn[s->id];

		if (d->gen == s->gen) {
			c->down_pkts += d->pkts;
			c->down_bytes += d->bytes;
		}
	}
}

#define SUB_COUNTERS_MAX 65536u

static json_t *
row(const struct bng *b, const struct bng_sub *s)
{
	struct bng_sub_counters c;

	bng_sub_counters(b, s, &c);
	return json_pack("[i, I, I, I, I, I, I, I, I]", (int)s->id,
			 (json_int_t)c.pkts[0], (json_int_t)c.bytes[0], (json_int_t)c.pkts[1],
			 (json_int_t)c.bytes[1], (json_int_t)c.pkts[2], (json_int_t)c.bytes[2],
			 (json_int_t)c.down_pkts, (json_int_t)c.down_bytes);
}

static int
ctl_sub_counters(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_of(e);
	json_t *ids = json_object_get(req, "ids"), *rows, *missing;

	if (b == NULL)
		return ep_err_set(err, "no bng pipeline is configured");
	rows = json_array();
	missing = json_array();
	if (ids != NULL) {
		size_t i;
		json_t *v;

		if (!json_is_array(ids) || json_array_size(ids) > SUB_COUNTERS_MAX) {
			json_decref(rows);
			json_decref(missing);
			return ep_err_set(err, "ids: a list of at most %u subscriber ids", SUB_COUNTERS_MAX);
		}
		json_array_foreach(ids, i, v) {
			json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
			const struct bng_sub *s;

			if (id < 1 || id > (json_int_t)b->p.max_subscribers) {
				json_decref(rows);
				json_decref(missing);
				return ep_err_set(err, "ids[%zu]: a subscriber id is 1..%u", i,
						  b->p.max_subscribers);
			}
			s = bng_sub_get(b, (uint32_t)id);
			if (s == NULL)
				json_array_append_new(missing, json_integer(id));
			else
				json_array_append_new(rows, row(b, s));
		}
	} else {
		uint64_t offset, limit, seen = 0;

		if (ep_ctl_u64(req, "offset", 0, UINT32_MAX, &offset, err) < 0 ||
		    ep_ctl_u64(req, "limit", SUB_COUNTERS_MAX, SUB_COUNTERS_MAX, &limit, err) < 0) {
			json_decref(rows);
			json_decref(missing);
			return -1;
		}
		for (uint32_t id = 1; id <= b->p.max_subscribers && json_array_size(rows) < limit; id++) {
			const struct bng_sub *s = bng_sub_get(b, id);

			if (s != NULL && seen++ >= offset)
				json_array_append_new(rows, row(b, s));
		}
	}
	json_object_set_new(res, "columns", json_pack("[s, s, s, s, s, s, s, s, s]", "id", "green_pkts",
		"green_bytes", "yellow_pkts", "yellow_bytes", "red_pkts", "red_bytes", "down_pkts",
		"down_bytes"));
	json_object_set_new(res, "counters", rows);
	json_object_set_new(res, "missing", missing);
	json_object_set_new(res, "total", json_integer(b->n_subs));
	return 0;
}

static struct ep_ctl_cmd c_sub_counters = { "sub-counters", "ids=[<n>, ...] | [offset=<n>] [limit=<n>]",
	"counters of many subscribers (rows: id, green/yellow/red pkts and bytes, downlink pkts and bytes)",
	ctl_sub_counters, NULL };
EP_CTL_REGISTER(c_sub_counters)
