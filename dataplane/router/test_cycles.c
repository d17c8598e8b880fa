/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cycles per packet of each router stage, measured in-process through the
 * engine's burst function with the per-stage TSC counters the engine keeps.
 *
 * Load: 64-byte IPv4/UDP and IPv6/UDP frames to destinations spread over
 * ROUTES prefixes of each family (default 100000 IPv4 /24s, 20000 IPv6 /48s;
 * EP_CYCLES_ROUTES overrides the IPv4 count), 1000 ACL rules none of which
 * match (the worst case: every packet is checked against all of them), bursts
 * of 32.  The frames are written just before each burst, so they are in
 * cache: an rx path adds the misses on packet data that this does not see.
 * They start on a cache line, as in the mbufs of the router's ports
 * (EP_META_SIZE_LINE, ep_meta.h).
 *
 * Each stage's cost is the minimum over trials (see below): the machine is
 * shared, and preemption inside a stage only ever adds cycles.
 *
 * EP_CYCLES_BURSTS sets the number of bursts (for a profile under perf or
 * callgrind); EP_CYCLES_V4_ONLY=1 sends IPv4 frames only, as the router
 * benchmark's inputs against l3fwd do.
 *
 * This case prints numbers and asserts only that every packet was forwarded:
 * timings on a shared machine are never a pass/fail criterion.
 */
#include <rte_cycles.h>

#include "test_router.h"

/* Sanitizer builds run the same code 5-10x slower: keep their setup short. */
#if defined(__SANITIZE_ADDRESS__)
#define EP_CYCLES_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EP_CYCLES_SANITIZED 1
#endif
#endif
#ifdef EP_CYCLES_SANITIZED
#define EP_CYCLES_DEFAULT_ROUTES 5000
#define N_BURSTS 400
#define N_TRIALS 4
#else
#define N_TRIALS 20
#define EP_CYCLES_DEFAULT_ROUTES 100000
#define N_BURSTS 4000
#endif

#define BURST 32

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}
#define N_FLOWS 1024

