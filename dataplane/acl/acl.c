/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ACL instances: the rte_acl contexts of a rule list, and the
 * double-buffered swap that publishes them (ep_acl.h).  Control thread only.
 *
 * Rules are an ordered list, first match wins.  rte_acl picks the highest
 * priority among matches, so rule i of n gets priority n - i, and its
 * userdata is i + 1 (0 means "no rule matched" and selects the default
 * action).  One category per lane: first match per lane.  An instance with
 * two lanes adds each rule twice, once per category, its set id in that
 * lane's field and a wildcard in the other's (rte_acl wants 1 or a
 * multiple of 4 categories: two lanes cost 4, the last two empty).
 *
 * Rule values go into rte_acl in host order; the field layouts are in
 * ep_acl_node.h.
 *
 * The classify method: `acl_classify = auto` (the default) times every
 * usable rte_acl method on each context it builds and keeps the fastest
 * (calibrate() says why rte_acl's own pick, the widest SIMD, is not always
 * it); `acl_classify = <method>` pins one.  acl-tables names the method in
 * use and the calibration figures (test_bng_cycles prints the uplink's acl
 * stage under each method).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "ep_acl.h"
#include "ep_acl_node.h"
#include "ep_engine.h"
#include "ep_rcu.h"

/* ---- field layouts ---- */

/* Offsets from the protocol byte (ep_acl_node.h); the key structs have the
 * same layout. */
#define O4_SRC   3
#define O4_DST   7
#define O4_PORTS 11
#define O6_SRC   2
#define O6_DST   18
#define O6_PORTS 34
/* Keyed (sets, or a tos rule): a 4-byte group of two 16-bit set ids (the
 * lanes) after the protocol byte, and the tos byte last. */
#define OS_SET      1
#define O4S_SRC     5
#define O4S_DST     9
#define O4S_PORTS   13
#define O4S_TOS     17
#define O6S_SRC     5
#define O6S_DST     21
#define O6S_PORTS   37
#define O6S_TOS     41

/* The packet layout and the scratch keys' layout must agree. */
_Static_assert(offsetof(struct rte_ipv4_hdr, src_addr) -
	       offsetof(struct rte_ipv4_hdr, next_proto_id) == O4_SRC, "v4 src");
_Static_assert(sizeof(struct rte_ipv4_hdr) -
	       offsetof(struct rte_ipv4_hdr, next_proto_id) == O4_PORTS, "v4 ports");
_Static_assert(offsetof(struct rte_ipv6_hdr, src_addr) -
	       offsetof(struct rte_ipv6_hdr, proto) == O6_SRC, "v6 src");
_Static_assert(sizeof(struct rte_ipv6_hdr) -
	       offsetof(struct rte_ipv6_hdr, proto) == O6_PORTS, "v6 ports");
_Static_assert(offsetof(struct ep_acl_key4, src) == O4_SRC &&
	       offsetof(struct ep_acl_key4, dst) == O4_DST &&
	       offsetof(struct ep_acl_key4, sport) == O4_PORTS, "key4 layout");
_Static_assert(offsetof(struct ep_acl_key6, src) == O6_SRC &&
	       offsetof(struct ep_acl_key6, dst) == O6_DST &&
	       offsetof(struct ep_acl_key6, sport) == O6_PORTS, "key6 layout");
_Static_assert(offsetof(struct ep_acl_key4_set, set) == OS_SET &&
	       offsetof(struct ep_acl_key4_set, src) == O4S_SRC &&
	       offsetof(struct ep_acl_key4_set, dst) == O4S_DST &&
	       offsetof(struct ep_acl_key4_set, sport) == O4S_PORTS &&
	       offsetof(struct ep_acl_key4_set, tos) == O4S_TOS, "key4 set layout");
_Static_assert(offsetof(struct ep_acl_key6_set, set) == OS_SET &&
	       offsetof(struct ep_acl_key6_set, src) == O6S_SRC &&
	       offsetof(struct ep_acl_key6_set, dst) == O6S_DST &&
	       offsetof(struct ep_acl_key6_set, sport) == O6S_PORTS &&
	       offsetof(struct ep_acl_key6_set, tos) == O6S_TOS, "key6 set layout");
/* rte_acl reads every input group as 4 bytes: the tos group's 3 bytes of
 * padding must be inside the key. */
_Static_assert(sizeof(struct ep_acl_key4_set) >= O4S_TOS + 4 &&
	       sizeof(struct ep_acl_key6_set) >= O6S_TOS + 4, "tos group inside the key");

