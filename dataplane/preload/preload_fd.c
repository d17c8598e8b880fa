/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The descriptor table: fd -> struct epl_sock, for accelerated sockets and
 * for candidates (kernel UDP sockets that may become accelerated).
 *
 * A call looks its descriptor up without a lock: one acquire load of a
 * chunk pointer and one of the entry.  close() from another thread can
 * race with that lookup, so socket records are type-stable (kept on a
 * free list, never returned to malloc) and a lookup takes its reference
 * with increment-if-not-zero and then checks the entry still points to
 * the record: a record freed meanwhile has refs 0 and is refused; one
 * reused meanwhile is the descriptor's socket now, which is what a call
 * racing close() and a new socket() may see with the kernel too.  The
 * region is unmapped when the last reference goes.
 */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "preload.h"

#define CHUNK_BITS 12
#define CHUNK      (1u << CHUNK_BITS)
#define MAX_FD     (1u << 22)

static struct epl_sock **chunks[MAX_FD / CHUNK];
static struct epl_sock *free_list;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static struct epl_sock **
slot(int fd, bool create)
{
	struct epl_sock **c;

	if (fd < 0 || (unsigned int)fd >= MAX_FD)
		return NULL;
	c = __atomic_load_n(&chunks[fd >> CHUNK_BITS], __ATOMIC_ACQUIRE);
	if (c == NULL && create) {
		struct epl_sock **n = calloc(CHUNK, sizeof(*n));

		if (n == NULL)
			return NULL;
		if (!__atomic_compare_exchange_n(&chunks[fd >> CHUNK_BITS], &c, n, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			free(n);        /* another thread made it: c holds theirs */
		else
			c = n;
	}
	return c == NULL ? NULL : &c[fd & (CHUNK - 1)];
}

struct epl_sock *
epl_get(int fd)
{
	struct epl_sock **e = slot(fd, false);
	struct epl_sock *p;
	uint32_t r;

	if (e == NULL)
		return NULL;
	p = __atomic_load_n(e, __ATOMIC_ACQUIRE);
	if (p == NULL)
		return NULL;
	r = __atomic_load_n(&p->refs, __ATOMIC_RELAXED);
	do {
		if (r == 0)
			return NULL;
	} while (!__atomic_compare_exchange_n(&p->refs, &r, r + 1, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	if (__atomic_load_n(e, __ATOMIC_ACQUIRE) != p) {
		epl_put(p);
		return NULL;
	}
	return p;
}

void
epl_put(struct epl_sock *p)
{
	bool closed_accel;
	uint32_t id, gen;

	if (p == NULL || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	closed_accel = p->accel && p->shm != NULL;
	id = p->sock_id;
	gen = closed_accel ? p->shm->gen : 0;
	if (p->shm != NULL)
		munmap(p->shm, p->region_size);
	p->shm = NULL;
	p->sh = NULL;
	if (p->wfd >= 0)
		epl_libc.close(p->wfd);
	p->wfd = -1;
	/* This process held its last descriptor: have the dp look now, so the
	 * port is free when close() returns, as the kernel's is. */
	if (closed_accel) {
		struct hs_req q = { .h.op = HS_OP_CLOSED, .sock_id = id, .gen = gen };
		struct hs_resp r;

		epl_request(&q, NULL, 0, &r, NULL, 0, NULL);
	}
	pthread_mutex_lock(&pool_lock);
	p->next_free = free_list;
	free_list = p;
	pthread_mutex_unlock(&pool_lock);
}

struct epl_sock *
epl_alloc(void)
{
	struct epl_sock *p;

	pthread_mutex_lock(&pool_lock);
	p = free_list;
	if (p != NULL)
		free_list = p->next_free;
	pthread_mutex_unlock(&pool_lock);
	if (p == NULL)
		p = malloc(sizeof(*p));
	if (p == NULL)
		return NULL;
	/* refs goes last: a racing epl_get must not see a half-made record. */
	memset((char *)p + sizeof(p->refs), 0, sizeof(*p) - sizeof(p->refs));
	p->wfd = -1;
	__atomic_store_n(&p->refs, 1, __ATOMIC_RELEASE);
	return p;
}

void
epl_set(int fd, struct epl_sock *p)
{
	struct epl_sock **e = slot(fd, true), *old;

	if (e == NULL)
		return;
	if (p != NULL)
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
	old = __atomic_exchange_n(e, p, __ATOMIC_ACQ_REL);
	epl_put(old);
}

struct epl_sock *
epl_take(int fd)
{
	struct epl_sock **e = slot(fd, false);

	return e == NULL ? NULL : __atomic_exchange_n(e, NULL, __ATOMIC_ACQ_REL);
}

int
epl_high_fd_base(void)
{
	struct rlimit rl;
	int lo = 512;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 > 512)
		lo = (int)(rl.rlim_cur / 2 > 1u << 20 ? 1u << 20 : rl.rlim_cur / 2);
	return lo;
}

/* High, so the application's "lowest free descriptor" stays its own. */
int
epl_own_fd(struct epl_sock *p, int fd)
{
	int nfd = epl_libc.fcntl(fd, F_DUPFD_CLOEXEC, epl_high_fd_base());

	if (nfd < 0)
		nfd = epl_libc.fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (nfd < 0)
		return -errno;
	p->wfd = nfd;
	return 0;
}

void
epl_forget_range(unsigned int lo, unsigned int hi)
{
	for (unsigned int fd = lo; fd <= hi && fd < MAX_FD; fd++) {
		if (chunks[fd >> CHUNK_BITS] == NULL) {
			fd |= CHUNK - 1;        /* skip the whole empty chunk */
			if (fd == UINT32_MAX)
				break;
			continue;
		}
		epl_put(epl_take((int)fd));
	}
}
