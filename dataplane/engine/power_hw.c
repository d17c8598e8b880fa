/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What this machine offers the polling policies, read at start and when a
 * policy changes (control thread only):
 *
 *   CPUID        UMONITOR/UMWAIT/TPAUSE (Intel WAITPKG), MONITORX/MWAITX (AMD)
 *   DPDK         rte_cpu_get_intrinsics_support(): what its monitor/pause use
 *   cpufreq      /sys/devices/system/cpu/cpuN/cpufreq/scaling_max_freq, writable,
 *                for the one CPU a worker is pinned to
 *   RAPL         /sys/class/powercap/<zone>/energy_uj of each package zone
 *   CPU time     each worker thread's CPU clock, and its run-queue wait from
 *                /proc/self/task/TID/schedstat (time it was runnable but not
 *                running: the shared-core noise in every figure)
 *
 * Most VMs show none of WAITPKG, MONITORX, cpufreq or RAPL: the policies
 * that need them are then refused by name (ep_poll_check), and CPU time is
 * the power proxy, said as such in every report.
 */
#define ALLOW_EXPERIMENTAL_API 1

#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cpuflags.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_power_intrinsics.h>

#include "ep_engine.h"
#include "engine_internal.h"
#include "power_internal.h"

#define CPUFREQ_DIR "/sys/devices/system/cpu"

void
ep_power_caps_detect(struct ep_power_caps *caps)
{
	unsigned int a, b, c, d;
	struct rte_cpu_intrinsics in;
	char vendor[13] = "";
	FILE *f;

	memset(caps, 0, sizeof(*caps));
	if (__get_cpuid(0, &a, &b, &c, &d)) {
		memcpy(vendor, &b, 4);
		memcpy(vendor + 4, &d, 4);
		memcpy(vendor + 8, &c, 4);
		if (a >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d))
			caps->waitpkg = (c >> 5) & 1;
	}
	if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000001 &&
	    __get_cpuid(0x80000001, &a, &b, &c, &d))
		caps->monitorx = (c >> 29) & 1;
	rte_cpu_get_intrinsics_support(&in);
	caps->dpdk_monitor = in.power_monitor;
	caps->dpdk_monitor_multi = in.power_monitor_multi;
	caps->dpdk_tpause = in.power_pause;
	snprintf(caps->cpu, sizeof(caps->cpu), "%s", vendor[0] ? vendor : "unknown CPU");
	f = fopen("/proc/cpuinfo", "r");
	if (f != NULL) {
		char line[256];

		while (fgets(line, sizeof(line), f) != NULL) {
			char *colon = strchr(line, ':');

			if (strncmp(line, "model name", 10) != 0 || colon == NULL)
				continue;
			line[strcspn(line, "\n")] = '\0';
			snprintf(caps->cpu, sizeof(caps->cpu), "%s", colon + 2);
			break;
		}
		fclose(f);
	}
}

static int
read_u64_file(const char *path, uint64_t *v)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return sscanf(buf, "%" SCNu64, v) == 1 ? 0 : -1;
}

/* The one CPU a worker's lcore may run on, or -1 (and its set in @p set). */
static int
worker_cpu(const struct ep_worker *w, char *set, size_t len)
{
	rte_cpuset_t cs = rte_lcore_cpuset(w->lcore);
	int cpu = -1, n = 0;

	set[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &cs))
			continue;
		snprintf(set + strlen(set), len - strlen(set), "%s%d", n ? "," : "", c);
		cpu = c;
		n++;
	}
	return n == 1 ? cpu : -1;
}

/* Whether this host has a cpufreq driver at all. */
static int
cpufreq_present(char *why, size_t len)
{
	const char *path = CPUFREQ_DIR "/cpu0/cpufreq";

	why[0] = '\0';
	if (access(path, F_OK) == 0)
		return 0;
	snprintf(why, len, "this host has no cpufreq driver (%s is missing, as in most VMs): "
		 "the CPU's frequency is not ours to set", path);
	return -1;
}

int
ep_power_cpufreq_find(const struct ep_worker *w, struct ep_power_freq *fr, char *why,
		      size_t len)
{
	char path[160], set[128];
	int cpu;

	if (cpufreq_present(why, len) < 0)
		return -1;
	cpu = worker_cpu(w, set, sizeof(set));
	if (cpu < 0) {
		snprintf(why, len, "worker %s may run on CPUs %s: frequency scaling needs it "
			 "pinned to one CPU ([engine] cpus or [eal] args --lcores)", w->name, set);
		return -1;
	}
	snprintf(path, sizeof(path), CPUFREQ_DIR "/cpu%d/cpufreq/cpuinfo_min_freq", cpu);
	if (read_u64_file(path, &fr->low_khz) < 0) {
		snprintf(why, len, "cannot read %s", path);
		return -1;
	}
	snprintf(path, sizeof(path), CPUFREQ_DIR "/cpu%d/cpufreq/cpuinfo_max_freq", cpu);
	if (read_u64_file(path, &fr->high_khz) < 0) {
		snprintf(why, len, "cannot read %s", path);
		return -1;
	}
	snprintf(path, sizeof(path), CPUFREQ_DIR "/cpu%d/cpufreq/scaling_max_freq", cpu);
	if (access(path, W_OK) != 0) {
		snprintf(why, len, "%s is not writable: %s", path, strerror(errno));
		return -1;
	}
	snprintf(fr->path, sizeof(fr->path), "%s", path);
	fr->cpu = cpu;
	return 0;
}

