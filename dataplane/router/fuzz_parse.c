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
 *
 * Then the parse stage's two paths on a burst, differentially: the input
 * cut at each FRAME_SEP into frames, a burst of 1..32 of them (the last
 * byte's upper bits pick how many, its low bit the port, as above), lane
 * i the (i/2)-th frame (cycling), every odd lane with its IPv4 header
 * checksum made right by rte_ipv4_cksum, so a mutated header reaches the
 * checks behind the checksum.  The burst runs through the eight-frame
 * AVX-512 path (ep_parse_x8.h, router_worker.parse_x8) and, on copies of
 * the same bytes, through the scalar loop; any difference in the frames
 * diverted, next[] (verdict and drop reason), ep_meta, the neigh stage's
 * l2ctl, or the ACL inputs given (how many, each one's offset in its
 * frame) aborts, and so does a tbl24 word the eight-frame path read for
 * the route stage that is not the table's for a non-martian IPv4 lane
 * (router_worker.route_words), for libFuzzer to report: the comparison of
 * test_router_pipeline's parse_x8_path_equals_the_scalar_parse_on_bursts_
 * of_every_size on inputs it never built.  Where the CPU lacks AVX-512
 * F/BW/DQ/VBMI (or EP_FUZZ_NO_X8 is set) only the scalar loop runs, and
 * the harness says so once on stderr.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "engine_internal.h"
#include "ep_ip.h"
#include "ep_parse.h"
#include "router.h"

/* Between two frames of the burst; libFuzzer learns it from memmem()
 * (its interceptor feeds the needle to the mutator's dictionary). */
static const uint8_t FRAME_SEP[4] = { '|', 'E', 'P', '|' };
#define FUZZ_BURST 32           /* largest burst: four groups of eight */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ep_engine eng;
static struct router_worker *rw;
static struct rte_mempool *gen_pool;
/* The burst's worker: rx_port set, so the parse takes a burst from rx
 * (the only kind the eight-frame path runs on). */
static struct ep_worker *bw;
static struct router_worker *brw;
static bool x8;

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
	bw = ep_worker_create(&eng, 0, "fuzz_burst", &err);
	brw = bw != NULL ? router_worker_create(r, bw, SOCKET_ID_ANY) : NULL;
	if (rw == NULL || brw == NULL)
		abort();
	x8 = router_parse_x8_usable() && getenv("EP_FUZZ_NO_X8") == NULL;
	if (!x8)
		fprintf(stderr, "fuzz_parse: %s: the eight-frame parse is not compared with the "
			"scalar one (scalar checks only)\n",
			router_parse_x8_usable() ? "EP_FUZZ_NO_X8 set" : "no AVX-512 F/BW/DQ/VBMI here");
	return 0;
}

/* A single-segment mbuf around @p frame (@p size bytes, its whole data
 * room), malloc()ed with room for ep_meta (see the file comment). */
static struct rte_mbuf *
hand_mbuf(uint8_t *frame, size_t size)
{
	struct rte_mbuf *m = aligned_alloc(RTE_CACHE_LINE_SIZE,
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
	return m;
}

/* An untagged IPv4 frame's header checksum made right (when the header
 * its IHL gives is inside the frame). */
static void
fix_ipv4_cksum(uint8_t *f, size_t len)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);

	if (len < RTE_ETHER_HDR_LEN + sizeof(*ip) || f[12] != 0x08 || f[13] != 0x00 ||
	    len < RTE_ETHER_HDR_LEN + rte_ipv4_hdr_len(ip))
		return;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

/* One run of the parse stage on @p n lanes, copies of @p start / @p len; what the
 * comparison needs is copied out before the other run overwrites it. */
struct parse_run {
	struct rte_mbuf *m[FUZZ_BURST];
	uint16_t next[FUZZ_BURST];
	uint16_t out, given;
	uint32_t l2ctl;
	ptrdiff_t acl_in[FUZZ_BURST];
	bool words_ok;
};

/* The tbl24 words the x8 parse read for the route stage, if it read any
 * (router_worker.route_words): every lane IPv4, its source and
 * destination not martian, its word the table's at ep_fib_addr4's address
 * of its destination. */
