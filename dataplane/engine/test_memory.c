/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `[engine] memory = auto`: the estimate each configuration gets (from its
 * parsed text, before any table exists) and the decision made from it.
 */
/* rte_sched's PIE inlines (via ep_qos.h) are still experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdlib.h>
#include <string.h>

#include "ep_engine.h"
#include "fib/ep_fib.h"
#include "qos/ep_qos.h"
#include "ep_test.h"
#include "engine_internal.h"

#define MIB ((uint64_t)1 << 20)

static const char ports[] =
	"[port access]\ndevice = net_null0\nipv4 = 198.18.0.1/24\n"
	"[port core]\ndevice = net_null1\nipv4 = 198.18.1.1/24\n";

static const char bng_workers[] =
	"[worker up]\npipeline = bng-uplink\nrx = access\n"
	"[worker down]\npipeline = bng-downlink\nrx = core\n";

/* The estimate of @p body (after the two ports), or 0 on a parse error. */
static uint64_t
estimate(const char *body)
{
	struct ep_engine e;
	struct ep_err err = { "" };
	char text[4096];
	uint64_t need = 0;

	memset(&e, 0, sizeof(e));
	snprintf(text, sizeof(text), "%s%s", ports, body);
	e.cfg = ep_cfg_parse(text, "t.conf", &err);
	if (e.cfg != NULL && ep_ports_parse(&e, &err) == 0)
		need = ep_memory_estimate(&e);
	if (err.msg[0] != '\0')
		printf("    %s\n", err.msg);
	ep_cfg_free(e.cfg);
	return need;
}

EP_TEST(memory_auto_takes_hugepages_only_when_the_estimate_fits)
{
	uint64_t need = 700 * MIB;

	EP_CHECK(ep_memory_use_hugepages(EP_MEM_AUTO, need, need));
	EP_CHECK(ep_memory_use_hugepages(EP_MEM_AUTO, need, 2048 * MIB));
	EP_CHECK(!ep_memory_use_hugepages(EP_MEM_AUTO, need, need - 1));
	EP_CHECK(!ep_memory_use_hugepages(EP_MEM_AUTO, need, 0));
	/* The operator's word wins either way. */
	EP_CHECK(ep_memory_use_hugepages(EP_MEM_HUGEPAGES, need, 0));
	EP_CHECK(!ep_memory_use_hugepages(EP_MEM_NO_HUGE, need, 64 * 1024 * MIB));
}

EP_TEST(memory_out_of_hugepages_is_a_pool_that_cannot_hold_the_rest)
{
	/* 700 MiB needed, 300 MiB mapped when the start failed. */
	EP_CHECK(ep_memory_ran_out(700 * MIB, 300 * MIB, 2 * MIB));
	EP_CHECK(ep_memory_ran_out(700 * MIB, 300 * MIB, 399 * MIB));
	EP_CHECK(!ep_memory_ran_out(700 * MIB, 300 * MIB, 400 * MIB));
	/* Past the estimate, an empty pool still is the reason. */
	EP_CHECK(ep_memory_ran_out(700 * MIB, 900 * MIB, 0));
	EP_CHECK(!ep_memory_ran_out(700 * MIB, 900 * MIB, 1024 * MIB));
}

EP_TEST(memory_no_huge_heap_is_the_estimate_and_at_least_1024_mib)
{
	EP_CHECK_EQ(ep_memory_no_huge_mb(0), 1024);
	EP_CHECK_EQ(ep_memory_no_huge_mb(300 * MIB), 1024);
	EP_CHECK_EQ(ep_memory_no_huge_mb(1500 * MIB), 1500);
	EP_CHECK_EQ(ep_memory_no_huge_mb(1500 * MIB + 1), 1501);
}

EP_TEST(memory_free_hugepages_test_hook_replaces_the_kernel_count)
{
	setenv("EP_TEST_HUGEPAGES_FREE_MB", "600", 1);
	EP_CHECK_EQ(ep_memory_free_hugepages(false), 600 * MIB);
	unsetenv("EP_TEST_HUGEPAGES_FREE_MB");
}