/*
 * Field order, which is the trie's walk order: proto, [set lanes], src
 * words, then the packet layout's port group before the dst words
 * (sport, dport), the key layouts' after them, [tos].
 *
 * Why the ports before the destination in the packet layout: rte_acl ends
 * a key's walk at the first byte after which no rule can match (the
 * transition goes to the no-match result), so the order decides how far
 * traffic that matches nothing walks.  Ports are where most deny rules
 * (service ports) leave such traffic; the destination's 4 (IPv6: 16)
 * bytes are then not walked at all.  The order changes no verdict (the
 * same rules, the same priorities).  Measured on the router benchmark's
 * 1000 rules and 4000 flows (a scratch program against librte_acl, and
 * the router's acl stage; docs/benchmarks/router-passes.md, "The ninth
 * pass"):
 * the trie 3.26 -> 3.65 MB, classify ~35 -> ~28 cycles a key.  Ports
 * before both addresses walked as short but built a 7.4 MB trie for the
 * same rules (the source prefixes' sub-trie copied under every port), more
 * than the 8 MiB allowance of ep_acl_memory() holds for two sets alive at
 * once.  The key layouts (sets, tos) keep src, dst, ports: not measured
 * for the vCMTS's classifiers.
 */
#define MAX_FIELDS (1 + EP_ACL_MAX_LANES + 4 + 4 + 2 + 3)
RTE_ACL_RULE_DEF(acl_rule_max, MAX_FIELDS);

struct layout {
	int n_fields;
	int addr_words;           /* 1 (IPv4) or 4 (IPv6) */
	int f_src, f_dst, f_ports;  /* field index of the first src word, dst word, sport */
	uint8_t lanes;            /* set fields (0: none, else EP_ACL_MAX_LANES) */
	bool tos;
	struct rte_acl_field_def defs[MAX_FIELDS];
};

static void
field_def(struct layout *l, uint8_t type, uint8_t size, uint8_t input, uint32_t offset)
{
	uint8_t f = (uint8_t)l->n_fields++;

	l->defs[f] = (struct rte_acl_field_def){ .type = type, .size = size, .field_index = f,
		.input_index = input, .offset = offset };
}

/* The ports' input group: sport and dport, each a 16-bit range. */
static void
port_group(struct layout *l, uint8_t in, uint32_t ports)
{
	l->f_ports = l->n_fields;
	field_def(l, RTE_ACL_FIELD_TYPE_RANGE, 2, in, ports);
	field_def(l, RTE_ACL_FIELD_TYPE_RANGE, 2, in, ports + 2);
}

/* Field defs of one family: the packet layout (@p keyed false), or the key
 * layout, with the set group when @p sets and a tos field when @p tos.
 * rte_acl reads every input group after the first byte as 4 bytes and
 * walks its trie a byte at a time, so each group's fields must cover all
 * 4: the set group is two 16-bit lanes (the second a wildcard with one
 * lane), the tos group the tos byte and 3 bytes of wildcards. */
static void
layout_make(struct layout *l, int family, bool keyed, bool sets, bool tos)
{
	bool v4 = family == 4;
	uint32_t src = v4 ? (keyed ? O4S_SRC : O4_SRC) : (keyed ? O6S_SRC : O6_SRC);
	uint32_t dst = v4 ? (keyed ? O4S_DST : O4_DST) : (keyed ? O6S_DST : O6_DST);
	uint32_t ports = v4 ? (keyed ? O4S_PORTS : O4_PORTS) : (keyed ? O6S_PORTS : O6_PORTS);
	uint32_t o_tos = v4 ? O4S_TOS : O6S_TOS;
	uint8_t in = 0;

	memset(l, 0, sizeof(*l));
	l->addr_words = v4 ? 1 : 4;
	l->lanes = sets ? EP_ACL_MAX_LANES : 0;
	l->tos = tos;
	field_def(l, RTE_ACL_FIELD_TYPE_BITMASK, 1, in++, 0);
	for (uint8_t k = 0; k < l->lanes; k++)
		field_def(l, RTE_ACL_FIELD_TYPE_BITMASK, 2, in, OS_SET + 2u * k);
	in += sets;
	l->f_src = l->n_fields;
	for (int w = 0; w < l->addr_words; w++)
		field_def(l, RTE_ACL_FIELD_TYPE_MASK, 4, in++, src + 4u * (uint32_t)w);
	if (!keyed)
		port_group(l, in++, ports);
	l->f_dst = l->n_fields;
	for (int w = 0; w < l->addr_words; w++)
		field_def(l, RTE_ACL_FIELD_TYPE_MASK, 4, in++, dst + 4u * (uint32_t)w);
	if (keyed)
		port_group(l, in++, ports);
	if (tos) {
		field_def(l, RTE_ACL_FIELD_TYPE_RANGE, 1, in, o_tos);
		field_def(l, RTE_ACL_FIELD_TYPE_BITMASK, 1, in, o_tos + 1);
		field_def(l, RTE_ACL_FIELD_TYPE_BITMASK, 2, in, o_tos + 2);
	}
}

