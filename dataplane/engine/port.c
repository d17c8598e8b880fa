/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports: any DPDK device named by its device string (a vdev such as
 * "net_af_packet0,iface=veth0", or a PCI address), probed at run time with
 * rte_dev_probe so the config file is the only place devices are named.
 *
 * Queues: one rx queue per worker that polls the port, one tx queue per
 * worker (any worker may transmit on any port, so no tx queue is shared and
 * tx needs no lock).  net_af_packet exposes queue pairs through its
 * "qpairs" argument; when the device string does not give one, the engine
 * adds the count it needs.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "ep_engine.h"
#include "engine_internal.h"

#define EP_RX_DESC_DEFAULT 1024
#define EP_TX_DESC_DEFAULT 1024
#define EP_AF_PACKET_FRAMES 4096
#define EP_MTU_DEFAULT 1500

struct addr_ctx {
	struct ep_engine *e;
	struct ep_port *p;
	struct ep_err *err;
};

static int
parse_addr(const struct ep_cfg_kv *kv, void *arg)
{
	struct addr_ctx *c = arg;
	struct ep_engine *e = c->e;
	struct ep_port *p = c->p;
	int want = strcmp(kv->key, "ipv4") == 0 ? 4 : 6;
	uint8_t addr[16], plen;
	struct ep_err perr;
	int fam = ep_parse_prefix(kv->val, addr, &plen, &perr);

	if (fam < 0)
		return ep_cfg_error(e->cfg, kv, c->err, "%s",
				    perr.msg);
	if (fam != want)
		return ep_cfg_error(e->cfg, kv, c->err,
				    "'%s' is not an IPv%d address", kv->val, want);
	if (fam == 4) {
		if (p->n_v4 == EP_MAX_ADDRS)
			return ep_cfg_error(e->cfg, kv, c->err,
					    "more than %d addresses", EP_MAX_ADDRS);
		memcpy(&p->v4[p->n_v4].addr, addr, 4);
		p->v4[p->n_v4++].plen = plen;
	} else {
		if (p->n_v6 == EP_MAX_ADDRS)
			return ep_cfg_error(e->cfg, kv, c->err,
					    "more than %d addresses", EP_MAX_ADDRS);
		memcpy(p->v6[p->n_v6].addr, addr, 16);
		p->v6[p->n_v6++].plen = plen;
	}
	return 0;
}

/* Read every [port NAME] section; no DPDK calls here (used by --check). */
int
ep_ports_parse(struct ep_engine *e, struct ep_err *err)
{
	struct ep_cfg *cfg = e->cfg;

	for (int i = 0; i < cfg->n_sec; i++) {
		struct ep_cfg_section *s = &cfg->sec[i];
		struct ep_port *p;
		const struct ep_cfg_kv *kv;
		const char *mac;
		uint64_t v;
		struct addr_ctx actx;

		if (strcmp(s->type, "port") != 0)
			continue;
		if (s->name[0] == '\0')
			return ep_cfg_section_error(cfg, s, err, "a port needs a name: [port NAME]");
		if (e->n_ports == EP_MAX_PORTS)
			return ep_cfg_section_error(cfg, s, err, "more than %d ports", EP_MAX_PORTS);
		p = &e->ports[e->n_ports];
		memset(p, 0, sizeof(*p));
		p->index = (uint16_t)e->n_ports;
		p->port_id = RTE_MAX_ETHPORTS;
		snprintf(p->name, sizeof(p->name), "%s", s->name);
		if (strlen(s->name) >= sizeof(p->name))
			return ep_cfg_section_error(cfg, s, err, "port name longer than %zu",
						    sizeof(p->name) - 1);
		kv = ep_cfg_get(cfg, s, "device", err);
		if (kv == NULL) {
			if (err->msg[0] != '\0')
				return -1;
			return ep_cfg_section_error(cfg, s, err,
				"missing 'device' (a DPDK device string such as "
				"net_af_packet0,iface=eth0, or a PCI address)");
		}
		if (strlen(kv->val) >= sizeof(p->device) - 16 || kv->val[0] == '\0' ||
		    kv->val[0] == ',')
			return ep_cfg_error(cfg, kv, err, "bad device string");
		snprintf(p->device, sizeof(p->device), "%s", kv->val);
		p->device_line = kv->line;
		for (int j = 0; j < e->n_ports; j++) {
			if (strcmp(e->ports[j].device, p->device) == 0)
				return ep_cfg_error(cfg, kv, err, "device already used by port '%s'",
						    e->ports[j].name);
		}
		mac = ep_cfg_str(cfg, s, "mac", NULL, err);
		if (mac == NULL && err->msg[0] != '\0')
			return -1;
		if (mac != NULL) {
			kv = ep_cfg_get(cfg, s, "mac", NULL);
			if (ep_parse_mac(mac, &p->mac) < 0 || rte_is_multicast_ether_addr(&p->mac) ||
			    rte_is_zero_ether_addr(&p->mac))
				return ep_cfg_error(cfg, kv, err,
						    "'%s' is not a unicast MAC address", mac);
			p->mac_set = true;
		}
		/* IPv6 needs 1280 (RFC 8200 section 5); 9216 is the usual jumbo ceiling. */
		if (ep_cfg_u64(cfg, s, "mtu", EP_MTU_DEFAULT, 1280, 9216, &v, err) < 0)
			return -1;
		p->mtu = (uint16_t)v;
		if (ep_cfg_u64(cfg, s, "rx_desc", EP_RX_DESC_DEFAULT, 64, 8192, &v, err) < 0)
			return -1;
		p->rx_desc = (uint16_t)v;
		if (ep_cfg_u64(cfg, s, "tx_desc", EP_TX_DESC_DEFAULT, 64, 8192, &v, err) < 0)
			return -1;
		p->tx_desc = (uint16_t)v;
		actx = (struct addr_ctx){ e, p, err };
		if (ep_cfg_each(s, "ipv4", parse_addr, &actx) != 0 ||
		    ep_cfg_each(s, "ipv6", parse_addr, &actx) != 0)
			return -1;
		e->n_ports++;
	}
	return 0;
}

