/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start-up and shutdown of edgeplane-dp.
 *
 *   parse config (no DPDK) -> EAL init (args from [eal] + derived defaults)
 *   -> probe ports -> workers: queues, QSBR registration
 *   -> pipeline types' setup (shared tables) -> ports start
 *   -> each worker's pipeline build (stages) -> unknown keys are errors
 *   -> control socket -> launch workers -> main lcore serves the socket
 *   -> SIGINT/SIGTERM: quit flag -> workers leave their loops after the
 *      current burst -> pipelines' teardown -> ports stop -> EAL cleanup
 *
 * Every failure before launch prints "edgeplane-dp: <file>:<line>: ..." and
 * exits non-zero; nothing half-started is left (the EAL runs --in-memory).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_meta.h"
#include "ep_rcu.h"
#include "engine_internal.h"
#include "power_internal.h"

#define EP_MAX_EAL_ARGS 64

static volatile sig_atomic_t got_signal; /* async-signal-safe flag; main thread only */

static void
on_signal(int sig)
{
	got_signal = sig;
}

void
ep_rcu_synchronize(struct ep_engine *e)
{
	rte_rcu_qsbr_synchronize(e->qsbr, RTE_QSBR_THRID_INVALID);
}

static int
parse_engine_section(struct ep_engine *e, struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "engine", NULL);
	const char *path;
	uint64_t v;

	path = ep_cfg_str(e->cfg, s, "ctl_socket", "/run/edgeplane/dp.sock", err);
	if (path == NULL)
		return -1;
	if (strlen(path) >= sizeof(e->ctl_path) || path[0] != '/')
		return ep_cfg_error(e->cfg, ep_cfg_get(e->cfg, s, "ctl_socket", NULL), err,
				    "must be an absolute path shorter than %zu bytes",
				    sizeof(e->ctl_path));
	snprintf(e->ctl_path, sizeof(e->ctl_path), "%s", path);
	if (ep_cfg_get(e->cfg, s, "ctl_socket", NULL) != NULL)
		e->ctl_line = ep_cfg_get(e->cfg, s, "ctl_socket", NULL)->line;
	if (ep_cfg_u64(e->cfg, s, "burst", 32, 1, EP_BURST_MAX, &v, err) < 0)
		return -1;
	e->burst = (uint16_t)v;
	if (ep_power_engine_config(e, s, err) < 0)
		return -1;
	{
		const char *mem = ep_cfg_str(e->cfg, s, "memory", "auto", err);

		if (mem == NULL)
			return -1;
		if (strcmp(mem, "auto") == 0)
			e->memory = EP_MEM_AUTO;
		else if (strcmp(mem, "hugepages") == 0)
			e->memory = EP_MEM_HUGEPAGES;
		else if (strcmp(mem, "no-huge") == 0)
			e->memory = EP_MEM_NO_HUGE;
		else
			return ep_cfg_error(e->cfg, ep_cfg_get(e->cfg, s, "memory", NULL), err,
					    "'%s': expected auto, hugepages or no-huge", mem);
	}
	return 0;
}

struct rx_ctx {
	struct ep_engine *e;
	struct ep_worker *w;
	struct ep_err *err;
};

/* "rx = access, core": one rx queue per listed port. */
static int
parse_rx(const struct ep_cfg_kv *kv, void *arg)
{
	struct rx_ctx *c = arg;
	char buf[EP_SIDE_MAX_LINE + 1], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", kv->val);
	for (tok = strtok_r(buf, ", \t", &save); tok != NULL; tok = strtok_r(NULL, ", \t", &save)) {
		struct ep_port *p = ep_port_by_name(c->e, tok);

		if (p == NULL)
			return ep_cfg_error(c->e->cfg, kv, c->err, "no [port %s]", tok);
		for (int i = 0; i < c->w->n_rx; i++)
			if (c->w->rx[i].port == p->index)
				return ep_cfg_error(c->e->cfg, kv, c->err, "port %s listed twice",
						    tok);
		if (c->w->n_rx == EP_MAX_RX)
			return ep_cfg_error(c->e->cfg, kv, c->err, "more than %d rx ports",
					    EP_MAX_RX);
		c->w->rx[c->w->n_rx].port = p->index;
		c->w->rx[c->w->n_rx].queue = p->n_rxq++;
		c->w->n_rx++;
	}
	return 0;
}

