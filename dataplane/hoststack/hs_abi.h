/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The contract between edgeplane-dp's host stack and the preload library
 * (libedgeplane-preload.so): the attach protocol and the layout of the
 * shared memory both map.  Plain C11, no DPDK: the library includes it.
 *
 *   application process                          edgeplane-dp
 *   --------------------                         ------------
 *   attach socket (SOCK_SEQPACKET, 0600) ----->  control thread: HELLO, OPEN,
 *     HELLO: app region (doorbells), worker        BIND/CONNECT..., IDENTIFY
 *            page (read-only), kick eventfds
 *   per socket:
 *     fd the application holds = one end of a    the other end: the dp writes
 *     socketpair(AF_UNIX, SOCK_STREAM) ......... one byte to make it readable
 *                                                 (datagrams waiting); its
 *                                                 hang-up = every descriptor of
 *                                                 the socket closed, in every
 *                                                 process: the socket is freed
 *     socket region (memfd, MAP_SHARED) ........ the same pages:
 *       rx ring: descriptors + data  <--- worker produces, app consumes
 *       tx ring: descriptors + data  ---> app produces, worker consumes
 *     app region: one doorbell ring per worker: "socket N has datagrams to
 *       send", pushed once per idle->pending transition of the socket
 *     kick eventfd per worker: written only when the worker page says the
 *       worker sleeps (notification suppression, as virtio does)
 *     worker page: also whether the worker keeps its CPU between packets
 *       (polls), so that an application does not busy-poll against it
 *
 * Why a socketpair end is the application's descriptor: it is a real
 * kernel file, so dup/dup2/fork/exec/close-on-exec need nothing from us,
 * select/poll/epoll wait on it in the kernel (readable = datagrams queued,
 * or edgeplane-dp gone: end of file), and the kernel's reference counting
 * of the open file tells the dp when the last copy is closed in any process.
 *
 * Trust: the application is as hostile as the network.  The dp never
 * trusts a value it reads from shared memory: ring indices are checked
 * against its private copy and the ring size, descriptors are copied out
 * once and their offset and length checked against the area, option words
 * are clamped.  It writes the rx ring's descriptors from a private shadow
 * and never reads them back.  The dp owns no lock an application can hold.
 */
#ifndef HS_ABI_H
#define HS_ABI_H

#include <stdint.h>

#define HS_ABI_MAGIC    0x31545348u     /**< "HST1" */
#define HS_ABI_VERSION  2u      /**< 2: the worker page says whether its worker polls */
#define HS_CACHE_LINE   64u

/** Default attach socket; [hoststack] attach_socket, $EDGEPLANE_HOSTSTACK. */
#define HS_ATTACH_PATH_DEFAULT "/run/edgeplane/hoststack.sock"

#define HS_MAX_WORKERS  16u             /**< doorbell rings per app region */
#define HS_MAX_DGRAM    65507u          /**< largest UDP payload over IPv4 */
#define HS_MAX_DGRAM6   65527u          /**< over IPv6 (no jumbograms) */

/* ------------------------------------------------------------------------ */
/* Datagram descriptors                                                       */
/* ------------------------------------------------------------------------ */

#define HS_DESC_F_PEER   0x1u   /**< tx: addr/port is the destination (sendto) */

/**
 * One datagram.  Receive: the dp fills every field (addr = sender,
 * local = the destination address it was sent to, for IP_PKTINFO).
 * Transmit: the application fills off, len, and with HS_DESC_F_PEER the
 * destination; the dp chooses the source itself (the socket's address).
 * IPv4 addresses occupy the first 4 bytes of addr/local.
 */
struct hs_desc {
	uint32_t off;           /**< offset of the payload in the ring's data area */
	uint32_t len;           /**< payload bytes */
	uint8_t addr[16];       /**< peer address */
	uint8_t local[16];      /**< rx: our address it arrived on */
	uint16_t port;          /**< peer port, network order */
	uint8_t family;         /**< 4 or 6 */
	uint8_t tos;            /**< rx: TOS / traffic class as received */
	uint32_t flags;         /**< HS_DESC_F_* */
};

/* ------------------------------------------------------------------------ */
/* Per-socket region                                                          */
/* ------------------------------------------------------------------------ */

/** Socket state bits (hs_sock_shm.state), written by the dp. */
#define HS_ST_BOUND      0x01u
#define HS_ST_CONNECTED  0x02u
#define HS_ST_SHUT_RD    0x04u
#define HS_ST_SHUT_WR    0x08u
#define HS_ST_CLOSED     0x10u  /**< the dp freed it (shutdown of the dp) */