/* A 32-bit MASK field for bits [32*i, 32*i+32) of a prefix. */
static void
mask_field(struct rte_acl_field *f, const uint8_t *addr, uint8_t plen, int i)
{
	uint32_t w;
	int bits = (int)plen - 32 * i;

	memcpy(&w, addr + 4 * i, 4);
	f->value.u32 = ntohl(w);
	f->mask_range.u32 = (uint32_t)(bits < 0 ? 0 : bits > 32 ? 32 : bits);
}

/* Rule @p i of @p n as matched in lane @p lane (category @p lane): its set
 * id in that lane's field, the other lanes wildcards. */
static void
rule_fields(struct acl_rule_max *a, const struct layout *l, const struct ep_acl_rule *r,
	    uint32_t i, uint32_t n, uint8_t lane)
{
	int f = 0;

	memset(a, 0, sizeof(*a));
	a->data.category_mask = 1u << lane;
	a->data.priority = (int32_t)(n - i);
	a->data.userdata = i + 1;
	a->field[f].value.u8 = r->proto;
	a->field[f++].mask_range.u8 = r->any_proto ? 0 : 0xff;
	for (uint8_t k = 0; k < l->lanes; k++, f++)
		if (k == lane) {
			a->field[f].value.u16 = r->set;
			a->field[f].mask_range.u16 = UINT16_MAX;
		}
	for (int w = 0; w < l->addr_words; w++) {
		mask_field(&a->field[l->f_src + w], r->src, r->src_plen, w);
		mask_field(&a->field[l->f_dst + w], r->dst, r->dst_plen, w);
	}
	a->field[l->f_ports].value.u16 = r->sport_lo;
	a->field[l->f_ports].mask_range.u16 = r->sport_hi;
	a->field[l->f_ports + 1].value.u16 = r->dport_lo;
	a->field[l->f_ports + 1].mask_range.u16 = r->dport_hi;
	if (l->tos) {
		f = l->n_fields - 3;     /* the tos group's first field */
		a->field[f].value.u8 = r->tos_lo;
		a->field[f].mask_range.u8 = r->tos_hi;   /* the 3 wildcards after it stay 0 */
	}
}

static bool
rule_has_tos(const struct ep_acl_rule *r)
{
	return r->tos_lo != 0 || r->tos_hi != 255;
}

static uint32_t build_seq;   /* rte_acl names are process-wide */

static struct rte_acl_ctx *
build_ctx(int family, const struct ep_acl_set *s, const struct ep_acl_rule *rules, uint32_t n,
	  bool tos, struct ep_err *err)
{
	struct rte_acl_config cfg = { .num_categories = s->categories };
	uint8_t lanes = s->sets ? s->lanes : 0;
	char name[RTE_ACL_NAMESIZE];
	struct rte_acl_ctx *ctx;
	struct layout l;
	uint32_t count = 0;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		count += rules[i].family == 0 || rules[i].family == family;
	if (count == 0)
		return NULL;
	layout_make(&l, family, s->keyed, s->sets, tos);
	snprintf(name, sizeof(name), "ep_acl%d_%u", family,
		 __atomic_add_fetch(&build_seq, 1, __ATOMIC_RELAXED));
	ctx = rte_acl_create(&(struct rte_acl_param){ .name = name, .socket_id = SOCKET_ID_ANY,
		.rule_size = RTE_ACL_RULE_SZ(l.n_fields),
		.max_rule_num = count * RTE_MAX(lanes, 1) });
	if (ctx == NULL) {
		ep_err_set(err, "acl: cannot create a context for %u rules", count);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (rules[i].family != 0 && rules[i].family != family)
			continue;
		for (uint8_t lane = 0; lane < RTE_MAX(lanes, 1); lane++) {
			struct acl_rule_max a;

			rule_fields(&a, &l, &rules[i], i, n, lane);
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&a, 1);
			if (rc != 0) {
				ep_err_set(err, "acl: adding rule %u failed: %s", i, strerror(-rc));
				rte_acl_free(ctx);
				return NULL;
			}
		}
	}
	cfg.num_fields = (uint32_t)l.n_fields;
	memcpy(cfg.defs, l.defs, sizeof(cfg.defs[0]) * cfg.num_fields);
	rc = rte_acl_build(ctx, &cfg);
	if (rc != 0) {
		ep_err_set(err, "acl: building the IPv%d context failed: %s", family, strerror(-rc));
		rte_acl_free(ctx);
		return NULL;
	}
	return ctx;
}

/* ---- classify methods ---- */