/*
 * Some devices have as many rx queues as tx queues whether we poll them or
 * not: net_af_packet opens one packet socket per queue pair and the kernel
 * spreads arriving frames over all of them (PACKET_FANOUT).  Every tx queue
 * a worker needs therefore brings an rx queue that must be polled, or the
 * flows hashed to it are lost.  Give such queues, round-robin, to the
 * workers that already poll the port; a port nobody polls keeps them idle.
 */
static int
assign_forced_rx_queues(struct ep_engine *e, struct ep_port *p, struct ep_err *err)
{
	const char *qp = strstr(p->device, ",qpairs=");
	uint16_t forced = p->n_rxq;
	int k = 0;

	if (strncmp(p->device, "net_af_packet", 13) != 0)
		return 0;
	forced = RTE_MAX(p->n_rxq, p->n_txq);
	if (qp != NULL) {
		char num[16];
		size_t n = strcspn(qp + 8, ",");
		uint64_t v;

		snprintf(num, sizeof(num), "%.*s", (int)RTE_MIN(n, sizeof(num) - 1), qp + 8);
		if (n >= sizeof(num) || ep_parse_u64(num, 1, EP_MAX_WORKERS * EP_MAX_RX, &v, err) < 0)
			return ep_err_set(err, "%s:%d: key 'device': port %s: qpairs=%.*s is not "
					  "1-%d", e->cfg->path, p->device_line, p->name, (int)n,
					  qp + 8, EP_MAX_WORKERS * EP_MAX_RX);
		forced = (uint16_t)v;
	}
	if (forced < p->n_rxq || forced < p->n_txq)
		return ep_err_set(err, "%s:%d: key 'device': port %s: qpairs=%u but %u workers "
				  "poll it and %u send on it", e->cfg->path, p->device_line,
				  p->name, forced, p->n_rxq, p->n_txq);
	if (p->n_rxq == 0)
		return 0;
	for (uint16_t q = p->n_rxq; q < forced; k++) {
		struct ep_worker *w = e->workers[k % e->n_workers];
		bool polls = false;

		for (int i = 0; i < w->n_rx; i++)
			polls = polls || w->rx[i].port == p->index;
		if (!polls)
			continue;
		if (w->n_rx == EP_MAX_RX)
			return ep_err_set(err, "port %s: worker %s would poll more than %d queues",
					  p->name, w->name, EP_MAX_RX);
		w->rx[w->n_rx].port = p->index;
		w->rx[w->n_rx++].queue = q++;
	}
	p->n_rxq = forced;
	return 0;
}

/* [worker NAME] sections: pipeline, rx ports, lcore.  Needs the EAL (the
 * worker lives in hugepage memory with its message ring). */
