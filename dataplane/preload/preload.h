/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * libedgeplane-preload.so: the private header of the LD_PRELOAD library
 * that gives unmodified programs edgeplane-dp's UDP host stack.
 *
 *   socket(AF_INET/AF_INET6, SOCK_DGRAM, 0|IPPROTO_UDP)
 *       -> a real kernel UDP socket, marked a candidate
 *   bind(an address edgeplane-dp terminates), connect() or the first
 *   sendto() to a destination it routes
 *       -> OPEN on the attach socket; on yes the candidate's descriptor is
 *          replaced in place (dup3) by one end of a socketpair whose other
 *          end the dp holds; the socket region is mapped
 *       -> on no (loopback, DNS, an address the dp does not serve) the
 *          kernel socket simply goes on: nothing changes for it
 *   every other call on an accelerated descriptor: the rings (preload_io.c)
 *   or a request to the dp (bind, connect, shutdown)
 *
 * Sockets stay real kernel descriptors (as OpenOnload keeps them), so the
 * library never splits the descriptor space: select(), poll() and epoll
 * work on them in the kernel, dup/dup2/fork/exec/close-on-exec are the
 * kernel's, and a descriptor the library does not know is passed to libc.
 */
#ifndef EPL_PRELOAD_H
#define EPL_PRELOAD_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "hs_abi.h"

#define EPL_EXPORT __attribute__((visibility("default")))
#define EPL_DIM(a) (sizeof(a) / sizeof((a)[0]))

/** libc's functions (the next definition after ours), resolved with
 *  dlsym(RTLD_NEXT) on first use, not in our constructor: another preloaded
 *  library (ASAN's runtime installs its signal handlers with sigaction from
 *  the first constructor that runs) or any ELF constructor that runs before
 *  ours may call socket, read, close or sigaction first, and must reach libc
 *  rather than a NULL pointer.  Every use goes through epl_libc, which
 *  checks one flag (a load and a predicted branch) before the table. */
struct epl_libc_fns {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*shutdown)(int, int);
	int (*close)(int);
	int (*close_range)(unsigned int, unsigned int, int);
	void (*closefrom)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*splice)(int, off_t *, int, off_t *, size_t, unsigned int);
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	int (*poll)(struct pollfd *, unsigned long, int);
	int (*ppoll)(struct pollfd *, unsigned long, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
};
extern struct epl_libc_fns epl_libc_tab;
extern bool epl_libc_ready;
void epl_libc_resolve(void);

static inline struct epl_libc_fns *
epl_libc_get(void)
{
	if (__builtin_expect(!__atomic_load_n(&epl_libc_ready, __ATOMIC_ACQUIRE), 0))
		epl_libc_resolve();
	return &epl_libc_tab;
}
#define epl_libc (*epl_libc_get())

/** Library-private, process-shared state kept in the socket region's
 *  app_private area (the dp never reads it). */
struct epl_shared {
	pthread_mutex_t rx_lock;        /**< one reader at a time (threads, forked processes) */
	pthread_mutex_t tx_lock;        /**< one writer at a time */
	uint32_t tx_head;               /**< producer's byte head in the tx data area */
	uint32_t init;                  /**< EPL_SHARED_INIT once the locks exist */
	int64_t rcvtimeo_us;            /**< SO_RCVTIMEO, 0 = none */
	int64_t sndtimeo_us;
	int32_t priority;               /**< SO_PRIORITY as set (no effect in the dp) */
	int32_t keepalive;
	struct linger linger;
	int32_t mtu_discover;
	/** epoll sets the socket was added to (epoll_ctl, any process): while
	 *  non-zero a receive that empties the ring makes the descriptor exact
	 *  at once, since epoll_wait is not intercepted (preload_poll.c). */
	uint32_t epoll_users;
};
#define EPL_SHARED_INIT 0x45504c31u

_Static_assert(sizeof(struct epl_shared) <= sizeof(((struct hs_sock_shm *)0)->app_private),
	       "epl_shared must fit the region's app_private area");

/** One socket as the library knows it; shared by all descriptors that
 *  refer to it (dup) in this process. */
struct epl_sock {
	uint32_t refs;                  /**< table entries + calls in flight; 0: free */
	bool accel;                     /**< false: a kernel UDP socket, candidate */
	int family;                     /**< AF_INET or AF_INET6 */
	/* candidate: buffer sizes the application set explicitly */
	uint32_t cand_rcvbuf, cand_sndbuf;
	/* accelerated */
	struct hs_sock_shm *shm;
	size_t region_size;
	struct epl_shared *sh;
	struct hs_desc *rx_desc, *tx_desc;
	uint8_t *rx_data, *tx_data;
	uint32_t rx_slots, tx_slots, rx_bytes, tx_bytes;
	uint32_t worker;
	uint32_t sock_id;
	uint32_t sends;                 /**< liveness of the dp checked every 256 sends */
	/** The library's own descriptor of the socket (a close-on-exec dup at a
	 *  high number): waits and wake-byte reads use it, never the
	 *  application's numbers, which another thread may close and reuse
	 *  meanwhile.  Closed with the last reference, so a call in flight
	 *  keeps the socket alive as a kernel syscall in flight keeps its file. */
	int wfd;
	struct epl_sock *next_free;
};

/* preload_fd.c: the descriptor table */
struct epl_sock *epl_get(int fd);       /**< with a reference, or NULL */
void epl_put(struct epl_sock *p);
void epl_set(int fd, struct epl_sock *p);       /**< takes a reference for the table */
struct epl_sock *epl_take(int fd);      /**< removes the entry; returns its reference */
struct epl_sock *epl_alloc(void);
void epl_forget_range(unsigned int lo, unsigned int hi);