struct ep_port *
ep_port_by_name(struct ep_engine *e, const char *name)
{
	for (int i = 0; i < e->n_ports; i++)
		if (strcmp(e->ports[i].name, name) == 0)
			return &e->ports[i];
	return NULL;
}

static bool
is_af_packet(const struct ep_port *p)
{
	return strncmp(p->device, "net_af_packet", 13) == 0;
}

/* Bytes of frame an mbuf of port @p p must hold: a full frame at the
 * port's MTU with two VLAN tags and a PPPoE header (the default 2048 up to
 * an MTU of 1500).  net_af_packet copies each frame into one mbuf, and its
 * ring frames must be that size too: a jumbo port gets ring frames of
 * whole pages, one per block. */
static uint32_t
frame_room(const struct ep_port *p)
{
	uint32_t room = RTE_ALIGN_CEIL((uint32_t)p->mtu + RTE_ETHER_HDR_LEN + 8 + 8 + 64, 1024);

	if (room <= RTE_MBUF_DEFAULT_DATAROOM)
		return RTE_MBUF_DEFAULT_DATAROOM;
	return is_af_packet(p) ? RTE_ALIGN_CEIL(room, 4096) : room;
}

/* Enough mbufs for every descriptor, the workers' bursts in flight and
 * the per-lcore caches. */
static unsigned int
pool_mbufs(const struct ep_port *p, unsigned int nrx, unsigned int ntx, int n_workers)
{
	unsigned int n = nrx * p->rx_desc + ntx * p->tx_desc +
			 (unsigned int)n_workers * EP_BURST_MAX * 8 + RTE_MAX_LCORE * 256 / 8;

	return RTE_MAX(n, 8192u);
}

/* The private area of port @p p's mbufs: frames start on a cache line
 * (EP_META_SIZE_LINE) when every worker that polls the port runs a
 * pipeline that pushes no header in front of them, half a line in
 * (EP_META_SIZE) otherwise, and for a port no worker polls (it sends
 * only, or a generator feeds it). */
static uint16_t
pool_priv_size(const struct ep_engine *e, const struct ep_port *p)
{
	bool polled = false, aligned = true;

	for (int i = 0; i < e->n_workers; i++) {
		const struct ep_worker *w = e->workers[i];

		for (int q = 0; q < w->n_rx; q++)
			if (w->rx[q].port == p->index) {
				polled = true;
				aligned = aligned && w->type != NULL && w->type->rx_line_aligned;
			}
	}
	return polled && aligned ? EP_META_SIZE_LINE : EP_META_SIZE;
}

uint64_t
ep_ports_memory_estimate(const struct ep_engine *e, int n_workers)
{
	uint64_t sum = 0;

	for (int i = 0; i < e->n_ports; i++) {
		const struct ep_port *p = &e->ports[i];
		unsigned int nq = (unsigned int)RTE_MAX(n_workers, 1);

		sum += ep_mem_pktmbuf_pool_bytes(pool_mbufs(p, nq, nq, n_workers), EP_META_SIZE,
						 frame_room(p) + RTE_PKTMBUF_HEADROOM);
	}
	return sum;
}

