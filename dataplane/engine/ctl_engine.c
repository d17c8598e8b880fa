/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine commands on the control socket: help, stats, stages, drops,
 * drop-reasons, ports, workers, shutdown.
 *
 * Counters are written by one worker each without atomics; the control
 * thread reads them with relaxed atomic loads (aligned 64-bit loads never
 * tear on the targets we build for), so a reading may be one burst behind.
 */
#include <arpa/inet.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_version.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "engine_internal.h"

#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static int
cmd_help(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	json_t *list = json_array();

	for (const struct ep_ctl_cmd *c = ep_ctl_first(); c != NULL; c = c->next_cmd)
		json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "cmd", c->name, "args",
						      c->args ? c->args : "", "help", c->help));
	json_object_set_new(result, "commands", list);
	return 0;
}

static json_t *
stage_json(const struct ep_engine *e, const struct ep_stage *s)
{
	uint64_t in = RD(s->stats.pkts_in), cyc = RD(s->stats.cycles);
	json_t *drops = json_object();
	uint64_t total = 0;

	for (int r = 0; r < EP_DROP__COUNT; r++) {
		uint64_t d = RD(s->stats.drops[r]);

		if (d != 0) {
			json_object_set_new(drops, ep_drop_name[r], json_integer((json_int_t)d));
			total += d;
		}
	}
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:o}",
			 "name", s->name,
			 "calls", (json_int_t)RD(s->stats.calls),
			 "pkts_in", (json_int_t)in,
			 "pkts_out", (json_int_t)RD(s->stats.pkts_out),
			 "pkts_tx", (json_int_t)RD(s->stats.pkts_tx),
			 "pkts_consumed", (json_int_t)RD(s->stats.pkts_consumed),
			 "pkts_dropped", (json_int_t)total,
			 "cycles", (json_int_t)cyc,
			 "cycles_per_pkt", in ? (double)cyc / (double)in : 0.0,
			 "drops", drops);
}

static json_t *
worker_json(const struct ep_engine *e, const struct ep_worker *w, bool with_stages)
{
	uint64_t busy = RD(w->stats.busy_cycles), idle = RD(w->stats.idle_cycles);
	uint64_t slept = RD(w->stats.sleep_cycles), all = busy + idle + slept;
	json_t *o = json_pack("{s:s, s:i, s:i, s:s, s:b, s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"name", w->name, "id", (int)w->id, "lcore", (int)w->lcore,
		"pipeline", w->type->name,
		"running", __atomic_load_n(&w->running, __ATOMIC_ACQUIRE),
		"poll_policy", ep_poll_policy_name[w->poll.policy],
		"busy_cycles", (json_int_t)busy, "idle_cycles", (json_int_t)idle,
		"busy_pct", all ? 100.0 * (double)busy / (double)all : 0.0,
		"sleeps", (json_int_t)RD(w->stats.sleeps),
		"sleep_cycles", (json_int_t)slept,
		"polls", (json_int_t)RD(w->stats.polls),
		"empty_polls", (json_int_t)RD(w->stats.empty_polls),
		"rx_pkts", (json_int_t)RD(w->stats.rx_pkts),
		"tx_pkts", (json_int_t)RD(w->stats.tx_pkts),
		"msgs", (json_int_t)RD(w->stats.msgs));

	if (with_stages) {
		json_t *st = json_array();

		json_array_append_new(st, stage_json(e, &w->rx_stage));
		for (int i = 0; i < w->n_stages; i++)
			json_array_append_new(st, stage_json(e, &w->stages[i]));
		if (w->type->service != NULL)
			json_array_append_new(st, stage_json(e, &w->service_stage));
		json_array_append_new(st, stage_json(e, &w->tx_stage));
		json_object_set_new(o, "stages", st);
	}
	return o;
}

static json_t *
port_json(const struct ep_port *p)
{
	char mac[RTE_ETHER_ADDR_FMT_SIZE];
	struct rte_eth_stats st;
	struct rte_eth_link link;
	json_t *o, *v4 = json_array(), *v6 = json_array();
	char buf[64];

	rte_ether_format_addr(mac, sizeof(mac), &p->mac);
	for (int i = 0; i < p->n_v4; i++) {
		inet_ntop(AF_INET, &p->v4[i].addr, buf, sizeof(buf));
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "/%u", p->v4[i].plen);
		json_array_append_new(v4, json_string(buf));
	}
	for (int i = 0; i < p->n_v6; i++) {
		inet_ntop(AF_INET6, p->v6[i].addr, buf, sizeof(buf));
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "/%u", p->v6[i].plen);
		json_array_append_new(v6, json_string(buf));
	}
	o = json_pack("{s:s, s:i, s:s, s:i, s:s, s:i, s:i, s:o, s:o}", "name", p->name,
		      "index", p->index, "device", p->device, "port_id", p->port_id, "mac", mac,
		      "rx_queues", p->n_rxq, "tx_queues", p->n_txq, "ipv4", v4, "ipv6", v6);
	/* Where received frames start in a cache line (ep_meta.h): 0 for a
	 * port polled only by pipelines that push no header, 32 otherwise. */
	if (p->pool != NULL)
		json_object_set_new(o, "frame_line_offset",
				    json_integer((sizeof(struct rte_mbuf) + p->priv_size +
						  RTE_PKTMBUF_HEADROOM) % RTE_CACHE_LINE_SIZE));
	if (p->started && rte_eth_stats_get(p->port_id, &st) == 0) {
		json_t *s;
		/* af_packet: frames the kernel dropped on a full ring, and AF_XDP:
		 * on a full rx ring (af_packet.c), which the 22.11 PMDs do not
		 * count, are missed frames too. */
		bool afp = ep_af_packet_sockets(p->index) != 0;
		bool xsk = ep_xsk_sockets(p->index) != 0;
		uint64_t kdrops = afp ? ep_af_packet_drops(p->index) : 0;
		uint64_t xfull = xsk ? ep_xsk_ring_full(p->index) : 0;

		s = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"ipackets", (json_int_t)st.ipackets, "opackets", (json_int_t)st.opackets,
			"ibytes", (json_int_t)st.ibytes, "obytes", (json_int_t)st.obytes,
			"imissed", (json_int_t)(st.imissed + kdrops + xfull), "ierrors", (json_int_t)st.ierrors,
			"oerrors", (json_int_t)st.oerrors, "rx_nombuf", (json_int_t)st.rx_nombuf);
		if (afp)
			json_object_set_new(s, "af_packet_drops", json_integer((json_int_t)kdrops));
		if (xsk)
			json_object_set_new(s, "xsk_rx_ring_full", json_integer((json_int_t)xfull));
		json_object_set_new(o, "stats", s);
	}
	if (p->started && rte_eth_link_get_nowait(p->port_id, &link) == 0)
		json_object_set_new(o, "link_up", json_boolean(link.link_status));
	return o;
}

