/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * edgeplane-ring-fill: put a pcap's frames, in mbufs of a running DPDK
 * application's own pool, into one of its rte_rings, as a DPDK secondary
 * process.  The vBNG downlink benchmark's peer (DPDK's qos_sched, whose
 * logic is not changed) is run with its rx port and its tx port on the two
 * ends of one net_ring loop: what its scheduler sends comes back to its
 * rx thread, which then receives without net_pcap's copy of every frame
 * into a fresh mbuf.  qos_sched changes no frame byte, so the loop keeps
 * the pcap's frames; this tool fills it once.
 *
 *   edgeplane-ring-fill <EAL args: --proc-type=secondary --file-prefix=P
 *       --lcores=7@0 --no-pci> -- PID RING POOL PCAP COUNT
 *
 * The rings of net_ring are single-producer: the application's own tx
 * enqueues into the ring this tool fills.  So each round stops the
 * application (SIGSTOP, every thread seen stopped in /proc), checks that
 * no enqueue was cut in half (the ring's producer head equals its tail),
 * enqueues what fits, and lets it run again (SIGCONT) for 20 ms, until
 * COUNT frames (the pcap's, in order, cycling) are in.  The lcore given to
 * EAL must be one the application does not use: the pool's per-lcore
 * cache of that index is this tool's.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#define FILL_MAX_FRAMES 65536
#define FILL_RUN_US     20000

struct frames {
	uint8_t *buf;           /* the pcap's records' bytes, back to back */
	uint32_t off[FILL_MAX_FRAMES];
	uint16_t len[FILL_MAX_FRAMES];
	uint32_t n;
};

static uint32_t
rd32(const uint8_t *p, int swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* A classic pcap (either byte order, micro- or nanosecond stamps). */
static int
load_pcap(const char *path, struct frames *f)
{
	FILE *fp = fopen(path, "rb");
	long size;
	uint32_t magic, pos = 24;
	int swap;

	if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 24 ||
	    fseek(fp, 0, SEEK_SET) != 0) {
		fprintf(stderr, "ring-fill: %s: cannot read\n", path);
		if (fp != NULL)
			fclose(fp);
		return -1;
	}
	f->buf = malloc((size_t)size);
	if (f->buf == NULL || fread(f->buf, 1, (size_t)size, fp) != (size_t)size) {
		fclose(fp);
		fprintf(stderr, "ring-fill: %s: cannot read\n", path);
		return -1;
	}
	fclose(fp);
	memcpy(&magic, f->buf, 4);
	if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d)
		swap = 0;
	else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
		swap = 1;
	else {
		fprintf(stderr, "ring-fill: %s: not a pcap file\n", path);
		return -1;
	}
	while (pos + 16 <= (uint32_t)size && f->n < FILL_MAX_FRAMES) {
		uint32_t incl = rd32(f->buf + pos + 8, swap);

		if (incl == 0 || incl > UINT16_MAX || pos + 16 + incl > (uint32_t)size) {
			fprintf(stderr, "ring-fill: %s: bad record at byte %u\n", path, pos);
			return -1;
		}
		f->off[f->n] = pos + 16;
		f->len[f->n] = (uint16_t)incl;
		f->n++;
		pos += 16 + incl;
	}
	if (f->n == 0) {
		fprintf(stderr, "ring-fill: %s: no frames\n", path);
		return -1;
	}
	return 0;
}

/* Every thread of @p pid stopped (state T or t in /proc/PID/task/TID/stat). */
static int
all_stopped(pid_t pid)
{
	char path[64], line[512];
	struct dirent *d;
	DIR *dir;
	int ok = 1;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL)
		return -1;
	while (ok && (d = readdir(dir)) != NULL) {
		FILE *fp;
		char *rp;

		if (d->d_name[0] == '.')
			continue;
		snprintf(line, sizeof(line), "%s/%s/stat", path, d->d_name);
		fp = fopen(line, "r");
		if (fp == NULL)
			continue;
		if (fgets(line, sizeof(line), fp) != NULL && (rp = strrchr(line, ')')) != NULL &&
		    rp[1] == ' ' && rp[2] != 'T' && rp[2] != 't')
			ok = 0;
		fclose(fp);
	}
	closedir(dir);
	return ok;
}

static int
stop(pid_t pid)
{
	if (kill(pid, SIGSTOP) != 0)
		return -1;
	for (int i = 0; i < 10000; i++) {
		int s = all_stopped(pid);

		if (s != 0)
			return s < 0 ? -1 : 0;
		usleep(100);
	}
	return -1;
}

/* Frames k.. of the pcap, cycling, into @p n fresh mbufs. */
static int
fill(struct rte_mempool *pool, const struct frames *f, uint32_t *k, struct rte_mbuf **m,
     unsigned int n)
{
	if (rte_pktmbuf_alloc_bulk(pool, m, n) != 0)
		return -1;
	for (unsigned int i = 0; i < n; i++) {
		char *d = rte_pktmbuf_append(m[i], f->len[*k]);

		if (d == NULL) {
			rte_pktmbuf_free_bulk(m, n);
			return -1;
		}
		memcpy(d, f->buf + f->off[*k], f->len[*k]);
		*k = *k + 1 == f->n ? 0 : *k + 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct frames f;
	struct rte_mbuf *m[1024];
	struct rte_mempool *pool;
	struct rte_ring *ring;
	uint32_t k = 0, done = 0, count;
	pid_t pid;
	int n = rte_eal_init(argc, argv);

	if (n < 0) {
		fprintf(stderr, "ring-fill: EAL init failed\n");
		return 1;
	}
	argc -= n;
	argv += n;
	if (argc != 6) {
		fprintf(stderr, "usage: edgeplane-ring-fill <EAL> -- PID RING POOL PCAP COUNT\n");
		return 2;
	}
	pid = (pid_t)atoi(argv[1]);
	ring = rte_ring_lookup(argv[2]);
	pool = rte_mempool_lookup(argv[3]);
	count = (uint32_t)strtoul(argv[5], NULL, 10);
	if (pid <= 0 || ring == NULL || pool == NULL || count == 0) {
		fprintf(stderr, "ring-fill: pid %s, ring %s (%s), pool %s (%s), count %s\n",
			argv[1], argv[2], ring ? "found" : "missing", argv[3],
			pool ? "found" : "missing", argv[5]);
		return 2;
	}
	if (load_pcap(argv[4], &f) < 0)
		return 2;
	while (done < count) {
		unsigned int room, want;

		if (stop(pid) < 0) {
			kill(pid, SIGCONT);
			fprintf(stderr, "ring-fill: cannot stop %d\n", (int)pid);
			return 1;
		}
		room = rte_ring_free_count(ring);
		want = RTE_MIN(RTE_MIN(room, count - done), (unsigned int)RTE_DIM(m));
		/* An enqueue cut in half by the stop: let it finish first. */
		if (ring->prod.head == ring->prod.tail && want > 0) {
			if (fill(pool, &f, &k, m, want) < 0) {
				kill(pid, SIGCONT);
				fprintf(stderr, "ring-fill: pool %s has no %u mbufs\n", argv[3], want);
				return 1;
			}
			unsigned int got = rte_ring_enqueue_burst(ring, (void **)m, want, NULL);

			if (got < want)
				rte_pktmbuf_free_bulk(m + got, want - got);
			done += got;
		}
		kill(pid, SIGCONT);
		usleep(FILL_RUN_US);
	}
	printf("ring-fill: %u frames of %s (%u stored) into %s\n", done, argv[4], f.n, argv[2]);
	rte_eal_cleanup();
	return 0;
}