static const struct { const char *name; enum rte_acl_classify_alg alg; } acl_algs[] = {
	{ "auto", RTE_ACL_CLASSIFY_DEFAULT },
	{ "avx512x32", RTE_ACL_CLASSIFY_AVX512X32 },
	{ "avx512x16", RTE_ACL_CLASSIFY_AVX512X16 },
	{ "avx2", RTE_ACL_CLASSIFY_AVX2 },
	{ "sse", RTE_ACL_CLASSIFY_SSE },
	{ "scalar", RTE_ACL_CLASSIFY_SCALAR },
	{ "neon", RTE_ACL_CLASSIFY_NEON },
	{ "altivec", RTE_ACL_CLASSIFY_ALTIVEC },
};

int
ep_acl_alg_parse(const char *name, enum rte_acl_classify_alg *alg)
{
	for (size_t i = 0; name != NULL && i < RTE_DIM(acl_algs); i++)
		if (strcmp(name, acl_algs[i].name) == 0) {
			*alg = acl_algs[i].alg;
			return 0;
		}
	return -1;
}

const char *
ep_acl_alg_name(enum rte_acl_classify_alg alg)
{
	for (size_t i = 0; i < RTE_DIM(acl_algs); i++)
		if (acl_algs[i].alg == alg)
			return acl_algs[i].name;
	return "?";
}

/*
 * rte_acl's own preference, best first (acl_get_best_alg in DPDK's
 * rte_acl.c for x86; NEON and AltiVec where they exist).
 * rte_acl_set_ctx_classify refuses exactly the methods its choice would
 * skip (CPU flags, the EAL's max SIMD width, what DPDK was compiled with).
 */
static const enum rte_acl_classify_alg acl_alg_pref[] = {
	RTE_ACL_CLASSIFY_AVX512X32, RTE_ACL_CLASSIFY_AVX512X16, RTE_ACL_CLASSIFY_AVX2,
	RTE_ACL_CLASSIFY_SSE, RTE_ACL_CLASSIFY_NEON, RTE_ACL_CLASSIFY_ALTIVEC,
	RTE_ACL_CLASSIFY_SCALAR,
};

/* Calibration: CAL_KEYS keys in bursts of CAL_BURST, each trial one
 * classify of every burst, the minimum over CAL_TRIALS trials (preemption
 * only adds); a method replaces rte_acl's pick only when it is
 * CAL_MARGIN_PCT % faster. */
#define CAL_BURST 32
#define CAL_KEYS 256
#define CAL_TRIALS 12
#define CAL_MARGIN_PCT 5
#define CAL_KEY_BYTES 64      /* every key layout fits (ep_acl_node.h) */

struct cal_keys {
	const uint8_t *key[CAL_KEYS];
	uint8_t buf[CAL_KEYS][CAL_KEY_BYTES];
};

static uint64_t
xorshift64(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/* Field @p f of the rte_acl rule @p a as the bytes a key inside it has at
 * the field's place (network order, as a packet has them): a BITMASK's
 * masked bits, a MASK's prefix (mask_range is its length in bits), a
 * RANGE's bounds hold, the other bits are @p rnd's. */
static void
cal_field(uint8_t *key, const struct rte_acl_field_def *d, const struct rte_acl_field *f,
	  uint64_t rnd)
{
	const unsigned int bits = d->size * 8u;
	const uint32_t all = bits == 32 ? UINT32_MAX : (1u << bits) - 1;
	const uint32_t val = d->size == 1 ? f->value.u8 : d->size == 2 ? f->value.u16 : f->value.u32;
	const uint32_t mr = d->size == 1 ? f->mask_range.u8 :
			    d->size == 2 ? f->mask_range.u16 : f->mask_range.u32;
	uint32_t v, keep;

	switch (d->type) {
	case RTE_ACL_FIELD_TYPE_RANGE:
		v = val + (uint32_t)(rnd % ((uint64_t)(mr >= val ? mr - val : 0) + 1));
		break;
	case RTE_ACL_FIELD_TYPE_MASK:
		keep = mr == 0 ? 0 : (all << (bits - RTE_MIN(mr, bits))) & all;
		v = (val & keep) | ((uint32_t)rnd & all & ~keep);
		break;
	default:        /* BITMASK */
		v = (val & mr) | ((uint32_t)rnd & all & ~mr);
		break;
	}
	for (unsigned int b = 0; b < d->size; b++)      /* big-endian */
		key[d->offset + b] = (uint8_t)(v >> (8 * (d->size - 1 - b)));
}

/*
 * The calibration's keys for the context of @p family: each inside a rule
 * of that family picked at random (its lane 0, in the layout the context
 * classifies), its other bytes random.  Random keys alone leave the trie
 * at an early byte, where the methods differ little: on the router
 * benchmark's 1000 rules 32 random keys timed SSE at 43.5 cycles a key
 * against AVX512X16's 41.3 (5 % apart), while in the bench's acl stage
 * SSE cost 35.9 and AVX512X16 29.9 (20 %); keys inside the rules time
 * them at 51.6 and 40.4 (28 %).  A method really faster by a few times
 * the margin can look level on random keys (the Zen 5 of
 * docs/benchmarks/router-passes-later.md, "The twenty-first pass").
 */
static void
cal_keys_make(int family, const struct ep_acl_set *s, const struct ep_acl_rule *rules,
	      uint32_t n, bool tos, struct cal_keys *k)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct layout l;

	layout_make(&l, family, s->keyed, s->sets, tos);
	for (int j = 0; j < CAL_KEYS; j++) {
		/* A rule at random, or the next of this family after it. */
		uint32_t start = n == 0 ? 0 : (uint32_t)(xorshift64(&x) % n), i = n, t;
		struct acl_rule_max a;

		for (t = 0; t < n; t++) {
			uint32_t r = (start + t) % n;

			if (rules[r].family == 0 || rules[r].family == family) {
				i = r;
				break;
			}
		}
		for (int b = 0; b < CAL_KEY_BYTES; b++)
			k->buf[j][b] = (uint8_t)xorshift64(&x);
		if (i < n) {
			rule_fields(&a, &l, &rules[i], i, n, 0);
			for (int f = 0; f < l.n_fields; f++)
				cal_field(k->buf[j], &l.defs[f], &a.field[f], xorshift64(&x));
		}
		k->key[j] = k->buf[j];
	}
}

