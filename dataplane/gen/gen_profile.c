/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Generator profiles (control path): parameters from text, the iMix
 * schedule, and the per-flow header templates the fast path copies.
 *
 * A template holds Ethernet [+ 802.1Q] + IPv4/IPv6 + UDP with every length
 * and checksum field zero, plus the one's complement sum of the words those
 * checksums cover (IPv4: the header; IPv6: pseudo-header + UDP header).  The
 * fill then only adds the length words and, for IPv6, the 18 payload-header
 * bytes: the rest of the payload is zero and adds nothing to the sum.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "ep_engine.h"
#include "gen.h"

/* The iMix profiles of Intel's vCMTS reference data plane benchmarks, sizes
 * with FCS as every size here. */
static const struct {
	const char *name;
	const char *spec;
} imix_named[] = {
	{ "imix-up", "84:65,256:18,1280:17" },
	{ "imix-down", "84:15,256:10,1280:75" },
};

static int
parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	return ep_parse_u64(s, 0, max, out, NULL);
}

int
ep_gen_sizes_parse(const char *spec, struct ep_gen_sizes *out, struct ep_err *err)
{
	char buf[256], *tok, *save = NULL;

	for (size_t i = 0; i < RTE_DIM(imix_named); i++)
		if (strcmp(spec, imix_named[i].name) == 0)
			spec = imix_named[i].spec;
	if (strlen(spec) >= sizeof(buf))
		return ep_err_set(err, "size: spec too long");
	snprintf(buf, sizeof(buf), "%s", spec);
	memset(out, 0, sizeof(*out));
	for (tok = strtok_r(buf, ", \t", &save); tok != NULL; tok = strtok_r(NULL, ", \t", &save)) {
		char *colon = strchr(tok, ':');
		uint64_t size, weight = 1;

		if (colon != NULL)
			*colon = '\0';
		if (parse_u64(tok, 65535, &size) < 0 ||
		    (colon != NULL && (parse_u64(colon + 1, 1000000, &weight) < 0 || weight == 0)))
			return ep_err_set(err, "size: '%s%s%s' is not <bytes>[:<weight>] (or imix-up, "
					  "imix-down)", tok, colon ? ":" : "", colon ? colon + 1 : "");
		if (size > EP_GEN_MAX_FRAME)
			return ep_err_set(err, "size: %llu is above %u bytes",
					  (unsigned long long)size, EP_GEN_MAX_FRAME);
		for (int i = 0; i < out->n; i++)
			if (out->size[i] == size)
				return ep_err_set(err, "size: %llu given twice",
						  (unsigned long long)size);
		if (out->n == EP_GEN_MAX_CLASSES)
			return ep_err_set(err, "size: more than %d sizes", EP_GEN_MAX_CLASSES);
		out->size[out->n] = (uint16_t)size;
		out->weight[out->n] = (uint32_t)weight;
		out->n++;
	}
	if (out->n == 0)
		return ep_err_set(err, "size: empty");
	return 0;
}