/* preload_attach.c: the connection to edgeplane-dp */
bool epl_enabled(void);
int epl_attach(void);                   /**< 0, or -errno (ENETDOWN: no dp) */
int epl_request(struct hs_req *q, const int *fds, int n_fds, struct hs_resp *r,
		int *rfds, int max_rfds, int *n_rfds);
int epl_open(int fd, struct epl_sock *cand, uint16_t action, const struct sockaddr *sa,
	     socklen_t len, struct epl_sock **out);
int epl_map_region(struct epl_sock *p, int shm_fd, uint32_t size, bool init_locks);
/** Where the library's own descriptors start (half RLIMIT_NOFILE, >= 512). */
int epl_high_fd_base(void);
/** Give @p p its private descriptor, a dup of @p fd; -errno on failure. */
int epl_own_fd(struct epl_sock *p, int fd);
void epl_doorbell(struct epl_sock *p);
/** Some worker of the data plane keeps its CPU between packets (its
 *  worker page's `polls`): busy-polling against it would delay it. */
bool epl_workers_poll(void);
void epl_scan_inherited(void);
void epl_warn_once(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void epl_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void epl_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern bool epl_strict;

/** sendto() on a candidate: accelerate it if the destination is the dp's;
 *  returns the socket (referenced) or NULL for libc, *err on failure. */
struct epl_sock *epl_send_decide(int fd, struct epl_sock *p, const struct sockaddr *to,
				 socklen_t tolen, int *err);

/* preload_io.c: datagrams */
ssize_t epl_sendmsg(int fd, struct epl_sock *p, const struct msghdr *m, int flags);
ssize_t epl_recvmsg(int fd, struct epl_sock *p, struct msghdr *m, int flags);
int epl_fionread(struct epl_sock *p);
int epl_siocoutq(struct epl_sock *p);
bool epl_dead(int fd, struct epl_sock *p);
/** Drain the wake bytes and clear rx_signalled: the descriptor is exact
 *  again (readable <=> a datagram waits).  -ENETDOWN at end of file. */
int epl_unsignal(struct epl_sock *p);
int64_t epl_now_us(void);
/** May a call interrupted by a signal be restarted (every handler the
 *  process installed has SA_RESTART)? */
bool epl_restart_ok(void);

/* preload_spin.c: bounded, adaptive busy-polling before a wait */
/** EDGEPLANE_PRELOAD_SPIN_US when set, else EPL_SPIN_US_DEFAULT; 0: never spin. */
extern int64_t epl_spin_us;
/** The spin when EDGEPLANE_PRELOAD_SPIN_US is unset: longer than a
 *  ping-pong's round trip through two data planes on a shared core (p50
 *  25-70 us), shorter than a scheduler tick (1-4 ms); measured against
 *  50, 100 and 500 in docs/benchmarks/udp-termination-history.md. */
#define EPL_SPIN_US_DEFAULT 200
/** An accelerated socket was put into an epoll set: epoll_wait spins. */
extern bool epl_epoll_accel;
/** EDGEPLANE_PRELOAD_KERNEL_POLL_US, 0: exact (see preload_poll.c). */
extern int64_t epl_kernel_poll_us;
void epl_spin_init(void);
/** select/poll found an accelerated descriptor ready: must the kernel be
 *  asked about the others now (always, unless EDGEPLANE_PRELOAD_KERNEL_POLL_US
 *  is set and this thread asked less than that long ago)? */
bool epl_kernel_poll_due(void);
/** @p call(arg, 0) polled while the thread's recent waits were shorter
 *  than the spin, then @p call(arg, what is left of @p timeout_us, -1 for
 *  none); call returns > 0 ready, 0 nothing, < 0 error, and so does this. */
int epl_spin_wait(int (*call)(void *arg, int64_t timeout_us), void *arg, int64_t timeout_us);
/** How long a wait of at most @p timeout_us (-1: none) may spin now: 0
 *  when spinning is off or this thread's recent waits were longer. */
int64_t epl_spin_budget(int64_t timeout_us);
/** A wait of this thread lasted @p waited_us (feeds epl_spin_budget). */
void epl_spin_note(int64_t waited_us);
/** Between two looks of a spin, the previous at *@p last: true when the
 *  thread lost its CPU meanwhile (it then stops spinning for a while),
 *  else *@p last is now. */
bool epl_spin_lost_cpu(int64_t *last);

static inline void
epl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* address conversion (preload_sock.c) */
int epl_sa_to_hs(const struct epl_sock *p, const struct sockaddr *sa, socklen_t len,
		 struct hs_sockaddr *out, bool allow_unspec);
void epl_hs_to_sa(const struct epl_sock *p, const uint8_t *addr, uint8_t family, uint16_t port,
		  struct sockaddr *sa, socklen_t *len);

static inline void
epl_lock(pthread_mutex_t *m)
{
	int rc = pthread_mutex_lock(m);

	/* The owner died holding it (a crashed process sharing the socket):
	 * the ring indices are published in single stores, so the state is
	 * consistent; take it over.  EDEADLK: this thread already holds it
	 * (a signal handler longjmp'd out of a call): go on as the holder. */
	if (rc == EOWNERDEAD)
		pthread_mutex_consistent(m);
}

static inline void
epl_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

#endif