/* Cycles per key of @p ctx under its current method, on @p k. */
static double
cal_time(const struct rte_acl_ctx *ctx, struct cal_keys *k)
{
	uint32_t res[CAL_BURST];
	uint64_t best = UINT64_MAX;

	for (int b = 0; b < CAL_KEYS; b += CAL_BURST)          /* warm: code and trie */
		rte_acl_classify(ctx, &k->key[b], res, CAL_BURST, 1);
	for (int t = 0; t < CAL_TRIALS; t++) {
		uint64_t t0 = rte_rdtsc_precise();

		for (int b = 0; b < CAL_KEYS; b += CAL_BURST)
			rte_acl_classify(ctx, &k->key[b], res, CAL_BURST, 1);
		best = RTE_MIN(best, rte_rdtsc_precise() - t0);
	}
	return (double)best / CAL_KEYS;
}

/* How many of the keys @p k match a rule (category 0) in @p ctx. */
static uint32_t
cal_matched(const struct rte_acl_ctx *ctx, struct cal_keys *k)
{
	uint32_t res[CAL_BURST], m = 0;

	for (int b = 0; b < CAL_KEYS; b += CAL_BURST) {
		if (rte_acl_classify(ctx, &k->key[b], res, CAL_BURST, 1) != 0)
			return 0;
		for (int j = 0; j < CAL_BURST; j++)
			m += res[j] != 0;
	}
	return m;
}

/*
 * "auto": the fastest usable method on this host, measured on the context
 * just built.  rte_acl's own pick is the widest SIMD the CPU has, but the
 * vector methods walk the trie with gather loads, and how fast a gather is
 * depends on the core: on AMD Zen 3 (no AVX-512) rte_acl picks AVX2, whose
 * 8-lane gathers are microcoded there; on a Zen 4 test_bng_cycles measured
 * the uplink's acl stage at 51.7 cycles with AVX512X16, 52.4 with SSE (no
 * gathers), 58.7 with AVX2.  So every usable vector method is timed on
 * keys inside the rules (cal_keys_make: each walks the trie down to a
 * rule, where a random key leaves it at an early byte and the router
 * benchmark's traffic walks 8 of its 13 bytes;
 * ~0.3 ms of classifying, control thread, at each build)
 * and the fastest wins by a margin; otherwise rte_acl's pick stays.  The
 * figures are kept in the set (acl-tables shows them).  Every method
 * classifies alike: the choice moves cycles, never a verdict.
 */
static enum rte_acl_classify_alg
calibrate(struct rte_acl_ctx *ctx, struct ep_acl_set *s, struct cal_keys *keys)
{
	enum rte_acl_classify_alg pick = RTE_ACL_CLASSIFY_DEFAULT;
	double pick_cyc = 0.0;

	s->n_cal = 0;
	s->cal_keys = CAL_KEYS;
	for (size_t i = 0; i < RTE_DIM(acl_alg_pref); i++) {
		enum rte_acl_classify_alg a = acl_alg_pref[i];
		double cyc;

		if ((a == RTE_ACL_CLASSIFY_SCALAR && pick != RTE_ACL_CLASSIFY_DEFAULT) ||
		    rte_acl_set_ctx_classify(ctx, a) != 0)
			continue;
		cyc = cal_time(ctx, keys);
		if (pick == RTE_ACL_CLASSIFY_DEFAULT)
			s->cal_matched = (uint16_t)cal_matched(ctx, keys);
		if (s->n_cal < RTE_DIM(s->cal)) {
			s->cal[s->n_cal].alg = a;
			s->cal[s->n_cal++].cycles = cyc;
		}
		/* The first usable one is rte_acl's pick: others must beat it. */
		if (pick == RTE_ACL_CLASSIFY_DEFAULT ||
		    cyc * (100 + CAL_MARGIN_PCT) < pick_cyc * 100) {
			pick = a;
			pick_cyc = cyc;
		}
	}
	return pick;
}