static int
create_workers(struct ep_engine *e, struct ep_err *err)
{
	struct ep_cfg *cfg = e->cfg;

	for (int i = 0; i < cfg->n_sec; i++) {
		struct ep_cfg_section *s = &cfg->sec[i];
		const struct ep_cfg_kv *kv;
		struct ep_worker *w;
		struct rx_ctx rc;
		uint64_t lcore;

		if (strcmp(s->type, "worker") != 0)
			continue;
		if (s->name[0] == '\0')
			return ep_cfg_section_error(cfg, s, err, "a worker needs a name: [worker NAME]");
		if (e->n_workers == EP_MAX_WORKERS)
			return ep_cfg_section_error(cfg, s, err, "more than %d workers",
						    EP_MAX_WORKERS);
		w = ep_worker_create(e, (unsigned int)e->n_workers, s->name, err);
		if (w == NULL)
			return -1;
		e->workers[e->n_workers++] = w;
		w->cfg = s;
		if (ep_power_worker_config(e, w, err) < 0)
			return -1;
		kv = ep_cfg_get(cfg, s, "pipeline", err);
		if (kv == NULL)
			return err->msg[0] ? -1 :
				ep_cfg_section_error(cfg, s, err, "missing 'pipeline'");
		w->type = ep_pipeline_find(kv->val);
		if (w->type == NULL) {
			char names[256] = "";

			for (const struct ep_pipeline_type *t = ep_pipeline_first(); t != NULL;
			     t = t->next_type)
				snprintf(names + strlen(names), sizeof(names) - strlen(names),
					 "%s%s", names[0] ? ", " : "", t->name);
			return ep_cfg_error(cfg, kv, err, "unknown pipeline '%s' (have: %s)",
					    kv->val, names);
		}
		rc = (struct rx_ctx){ e, w, err };
		if (ep_cfg_each(s, "rx", parse_rx, &rc) != 0)
			return -1;
		if (w->n_rx == 0 && w->type->source == NULL)
			return ep_cfg_section_error(cfg, s, err,
						    "pipeline %s needs 'rx = <port>[, <port>...]'",
						    w->type->name);
		if (w->n_rx != 0 && w->type->source != NULL && !w->type->source_polls_rx)
			return ep_cfg_section_error(cfg, s, err,
						    "pipeline %s generates packets: no 'rx'",
						    w->type->name);
		if (ep_cfg_u64(cfg, s, "lcore", (uint64_t)e->n_workers, 1, RTE_MAX_LCORE - 1,
			       &lcore, err) < 0)
			return -1;
		w->lcore = (unsigned int)lcore;
		for (int j = 0; j < e->n_workers - 1; j++)
			if (e->workers[j]->lcore == w->lcore)
				return ep_cfg_section_error(cfg, s, err,
					"lcore %u already runs worker %s", w->lcore,
					e->workers[j]->name);
	}
	if (e->n_workers == 0)
		return ep_err_set(err, "%s: no [worker NAME] section: nothing to run", cfg->path);
	/* Each worker gets its own tx queue on every port. */
	for (int p = 0; p < e->n_ports; p++)
		e->ports[p].n_txq = (uint16_t)e->n_workers;
	for (int i = 0; i < e->n_workers; i++)
		for (int p = 0; p < e->n_ports; p++)
			e->workers[i]->txq[p] = (uint16_t)i;
	for (int p = 0; p < e->n_ports; p++)
		if (assign_forced_rx_queues(e, &e->ports[p], err) < 0)
			return -1;
	return 0;
}

/* Sections nobody knows are errors, like unknown keys. */
static int
check_section_types(struct ep_engine *e, struct ep_err *err)
{
	static const char *const known[] = { "eal", "engine", "port", "worker" };

	for (int i = 0; i < e->cfg->n_sec; i++) {
		struct ep_cfg_section *s = &e->cfg->sec[i];
		bool ok = ep_pipeline_find(s->type) != NULL;
		size_t tl = strlen(s->type);

		/* A family's shared section: [bng] for bng-uplink, bng-downlink. */
		for (const struct ep_pipeline_type *t = ep_pipeline_first(); t != NULL && !ok;
		     t = t->next_type)
			ok = strncmp(t->name, s->type, tl) == 0 && t->name[tl] == '-';
		for (size_t k = 0; k < RTE_DIM(known); k++)
			ok = ok || strcmp(s->type, known[k]) == 0;
		if (!ok)
			return ep_cfg_section_error(e->cfg, s, err, "unknown section type '%s'",
						    s->type);
	}
	return 0;
}

/* A CPU set as "0-3,6" for messages. */
static void
cpu_set_str(const cpu_set_t *set, char *buf, size_t n)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE && o < n; c++) {
		int last = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		o += (size_t)snprintf(buf + o, n - o, last > c ? "%s%d-%d" : "%s%d", o ? "," : "",
				      c, last);
		c = last;
	}
}

/*
 * [engine] cpus = "0-1" or "0,2-3": checked here, with its line, because
 * the EAL only says "Invalid argument" about the lcore map built from it.
 * Every CPU must be one this process may run on.
 */
