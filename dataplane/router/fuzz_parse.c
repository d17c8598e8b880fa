/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the packet parser (with and without the MPLS branch) and the
 * router's five stages on arbitrary frames.
 *
 * The frame lives in a malloc()ed buffer of exactly its length, wrapped in a
 * hand-made single-segment mbuf (also malloc()ed, with room for ep_meta):
 * a read or write one byte past the frame lands in ASAN's redzone, which a
 * mempool mbuf (one big DPDK allocation) would hide.  The mbuf names a
 * real pool, which is where what the stages generate (ICMP errors, ARP
 * requests and solicitations) comes from; those are freed, not sent.  The
 * ports' MTU is 9216, larger than any input, so nothing is fragmented
 * (fragments would hold references to the hand-made mbuf).  The stages run
 * in order on a burst of one, as the engine would run them, until one of
 * them decides; tables are set up once: two ports, neighbours, routes, an
 * ACL, ICMP errors answered for denied packets.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_malloc.h>

#include "ep_parse.h"
#include "router.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ep_engine eng;
static struct router_worker *rw;
static struct rte_mempool *gen_pool;

static void
port(int i, const char *name, const char *mac, const char *v4, const char *v6)
{
	struct ep_port *p = &eng.ports[i];
	struct ep_err err;

	snprintf(p->name, sizeof(p->name), "%s", name);
	p->index = (uint16_t)i;
	p->mtu = 9216;
	ep_parse_mac(mac, &p->mac);
	ep_parse_prefix(v4, &p->v4[0].addr, &p->v4[0].plen, &err);
	ep_parse_prefix(v6, p->v6[0].addr, &p->v6[0].plen, &err);
	p->n_v4 = p->n_v6 = 1;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *eal[] = { "fuzz_parse", "--no-huge", "-m", "512", "--no-shconf", "--no-pci",
			"--no-telemetry", "-l", "0", "--log-level", "*:error", NULL };
	static const char *const acl[] = {
		"deny proto tcp dport 22", "permit proto udp src 198.18.0.0/24 dport 1000-2000",
		"deny proto udp dst 2001:db8:0:2::/64 sport 53", "deny proto icmp", "permit",
	};
	struct router_params p;
	struct ep_err err;
	struct router *r;

	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		abort();
	eng.qsbr = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(1), RTE_CACHE_LINE_SIZE);
	rte_rcu_qsbr_init(eng.qsbr, 1);
	eng.n_ports = 2;
	port(0, "access", "02:00:00:00:01:01", "198.18.0.1/24", "2001:db8:0:1::1/64");
	port(1, "core", "02:00:00:00:02:01", "198.18.1.1/24", "2001:db8:0:2::1/64");
	router_params_default(&p);
	p.fib.max_routes4 = p.fib.max_routes6 = 256;
	p.fib.lpm4_tbl8s = 64;
	p.fib.lpm6_tbl8s = 256;
	p.fib.max_nexthops = 64;
	r = router_create(&eng, "router", &p, &err);
	if (r == NULL ||
	    ep_fib_neigh_add(r->fib, "198.18.0.2", "02:00:00:00:00:0a", NULL, &err) < 0 ||
	    ep_fib_neigh_add(r->fib, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err) < 0 ||
	    ep_fib_neigh_add(r->fib, "2001:db8:0:2::2", "02:00:00:00:00:0b", NULL, &err) < 0 ||
	    ep_fib_route_add(r->fib, "198.18.16.0/20", "198.18.1.2", &err) < 0 ||
	    ep_fib_route_add(r->fib, "198.18.16.0/28", "198.18.1.3", &err) < 0 ||
	    ep_fib_route_add(r->fib, "2001:db8:100::/48", "2001:db8:0:2::2", &err) < 0 ||
	    ep_acl_replace(r->acl, acl, RTE_DIM(acl), &err) < 0) {
		fprintf(stderr, "fuzz setup: %s\n", err.msg);
		abort();
	}
	r->acl_icmp = true;
	gen_pool = rte_pktmbuf_pool_create("fuzz_gen", 255, 0, EP_META_SIZE,
					   RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (gen_pool == NULL)
		abort();
	rw = router_worker_create(r, NULL, SOCKET_ID_ANY);
	if (rw == NULL)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rte_mbuf *m;
	struct ep_meta meta, *md;
	uint8_t *frame;
	uint16_t next;

	if (size > 9000)
		return 0;
	/* The parser alone, on exactly the input... */
	frame = malloc(size ? size : 1);
	memcpy(frame, data, size);
	ep_parse(frame, (uint32_t)size, (uint32_t)size, &meta);
	ep_parse_opts(frame, (uint32_t)size, (uint32_t)size, &meta, EP_PARSE_F_MPLS);
	/* ...and as a multi-segment frame whose first segment ends early. */
	ep_parse(frame, (uint32_t)size / 2, (uint32_t)size, &meta);
	ep_parse_opts(frame, (uint32_t)size / 2, (uint32_t)size, &meta, EP_PARSE_F_MPLS);

	/* Then the pipeline, on an mbuf whose data room is the input. */
	m = aligned_alloc(RTE_CACHE_LINE_SIZE,
			  RTE_ALIGN_CEIL(sizeof(*m) + EP_META_SIZE, RTE_CACHE_LINE_SIZE));
	memset(m, 0, sizeof(*m) + EP_META_SIZE);
	m->buf_addr = frame;
	m->buf_len = (uint16_t)size;
	m->data_off = 0;
	m->data_len = (uint16_t)size;
	m->pkt_len = (uint32_t)size;
	m->nb_segs = 1;
	m->priv_size = EP_META_SIZE;
	m->pool = gen_pool;
	rte_mbuf_refcnt_set(m, 1);
	md = ep_meta(m);
	md->in_port = size != 0 ? data[size - 1] & 1 : 0;   /* the last byte picks the port */
	for (size_t i = 0; i < RTE_DIM(router_stages); i++) {
		next = 0;
		router_stages[i].fn(rw, &m, &next, 1);
		if (next != EP_NEXT_CONTINUE)
			break;
	}
	free(m);
	free(frame);
	return 0;
}