/* A chosen method the CPU or the EAL's SIMD width does not allow is an
 * error, not a silent fallback: the operator asked for it.  s->alg: the
 * method the set classifies with; "auto" calibrates on the first context
 * and gives the second the same method. */
static int
set_alg(struct rte_acl_ctx *ctx, int family, enum rte_acl_classify_alg alg, struct ep_acl_set *s,
	const struct ep_acl_rule *rules, uint32_t n, bool tos, struct ep_err *err)
{
	int rc;

	if (ctx == NULL)
		return 0;
	if (alg == RTE_ACL_CLASSIFY_DEFAULT && s->alg == RTE_ACL_CLASSIFY_DEFAULT) {
		static struct cal_keys keys;     /* 18 KiB; control thread only */

		cal_keys_make(family, s, rules, n, tos, &keys);
		s->alg = calibrate(ctx, s, &keys);
	}
	if (alg == RTE_ACL_CLASSIFY_DEFAULT)
		alg = s->alg;
	rc = rte_acl_set_ctx_classify(ctx, alg);
	if (rc != 0)
		return ep_err_set(err, "acl: classify method %s is not usable here (%s; AVX-512 "
				  "methods also need the EAL's --force-max-simd-bitwidth)",
				  ep_acl_alg_name(alg), strerror(-rc));
	s->alg = alg;
	return 0;
}

const char *
ep_acl_method_name(const struct ep_acl *acl)
{
	const struct ep_acl_set *s = acl->cur;

	return s == NULL || s->alg == RTE_ACL_CLASSIFY_DEFAULT ? "none" : ep_acl_alg_name(s->alg);
}

/* ---- rule sets ---- */

static void
set_free(struct ep_acl_set *s)
{
	if (s == NULL)
		return;
	rte_acl_free(s->ctx4);
	rte_acl_free(s->ctx6);
	rte_free(s);
}

static struct ep_acl_set *
set_build(const struct ep_acl_params *p, const struct ep_acl_rule *rules, uint32_t n,
	  bool default_deny, struct ep_err *err)
{
	size_t voff = RTE_ALIGN(sizeof(struct ep_acl_set) + n + 1, sizeof(uint32_t));
	struct ep_acl_set *s = rte_zmalloc("ep_acl_set", voff + sizeof(uint32_t) * (n + 1),
					   RTE_CACHE_LINE_SIZE);
	uint32_t *value;
	bool need4 = false, need6 = false, tos = false;

	if (s == NULL) {
		ep_err_set(err, "acl: out of memory");
		return NULL;
	}
	value = (uint32_t *)((uint8_t *)s + voff);
	s->value = value;
	s->n_rules = n;
	s->sets = p->sets;
	s->lanes = p->sets && p->lanes > 1 ? p->lanes : 1;
	/* rte_acl takes 1 category or a multiple of RTE_ACL_RESULTS_MULTIPLIER. */
	s->categories = s->lanes == 1 ? 1 : RTE_ACL_RESULTS_MULTIPLIER;
	s->default_deny = default_deny;
	s->pass_all = !default_deny;
	for (uint32_t i = 0; i < n; i++) {
		s->deny[i] = rules[i].deny;
		value[i] = rules[i].value;
		s->pass_all &= !rules[i].deny;
		need4 |= rules[i].family != 6;
		need6 |= rules[i].family != 4;
		tos |= rule_has_tos(&rules[i]);
	}
	/* A tos rule needs the key layout: the tos byte is before the
	 * protocol byte in the packet, where rte_acl cannot reach. */
	s->keyed = p->sets || tos;
	s->ctx4 = build_ctx(4, s, rules, n, tos, err);
	if (need4 && s->ctx4 == NULL)
		goto fail;
	s->ctx6 = build_ctx(6, s, rules, n, tos, err);
	if ((need6 && s->ctx6 == NULL) || set_alg(s->ctx4, 4, p->alg, s, rules, n, tos, err) < 0 ||
	    set_alg(s->ctx6, 6, p->alg, s, rules, n, tos, err) < 0)
		goto fail;
	return s;
fail:
	set_free(s);
	return NULL;
}