static int
check_cpus(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv, struct ep_err *err)
{
	char buf[256], allowed_str[128], *tok, *save = NULL;
	cpu_set_t allowed;
	int n = 0;

	if (snprintf(buf, sizeof(buf), "%s", kv->val) >= (int)sizeof(buf))
		return ep_cfg_error(cfg, kv, err, "longer than %zu bytes", sizeof(buf) - 1);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return ep_cfg_error(cfg, kv, err, "sched_getaffinity: %s", strerror(errno));
	cpu_set_str(&allowed, allowed_str, sizeof(allowed_str));
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save), n++) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;

		if (dash != NULL)
			*dash = '\0';
		if (ep_parse_u64(tok, 0, CPU_SETSIZE - 1, &lo, err) < 0 ||
		    ep_parse_u64(dash != NULL ? dash + 1 : tok, lo, CPU_SETSIZE - 1, &hi, err) < 0)
			return ep_cfg_error(cfg, kv, err, "'%s' is not a CPU list such as 0-1 or "
					    "0,2-3 (ranges ascending)", kv->val);
		for (uint64_t c = lo; c <= hi; c++)
			if (!CPU_ISSET(c, &allowed))
				return ep_cfg_error(cfg, kv, err, "CPU %llu is not one this process "
						    "may run on (%s)", (unsigned long long)c,
						    allowed_str);
	}
	if (n == 0)
		return ep_cfg_error(cfg, kv, err, "'%s' names no CPU", kv->val);
	return 0;
}

/*
 * rte_eal_init() failed: DPDK printed its reason; ours names the key the
 * arguments came from and the whole command line the EAL saw.
 */
static int
eal_failed(struct ep_engine *e, int argc, char **argv, struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "eal", NULL);
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, s, "args", NULL);
	char line[300];
	size_t o = 0;

	for (int i = 1; i < argc && o < sizeof(line); i++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s", i > 1 ? " " : "", argv[i]);
	if (kv == NULL)
		kv = ep_cfg_get(e->cfg, ep_cfg_find(e->cfg, "engine", NULL), "cpus", NULL);
	if (kv == NULL)
		return ep_err_set(err, "%s: EAL init failed: %s (EAL arguments: %s)", e->cfg->path,
				  rte_strerror(rte_errno), line);
	return ep_cfg_error(e->cfg, kv, err, "EAL init failed: %s (EAL arguments: %s; DPDK's "
			    "message is above)", rte_strerror(rte_errno), line);
}

/*
 * EAL arguments: [eal] args first (the operator wins), then defaults for
 * what they did not say: --in-memory (no files left behind), hugepages or
 * --no-huge when too few are free for this configuration (memory.c), --no-pci unless a port is a PCI address, and
 * an lcore map in which every lcore may run on any allowed CPU (so two
 * instances and traffic tools share a 2-core machine; pin with cpus=).
 */
static int
build_eal_args(struct ep_engine *e, bool check_only, char **argv, char *store, size_t store_len,
	       struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "eal", NULL);
	struct ep_cfg_section *es = ep_cfg_find(e->cfg, "engine", NULL);
	const char *user = ep_cfg_str(e->cfg, s, "args", "", err);
	const struct ep_cfg_kv *args_kv = ep_cfg_get(e->cfg, s, "args", NULL);
	const struct ep_cfg_kv *cpus_kv;
	const char *cpus;
	char lcores[8192];
	size_t used = 0;
	int argc = 0;
	bool pci = false, no_huge = false;

	if (user == NULL)
		return -1;
	cpus = ep_cfg_str(e->cfg, es, "cpus", NULL, err);
	if (cpus == NULL && err->msg[0] != '\0')
		return -1;
	cpus_kv = ep_cfg_get(e->cfg, es, "cpus", NULL);
	if (cpus_kv != NULL && check_cpus(e->cfg, cpus_kv, err) < 0)
		return -1;