/** Option bits (hs_sock_shm.opt_flags), written by the application. */
#define HS_OPT_REUSEADDR 0x01u
#define HS_OPT_REUSEPORT 0x02u
#define HS_OPT_V6ONLY    0x04u
#define HS_OPT_NONBLOCK  0x08u  /**< O_NONBLOCK of the open file (shared by dups, forks) */
#define HS_OPT_PKTINFO   0x10u
#define HS_OPT_RECVTOS   0x20u
#define HS_OPT_BROADCAST 0x40u
#define HS_OPT_PKTINFO6  0x80u
#define HS_OPT_RECVTCLASS 0x100u

/** An address as the dp reports it in shared memory. */
struct hs_sockaddr {
	uint8_t addr[16];       /**< IPv4 in the first 4 bytes */
	uint16_t port;          /**< network order */
	uint8_t family;         /**< 0 (unset), 4 or 6 */
	uint8_t pad;
};

/** A cache line holding one index (producer or consumer side). */
struct hs_line {
	uint32_t v;
	uint32_t pad[HS_CACHE_LINE / 4 - 1];
};

/**
 * The socket region: this header, then the rx descriptors, tx descriptors,
 * rx data and tx data at the offsets it gives (all cache-line aligned).
 * The library keeps its process-shared locks in app_private (the dp never
 * reads that area).
 */
struct hs_sock_shm {
	/* Line 0: written once by the dp before the region is handed over. */
	uint32_t magic;
	uint32_t version;
	uint32_t sock_id;
	uint32_t gen;           /**< slot generation: sock_id + gen name the socket */
	uint32_t rx_slots;      /**< descriptors per ring, a power of two */
	uint32_t tx_slots;
	uint32_t rx_bytes;      /**< data area sizes */
	uint32_t tx_bytes;
	uint32_t rx_desc_off;   /**< byte offsets from the start of the region */
	uint32_t tx_desc_off;
	uint32_t rx_data_off;
	uint32_t tx_data_off;
	uint32_t region_size;
	uint32_t worker;        /**< the dp worker that owns the socket */
	uint32_t family;        /**< 4 or 6: the socket's domain */
	uint32_t pad0;

	/* Line 1: the dp's view of the socket (control thread writes). */
	struct hs_sockaddr local;
	struct hs_sockaddr peer;
	uint32_t state;         /**< HS_ST_* */
	uint32_t rcvbuf;        /**< effective SO_RCVBUF (bytes of rx data area usable) */
	uint32_t sndbuf;        /**< effective SO_SNDBUF */
	uint32_t pad1;

	struct hs_line rx_prod;     /**< dp: datagrams published */
	struct hs_line rx_cons;     /**< app: datagrams consumed */
	/** 1 while a wake byte is (or is about to be) in the application's
	 *  descriptor: the dp sets it (exchange) before writing the byte, the
	 *  application clears it after draining the bytes and then re-checks
	 *  the ring (Dekker: one of the two sees the other). */
	struct hs_line rx_signalled;
	struct hs_line tx_prod;     /**< app: datagrams published */
	struct hs_line tx_cons;     /**< dp: datagrams consumed */
	/** 1 while the socket sits in a doorbell ring or the worker's active
	 *  list: set by the application (exchange) before it pushes a doorbell. */
	struct hs_line tx_pending;
	/** Pending asynchronous error (SO_ERROR): the dp stores an errno (an
	 *  ICMP port unreachable for a connected socket), the app exchanges it
	 *  with 0 when it reports it. */
	struct hs_line so_error;

	/* Application-written options, clamped by the dp when it reads them. */
	uint32_t opt_flags;     /**< HS_OPT_* */
	uint32_t opt_rcvbuf;    /**< SO_RCVBUF as set (the dp uses min(2x, rx_bytes)) */
	uint32_t opt_sndbuf;
	uint32_t opt_tos;       /**< IP_TOS / IPV6_TCLASS for sent datagrams */
	uint32_t opt_pad[12];

	/** The library's process-shared locks and producer state; never read
	 *  by the dp. */
	uint8_t app_private[512];
} __attribute__((aligned(HS_CACHE_LINE)));

/* ------------------------------------------------------------------------ */
/* App region and worker page                                                 */
/* ------------------------------------------------------------------------ */

/** A doorbell ring: socket ids the application pushes, one worker pops. */
struct hs_db_ring {
	struct hs_line prod;        /**< app */
	struct hs_line cons;        /**< dp */
	/** app sets it when a push found the ring full: the worker then walks
	 *  all its sockets once instead of trusting the ring. */
	struct hs_line rescan;
	uint8_t app_private[128];   /**< the library's producer lock */
};