/* The ethdev name of a device string: what precedes the first comma. */
static void
dev_name(const char *device, char *name, size_t len)
{
	size_t n = strcspn(device, ",");

	if (n >= len)
		n = len - 1;
	memcpy(name, device, n);
	name[n] = '\0';
}

/* The devargs the types polling @p p add (ep_pipeline_type.port_devargs),
 * each type once, appended to @p devargs. */
static int
type_devargs(struct ep_engine *e, const struct ep_port *p, char *devargs, size_t len,
	     struct ep_err *err)
{
	const struct ep_pipeline_type *done[EP_MAX_WORKERS];
	int n_done = 0;

	for (int i = 0; i < e->n_workers; i++) {
		const struct ep_worker *w = e->workers[i];
		const struct ep_pipeline_type *t = w->type;
		bool polled = false, seen = false;

		for (int q = 0; q < w->n_rx; q++)
			polled = polled || w->rx[q].port == p->index;
		for (int k = 0; k < n_done; k++)
			seen = seen || done[k] == t;
		if (!polled || seen || t == NULL || t->port_devargs == NULL)
			continue;
		done[n_done++] = t;
		size_t used = strlen(devargs);
		if (t->port_devargs(e, p, devargs + used, len - used, err) < 0)
			return -1;
	}
	return 0;
}

int
ep_ports_probe(struct ep_engine *e, struct ep_err *err)
{
	for (int i = 0; i < e->n_ports; i++) {
		struct ep_port *p = &e->ports[i];
		char devargs[sizeof(p->device)], name[RTE_ETH_NAME_MAX_LEN];
		/* assign_forced_rx_queues() made n_rxq the queue-pair count. */
		uint16_t queues = RTE_MAX(RTE_MAX(p->n_rxq, p->n_txq), 1);
		int rc;

		snprintf(devargs, sizeof(devargs), "%s", p->device);
		if (is_af_packet(p) && strstr(devargs, ",qpairs=") == NULL)
			snprintf(devargs + strlen(devargs), sizeof(devargs) - strlen(devargs),
				 ",qpairs=%u", queues);
		/* af_packet's default ring is 512 frames: ~6 ms at 80 kpps, less
		 * than a descheduled worker on a shared core can be away.  4096
		 * frames (8 MiB per queue) ride that out. */
		if (is_af_packet(p) && strstr(devargs, "framecnt=") == NULL)
			snprintf(devargs + strlen(devargs), sizeof(devargs) - strlen(devargs),
				 ",framecnt=%u", EP_AF_PACKET_FRAMES);
		if (is_af_packet(p) && strstr(devargs, "framesz=") == NULL &&
		    frame_room(p) > RTE_MBUF_DEFAULT_DATAROOM)
			snprintf(devargs + strlen(devargs), sizeof(devargs) - strlen(devargs),
				 ",framesz=%u,blocksz=%u", frame_room(p), frame_room(p));
		if (type_devargs(e, p, devargs, sizeof(devargs), err) < 0)
			return -1;
		rc = rte_dev_probe(devargs);
		if (rc < 0)
			return ep_err_set(err, "%s:%d: key 'device': port %s: cannot probe device "
					  "'%s': %s", e->cfg->path, p->device_line, p->name,
					  devargs, rte_strerror(-rc));
		if (strncmp(devargs, "net_af_packet", 13) == 0)
			ep_af_packet_claim(p->index);
		dev_name(p->device, name, sizeof(name));
		if (rte_eth_dev_get_port_by_name(name, &p->port_id) != 0)
			return ep_err_set(err, "port %s: device '%s' probed but no ethdev named '%s'",
					  p->name, devargs, name);
		/* The device's own MAC now, before setup(): next hops that
		 * pipelines publish from their config carry it as the frames'
		 * source (without this, a port without `mac =`, such as
		 * net_af_xdp's, sent its configured neighbours' frames from
		 * 00:00:00:00:00:00). */
		if (!p->mac_set)
			rte_eth_macaddr_get(p->port_id, &p->mac);
	}
	return 0;
}

/* Drivers whose rx copies each frame on the polling core (ep_port.rx_copies). */
static bool
rx_copies(const char *driver)
{
	static const char *const copying[] = { "net_pcap", "net_af_packet", "net_tap",
					       "net_null" };

	for (size_t i = 0; driver != NULL && i < RTE_DIM(copying); i++)
		if (strcmp(driver, copying[i]) == 0)
			return true;
	return false;
}