#define ADD(str) do { \
		size_t l_ = strlen(str) + 1; \
		if (argc >= EP_MAX_EAL_ARGS - 1 || used + l_ > store_len) \
			return args_kv != NULL ? \
				ep_cfg_error(e->cfg, args_kv, err, "with the engine's own EAL " \
					     "arguments, more than %d arguments or %zu bytes", \
					     EP_MAX_EAL_ARGS - 1, store_len) : \
				ep_err_set(err, "%s: EAL arguments too long", e->cfg->path); \
		memcpy(store + used, (str), l_); \
		argv[argc++] = store + used; \
		used += l_; \
	} while (0)
	ADD("edgeplane-dp");
	{
		char buf[EP_SIDE_MAX_LINE + 1], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", user);
		for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
			/* The EAL answers these by exiting 0: the start would look fine. */
			if (strcmp(tok, "-h") == 0 || strcmp(tok, "--help") == 0)
				return ep_cfg_error(e->cfg, args_kv, err, "'%s' makes the EAL print "
						    "its usage and exit", tok);
			ADD(tok);
		}
	}
	if (strstr(user, "--no-huge") == NULL && strstr(user, "-m ") == NULL &&
	    strstr(user, "--socket-mem") == NULL) {
		/* Hugepages when enough are free for what this configuration
		 * allocates (ep_memory_plan); otherwise ordinary pages, which work
		 * everywhere and only cost TLB misses, as many MiB as it needs. */
		ep_memory_plan(e, check_only);
		if (!e->mem_huge) {
			char mb[24];

			snprintf(mb, sizeof(mb), "%" PRIu64, ep_memory_no_huge_mb(e->mem_need));
			ADD("--no-huge");
			ADD("-m");
			ADD(mb);
			no_huge = true;
		}
	}
	no_huge = no_huge || strstr(user, "--no-huge") != NULL;
	e->mem_huge = !no_huge;
	/* No files left behind: --in-memory with hugepages; --no-huge is
	 * incompatible with it in DPDK 22.11, so there --no-shconf. */
	if (strstr(user, "--in-memory") == NULL && strstr(user, "--file-prefix") == NULL &&
	    strstr(user, "--no-shconf") == NULL)
		ADD(no_huge ? "--no-shconf" : "--in-memory");
	for (int i = 0; i < e->n_ports; i++) {
		unsigned int a, b, c, d;

		if (sscanf(e->ports[i].device, "%x:%x:%x.%x", &a, &b, &c, &d) == 4)
			pci = true;
	}
	if ((!pci || check_only) && strstr(user, "--no-pci") == NULL && strstr(user, "-a ") == NULL)
		ADD("--no-pci");
	/* The EAL's telemetry socket is /var/run/dpdk/<prefix>/dpdk_telemetry.v2,
	 * one path for every instance with the default prefix, and
	 * rte_telemetry_init() connect()s to it to see whether it is taken: with
	 * its owner stopped (SIGSTOP, a debugger) and its backlog full, that
	 * connect blocks every later instance's start for good.  Our counters
	 * are on our own control socket, so the EAL's telemetry is off unless
	 * [eal] args says --telemetry. */
	if (check_only || strstr(user, "--telemetry") == NULL)
		ADD("--no-telemetry");
	if (strstr(user, "--lcores") == NULL && strstr(user, "-l ") == NULL) {
		char set[256];
		size_t n;

		if (cpus != NULL)
			snprintf(set, sizeof(set), "(%s)", cpus);
		else
			snprintf(set, sizeof(set), "(0-%ld)", sysconf(_SC_NPROCESSORS_ONLN) - 1);
		n = (size_t)snprintf(lcores, sizeof(lcores), "--lcores=0@%s", set);
		for (int i = 0; i < e->n_plan && n < sizeof(lcores); i++)
			n += (size_t)snprintf(lcores + n, sizeof(lcores) - n, ",%u@%s",
					      e->lcore_plan[i], set);
		if (n >= sizeof(lcores))
			return cpus_kv != NULL ?
				ep_cfg_error(e->cfg, cpus_kv, err, "the lcore map is too long") :
				ep_err_set(err, "%s: the lcore map is too long", e->cfg->path);
		ADD(lcores);
		ADD("--main-lcore");
		ADD("0");
	}
	if (strstr(user, "--log-level") == NULL) {
		ADD("--log-level");
		ADD("*:notice");
	}
	argv[argc] = NULL;
	return argc;
#undef ADD
}

void *
ep_engine_type_ctx(const struct ep_engine *e, const struct ep_pipeline_type *t)
{
	for (int i = 0; i < e->n_type_ctx; i++)
		if (e->type_ctx[i].type == t)
			return e->type_ctx[i].ctx;
	return NULL;
}

int
ep_engine_type_ctx_set(struct ep_engine *e, const struct ep_pipeline_type *t, void *ctx)
{
	for (int i = 0; i < e->n_type_ctx; i++)
		if (e->type_ctx[i].type == t) {
			e->type_ctx[i].ctx = ctx;
			return 0;
		}
	if (e->n_type_ctx == (int)RTE_DIM(e->type_ctx))
		return -1;
	e->type_ctx[e->n_type_ctx].type = t;
	e->type_ctx[e->n_type_ctx++].ctx = ctx;
	return 0;
}