static uint64_t
gcd64(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* splitmix64: a fixed, portable sequence so the shuffle is the same
 * everywhere (rand() is not). */
static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int
ep_gen_schedule_build(const struct ep_gen_sizes *sz, uint8_t *out, struct ep_err *err)
{
	uint64_t g = 0, period = 0, seed = 0x2544;
	uint32_t k = 0;

	for (int i = 0; i < sz->n; i++)
		g = gcd64(g, sz->weight[i]);
	for (int i = 0; i < sz->n; i++)
		period += sz->weight[i] / g;
	if (period > EP_GEN_MAX_SCHED)
		return ep_err_set(err, "size: weights need a period of %llu packets (at most %d): "
				  "use smaller weights", (unsigned long long)period, EP_GEN_MAX_SCHED);
	for (int i = 0; i < sz->n; i++)
		for (uint64_t j = 0; j < sz->weight[i] / g; j++)
			out[k++] = (uint8_t)i;
	/* Fisher-Yates: the sizes interleave instead of arriving in runs,
	 * while the counts over one period stay exact. */
	for (uint32_t i = k - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(splitmix64(&seed) % (i + 1));
		uint8_t t = out[i];

		out[i] = out[j];
		out[j] = t;
	}
	return (int)k;
}

void
ep_gen_params_init(struct ep_gen_params *p)
{
	memset(p, 0, sizeof(*p));
	p->sport = 1024;
	p->dport = 1024;
	p->flows = 1;
	p->vlan = -1;
	p->start = true;
	snprintf(p->size_spec, sizeof(p->size_spec), "64");
}

static const char *const template_keys[] = {
	"size", "flows", "src", "dst", "dst_mac", "sport", "dport", "vlan", "vary",
};

bool
ep_gen_param_is_template(const char *key)
{
	for (size_t i = 0; i < RTE_DIM(template_keys); i++)
		if (strcmp(key, template_keys[i]) == 0)
			return true;
	return false;
}

static int
parse_ip(const char *val, uint8_t *addr, int *family)
{
	*family = ep_addr_parse(val, addr);
	return *family != 0 ? 0 : -1;
}

int
ep_gen_param_set(struct ep_gen_params *p, const char *key, const char *val,
		 struct ep_err *err)
{
	uint64_t v;

	if (strcmp(key, "rate_pps") == 0) {
		if (parse_u64(val, EP_GEN_MAX_RATE, &v) < 0)
			return ep_err_set(err, "rate_pps: '%s' is not an integer in [0, %llu]", val,
					  EP_GEN_MAX_RATE);
		p->rate_pps = v;
	} else if (strcmp(key, "count") == 0) {
		if (parse_u64(val, INT64_MAX, &v) < 0)
			return ep_err_set(err, "count: '%s' is not a non-negative integer", val);
		p->count = v;
	} else if (strcmp(key, "flows") == 0) {
		if (parse_u64(val, EP_GEN_MAX_FLOWS, &v) < 0 || v == 0)
			return ep_err_set(err, "flows: '%s' is not in [1, %d]", val, EP_GEN_MAX_FLOWS);
		p->flows = (uint32_t)v;
	} else if (strcmp(key, "sport") == 0 || strcmp(key, "dport") == 0) {
		if (parse_u64(val, 65535, &v) < 0 || v == 0)
			return ep_err_set(err, "%s: '%s' is not a port in [1, 65535]", key, val);
		if (key[0] == 's')
			p->sport = (uint16_t)v;
		else
			p->dport = (uint16_t)v;
	} else if (strcmp(key, "vlan") == 0) {
		if (strcmp(val, "none") == 0)
			p->vlan = -1;
		else if (parse_u64(val, 65535, &v) < 0)
			return ep_err_set(err, "vlan: '%s' is not a TCI in [0, 65535] or 'none'", val);
		else
			p->vlan = (int32_t)v;
	} else if (strcmp(key, "src") == 0 || strcmp(key, "dst") == 0) {
		bool src = key[0] == 's';

		if (parse_ip(val, src ? p->src : p->dst, src ? &p->src_family : &p->dst_family) < 0)
			return ep_err_set(err, "%s: '%s' is not an IPv4 or IPv6 address", key, val);
	} else if (strcmp(key, "dst_mac") == 0) {
		if (ep_parse_mac(val, &p->dst_mac) < 0)
			return ep_err_set(err, "dst_mac: '%s' is not a MAC address", val);
		p->have_dst_mac = true;
	} else if (strcmp(key, "start") == 0) {
		if (strcmp(val, "yes") == 0)
			p->start = true;
		else if (strcmp(val, "no") == 0)
			p->start = false;
		else
			return ep_err_set(err, "start: '%s' is not yes or no", val);
	} else if (strcmp(key, "vary") == 0) {
		if (strcmp(val, "dst") == 0)
			p->vary = EP_GEN_VARY_DST;
		else if (strcmp(val, "sport") == 0)
			p->vary = EP_GEN_VARY_SPORT;
		else if (strcmp(val, "both") == 0)
			p->vary = EP_GEN_VARY_BOTH;
		else
			return ep_err_set(err, "vary: '%s' is not dst, sport or both", val);
	} else if (strcmp(key, "size") == 0) {
		struct ep_gen_sizes sz;

		if (strlen(val) >= sizeof(p->size_spec))
			return ep_err_set(err, "size: spec too long");
		if (ep_gen_sizes_parse(val, &sz, err) < 0)
			return -1;
		snprintf(p->size_spec, sizeof(p->size_spec), "%s", val);
	} else {
		return ep_err_set(err, "unknown generator parameter '%s'", key);
	}
	return 0;
}

/* Add @p i to the last 32 bits of an address (network order). */
static void
addr_add(uint8_t *a, int family, uint32_t i)
{
	uint8_t *w = family == 4 ? a : a + 12;
	uint32_t x;

	memcpy(&x, w, 4);
	x = rte_cpu_to_be_32(rte_be_to_cpu_32(x) + i);
	memcpy(w, &x, 4);
}

static uint32_t
addr_low32(const uint8_t *a, int family)
{
	uint32_t x;

	memcpy(&x, family == 4 ? a : a + 12, 4);
	return rte_be_to_cpu_32(x);
}

/* Everything that can be wrong with a parameter set, before any memory. */
static int
params_check(const struct ep_gen_params *p, const struct ep_gen_sizes *sz, struct ep_err *err)
{
	uint32_t min;
	bool vary_dst = p->vary != EP_GEN_VARY_SPORT;
	bool vary_sport = p->vary != EP_GEN_VARY_DST;

	if (!p->have_dst_mac)
		return ep_err_set(err, "dst_mac: required (the next hop's MAC: the DUT port)");
	if (p->src_family == 0 || p->dst_family == 0)
		return ep_err_set(err, "%s: required", p->src_family == 0 ? "src" : "dst");
	if (p->src_family != p->dst_family)
		return ep_err_set(err, "src and dst are not the same address family");
	if (vary_dst && (uint64_t)addr_low32(p->dst, p->dst_family) + p->flows - 1 > UINT32_MAX)
		return ep_err_set(err, "dst: %u flows would wrap the address", p->flows);
	if (vary_sport && (uint32_t)p->sport + p->flows - 1 > 65535)
		return ep_err_set(err, "sport: %u + %u flows is beyond port 65535", p->sport,
				  p->flows);
	min = RTE_ETHER_HDR_LEN + (p->vlan >= 0 ? 4 : 0) +
	      (p->src_family == 6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr)) +
	      sizeof(struct rte_udp_hdr) + EP_GEN_HDR_LEN + EP_GEN_FCS_LEN;
	for (int i = 0; i < sz->n; i++)
		if (sz->size[i] < min)
			return ep_err_set(err, "size: %u is below %u bytes, the smallest IPv%d%s "
					  "frame with the payload header (sizes include the FCS)",
					  sz->size[i], min, p->src_family,
					  p->vlan >= 0 ? " + VLAN" : "");
	return 0;
}