void
ep_power_facts(const struct ep_engine *e, const struct ep_worker *w, bool probed,
	       struct ep_poll_facts *f)
{
	struct ep_power_freq fr;

	memset(f, 0, sizeof(*f));
	f->worker = w->name;
	f->probed = probed;
	f->n_rx = w->type->source != NULL ? 0 : w->n_rx;
	f->own_wakeups = w->type->source != NULL || w->type->service != NULL ||
			 w->type->wait != NULL;
	f->wait_covers_rx = w->type->source == NULL && w->type->wait != NULL &&
			    w->type->wait_covers_rx;
	for (int i = 0; i < f->n_rx && i < EP_POWER_MAX_RX; i++) {
		const struct ep_port *p = &e->ports[w->rx[i].port];
		struct ep_poll_queue_facts *q = &f->rx[i];
		struct rte_power_monitor_cond pmc;
		struct rte_eth_dev_info info;

		snprintf(q->port, sizeof(q->port), "%s", p->name);
		snprintf(q->driver, sizeof(q->driver), "%.*s", (int)strcspn(p->device, ","),
			 p->device);
		if (!probed)
			continue;
		if (rte_eth_dev_info_get(p->port_id, &info) == 0 && info.driver_name != NULL)
			snprintf(q->driver, sizeof(q->driver), "%s", info.driver_name);
		q->has_fd = ep_port_rx_fd(p->index, w->rx[i].queue) >= 0;
		q->has_monitor = rte_eth_get_monitor_addr(p->port_id, w->rx[i].queue, &pmc) == 0;
	}
	/* --check's EAL pins no lcore: there only the host is judged. */
	if (probed)
		ep_power_cpufreq_find(w, &fr, f->cpufreq_why, sizeof(f->cpufreq_why));
	else
		cpufreq_present(f->cpufreq_why, sizeof(f->cpufreq_why));
	for (int i = 0; i < e->n_workers; i++) {
		const struct ep_worker *o = e->workers[i];

		if (o != w && o->poll.policy == EP_POLL_DPDK_PMGMT) {
			f->pmgmt_idle_polls = o->poll.idle_polls;
			f->pmgmt_pause_us = o->poll.min_sleep_us;
		}
	}
}

int
ep_power_thread_cpu(const struct ep_power *p, uint64_t *cpu_ns, uint64_t *wait_ns)
{
	clockid_t cid;
	struct timespec ts;
	char path[64];
	FILE *f;
	unsigned long long run = 0, wait = 0;

	*cpu_ns = 0;
	*wait_ns = 0;
	if (!__atomic_load_n(&p->have_thread, __ATOMIC_ACQUIRE))
		return -1;
	if (pthread_getcpuclockid(p->thread, &cid) != 0 || clock_gettime(cid, &ts) != 0)
		return -1;
	*cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)p->tid);
	f = fopen(path, "r");
	if (f != NULL) {
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			*wait_ns = wait;
		fclose(f);
	}
	return 0;
}

/*
 * RAPL through the powercap framework: the package zones are the top-level
 * directories "<driver>:<n>" (intel-rapl:0, also on AMD Zen) whose `name`
 * starts with "package".  energy_uj wraps at max_energy_range_uj; the total
 * carries every wrap seen between two reads (reads come at least every few
 * seconds from a monitor; a counter of 2^32 uJ wraps after ~70 minutes at
 * 1 kW, so reads an hour apart still see every wrap).
 */
int
ep_rapl_open(struct ep_rapl *r, const char *root)
{
	DIR *d = opendir(root);
	struct dirent *de;

	memset(r, 0, sizeof(*r));
	snprintf(r->root, sizeof(r->root), "%s", root);
	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL && r->n < EP_RAPL_MAX_ZONES) {
		char path[512], name[64] = "";
		const char *colon = strchr(de->d_name, ':');
		uint64_t v;
		FILE *f;

		if (colon == NULL || strchr(colon + 1, ':') != NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s/name", root, de->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(name, sizeof(name), f) == NULL)
			name[0] = '\0';
		fclose(f);
		name[strcspn(name, "\n")] = '\0';
		if (strncmp(name, "package", 7) != 0)
			continue;
		snprintf(r->zone[r->n].energy, sizeof(r->zone[r->n].energy), "%s/%s/energy_uj",
			 root, de->d_name);
		snprintf(path, sizeof(path), "%s/%s/max_energy_range_uj", root, de->d_name);
		if (read_u64_file(path, &r->zone[r->n].range) < 0 ||
		    read_u64_file(r->zone[r->n].energy, &v) < 0)
			continue;
		snprintf(r->zone[r->n].name, sizeof(r->zone[r->n].name), "%s", name);
		r->zone[r->n].last = v;
		r->n++;
	}
	closedir(d);
	return r->n > 0 ? 0 : -1;
}

uint64_t
ep_rapl_read_uj(struct ep_rapl *r)
{
	uint64_t total = 0;

	for (int i = 0; i < r->n; i++) {
		uint64_t v;

		if (read_u64_file(r->zone[i].energy, &v) == 0) {
			r->zone[i].total += v >= r->zone[i].last ? v - r->zone[i].last :
					    r->zone[i].range - r->zone[i].last + v;
			r->zone[i].last = v;
		}
		total += r->zone[i].total;
	}
	return total;
}
