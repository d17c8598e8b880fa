/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the host stack's receive path -- parse, neigh, reasm (rte_ip_frag),
 * icmp, udp (checksum, policy, lookup, delivery into socket rings) -- and the
 * service hook that expires reassembly and flushes what the stages sent.
 *
 * An input is a sequence of frames, each prefixed by a 16-bit big-endian
 * length, after one byte that advances the clock (in 50 ms steps) before the
 * service runs: so one input can hold the fragments of a datagram, and the
 * reassembly table (which lives across inputs) sees overlaps, duplicates,
 * gaps and expiries.  Sockets: IPv4 and IPv6 wildcards, a specific bind, a
 * connected socket, a SO_REUSEPORT pair; policy rules including a redirect.
 * After every input the socket rings must hold only descriptors inside their
 * areas, and are emptied so they never fill for good.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "engine_internal.h"
#include "hoststack.h"
#include "hs_ring.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int hs_stack_workers_ready(struct hs_stack *s, struct ep_err *err);

static struct ep_engine eng;
static struct hs_stack *stk;
static struct ep_worker *wk;
static struct rte_mempool *pool;
static struct hs_sock *socks[8];
static int n_socks;
static uint64_t clock_tsc;

static void
die(const char *what, const struct ep_err *err)
{
	fprintf(stderr, "fuzz setup: %s: %s\n", what, err != NULL ? err->msg : "");
	abort();
}