static void
build_flow(const struct ep_gen_params *p, const struct ep_gen_profile *pr, uint32_t i,
	   struct ep_gen_flow_tpl *t)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)t->hdr;
	uint8_t *l3 = t->hdr + pr->l2_len;
	struct rte_udp_hdr *udp;
	uint16_t et = pr->v6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4;
	uint8_t dst[16];
	uint16_t sport = p->sport;

	memset(t, 0, sizeof(*t));
	memcpy(dst, p->dst, 16);
	if (p->vary != EP_GEN_VARY_SPORT)
		addr_add(dst, p->dst_family, i);
	if (p->vary != EP_GEN_VARY_DST)
		sport = (uint16_t)(sport + i);
	rte_ether_addr_copy(&p->dst_mac, &eth->dst_addr);
	rte_ether_addr_copy(&p->src_mac, &eth->src_addr);
	if (p->vlan >= 0) {
		struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(eth + 1);

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16((uint16_t)p->vlan);
		vh->eth_proto = rte_cpu_to_be_16(et);
	} else {
		eth->ether_type = rte_cpu_to_be_16(et);
	}
	if (pr->v6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)l3;
		uint32_t nh = rte_cpu_to_be_32(IPPROTO_UDP);

		ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = 64;
		memcpy(ip->src_addr, p->src, 16);
		memcpy(ip->dst_addr, dst, 16);
		udp = (struct rte_udp_hdr *)(ip + 1);
		udp->src_port = rte_cpu_to_be_16(sport);
		udp->dst_port = rte_cpu_to_be_16(p->dport);
		/* Pseudo-header (RFC 8200 8.1) without its length, UDP header
		 * without length and checksum. */
		t->sum = __rte_raw_cksum(ip->src_addr, 32, 0);
		t->sum = __rte_raw_cksum(&nh, 4, t->sum);
		t->sum = __rte_raw_cksum(udp, sizeof(*udp), t->sum);
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		memcpy(&ip->src_addr, p->src, 4);
		memcpy(&ip->dst_addr, dst, 4);
		udp = (struct rte_udp_hdr *)(ip + 1);
		udp->src_port = rte_cpu_to_be_16(sport);
		udp->dst_port = rte_cpu_to_be_16(p->dport);
		/* UDP checksum 0: "no checksum", allowed for IPv4 (RFC 768), and
		 * what RFC 2544 testers send; it keeps the fill payload-free. */
		t->sum = __rte_raw_cksum(ip, sizeof(*ip), 0);
	}
}

