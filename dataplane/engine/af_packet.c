/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_af_packet ports as a data plane needs them: IPv4 fragments as they
 * were sent, and the frames the kernel dropped before our rx counted.
 *
 * DPDK 22.11's af_packet PMD (drivers/net/af_packet/rte_eth_af_packet.c,
 * rte_pmd_init_internals) joins every queue's socket, for any qpairs, to a
 * PACKET_FANOUT group with PACKET_FANOUT_FLAG_DEFRAG, and has no devarg to
 * leave the flag out.  With it the kernel reassembles IPv4 before the
 * fanout (ip_check_defrag, net/packet/af_packet.c):
 *
 *   wire: frag 0 (1514 B), frag 1 (1514 B), frag 2 (62 B)
 *   rx:   one 3028-byte datagram, cut to the 2048-byte ring frame
 *   wire: a lone first fragment
 *   rx:   nothing; it waits in the kernel's reassembly queue until
 *         ipfrag_time (30 s) and is freed, counted in no counter of ours
 *
 * A router forwards fragments as they come; reassembly is the destination's
 * business (RFC 791, RFC 1812).  So edgeplane-dp defines setsockopt()
 * itself (exported from the executable, which the dynamic linker searches
 * before libc when it binds the PMD's call): for SOL_PACKET/PACKET_FANOUT it
 * clears that one flag, and it passes every call to the kernel by syscall,
 * otherwise unchanged.  The group keeps its mode (hash) and rollover.
 *
 * The same hook chooses the group's id.  The PMD names the group
 * (getpid() ^ ifindex) & 0xffff, and the kernel answers EINVAL when another
 * socket of the network namespace holds that id on another device or with
 * another mode: two data planes on the two ends of one veth, whose pids
 * differ by what their ifindexes differ by, fail to start (seen with the
 * generator and the sink in one namespace), and a socket on the same
 * device with the same mode would silently join a stranger's group.  So
 * the first socket of a PMD id asks the kernel for an unused id
 * (PACKET_FANOUT_FLAG_UNIQUEID, Linux 4.5) and reads it back; the port's
 * other queues join that id.
 *
 * The same hook notes each fanout socket, so `stats` can read
 * PACKET_STATISTICS (frames dropped because the socket's ring was full),
 * which the 22.11 PMD does not report: they are added to the port's
 * imissed and shown as af_packet_drops.  The PMD opens one socket per queue
 * pair, in queue order, so the port's n-th fanout socket is its queue n:
 * the sleep-rx polling policy waits on those (ep_af_packet_fd).
 *
 * The same hook notes AF_XDP sockets (SOL_XDP/XDP_RX_RING, set once per
 * socket by libxdp or libbpf when net_af_xdp sets up an rx queue, in queue
 * order): poll() on an XSK reports POLLIN while its rx ring holds
 * descriptors, and the kernel wakes a poller when it flushes frames into
 * the ring, so sleep-rx waits on those as well (ep_port_rx_fd).  Their
 * XDP_STATISTICS give the frames the kernel dropped because the rx ring was
 * full (rx_ring_full), which 22.11's net_af_xdp leaves out of imissed (it
 * counts rx_dropped, the fill ring running dry): `stats` adds them, so a
 * worker that falls behind shows as missed frames on AF_XDP as on
 * af_packet (ep_xsk_ring_full).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

#include "engine_internal.h"

#define EP_AFP_MAX_SOCKETS 256

/*
 * Fanout sockets in the order the PMD made them; port is the logical port
 * index, or -1 until ep_af_packet_claim().  Written by setsockopt() during
 * rte_dev_probe() and read by the control socket's `stats`, both on the
 * control thread; workers never touch it.
 */
static struct {
	int fd;
	int port;
	uint64_t drops;         /* summed: reading PACKET_STATISTICS resets it */
} afp[EP_AFP_MAX_SOCKETS];
static unsigned int n_afp;

/* AF_XDP sockets in the order their rx rings were set up; port as above. */
static struct {
	int fd;
	int port;
} xsk[EP_AFP_MAX_SOCKETS];
static unsigned int n_xsk;

/* The PMD's fanout id of a port and the id the kernel gave its group. */
static struct {
	uint16_t pmd_id;
	uint16_t id;
} grp[EP_AFP_MAX_SOCKETS];
static unsigned int n_grp;

/* setsockopt(PACKET_FANOUT) with arg's mode and flags in a group of our
 * own: a new one the kernel numbers for the PMD's first socket of an id,
 * that group for the next ones. */
static int
fanout_join(int fd, uint32_t arg)
{
	uint16_t pmd_id = (uint16_t)(arg & 0xffff);
	uint32_t mode = arg & 0xffff0000u;
	uint32_t got;
	socklen_t len = sizeof(got);
	int rc;

	for (unsigned int i = 0; i < n_grp; i++)
		if (grp[i].pmd_id == pmd_id) {
			arg = mode | grp[i].id;
			return (int)syscall(SYS_setsockopt, fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof(arg));
		}
	arg = mode | ((uint32_t)PACKET_FANOUT_FLAG_UNIQUEID << 16);
	rc = (int)syscall(SYS_setsockopt, fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof(arg));
	if (rc != 0)
		return rc;
	if (getsockopt(fd, SOL_PACKET, PACKET_FANOUT, &got, &len) == 0 && n_grp < EP_AFP_MAX_SOCKETS)
		grp[n_grp++] = (typeof(grp[0])){ .pmd_id = pmd_id, .id = (uint16_t)(got & 0xffff) };
	return 0;
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len);

int
setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	uint32_t arg;     /* id in bits 0-15, mode and flags in 16-31 */

	if (level == SOL_PACKET && name == PACKET_FANOUT && val != NULL &&
	    len == sizeof(arg)) {
		int rc;

		memcpy(&arg, val, sizeof(arg));
		arg &= ~((uint32_t)PACKET_FANOUT_FLAG_DEFRAG << 16);
		rc = fanout_join(fd, arg);
		if (rc == 0 && n_afp < EP_AFP_MAX_SOCKETS)
			afp[n_afp++] = (typeof(afp[0])){ .fd = fd, .port = -1 };
		return rc;
	}
	if (level == SOL_XDP && name == XDP_RX_RING && n_xsk < EP_AFP_MAX_SOCKETS)
		xsk[n_xsk++] = (typeof(xsk[0])){ .fd = fd, .port = -1 };
	return (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

void
ep_xsk_claim(uint16_t port)
{
	for (unsigned int i = 0; i < n_xsk; i++)
		if (xsk[i].port < 0)
			xsk[i].port = port;
}

int
ep_port_rx_fd(uint16_t port, uint16_t queue)
{
	int fd = ep_af_packet_fd(port, queue);
	unsigned int k = 0;

	for (unsigned int i = 0; fd < 0 && i < n_xsk; i++)
		if (xsk[i].port == port && k++ == queue)
			fd = xsk[i].fd;
	return fd;
}

void
ep_af_packet_claim(uint16_t port)
{
	for (unsigned int i = 0; i < n_afp; i++)
		if (afp[i].port < 0)
			afp[i].port = port;
}

unsigned int
ep_af_packet_sockets(uint16_t port)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < n_afp; i++)
		n += afp[i].port == port;
	return n;
}