EP_TEST(stage_cycles_per_packet_with_1000_acl_rules_and_100k_routes)
{
	const char *env = getenv("EP_CYCLES_ROUTES");
	const char *env_b = getenv("EP_CYCLES_BURSTS");   /* longer runs for perf record */
	int n_bursts = env_b != NULL && atoi(env_b) >= N_TRIALS ? atoi(env_b) : N_BURSTS;
	uint32_t n4 = env != NULL ? (uint32_t)atoi(env) : EP_CYCLES_DEFAULT_ROUTES, n6 = EP_CYCLES_DEFAULT_ROUTES / 5;
	struct router_params p;
	struct ep_acl_rule *rules = calloc(1000, sizeof(*rules));
	static uint8_t frames[N_FLOWS][128];
	static uint16_t lens[N_FLOWS];
	struct rte_mbuf *pkts[BURST], *out[EP_BURST_MAX];
	struct ep_err err = {{0}};
	struct ep_worker *w;
	struct router *r;
	uint64_t sent = 0;
	static double cyc[8][N_TRIALS];
	double min_sum = 0;
	char pfx[64], text[128];

	if (n4 > 200000)
		n4 = 200000;
	tr_engine_init();
	router_params_default(&p);
	p.fib.max_routes4 = n4 + 16;
	p.fib.max_routes6 = n6 + 16;
	p.fib.lpm6_tbl8s = 4096;            /* /48s under one /32 share most tbl8 groups */
	r = router_create(&tr_eng, "router", &p, &err);
	EP_CHECK(r != NULL);
	if (r == NULL) {
		printf("    %s\n", err.msg);
		free(rules);
		return;
	}
	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "2001:db8:0:2::2", "02:00:00:00:00:0b", NULL, &err), 0);
	for (uint32_t i = 0; i < n4; i++) {
		/* 100.0.0.0/24 upwards, skipping nothing martian below 224/4. */
		snprintf(pfx, sizeof(pfx), "%u.%u.%u.0/24", 100 + (i >> 16), (i >> 8) & 255, i & 255);
		if (ep_fib_route_add(r->fib, pfx, "198.18.1.2", &err) < 0) {
			printf("    %s: %s\n", pfx, err.msg);
			ep_test_failed = 1;
			break;
		}
	}
	for (uint32_t i = 0; i < n6; i++) {
		snprintf(pfx, sizeof(pfx), "2001:db8:%x::/48", 0x1000 + i);
		if (ep_fib_route_add(r->fib, pfx, "2001:db8:0:2::2", &err) < 0) {
			printf("    %s: %s\n", pfx, err.msg);
			ep_test_failed = 1;
			break;
		}
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(text, sizeof(text), "deny proto %s src 198.19.%d.%d/32 dport %d",
			 i % 2 ? "udp" : "tcp", i / 250, i % 250, 1000 + i);
		if (i % 4 == 3)
			snprintf(text, sizeof(text), "deny proto udp src 2001:db8:ffff::%x/128 dport %d",
				 i, 1000 + i);
		EP_CHECK_EQ(ep_acl_rule_parse(text, false, &rules[i], &err), 0);
	}
	EP_CHECK_EQ(ep_acl_commit(r->acl, rules, 1000, false, &err), 0);
	free(rules);

	const char *env_v4 = getenv("EP_CYCLES_V4_ONLY");
	const bool v4_only = env_v4 != NULL && atoi(env_v4) != 0;

	for (int f = 0; f < N_FLOWS; f++) {
		struct tp_spec s = tp_default(!v4_only && f % 4 == 3, IPPROTO_UDP);
		uint32_t k = (uint32_t)rte_rand() % n4;

		s.dst4 = (100u + (k >> 16)) << 24 | ((k >> 8) & 255) << 16 | (k & 255) << 8 | 7;
		k = (uint32_t)rte_rand() % n6;
		snprintf(pfx, sizeof(pfx), "2001:db8:%x::7", 0x1000 + k);
		tp_ip6(s.dst6, pfx);
		s.sport = (uint16_t)(1024 + f);
		s.payload = s.v6 ? 0 : 18;   /* 64-byte IPv4 frames (with FCS); IPv6 minimum */
		lens[f] = tp_build(frames[f], &s);
	}

	/* The router's ports' layout (port.c): frames start on a line. */
	struct rte_mempool *pool = rte_pktmbuf_pool_create("router_cycles", 512, 0,
							   EP_META_SIZE_LINE,
							   RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	EP_CHECK(pool != NULL);
	if (pool == NULL) {
		router_free(r);
		return;
	}
	w = tr_worker(r);
	/* Trials of n_bursts / N_TRIALS bursts each; per stage the minimum and
	 * the median over trials are printed.  On a shared machine preemption
	 * only ever adds cycles, so the minimum is the stage's own cost and the
	 * median shows how much the neighbours disturbed the run. */
	for (int t = -1; t < N_TRIALS; t++) {
		for (int s = 0; s < w->n_stages; s++)
			memset(&w->stages[s].stats, 0, sizeof(w->stages[s].stats));
		for (int b = 0; b < n_bursts / N_TRIALS; b++) {
			if (rte_pktmbuf_alloc_bulk(pool, pkts, BURST) != 0)
				break;
			for (int i = 0; i < BURST; i++) {
				int f = (b * BURST + i) % N_FLOWS;

				memcpy(rte_pktmbuf_append(pkts[i], lens[f]), frames[f], lens[f]);
			}
			/* As received on port 0: in_port as the worker loop has it. */
			ep_worker_run_rx_burst(w, 0, pkts, BURST);
			uint16_t k = tr_take_tx(w, 1, out);
			if (t >= 0)   /* t == -1: warm-up */
				sent += k;
			rte_pktmbuf_free_bulk(out, k);
			tr_free_tx(w);
		}
		for (int s = 0; t >= 0 && s < w->n_stages && s < 8; s++) {
			const struct ep_stage_stats *st = &w->stages[s].stats;

			cyc[s][t] = st->pkts_in ? (double)st->cycles / (double)st->pkts_in : 0.0;
		}
	}
	EP_CHECK_EQ(sent, (uint64_t)N_TRIALS * (n_bursts / N_TRIALS) * BURST);
	printf("    %u IPv4 + %u IPv6 routes, 1000 ACL rules, burst %d, %s, "
	       "%d trials of %d bursts:\n", n4, n6, BURST, v4_only ? "IPv4 only" : "3/4 IPv4",
	       N_TRIALS, n_bursts / N_TRIALS);
	for (int s = 0; s < w->n_stages && s < 8; s++) {
		qsort(cyc[s], N_TRIALS, sizeof(double), cmp_double);
		min_sum += cyc[s][0];
		printf("    %-8s %6.1f cycles/pkt (min), %6.1f (median)\n", w->stages[s].name,
		       cyc[s][0], cyc[s][N_TRIALS / 2]);
	}
	printf("    %-8s %6.1f cycles/pkt (sum of minima)\n", "stages", min_sum);
	tr_worker_free(w);
	router_free(r);
	rte_mempool_free(pool);
}