/** The app region: one per attached process (HELLO). */
struct hs_app_shm {
	uint32_t magic;
	uint32_t version;
	uint32_t app_id;
	uint32_t n_workers;
	uint32_t db_slots;          /**< entries per doorbell ring, a power of two */
	uint32_t db_off;            /**< offset of the first ring's entries */
	uint32_t region_size;
	uint32_t pad[9];
	struct hs_db_ring ring[HS_MAX_WORKERS];
	/* then n_workers arrays of db_slots uint32_t (socket ids) at db_off */
} __attribute__((aligned(HS_CACHE_LINE)));

/** The worker page, mapped read-only by every application. */
struct hs_worker_shm {
	/** 1 while the worker is about to block in epoll_wait: an application
	 *  that pushed a doorbell then writes the worker's kick eventfd. */
	struct hs_line sleeping;
	/** 1 while the worker keeps its CPU between packets instead of
	 *  blocking (it yields between polls: a link that cannot wake it,
	 *  memif).  An application thread that busy-polled its rings before a
	 *  wait would then take the CPU that worker needs to deliver what it
	 *  waits for, so the library does not spin while any worker polls. */
	struct hs_line polls;
};

/* ------------------------------------------------------------------------ */
/* Attach protocol: one fixed-size message each way per request              */
/* ------------------------------------------------------------------------ */

enum hs_op {
	HS_OP_HELLO = 1,        /**< -> pid; <- app id, workers; fds: app region, worker page, kicks */
	HS_OP_OPEN,             /**< fds: [app end, dp end]; action bind|connect|send; <- socket region */
	HS_OP_BIND,             /**< fds: [socket]; addr */
	HS_OP_CONNECT,          /**< fds: [socket]; addr (family 0: AF_UNSPEC, dissolve) */
	HS_OP_SHUTDOWN,         /**< fds: [socket]; how */
	HS_OP_IDENTIFY,         /**< fds: [unknown fd]; <- socket region if it is ours */
	/** The library closed its last descriptor of socket sock_id/gen: if
	 *  that was the last one anywhere (the dp end hung up), free it now,
	 *  so that a bind() right after close() finds the port free, as with
	 *  the kernel.  Only a check: it frees nothing that is still open. */
	HS_OP_CLOSED,
};

/** What OPEN does once the socket exists. */
enum hs_open_action {
	HS_OPEN_BIND = 1,       /**< bind(addr) */
	HS_OPEN_CONNECT,        /**< connect(addr) */
	HS_OPEN_SEND,           /**< first sendto(addr) of an unbound socket: auto-bind */
};

/** err value of an OPEN the dp declines: the address is not one it serves,
 *  so the socket stays with the kernel. */
#define HS_ERR_NOT_MINE 100000

struct hs_msg_hdr {
	uint32_t magic;         /**< HS_ABI_MAGIC */
	uint16_t op;            /**< enum hs_op */
	uint16_t version;       /**< HS_ABI_VERSION */
	uint32_t seq;           /**< echoed in the reply */
	uint32_t pad;
};

struct hs_req {
	struct hs_msg_hdr h;
	uint32_t pid;           /**< HELLO */
	uint16_t family;        /**< OPEN: 4 or 6, the socket's domain */
	uint16_t action;        /**< OPEN: enum hs_open_action */
	struct hs_sockaddr addr;/**< OPEN, BIND, CONNECT */
	/** OPEN: a kernel socket already bound to a wildcard port (bind(any, 0)
	 *  kept in the kernel) asks for the same port here. */
	uint16_t want_port;     /**< network order, 0 = any */
	uint16_t how;           /**< SHUTDOWN: SHUT_RD/WR/RDWR */
	uint32_t opt_flags;     /**< OPEN: HS_OPT_* of the kernel socket so far */
	uint32_t opt_rcvbuf;
	uint32_t opt_sndbuf;
	uint32_t opt_tos;
	uint64_t ino;           /**< OPEN: st_ino of the app end (for IDENTIFY later) */
	uint32_t sock_id;       /**< CLOSED */
	uint32_t gen;           /**< CLOSED */
	uint32_t pad[2];
};

struct hs_resp {
	struct hs_msg_hdr h;
	int32_t err;            /**< 0, an errno, or HS_ERR_NOT_MINE */
	uint32_t app_id;        /**< HELLO */
	uint32_t n_workers;     /**< HELLO */
	uint32_t sock_id;       /**< OPEN, IDENTIFY */
	uint32_t region_size;   /**< OPEN, IDENTIFY: socket region; HELLO: app region */
	uint32_t worker_size;   /**< HELLO: worker page */
	uint32_t pad[6];
};

#endif