static int
cmd_stats(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	json_t *ports = json_array(), *workers = json_array();

	for (int i = 0; i < e->n_ports; i++)
		json_array_append_new(ports, port_json(&e->ports[i]));
	for (int i = 0; i < e->n_workers; i++)
		json_array_append_new(workers, worker_json(e, e->workers[i], false));
	json_object_set_new(result, "uptime_s",
			    json_real((double)(rte_rdtsc() - e->start_tsc) / (double)e->tsc_hz));
	json_object_set_new(result, "tsc_hz", json_integer((json_int_t)e->tsc_hz));
	json_object_set_new(result, "ports", ports);
	json_object_set_new(result, "workers", workers);
	return 0;
}

static int
cmd_ports(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	json_t *ports = json_array();

	for (int i = 0; i < e->n_ports; i++)
		json_array_append_new(ports, port_json(&e->ports[i]));
	json_object_set_new(result, "ports", ports);
	return 0;
}

static int
cmd_stages(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	json_t *workers = json_array();

	for (int i = 0; i < e->n_workers; i++)
		json_array_append_new(workers, worker_json(e, e->workers[i], true));
	json_object_set_new(result, "tsc_hz", json_integer((json_int_t)e->tsc_hz));
	json_object_set_new(result, "workers", workers);
	return 0;
}

static int
cmd_drops(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	uint64_t tot[EP_DROP__COUNT] = { 0 };
	json_t *o = json_object();

	for (int i = 0; i < e->n_workers; i++) {
		const struct ep_worker *w = e->workers[i];

		for (int r = 0; r < EP_DROP__COUNT; r++) {
			tot[r] += RD(w->rx_stage.stats.drops[r]) + RD(w->tx_stage.stats.drops[r]) +
				  RD(w->service_stage.stats.drops[r]);
			for (int s = 0; s < w->n_stages; s++)
				tot[r] += RD(w->stages[s].stats.drops[r]);
		}
	}
	for (int r = 0; r < EP_DROP__COUNT; r++)
		json_object_set_new(o, ep_drop_name[r], json_integer((json_int_t)tot[r]));
	json_object_set_new(result, "drops", o);
	return 0;
}

static int
cmd_drop_reasons(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	json_t *list = json_array();

	for (int r = 0; r < EP_DROP__COUNT; r++)
		json_array_append_new(list, json_pack("{s:s, s:s}", "name", ep_drop_name[r],
						      "description", ep_drop_desc[r]));
	json_object_set_new(result, "reasons", list);
	return 0;
}

static int
cmd_version(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	json_object_set_new(result, "edgeplane_dp", json_string(EP_VERSION));
	json_object_set_new(result, "dpdk", json_string(rte_version()));
	return 0;
}

static int
cmd_shutdown(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	__atomic_store_n(&e->quit, 1, __ATOMIC_RELEASE);
	json_object_set_new(result, "stopping", json_true());
	return 0;
}

static struct ep_ctl_cmd c_help = { "help", "", "list commands", cmd_help, NULL };
static struct ep_ctl_cmd c_version = { "version", "", "versions of edgeplane-dp and DPDK", cmd_version, NULL };
static struct ep_ctl_cmd c_stats = { "stats", "", "ports and workers: packets, busy/idle cycles", cmd_stats, NULL };
static struct ep_ctl_cmd c_ports = { "ports", "", "ports: device, MAC, addresses, counters", cmd_ports, NULL };
static struct ep_ctl_cmd c_stages = { "stages", "", "per worker, per stage: packets, drops by reason, cycles/packet", cmd_stages, NULL };
static struct ep_ctl_cmd c_drops = { "drops", "", "drops by reason, summed over workers and stages", cmd_drops, NULL };
static struct ep_ctl_cmd c_reasons = { "drop-reasons", "", "every drop reason with its description", cmd_drop_reasons, NULL };
static struct ep_ctl_cmd c_shutdown = { "shutdown", "", "stop the data plane cleanly", cmd_shutdown, NULL };
EP_CTL_REGISTER(c_help)
EP_CTL_REGISTER(c_version)
EP_CTL_REGISTER(c_stats)
EP_CTL_REGISTER(c_ports)
EP_CTL_REGISTER(c_stages)
EP_CTL_REGISTER(c_drops)
EP_CTL_REGISTER(c_reasons)
EP_CTL_REGISTER(c_shutdown)