int
ep_acl_commit(struct ep_acl *acl, const struct ep_acl_rule *rules, uint32_t n,
	      bool default_deny, struct ep_err *err)
{
	struct ep_acl_rule *copy = NULL;
	struct ep_acl_set *s, *old;

	if (acl->p.sets && (acl->p.lanes > EP_ACL_MAX_LANES))
		return ep_err_set(err, "acl %s: %u lanes, at most %d", acl->name, acl->p.lanes,
				  EP_ACL_MAX_LANES);
	if (n > acl->p.max_rules)
		return ep_err_set(err, "acl %s: %u rules, more than the %u it is sized for "
				  "(max_acl_rules)", acl->name, n, acl->p.max_rules);
	for (uint32_t i = 0; i < n; i++)
		if (rules[i].set != 0 && !acl->p.sets)
			return ep_err_set(err, "acl %s: rule %u has a set, this ACL has none",
					  acl->name, i);
	if (n != 0) {
		copy = rte_malloc("ep_acl_rules", sizeof(*copy) * n, 0);
		if (copy == NULL)
			return ep_err_set(err, "acl: out of memory");
		memcpy(copy, rules, sizeof(*copy) * n);
	}
	s = set_build(&acl->p, copy, n, default_deny, err);
	if (s == NULL) {
		rte_free(copy);
		return -1;
	}
	old = acl->cur;
	ep_rcu_publish(&acl->cur, s);
	if (old != NULL) {
		if (acl->e != NULL && acl->e->qsbr != NULL)
			ep_rcu_synchronize(acl->e);
		set_free(old);
	}
	rte_free(acl->rules);
	acl->rules = copy;
	acl->n_rules = n;
	acl->default_deny = default_deny;
	return 0;
}

int
ep_acl_insert(struct ep_acl *acl, const char *text, int64_t index, struct ep_err *err)
{
	struct ep_acl_rule rule, *list;
	uint32_t at;
	int rc;

	if (ep_acl_rule_parse(text, acl->p.sets, &rule, err) < 0)
		return -1;
	if (index > (int64_t)acl->n_rules)
		return ep_err_set(err, "index: %" PRId64 " is beyond the end of the %u rules",
				  index, acl->n_rules);
	at = index < 0 ? acl->n_rules : (uint32_t)index;
	list = malloc(sizeof(*list) * (acl->n_rules + 1));
	if (list == NULL)
		return ep_err_set(err, "acl: out of memory");
	if (acl->n_rules != 0)
		memcpy(list, acl->rules, sizeof(*list) * acl->n_rules);
	memmove(&list[at + 1], &list[at], sizeof(*list) * (acl->n_rules - at));
	list[at] = rule;
	rc = ep_acl_commit(acl, list, acl->n_rules + 1, acl->default_deny, err);
	free(list);
	return rc;
}

int
ep_acl_delete(struct ep_acl *acl, uint64_t index, struct ep_err *err)
{
	struct ep_acl_rule *list;
	int rc;

	if (index >= acl->n_rules)
		return ep_err_set(err, "index: %" PRIu64 " is not a rule (there are %u)", index,
				  acl->n_rules);
	list = malloc(sizeof(*list) * acl->n_rules);
	if (list == NULL)
		return ep_err_set(err, "acl: out of memory");
	memcpy(list, acl->rules, sizeof(*list) * acl->n_rules);
	memmove(&list[index], &list[index + 1], sizeof(*list) * (acl->n_rules - index - 1));
	rc = ep_acl_commit(acl, list, acl->n_rules - 1, acl->default_deny, err);
	free(list);
	return rc;
}

int
ep_acl_replace(struct ep_acl *acl, const char *const *rules, uint32_t n, struct ep_err *err)
{
	struct ep_acl_rule *list = malloc(sizeof(*list) * (n ? n : 1));
	int rc = 0;

	if (list == NULL)
		return ep_err_set(err, "acl: out of memory");
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		rc = ep_acl_rule_parse(rules[i], acl->p.sets, &list[i], err);
		if (rc < 0)
			ep_err_prefix(err, "rules[%u]: ", i);
	}
	if (rc == 0)
		rc = ep_acl_commit(acl, list, n, acl->default_deny, err);
	free(list);
	return rc;
}

int
ep_acl_set_default(struct ep_acl *acl, const char *action, struct ep_err *err)
{
	bool deny;

	if (ep_acl_action_parse(action, &deny) < 0)
		return ep_err_set(err, "action: '%s' is not permit or deny", action ? action : "");
	if (deny == acl->default_deny)
		return 0;
	return ep_acl_commit(acl, acl->rules, acl->n_rules, deny, err);
}

/* ---- instances ---- */

void
ep_acl_params_default(struct ep_acl_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_rules = 65536;
	p->alg = RTE_ACL_CLASSIFY_DEFAULT;
}