int
ep_ports_start(struct ep_engine *e, struct ep_err *err)
{
	for (int i = 0; i < e->n_ports; i++) {
		struct ep_port *p = &e->ports[i];
		struct rte_eth_conf conf;
		struct rte_eth_dev_info info;
		char pname[RTE_MEMPOOL_NAMESIZE];
		unsigned int n_mbufs;
		int rc, socket = rte_eth_dev_socket_id(p->port_id);
		uint16_t nrx = p->n_rxq, ntx = p->n_txq;

		if (socket < 0)
			socket = SOCKET_ID_ANY;
		rc = rte_eth_dev_info_get(p->port_id, &info);
		if (rc != 0)
			return ep_err_set(err, "port %s: device info: %s", p->name, rte_strerror(-rc));
		p->rx_copies = rx_copies(info.driver_name);
		/* A kernel interface's promiscuous flag, before the start
		 * touches it: put back at stop (promisc.c). */
		ep_promisc_note(e, p, info.if_index);
		/* A port nobody polls still needs a queue to start. */
		if (nrx == 0)
			nrx = 1;
		if (ntx == 0)
			ntx = 1;
		if (nrx > info.max_rx_queues || ntx > info.max_tx_queues)
			return ep_err_set(err, "port %s: needs %u rx / %u tx queues, device '%s' "
					  "has at most %u / %u", p->name, nrx, ntx, p->device,
					  info.max_rx_queues, info.max_tx_queues);
		n_mbufs = pool_mbufs(p, nrx, ntx, e->n_workers);
		snprintf(pname, sizeof(pname), "ep_pool_%u", p->index);
		p->priv_size = pool_priv_size(e, p);
		p->pool = rte_pktmbuf_pool_create(pname, n_mbufs, 256, p->priv_size,
						  (uint16_t)(frame_room(p) + RTE_PKTMBUF_HEADROOM),
						  socket);
		if (p->pool == NULL)
			return ep_err_set(err, "port %s: mbuf pool of %u: %s", p->name, n_mbufs,
					  rte_strerror(rte_errno));
		memset(&conf, 0, sizeof(conf));
		rc = rte_eth_dev_configure(p->port_id, nrx, ntx, &conf);
		if (rc < 0)
			return ep_err_set(err, "port %s: configure %u rx / %u tx queues: %s",
					  p->name, nrx, ntx, rte_strerror(-rc));
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &p->rx_desc, &p->tx_desc);
		if (rc < 0)
			return ep_err_set(err, "port %s: descriptors: %s", p->name, rte_strerror(-rc));
		for (uint16_t q = 0; q < nrx; q++) {
			rc = rte_eth_rx_queue_setup(p->port_id, q, p->rx_desc, socket, NULL, p->pool);
			if (rc < 0)
				return ep_err_set(err, "port %s: rx queue %u: %s", p->name, q,
						  rte_strerror(-rc));
		}
		/* net_af_xdp made its rx queues' sockets just now. */
		ep_xsk_claim(p->index);
		for (uint16_t q = 0; q < ntx; q++) {
			rc = rte_eth_tx_queue_setup(p->port_id, q, p->tx_desc, socket, NULL);
			if (rc < 0)
				return ep_err_set(err, "port %s: tx queue %u: %s", p->name, q,
						  rte_strerror(-rc));
		}
		if (p->mac_set) {
			struct rte_ether_addr cur;

			/* Some PMDs (af_xdp) cannot set a MAC at all: only ask
			 * when it differs. */
			if (rte_eth_macaddr_get(p->port_id, &cur) == 0 &&
			    rte_is_same_ether_addr(&cur, &p->mac))
				rc = 0;
			else
				rc = rte_eth_dev_default_mac_addr_set(p->port_id, &p->mac);
			if (rc < 0)
				return ep_err_set(err, "port %s: set MAC: %s", p->name,
						  rte_strerror(-rc));
		}
		rc = rte_eth_dev_start(p->port_id);
		if (rc < 0)
			return ep_err_set(err, "port %s: start: %s", p->name, rte_strerror(-rc));
		/* The data plane decides what is for it (parse stage), so see all;
		 * ep_ports_stop() puts a kernel interface's flag back. */
		rte_eth_promiscuous_enable(p->port_id);
		rte_eth_macaddr_get(p->port_id, &p->mac);
		p->started = true;
	}
	return 0;
}

void
ep_ports_stop(struct ep_engine *e)
{
	ep_af_packet_forget();
	for (int i = 0; i < e->n_ports; i++) {
		struct ep_port *p = &e->ports[i];

		if (p->started) {
			if (p->promisc_restore)
				rte_eth_promiscuous_disable(p->port_id);
			rte_eth_dev_stop(p->port_id);
			p->started = false;
		}
		if (p->port_id < RTE_MAX_ETHPORTS)
			rte_eth_dev_close(p->port_id);
	}
	/* The PMDs leave IFF_PROMISC as they set it, also on a port that
	 * failed before it started. */
	ep_promisc_restore(e);
}