int
ep_engine_tick_add(struct ep_engine *e, void (*fn)(void *arg, uint64_t now), void *arg)
{
	struct ep_tick *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return -1;
	t->fn = fn;
	t->arg = arg;
	t->next = e->ticks;
	e->ticks = t;
	return 0;
}

void
ep_engine_tick_del(struct ep_engine *e, void (*fn)(void *arg, uint64_t now), void *arg)
{
	for (struct ep_tick **pp = &e->ticks; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg) {
			struct ep_tick *t = *pp;

			*pp = t->next;
			free(t);
			return;
		}
}

void
ep_engine_tick_run(struct ep_engine *e, uint64_t now)
{
	for (struct ep_tick *t = e->ticks; t != NULL; t = t->next)
		t->fn(t->arg, now);
}

static int
init_qsbr(struct ep_engine *e, struct ep_err *err)
{
	size_t sz = rte_rcu_qsbr_get_memsize(EP_MAX_WORKERS);

	e->qsbr = rte_zmalloc("ep_qsbr", sz, RTE_CACHE_LINE_SIZE);
	if (e->qsbr == NULL || rte_rcu_qsbr_init(e->qsbr, EP_MAX_WORKERS) != 0)
		return ep_err_set(err, "RCU QSBR init failed");
	return 0;
}

static int
setup_pipelines(struct ep_engine *e, struct ep_err *err)
{
	for (const struct ep_pipeline_type *t = ep_pipeline_first(); t != NULL; t = t->next_type) {
		bool used = false;

		for (int i = 0; i < e->n_workers; i++)
			used = used || e->workers[i]->type == t;
		if (used && t->setup != NULL && t->setup(e, err) < 0)
			return -1;
		if (!used && ep_cfg_find(e->cfg, t->name, NULL) != NULL)
			return ep_cfg_section_error(e->cfg, ep_cfg_find(e->cfg, t->name, NULL), err,
						    "no worker runs pipeline %s", t->name);
	}
	return 0;
}

static void
teardown_pipelines(struct ep_engine *e)
{
	for (const struct ep_pipeline_type *t = ep_pipeline_first(); t != NULL; t = t->next_type) {
		bool used = false;

		for (int i = 0; i < e->n_workers; i++)
			used = used || e->workers[i]->type == t;
		if (used && t->teardown != NULL)
			t->teardown(e);
	}
}

static int
start(struct ep_engine *e, const struct ep_engine_opts *o, struct ep_err *err)
{
	char *argv[EP_MAX_EAL_ARGS], store[4096];
	int argc;

	if (parse_engine_section(e, err) < 0 || ep_ports_parse(e, err) < 0 ||
	    check_section_types(e, err) < 0)
		return -1;
	/* Workers need the EAL for their rings; count them first for --lcores. */
	for (int i = 0; i < e->cfg->n_sec; i++) {
		if (strcmp(e->cfg->sec[i].type, "worker") == 0 && e->n_plan < EP_MAX_WORKERS) {
			uint64_t lc;
			struct ep_err tmp;

			/* Provisional lcore numbers for the EAL map; a bad value is
			 * reported by create_workers() with its line. */
			if (ep_cfg_u64(e->cfg, &e->cfg->sec[i], "lcore",
				       (uint64_t)e->n_plan + 1, 1, RTE_MAX_LCORE - 1, &lc,
				       &tmp) < 0)
				lc = (uint64_t)e->n_plan + 1;
			e->lcore_plan[e->n_plan++] = (unsigned int)lc;
		}
	}
	argc = build_eal_args(e, o->check_only, argv, store, sizeof(store), err);
	if (argc < 0)
		return -1;
	if (rte_eal_init(argc, argv) < 0)
		return eal_failed(e, argc, argv, err);
	e->eal_up = true;
	/* Before any port is probed: a driver's own dynamic field (net_pcap's
	 * Rx timestamp) must be given other bytes than ep_meta's. */
	if (ep_meta_register() < 0)
		return ep_err_set(err, "mbuf dynamic field %s at offset %zu: %s",
				  EP_META_DYNFIELD_NAME, (size_t)EP_META_OFFSET,
				  rte_strerror(rte_errno));
	e->tsc_hz = rte_get_tsc_hz();
	e->start_tsc = rte_rdtsc();
	if (init_qsbr(e, err) < 0 || create_workers(e, err) < 0)
		return -1;
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (!o->check_only && !rte_lcore_is_enabled(w->lcore))
			return ep_err_set(err, "worker %s: lcore %u is not enabled in the EAL",
					  w->name, w->lcore);
		rte_rcu_qsbr_thread_register(e->qsbr, w->id);
	}
	if (!o->check_only && ep_ports_probe(e, err) < 0)
		return -1;
	if (setup_pipelines(e, err) < 0)
		return -1;
	if (!o->check_only && ep_ports_start(e, err) < 0)
		return -1;
	/* Polling policies need the ports' queues and sockets; pipelines'
	 * builds read the worker's policy (the generator's pacing depth). */
	if (ep_power_start(e, o->check_only, err) < 0)
		return -1;
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w->type->build != NULL && w->type->build(e, w, err) < 0)
			return -1;
		if (w->n_stages == 0)
			return ep_err_set(err, "worker %s: pipeline %s built no stages", w->name,
					  w->type->name);
	}
	return ep_cfg_check_unused(e->cfg, err);
}