struct ep_acl *
ep_acl_find(struct ep_engine *e, const char *name)
{
	return ep_instance_find(e, EP_ACL_KIND, name);
}

struct ep_acl *
ep_acl_next(struct ep_engine *e, struct ep_acl *prev)
{
	return ep_instance_next(e, EP_ACL_KIND, prev);
}

uint64_t
ep_acl_memory(const struct ep_acl_params *p)
{
	/* rte_acl contexts are built for the rules in use, not for max_rules,
	 * so before the rules are read only an allowance can be given: the
	 * rule list at max_rules, plus 8 MiB for the built contexts (two
	 * families, the old set alive until its grace period ends). */
	return (uint64_t)p->max_rules * sizeof(struct ep_acl_rule) + 8ull * 1024 * 1024;
}

struct ep_acl *
ep_acl_create(struct ep_engine *e, const char *name, const struct ep_acl_params *p,
	      struct ep_err *err)
{
	struct ep_acl *acl;

	if (name == NULL || name[0] == '\0' || strlen(name) >= EP_ACL_NAME_LEN) {
		ep_err_set(err, "acl: bad instance name '%s'", name ? name : "");
		return NULL;
	}
	if (ep_acl_find(e, name) != NULL) {
		ep_err_set(err, "acl: an ACL named '%s' exists", name);
		return NULL;
	}
	acl = rte_zmalloc("ep_acl", sizeof(*acl), RTE_CACHE_LINE_SIZE);
	if (acl == NULL) {
		ep_err_set(err, "acl %s: out of memory", name);
		return NULL;
	}
	snprintf(acl->name, sizeof(acl->name), "%s", name);
	acl->e = e;
	acl->p = *p;
	if (ep_acl_commit(acl, NULL, 0, false, err) < 0 ||
	    ep_instance_add(e, EP_ACL_KIND, name, acl, err) < 0) {
		set_free(acl->cur);
		rte_free(acl);
		return NULL;
	}
	return acl;
}

void
ep_acl_free(struct ep_acl *acl)
{
	if (acl == NULL)
		return;
	ep_instance_del(acl->e, acl);
	set_free(acl->cur);
	rte_free(acl->rules);
	rte_free(acl);
}

/* ---- configuration ---- */

struct load_ctx {
	struct ep_acl *acl;
	struct ep_cfg *cfg;
	struct ep_err *err;
	struct ep_acl_rule *rules;
	uint32_t n, cap;
};

static int
push(struct load_ctx *c, const char *text)
{
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		void *p = realloc(c->rules, sizeof(*c->rules) * cap);

		if (p == NULL)
			return ep_err_set(c->err, "out of memory");
		c->rules = p;
		c->cap = cap;
	}
	if (ep_acl_rule_parse(text, c->acl->p.sets, &c->rules[c->n], c->err) < 0)
		return -1;
	c->n++;
	return 0;
}

static int
each_acl(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;

	if (push(c, kv->val) < 0)
		return ep_cfg_error(c->cfg, kv, c->err, "%s", c->err->msg);
	return 0;
}

/* acl_file lines (ep_cfg_side_file strips comments and blanks, and puts
 * "file:line" in front of an error). */
static int
file_line(void *arg, char *line, int lineno, struct ep_err *err)
{
	(void)lineno;
	(void)err;
	return push(arg, line);
}

int
ep_acl_load_config(struct ep_acl *acl, struct ep_cfg *cfg, struct ep_cfg_section *s,
		   struct ep_err *err)
{
	struct load_ctx c = { .acl = acl, .cfg = cfg, .err = err };
	enum rte_acl_classify_alg old_alg = acl->p.alg;
	const struct ep_cfg_kv *kv;
	bool deny = acl->default_deny;
	int rc = -1;

	kv = ep_cfg_get(cfg, s, "acl_classify", err);
	if (kv != NULL && ep_acl_alg_parse(kv->val, &acl->p.alg) < 0)
		return ep_cfg_error(cfg, kv, err, "'%s' is not auto, avx512x32, avx512x16, avx2, "
				    "sse or scalar", kv->val);
	kv = ep_cfg_get(cfg, s, "acl_default", err);
	if (kv != NULL && ep_acl_action_parse(kv->val, &deny) < 0)
		return ep_cfg_error(cfg, kv, err, "'%s' is not permit or deny", kv->val);
	if (ep_cfg_each(s, "acl", each_acl, &c) != 0)
		goto out;
	kv = ep_cfg_get(cfg, s, "acl_file", err);
	if (kv != NULL && ep_cfg_side_file(cfg, kv, file_line, &c, err) != 0)
		goto out;
	rc = ep_acl_commit(acl, c.rules, c.n, deny, err);
out:
	if (rc < 0)
		acl->p.alg = old_alg;
	free(c.rules);
	return rc;
}
