/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `[engine] memory = auto`: hugepages or ordinary pages, decided from what
 * this configuration will allocate, before the EAL starts.
 *
 *   need = (ports' mbuf pools + each pipeline type's estimate + engine)
 *          x 5/4 + 64 MiB           (heap fragmentation, the EAL's own)
 *   auto: hugepages  iff  free hugepage memory >= need
 *
 * Each pipeline type estimates from its parsed configuration (its
 * `memory` hook): FIB tables (an rte_lpm's tbl24 alone is 64 MiB), ACL
 * rules, hashes, rte_sched ports (rte_sched_port_get_memory_footprint),
 * its own pools.  With --no-huge the EAL's heap is `-m` MiB of ordinary
 * memory: at least 1024, more when the estimate says so.
 *
 * Free hugepages are HugePages_Free x Hugepagesize from /proc/meminfo.
 * EP_TEST_HUGEPAGES_FREE_MB (a test hook) replaces that count, so a test
 * can show what `auto` does on a machine with few hugepages free without
 * taking them from the other users of a shared pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "ep_engine.h"
#include "engine_internal.h"

#define MIB ((uint64_t)1 << 20)
#define EP_MEM_ENGINE_BASE   (16 * MIB)  /* workers, rings, QSBR, control socket */
#define EP_MEM_MARGIN_FIXED  (64 * MIB)
/* A pipeline type without an estimate: its tables, and per worker about
 * one pool of 16K 2 KiB mbufs (the generators', the vCMTS's). */
#define EP_MEM_TYPE_DEFAULT  (64 * MIB)
#define EP_MEM_WORKER_DEFAULT (40 * MIB)
#define EP_MEM_NO_HUGE_MIN_MB 1024

uint64_t
ep_mem_hash_bytes(uint32_t entries, uint32_t key_len, bool ext_table)
{
	/* rte_cuckoo_hash: buckets of 8 entries (64 B each) for the entries
	 * rounded up to a power of two, the same again for the extendable
	 * buckets, and a key store of (entries + per-lcore caches) slots of
	 * key + data pointer, 16-byte aligned. */
	uint64_t n = rte_align64pow2(RTE_MAX(entries, 8u));
	uint64_t slot = RTE_ALIGN_CEIL((uint64_t)key_len + sizeof(void *), 16);
	uint64_t keys = (uint64_t)entries + RTE_MAX_LCORE * 64ull + 1;

	return n / 8 * 64 * (ext_table ? 2 : 1) + keys * slot + 4 * keys;
}

uint64_t
ep_mem_pool_bytes(uint32_t n, uint32_t elt_size, uint32_t cache)
{
	struct rte_mempool_objsz sz;
	uint64_t obj = rte_mempool_calc_obj_size(elt_size, 0, &sz);

	/* The objects, the ring of pointers to them, and the per-lcore caches
	 * that live in the mempool header. */
	return (uint64_t)n * obj + rte_align64pow2(n + 1) * sizeof(void *) +
	       (cache ? RTE_MAX_LCORE * sizeof(struct rte_mempool_cache) : 0);
}

uint64_t
ep_mem_pktmbuf_pool_bytes(uint32_t n, uint32_t priv, uint32_t data_room)
{
	return ep_mem_pool_bytes(n, (uint32_t)sizeof(struct rte_mbuf) +
				 RTE_ALIGN_CEIL(priv, RTE_MBUF_PRIV_ALIGN) + data_room, 256);
}

int
ep_mem_workers_of(const struct ep_engine *e, const char *pipeline)
{
	int n = 0;

	for (int i = 0; i < e->cfg->n_sec; i++) {
		const struct ep_cfg_section *s = &e->cfg->sec[i];

		if (strcmp(s->type, "worker") != 0)
			continue;
		for (int k = 0; k < s->n_kv; k++)
			if (strcmp(s->kv[k].key, "pipeline") == 0 &&
			    strcmp(s->kv[k].val, pipeline) == 0)
				n++;
	}
	return n;
}

uint64_t
ep_memory_estimate(struct ep_engine *e)
{
	uint64_t sum = EP_MEM_ENGINE_BASE;
	int n_workers = 0;

	for (const struct ep_pipeline_type *t = ep_pipeline_first(); t != NULL; t = t->next_type) {
		int n = ep_mem_workers_of(e, t->name);

		if (n == 0)
			continue;
		n_workers += n;
		sum += t->memory != NULL ? t->memory(e, n) :
					    EP_MEM_TYPE_DEFAULT + (uint64_t)n * EP_MEM_WORKER_DEFAULT;
	}
	sum += ep_ports_memory_estimate(e, RTE_MAX(n_workers, 1));
	return sum + sum / 4 + EP_MEM_MARGIN_FIXED;
}

bool
ep_memory_use_hugepages(enum ep_memory mode, uint64_t need, uint64_t free_huge)
{
	if (mode == EP_MEM_HUGEPAGES)
		return true;
	if (mode == EP_MEM_NO_HUGE)
		return false;
	return free_huge >= need;
}

uint64_t
ep_memory_no_huge_mb(uint64_t need)
{
	return RTE_MAX((need + MIB - 1) / MIB, (uint64_t)EP_MEM_NO_HUGE_MIN_MB);
}

uint64_t
ep_memory_free_hugepages(bool real)
{
	const char *hook = real ? NULL : getenv("EP_TEST_HUGEPAGES_FREE_MB");
	long free_pages = 0, page_kb = 2048;
	char line[128];
	FILE *f;

	if (hook != NULL)
		return strtoull(hook, NULL, 10) * MIB;
	f = fopen("/proc/meminfo", "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "HugePages_Free: %ld", &free_pages);
		sscanf(line, "Hugepagesize: %ld kB", &page_kb);
	}
	fclose(f);
	return (uint64_t)RTE_MAX(free_pages, 0L) * (uint64_t)page_kb * 1024;
}

void
ep_memory_plan(struct ep_engine *e, bool check_only)
{
	static const char *const mode_name[] = { "auto", "hugepages", "no-huge" };

	e->mem_need = ep_memory_estimate(e);
	e->mem_free_huge = ep_memory_free_hugepages(false);
	e->mem_huge = !check_only &&
		      ep_memory_use_hugepages(e->memory, e->mem_need, e->mem_free_huge);
	/* --check never touches hugepages (it may run beside a live instance);
	 * it says what a start would choose. */
	printf("edgeplane-dp: memory = %s: this configuration needs about %" PRIu64 " MiB, "
	       "%" PRIu64 " MiB of hugepages free: %s%s\n", mode_name[e->memory],
	       e->mem_need / MIB, e->mem_free_huge / MIB,
	       ep_memory_use_hugepages(e->memory, e->mem_need, e->mem_free_huge) ?
	       "hugepages" : "ordinary pages (--no-huge)",
	       check_only ? " at start (--check itself runs --no-huge)" : "");
	if (!check_only && e->memory == EP_MEM_HUGEPAGES && e->mem_free_huge < e->mem_need)
		printf("edgeplane-dp: warning: memory = hugepages with fewer free than needed; "
		       "start-up may run out\n");
	fflush(stdout);
}

bool
ep_memory_ran_out(uint64_t need, uint64_t used, uint64_t free_now)
{
	/* What is left of the pool cannot hold what the estimate says was
	 * still to come, or is nearly nothing. */
	uint64_t left = need > used ? need - used : 0;

	return free_now < left || free_now < 16 * MIB;
}

void
ep_memory_explain_failure(const struct ep_engine *e, struct ep_err *err)
{
	uint64_t now = ep_memory_free_hugepages(true), used = 0;
	char inner[sizeof(err->msg)];

	if (!e->mem_huge || e->mem_need == 0)
		return;
	/* The EAL itself may have failed for hugepages: nothing mapped yet. */
	for (unsigned int s = 0; e->eal_up && s < RTE_MAX_NUMA_NODES; s++) {
		struct rte_malloc_socket_stats st;

		if (rte_malloc_get_socket_stats((int)s, &st) == 0)
			used += st.heap_totalsz_bytes;
	}
	if (!ep_memory_ran_out(e->mem_need, used, now))
		return;
	snprintf(inner, sizeof(inner), "%s", err->msg);
	ep_err_set(err, "%.230s\nedgeplane-dp: out of hugepage memory: this configuration needs about "
		   "%" PRIu64 " MiB; %" PRIu64 " MiB of hugepages were free at start, %" PRIu64
		   " MiB are now. Set [engine] memory = no-huge, or reserve more hugepages "
		   "(vm.nr_hugepages)", inner, e->mem_need / MIB, e->mem_free_huge / MIB,
		   now / MIB);
}