struct ep_gen_profile *
ep_gen_profile_build(const struct ep_gen_params *p, int socket, struct ep_err *err)
{
	struct ep_gen_sizes sz;
	struct ep_gen_profile *pr;
	uint8_t *sched;
	int period;

	if (ep_gen_sizes_parse(p->size_spec, &sz, err) < 0 || params_check(p, &sz, err) < 0)
		return NULL;
	sched = malloc(EP_GEN_MAX_SCHED);
	if (sched == NULL) {
		ep_err_set(err, "out of memory");
		return NULL;
	}
	period = ep_gen_schedule_build(&sz, sched, err);
	if (period < 0) {
		free(sched);
		return NULL;
	}
	pr = rte_zmalloc_socket("ep_gen_profile", sizeof(*pr) + (size_t)period,
				RTE_CACHE_LINE_SIZE, socket);
	if (pr != NULL)
		pr->tpl = rte_zmalloc_socket("ep_gen_tpl", sizeof(pr->tpl[0]) * p->flows,
					     RTE_CACHE_LINE_SIZE, socket);
	if (pr == NULL || pr->tpl == NULL) {
		rte_free(pr);
		free(sched);
		ep_err_set(err, "out of memory for %u flow templates", p->flows);
		return NULL;
	}
	memcpy(pr->sched, sched, (size_t)period);
	free(sched);
	pr->sched_len = (uint32_t)period;
	pr->n_flows = p->flows;
	pr->v6 = p->src_family == 6;
	pr->l2_len = (uint8_t)(RTE_ETHER_HDR_LEN + (p->vlan >= 0 ? 4 : 0));
	pr->hdr_len = (uint8_t)(pr->l2_len + (pr->v6 ? sizeof(struct rte_ipv6_hdr) :
					      sizeof(struct rte_ipv4_hdr)) +
				sizeof(struct rte_udp_hdr));
	pr->n_classes = (uint8_t)sz.n;
	for (int i = 0; i < sz.n; i++)
		pr->frame_len[i] = (uint16_t)(sz.size[i] - EP_GEN_FCS_LEN);
	snprintf(pr->size_spec, sizeof(pr->size_spec), "%s", p->size_spec);
	for (uint32_t i = 0; i < p->flows; i++)
		build_flow(p, pr, i, &pr->tpl[i]);
	return pr;
}

void
ep_gen_profile_free(struct ep_gen_profile *pr)
{
	if (pr == NULL)
		return;
	rte_free(pr->tpl);
	rte_free(pr);
}