int
ep_af_packet_fd(uint16_t port, uint16_t queue)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n_afp; i++)
		if (afp[i].port == port && k++ == queue)
			return afp[i].fd;
	return -1;
}

uint64_t
ep_af_packet_drops(uint16_t port)
{
	uint64_t total = 0;

	for (unsigned int i = 0; i < n_afp; i++) {
		struct tpacket_stats st;
		socklen_t len = sizeof(st);

		if (afp[i].port != port)
			continue;
		if (getsockopt(afp[i].fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
			afp[i].drops += st.tp_drops;
		total += afp[i].drops;
	}
	return total;
}

uint64_t
ep_xsk_ring_full(uint16_t port)
{
	uint64_t total = 0;

	for (unsigned int i = 0; i < n_xsk; i++) {
		struct xdp_statistics st;
		socklen_t len = sizeof(st);

		/* Cumulative since the socket was made; an older kernel's
		 * shorter struct has no rx_ring_full. */
		if (xsk[i].port == port &&
		    getsockopt(xsk[i].fd, SOL_XDP, XDP_STATISTICS, &st, &len) == 0 &&
		    len >= offsetof(struct xdp_statistics, rx_ring_full) + sizeof(st.rx_ring_full))
			total += st.rx_ring_full;
	}
	return total;
}

unsigned int
ep_xsk_sockets(uint16_t port)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < n_xsk; i++)
		n += xsk[i].port == port;
	return n;
}

void
ep_af_packet_forget(void)
{
	n_afp = 0;
	n_xsk = 0;
	n_grp = 0;
}