static bool
words_check(struct rte_mbuf *const *m, uint16_t n)
{
	const struct ep_fib *fib = brw->fw->fib;

	if (brw->route_words.n == 0)
		return true;
	if (!ep_fib_burst_words_for(&brw->route_words, m, n))
		return false;
	for (uint16_t i = 0; i < n; i++) {
		const struct ep_meta *md = ep_meta(m[i]);
		const struct rte_ipv4_hdr *ip =
			rte_pktmbuf_mtod_offset(m[i], const struct rte_ipv4_hdr *, md->l3_off);
		uint32_t dst = rte_be_to_cpu_32(ip->dst_addr), word;

		memcpy(&word, &fib->lpm4->tbl24[ep_fib_addr4(fib, dst) >> 8], 4);
		if (md->l3_type != EP_L3_IPV4 || ep_ipv4_martian(dst) ||
		    ep_ipv4_martian(rte_be_to_cpu_32(ip->src_addr)) || brw->route_words.words[i] != word)
			return false;
	}
	return true;
}

static void
parse_run(struct parse_run *pr, const uint8_t *const *start, const size_t *len, uint16_t n,
	  bool vec)
{
	memset(pr->next, 0, sizeof(pr->next));
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *f = malloc(len[i] ? len[i] : 1);

		memcpy(f, start[i], len[i]);
		if (i & 1)
			fix_ipv4_cksum(f, len[i]);
		pr->m[i] = hand_mbuf(f, len[i]);
		memset(ep_meta(pr->m[i]), 0x5a, sizeof(struct ep_meta));
	}
	brw->parse_x8 = vec;
	brw->parse_x8_lines = !brw->parse_x8_lines;    /* both forms of the loads, in turn */
	pr->out = router_parse_stage(brw, pr->m, pr->next, n);
	pr->l2ctl = brw->l2ctl;
	pr->given = brw->acl->given;
	for (uint16_t i = 0; i < pr->given; i++)
		pr->acl_in[i] = brw->acl->sc.data[i] - rte_pktmbuf_mtod(pr->m[i], const uint8_t *);
	pr->words_ok = words_check(pr->m, n);
}

static void
parse_run_free(struct parse_run *pr, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		free(pr->m[i]->buf_addr);
		free(pr->m[i]);
	}
}

/* The burst of the file comment through both paths; abort() on a
 * difference, with what differed on stderr. */
static void
burst_differential(const uint8_t *data, size_t size)
{
	const uint8_t *piece[FUZZ_BURST], *start[FUZZ_BURST], *p = data, *end = data + size;
	size_t plen[FUZZ_BURST], len[FUZZ_BURST];
	uint16_t k = 0, n = (uint16_t)(1 + (data[size - 1] >> 1) % FUZZ_BURST);
	struct parse_run v, s;
	int lane = -1;
	const char *what = NULL;

	while (k < FUZZ_BURST) {
		const uint8_t *sep = memmem(p, (size_t)(end - p), FRAME_SEP, sizeof(FRAME_SEP));

		piece[k] = p;
		plen[k++] = (size_t)((sep != NULL ? sep : end) - p);
		if (sep == NULL)
			break;
		p = sep + sizeof(FRAME_SEP);
	}
	for (uint16_t i = 0; i < n; i++) {
		start[i] = piece[(i / 2) % k];
		len[i] = plen[(i / 2) % k];
	}
	bw->rx_port = data[size - 1] & 1;
	parse_run(&s, start, len, n, false);
	if (x8) {
		parse_run(&v, start, len, n, true);
		if (v.out != s.out)
			what = "frames diverted";
		else if (v.l2ctl != s.l2ctl)
			what = "l2ctl";
		else if (v.given != s.given)
			what = "ACL inputs given";
		else if (!v.words_ok)
			what = "the route stage's tbl24 words";
		for (uint16_t i = 0; what == NULL && i < n; i++) {
			lane = i;
			if (v.next[i] != s.next[i])
				what = "next (verdict, drop reason)";
			else if (memcmp(ep_meta(v.m[i]), ep_meta(s.m[i]), sizeof(struct ep_meta)) != 0)
				what = "ep_meta";
			else if (i < s.given && v.acl_in[i] != s.acl_in[i])
				what = "ACL input";
		}
		if (what != NULL) {
			fprintf(stderr, "fuzz_parse: eight-frame and scalar parse differ in %s "
				"(burst of %u, port %u, lane %d)\n", what, n, bw->rx_port, lane);
			abort();
		}
		parse_run_free(&v, n);
	}
	parse_run_free(&s, n);
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
	m = hand_mbuf(frame, size);
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
	if (size != 0)
		burst_differential(data, size);
	return 0;
}