static void
sock(const char *ip, uint16_t port, uint32_t flags, const char *peer, uint16_t pport)
{
	struct hs_sockaddr a = { .port = rte_cpu_to_be_16(port) };
	struct hs_ip x;
	struct ep_err err;
	struct hs_sock *k;
	int sv[2];

	a.family = (uint8_t)hs_parse_ip(ip, &x);
	memcpy(a.addr, x.b, 16);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		die("socketpair", NULL);
	k = hs_sock_open(stk, a.family, sv[1], 0, (uint64_t)sv[0], NULL, &err);
	if (k == NULL)
		die("open", &err);
	k->shm->opt_flags = flags;
	k->v6only = (flags & HS_OPT_V6ONLY) != 0;
	if (hs_sock_bind(stk, k, &a, flags) != 0)
		die("bind", NULL);
	if (peer != NULL) {
		struct hs_sockaddr p = { .port = rte_cpu_to_be_16(pport) };

		p.family = (uint8_t)hs_parse_ip(peer, &x);
		memcpy(p.addr, x.b, 16);
		if (hs_sock_connect(stk, k, &p) != 0)
			die("connect", NULL);
	}
	socks[n_socks++] = k;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *eal[] = { "fuzz_hs_rx", "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
			"--no-telemetry", "-l", "0", "--log-level", "*:error", NULL };
	static const char *const rules[] = {
		"core dir=rx lport=7000 redirect=198.18.30.2",
		"tel lport=9000-9099 dscp=46 priority=7",
		"bulk rport=1000-1999 priority=1 rate=10M",
		"nope lport=6666 action=drop",
	};
	struct ep_port *p = &eng.ports[0];
	struct rte_eth_conf conf = { 0 };
	struct hs_params prm;
	struct ep_err err = { "" };
	struct hs_policy_rule r[4];

	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		abort();
	pool = rte_pktmbuf_pool_create("fz", 8192, 0, EP_META_SIZE, RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	eng.qsbr = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(1), RTE_CACHE_LINE_SIZE);
	rte_rcu_qsbr_init(eng.qsbr, 1);
	eng.n_ports = 1;
	eng.burst = 32;
	snprintf(p->name, sizeof(p->name), "m");
	ep_parse_mac("02:00:00:00:30:01", &p->mac);
	ep_parse_prefix("198.18.30.1/24", &p->v4[0].addr, &p->v4[0].plen, &err);
	ep_parse_prefix("2001:db8:30::1/64", p->v6[0].addr, &p->v6[0].plen, &err);
	p->n_v4 = p->n_v6 = 1;
	p->pool = pool;
	/* A net_ring port loops what the stack sends back to its rx queue,
	 * from where each input's output is freed. */
	if (rte_dev_probe("net_ring_fz") < 0 ||
	    rte_eth_dev_get_port_by_name("net_ring_fz", &p->port_id) != 0 ||
	    rte_eth_dev_configure(p->port_id, 1, 1, &conf) < 0 ||
	    rte_eth_rx_queue_setup(p->port_id, 0, 1024, SOCKET_ID_ANY, NULL, pool) < 0 ||
	    rte_eth_tx_queue_setup(p->port_id, 0, 1024, SOCKET_ID_ANY, NULL) < 0 ||
	    rte_eth_dev_start(p->port_id) < 0)
		die("net_ring", NULL);
	p->started = true;
	hs_params_default(&prm);
	prm.max_sockets = 16;
	prm.rx_slots = prm.tx_slots = 64;
	prm.rx_bytes = prm.tx_bytes = 65536 * 2;
	prm.reasm_entries = 64;
	stk = hs_stack_create(&eng, &prm, &err);
	wk = ep_worker_create(&eng, 0, "fz", &err);
	if (stk == NULL || wk == NULL)
		die("stack", &err);
	stk->w[0] = hs_wctx_create(stk, wk, 0, &err);
	stk->n_w = 1;
	if (stk->w[0] == NULL || hs_stack_workers_ready(stk, &err) < 0 ||
	    hs_routes_build(stk, &err) < 0 ||
	    hs_neigh_static_add(stk, "198.18.30.2", "02:00:00:00:30:02", &err) < 0)
		die("stack", &err);
	for (int i = 0; i < 4; i++)
		if (hs_policy_parse(rules[i], &r[i], &err) < 0)
			die("policy", &err);
	if (hs_policy_commit(stk, r, 4, &err) < 0)
		die("policy", &err);
	wk->pipeline_ctx = stk->w[0];
	for (size_t i = 0; i < RTE_DIM(hs_stages); i++) {
		ep_worker_add_stage(wk, hs_stages[i].name, hs_stages[i].fn, stk->w[0], &err);
		if (strcmp(hs_stages[i].name, "udp") == 0)
			stk->w[0]->stage_udp = &wk->stages[wk->n_stages - 1];
		if (strcmp(hs_stages[i].name, "reasm") == 0)
			stk->w[0]->stage_reasm = &wk->stages[wk->n_stages - 1];
	}
	stk->w[0]->touch_seq = 1;
	hs_nb_learn(stk->w[0], 4, &stk->static_nb[0].ip, &stk->static_nb[0].mac, 0, true);
	hs_global = stk;
	sock("0.0.0.0", 5000, 0, NULL, 0);
	sock("::", 5001, 0, NULL, 0);
	sock("198.18.30.1", 5002, 0, NULL, 0);
	sock("198.18.30.1", 5003, 0, "198.18.30.2", 4000);
	sock("2001:db8:30::1", 5004, HS_OPT_REUSEPORT, NULL, 0);
	sock("2001:db8:30::1", 5004, HS_OPT_REUSEPORT, NULL, 0);
	sock("0.0.0.0", 9050, 0, NULL, 0);
	clock_tsc = rte_rdtsc();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rte_mbuf *pkts[EP_BURST_MAX], *out[64];
	uint16_t n = 0;
	size_t i = 1;
	uint16_t k;

	if (size < 1)
		return 0;
	clock_tsc += (uint64_t)data[0] * (rte_get_tsc_hz() / 20);
	while (i + 2 <= size && n < 16) {
		size_t len = (size_t)data[i] << 8 | data[i + 1];
		struct rte_mbuf *m;
		char *p;

		i += 2;
		if (len > size - i)
			len = size - i;
		if (len > RTE_MBUF_DEFAULT_DATAROOM)
			len = RTE_MBUF_DEFAULT_DATAROOM;
		m = rte_pktmbuf_alloc(pool);
		if (m == NULL)
			break;
		/* The frame ends within 7 bytes of the buffer's end (a read
		 * past it leaves the mbuf's data room) and starts 8-byte
		 * aligned, as a NIC writes it: the parsers rely on the 2-byte
		 * alignment of headers a real frame has. */
		m->data_off = (uint16_t)((m->buf_len - len) & ~7u);
		p = rte_pktmbuf_append(m, (uint16_t)len);
		if (p == NULL) {
			rte_pktmbuf_free(m);
			break;
		}
		memcpy(p, data + i, len);
		memset(ep_meta(m), 0, sizeof(struct ep_meta));
		pkts[n++] = m;
		i += len;
	}
	if (n != 0) {
		ep_worker_run_burst(wk, pkts, n);
		ep_worker_flush_tx(wk);
	}
	wk->stage_tsc = clock_tsc;
	hs_service(wk);
	while ((k = rte_eth_rx_burst(eng.ports[0].port_id, 0, out, RTE_DIM(out))) != 0)
		rte_pktmbuf_free_bulk(out, k);
	/* Every published descriptor lies inside its area; then empty the rings. */
	for (int s = 0; s < n_socks; s++) {
		struct hs_sock *sk = socks[s];
		uint32_t c = sk->shm->rx_cons.v;

		for (; c != sk->shm->rx_prod.v; c++) {
			const struct hs_desc *d = &sk->rx_desc[c & (sk->rx_slots - 1)];

			if (!hs_desc_in_area(d->off, d->len, sk->rx_bytes) || d->len > HS_MAX_DGRAM6)
				abort();
		}
		sk->shm->rx_cons.v = c;
		sk->shm->rx_signalled.v = 1;
		sk->shm->so_error.v = 0;
	}
	return 0;
}
