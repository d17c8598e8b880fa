/* SPDX-License-Identifier: BSD-3-Clause */
/* Engine-private declarations of the polling policies (ep_power.h). */
#ifndef EP_POWER_INTERNAL_H
#define EP_POWER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "ep_power.h"

struct ep_engine;
struct ep_worker;
struct ep_cfg_section;

/* power_hw.c: what the machine offers (control thread). */
struct ep_power_freq {
	char path[160];          /* scaling_max_freq of the worker's CPU */
	int cpu;
	uint64_t low_khz, high_khz;
};
void ep_power_caps_detect(struct ep_power_caps *caps);
int ep_power_cpufreq_find(const struct ep_worker *w, struct ep_power_freq *fr, char *why,
			  size_t len);
void ep_power_facts(const struct ep_engine *e, const struct ep_worker *w, bool probed,
		    struct ep_poll_facts *f);
int ep_power_thread_cpu(const struct ep_power *p, uint64_t *cpu_ns, uint64_t *wait_ns);

#define EP_RAPL_MAX_ZONES 8
struct ep_rapl {
	char root[256];
	int n;
	struct {
		char name[32];
		char energy[512];    /* path of energy_uj */
		uint64_t range, last, total;
	} zone[EP_RAPL_MAX_ZONES];
};
int ep_rapl_open(struct ep_rapl *r, const char *root);
uint64_t ep_rapl_read_uj(struct ep_rapl *r);

/* power_wait.c: the actions, on the worker. */
void ep_power_thread_start(struct ep_worker *w);
void ep_power_wait_rx(struct ep_worker *w, uint32_t us);
/** A plain pause of @p us that a control message ends early: the worker's
 *  message eventfd (ep_worker_call writes it) is the only descriptor.
 *  true when a message ended it. */
bool ep_power_wait_msg(struct ep_worker *w, uint32_t us);
void ep_power_cpu_wait(struct ep_worker *w, uint64_t deadline);
void ep_power_freq_tick(struct ep_worker *w, uint64_t now, uint64_t busy);
void ep_power_rt_tick(struct ep_worker *w, uint64_t now);
uint64_t ep_power_thread_cpu_ns(void);           /* the calling thread's CPU clock */
void ep_power_sample(struct ep_worker *w, const struct rte_mbuf *m, uint64_t now);

/* power_ctl.c: configuration, policy changes, shutdown (control thread). */
int ep_power_engine_config(struct ep_engine *e, struct ep_cfg_section *s, struct ep_err *err);
int ep_power_worker_config(struct ep_engine *e, struct ep_worker *w, struct ep_err *err);
int ep_power_start(struct ep_engine *e, bool check_only, struct ep_err *err);
void ep_power_stop(struct ep_engine *e);
void ep_power_rt_apply(struct ep_worker *w);     /* on the worker thread */

#endif
