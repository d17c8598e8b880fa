/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * How configuration reaches the fast path: three ways, nothing else.
 *
 * 1. Lock-free tables with RCU-QSBR reclamation.  The table's own writer API
 *    (rte_lpm_add/delete with rte_lpm_rcu_qsbr_add, rte_hash with its RCU
 *    config) is called from the control thread; workers read without locks;
 *    freed entries are reclaimed once every worker reported a quiescent state.
 *
 * 2. Double-buffered state, swapped after a grace period.  Tables that cannot
 *    change in place (an rte_acl context is built once; rte_lpm6 rebuilds
 *    itself on delete) are built aside, published with one release store of
 *    a pointer, and the old copy is freed after ep_rcu_synchronize().
 *
 *       control thread                        worker (between bursts: quiescent)
 *       new = build(rules)   -- may fail, nothing published yet
 *       old = ptr; store_release(ptr, new)    t = load_acquire(ptr); use t
 *       ep_rcu_synchronize()  -- every worker passed a quiescent state
 *       free(old)
 *
 * 3. Messages on a ring, run by the worker between bursts (ep_worker_call):
 *    for per-worker state such as generator rates and sink counters.
 *
 * Workers report a quiescent state after every burst and go offline while
 * they pause (adaptive polling), so a grace period never waits on a sleeper.
 */
#ifndef EP_RCU_H
#define EP_RCU_H

#include <rte_rcu_qsbr.h>

struct ep_engine;

/** Wait until every online worker has passed a quiescent state (control thread). */
void ep_rcu_synchronize(struct ep_engine *e);

/** Publish a new version of a double-buffered pointer (release). */
#define ep_rcu_publish(pp, v) __atomic_store_n((pp), (v), __ATOMIC_RELEASE)
/** Read the current version on a worker (acquire). */
#define ep_rcu_read(pp) __atomic_load_n((pp), __ATOMIC_ACQUIRE)

#endif