static void
stop(struct ep_engine *e)
{
	__atomic_store_n(&e->quit, 1, __ATOMIC_RELEASE);
	/* A worker waiting in sleep-rx (up to 100 ms) sees the flag now. */
	for (int i = 0; e->launched && i < e->n_workers; i++)
		ep_worker_kick(e->workers[i]);
	if (e->launched)
		rte_eal_mp_wait_lcore();
	if (e->eal_up) {
		ep_power_stop(e);
		teardown_pipelines(e);
		ep_ports_stop(e);
		for (int i = 0; i < e->n_workers; i++)
			ep_worker_free(e->workers[i]);
		rte_free(e->qsbr);
		rte_eal_cleanup();
	}
	while (e->ticks != NULL)
		ep_engine_tick_del(e, e->ticks->fn, e->ticks->arg);
}

int
ep_engine_run(const struct ep_engine_opts *o)
{
	struct ep_engine *e = calloc(1, sizeof(*e));
	struct ep_err err = { "" };
	struct sigaction sa;
	int rc = 1;

	if (e == NULL)
		return 1;
	e->cfg = ep_cfg_load(o->config, &err);
	if (e->cfg == NULL)
		goto out;
	if (start(e, o, &err) < 0)
		goto out;
	if (o->check_only) {
		printf("%s: configuration OK (%d ports, %d workers)\n", o->config, e->n_ports,
		       e->n_workers);
		rc = 0;
		goto out;
	}
	if (ep_ctl_open(e, &err) < 0) {
		char inner[sizeof(err.msg)];

		snprintf(inner, sizeof(inner), "%s", err.msg);
		if (e->ctl_line != 0)
			ep_err_set(&err, "%s:%d: key 'ctl_socket': %s", e->cfg->path, e->ctl_line,
				   inner);
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < e->n_workers; i++) {
		if (rte_eal_remote_launch(ep_worker_main, e->workers[i], e->workers[i]->lcore) != 0) {
			ep_err_set(&err, "worker %s: cannot launch on lcore %u", e->workers[i]->name,
				   e->workers[i]->lcore);
			goto out_ctl;
		}
		e->launched = true;
	}
	printf("edgeplane-dp: running %d workers on %d ports; control socket %s\n", e->n_workers,
	       e->n_ports, e->ctl_path);
	fflush(stdout);
	while (got_signal == 0 && !__atomic_load_n(&e->quit, __ATOMIC_ACQUIRE)) {
		ep_ctl_poll(e, 20);
		ep_engine_tick_run(e, rte_rdtsc());
	}
	printf("edgeplane-dp: %s, stopping\n", got_signal ? strsignal(got_signal) : "shutdown requested");
	rc = 0;
out_ctl:
	ep_ctl_close(e);
out:
	if (err.msg[0] != '\0' && !o->check_only)
		ep_memory_explain_failure(e, &err);
	if (err.msg[0] != '\0') {
		fprintf(stderr, "edgeplane-dp: %s\n", err.msg);
		rc = 1;
	}
	stop(e);
	ep_cfg_free(e->cfg);
	free(e);
	if (rc == 0 && !o->check_only)
		printf("edgeplane-dp: stopped cleanly\n");
	return rc;
}