EP_TEST(memory_fib_estimate_counts_every_lpm_tbl24)
{
	struct ep_fib_params p;

	ep_fib_params_default(&p);
	/* One rte_lpm and two rte_lpm6, each with a 64 MiB tbl24. */
	EP_CHECK(ep_fib_memory(&p) >= 3 * 64 * MIB);
	p.lpm4_tbl8s *= 2;
	{
		struct ep_fib_params q;

		ep_fib_params_default(&q);
		EP_CHECK_EQ(ep_fib_memory(&p) - ep_fib_memory(&q), (uint64_t)q.lpm4_tbl8s * 1024);
	}
}

EP_TEST(memory_sched_port_footprint_is_rte_sched_queues_of_the_shape)
{
	struct ep_sched_params p;
	uint32_t pipes[2] = { 4096, 4096 };
	uint64_t one, two, big_q;

	ep_sched_params_default(&p);
	one = ep_sched_port_memory(&p, pipes, 1);
	two = ep_sched_port_memory(&p, pipes, 2);
	/* 4096 pipes x 16 queues x 64 packets x an mbuf pointer: 32 MiB of
	 * queue array alone. */
	EP_CHECK(one >= 4096ull * 16 * 64 * sizeof(void *));
	EP_CHECK(two >= 2 * one - 2 * MIB);
	p.qsize = 256;
	big_q = ep_sched_port_memory(&p, pipes, 1);
	EP_CHECK(big_q >= 4 * (one - 8 * MIB));
	/* A shape rte_sched refuses is not counted as free. */
	EP_CHECK_EQ(ep_sched_port_memory(&p, pipes, 0), 0);
	EP_CHECK_EQ(ep_sched_spec_pipes("rate=1G pipes=65536"), 65536);
	EP_CHECK_EQ(ep_sched_spec_pipes("rate=1G"), 4096);
	EP_CHECK_EQ(ep_sched_spec_pipes("pipes=3"), 0);
}

EP_TEST(memory_bng_estimate_follows_its_subports_and_workers)
{
	char text[2048];
	uint64_t small, big, two_down;

	snprintf(text, sizeof(text), "%s[bng]\naccess_port = access\ncore_port = core\n"
		 "subport = 0 rate=1G pipes=64\n", bng_workers);
	small = estimate(text);
	snprintf(text, sizeof(text), "%s[bng]\naccess_port = access\ncore_port = core\n"
		 "subport = 0 rate=1G pipes=65536\n", bng_workers);
	big = estimate(text);
	snprintf(text, sizeof(text), "%s[worker down2]\npipeline = bng-downlink\nrx = core\n"
		 "[bng]\naccess_port = access\ncore_port = core\nsubport = 0 rate=1G pipes=65536\n",
		 bng_workers);
	two_down = estimate(text);
	EP_CHECK(small > 0);
	/* 65536 pipes: 512 MiB of HQoS queue array per downlink worker, which
	 * a fixed 512 MB threshold could never have known. */
	EP_CHECK(big >= small + 512 * MIB);
	EP_CHECK(two_down >= big + 512 * MIB);
	EP_CHECK(!ep_memory_use_hugepages(EP_MEM_AUTO, big, 600 * MIB));
}

EP_TEST(memory_estimate_sums_the_pipeline_types_in_use)
{
	char text[2048];
	uint64_t router, both;

	router = estimate("[worker r]\npipeline = router\nrx = access, core\n");
	snprintf(text, sizeof(text), "[worker r]\npipeline = router\nrx = access\n%s"
		 "[bng]\naccess_port = access\ncore_port = core\n", bng_workers);
	both = estimate(text);
	/* The router's FIB alone (three tbl24s) is in it, with the margin. */
	EP_CHECK(router >= 3 * 64 * MIB * 5 / 4);
	/* The vBNG adds its own FIB ("bng") and its scheduler. */
	EP_CHECK(both >= router + 3 * 64 * MIB);
}
