/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Promiscuous mode on the kernel's interfaces, put back as it was.
 *
 * The engine enables promiscuous mode on every port (the parse stage decides
 * what is for it).  On net_af_packet and net_af_xdp that sets IFF_PROMISC on
 * the kernel interface (SIOCSIFFLAGS, the flag `ip link` shows as PROMISC),
 * and neither PMD clears it when the port stops or closes.  So the engine
 * reads the flag before it starts such a port (rte_eth_dev_start() itself
 * replays the ethdev's promiscuous state, off, onto the interface: the flag
 * must be read before) and, when it was off, clears it again when the
 * ports stop: after a normal stop and after a start that failed once the
 * port had started.  An interface that was promiscuous before stays so.
 *
 * A process killed with SIGKILL (or crashing) cannot clear anything, and
 * the kernel leaves the flag set: a restart would find PROMISC and take it
 * for the operator's.  So the interfaces whose flag the engine sets are
 * written, before it sets them, to a record beside the control socket
 * (`<ctl_socket>.promisc`, one "name ifindex" line each; removed on a
 * normal stop).  A start that finds the record (its writer did not stop)
 * takes an interface named there with the same ifindex, found promiscuous,
 * as one the dead process set: it clears it at its own stop.  Interfaces of
 * the record that the new configuration does not use stay in the record
 * until a run that uses them stops.  Limits: the record is not read while
 * another live edgeplane-dp answers on the same control socket (that start
 * fails at the socket anyway), and an operator who sets PROMISC on such an
 * interface between the crash and the restart has it cleared at the stop.
 *
 * Only the control thread runs this, at start and at stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine_internal.h"

#define EP_PROMISC_MAX 64

struct promisc_entry {
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;
	bool ours;      /* set by this run (else: a dead run's, not used now) */
};

static struct {
	struct promisc_entry e[EP_PROMISC_MAX];
	int n;
	bool loaded;
	bool writable;  /* no live instance on our control socket */
} rec;

static void
record_path(const struct ep_engine *e, char *path, size_t len)
{
	snprintf(path, len, "%s.promisc", e->ctl_path);
}

/* Another edgeplane-dp answers on the control socket's path. */
static bool
ctl_live(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	rc = connect(fd, (const struct sockaddr *)&sa, sizeof(sa));
	rc = rc == 0 || errno == EAGAIN;
	close(fd);
	return rc;
}

static void
load(const struct ep_engine *e)
{
	char path[sizeof(e->ctl_path) + 16], line[128];
	FILE *f;

	rec.loaded = true;
	rec.writable = !ctl_live(e->ctl_path);
	if (!rec.writable)
		return;
	record_path(e, path, sizeof(path));
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (rec.n < EP_PROMISC_MAX && fgets(line, sizeof(line), f) != NULL) {
		struct promisc_entry *x = &rec.e[rec.n];

		if (sscanf(line, "%15s %u", x->ifname, &x->ifindex) == 2 && x->ifindex != 0) {
			x->ours = false;
			rec.n++;
		}
	}
	fclose(f);
}

/* Write the record (or remove it when empty); a new file renamed over the
 * old, so a crash while writing leaves one of the two whole. */
static void
save(const struct ep_engine *e)
{
	char path[sizeof(e->ctl_path) + 16], tmp[sizeof(path) + 8], dir[sizeof(e->ctl_path)];
	char *slash;
	FILE *f;

	if (!rec.writable)
		return;
	record_path(e, path, sizeof(path));
	if (rec.n == 0) {
		if (unlink(path) < 0 && errno != ENOENT)
			fprintf(stderr, "edgeplane-dp: %s: %s\n", path, strerror(errno));
		return;
	}
	/* The control socket's directory, as ep_ctl_open() makes it (it
	 * runs after the ports start). */
	snprintf(dir, sizeof(dir), "%s", e->ctl_path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		(void)mkdir(dir, 0700);
	}
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "we");
	if (f == NULL) {
		fprintf(stderr, "edgeplane-dp: %s: %s (a crash would leave promiscuous mode "
			"on for a restart to take as the operator's)\n", tmp, strerror(errno));
		return;
	}
	for (int i = 0; i < rec.n; i++)
		fprintf(f, "%s %u\n", rec.e[i].ifname, rec.e[i].ifindex);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		fprintf(stderr, "edgeplane-dp: %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
}

/* Read @p ifname's IFF_PROMISC into @p on; with @p clear, clear it if set. */
static int
if_promisc(const char *ifname, bool clear, bool *on)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc;

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
	*on = rc == 0 && (ifr.ifr_flags & IFF_PROMISC) != 0;
	if (clear && *on) {
		ifr.ifr_flags &= (short)~IFF_PROMISC;
		rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return rc;
}

void
ep_promisc_note(struct ep_engine *e, struct ep_port *p, unsigned int ifindex)
{
	char ifname[IF_NAMESIZE];
	struct promisc_entry *x = NULL;
	bool on;

	p->promisc_restore = false;
	if (ifindex == 0 || if_indextoname(ifindex, ifname) == NULL ||
	    if_promisc(ifname, false, &on) < 0)
		return;
	if (!rec.loaded)
		load(e);
	for (int i = 0; i < rec.n; i++)
		if (rec.e[i].ifindex == ifindex && strcmp(rec.e[i].ifname, ifname) == 0)
			x = &rec.e[i];
	if (on && x == NULL)
		return;         /* the operator's (or another program's) */
	if (x == NULL) {
		if (rec.n == EP_PROMISC_MAX)
			return;
		x = &rec.e[rec.n++];
		snprintf(x->ifname, sizeof(x->ifname), "%s", ifname);
		x->ifindex = ifindex;
	}
	x->ours = true;
	snprintf(p->kernel_if, sizeof(p->kernel_if), "%s", ifname);
	p->promisc_restore = true;
	save(e);
}

void
ep_promisc_restore(struct ep_engine *e)
{
	bool changed = false;

	for (int i = 0; i < e->n_ports; i++) {
		struct ep_port *p = &e->ports[i];
		bool on;

		if (!p->promisc_restore)
			continue;
		/* A device gone with the port (net_tap's) has nothing to put back. */
		if (if_promisc(p->kernel_if, true, &on) < 0 && errno != ENODEV)
			fprintf(stderr, "edgeplane-dp: port %s: cannot clear promiscuous mode on "
				"%s: %s\n", p->name, p->kernel_if, strerror(errno));
		p->promisc_restore = false;
		changed = true;
	}
	if (!changed)
		return;
	for (int i = 0; i < rec.n;) {
		if (rec.e[i].ours)
			rec.e[i] = rec.e[--rec.n];
		else
			i++;
	}
	save(e);
}
