/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Building the filter + classifier rte_acl contexts of a service group
 * (cmts_acl.h has the key layout and the categories).  Control thread only.
 *
 * Only the fields some rule constrains are in a context: the key keeps its
 * full layout and the context's field definitions point at the parts in
 * use, a 4-byte input group at a time (rte_acl reads input in 4-byte
 * groups after the first byte, the protocol, which is always there).  The
 * default SG profile's rules (protocol and port, per filter group or CM)
 * use 9 of the IPv4 key's 18 bytes and 9 of the IPv6 key's 42.  What a
 * classify costs is set by the number of tries more than by the key:
 * filter rules (any CM, one group) and classifiers (one CM, any group)
 * have different wildcards, so rte_acl builds one trie for each, and each
 * trie costs ~32 cycles a packet at a burst of 32 with AVX512X16 here,
 * with the full key or the trimmed one alike (test_cmts_cycles; SSE ~40,
 * AVX2 ~37, scalar ~60 per trie).
 *
 * Priorities: rte_acl returns, per category, the matching rule with the
 * highest priority (1 and up).  A filter group is an ordered list (lower
 * order first, as docsSubmgt3 filter entries), so a filter rule's priority
 * is 0x10000 - order.  A classifier has its own rule priority (MULPI:
 * higher first); ties go to the lower classifier index.
 */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_malloc.h>

#include "cmts.h"
#include "cmts_acl.h"

/* The key's 4-byte input groups after the protocol byte. */
enum { G_GROUPS = 1, G_SRC, G_DST, G_PORTS, G_TOS, G__N };

/* One field of a context: where it is in the key and what fills it. */
enum field_kind { K_PROTO, K_FGA, K_FGB, K_CM, K_SRC, K_DST, K_SPORT, K_DPORT, K_TOS };

struct layout {
	int n;
	uint8_t kind[RTE_ACL_MAX_FIELDS];
	uint8_t word[RTE_ACL_MAX_FIELDS];       /* 32-bit word of an address */
	struct rte_acl_field_def def[RTE_ACL_MAX_FIELDS];
};

/* Rule storage large enough for the widest (IPv6, every group) layout. */
#define MAX_FIELDS 16
RTE_ACL_RULE_DEF(cmts_rule, MAX_FIELDS);

static void
add_field(struct layout *l, uint8_t kind, uint8_t word, uint8_t type, uint8_t size, uint8_t input,
	  uint32_t offset)
{
	int i = l->n++;

	l->kind[i] = kind;
	l->word[i] = word;
	l->def[i] = (struct rte_acl_field_def){ .type = type, .size = size,
		.field_index = (uint8_t)i, .input_index = input, .offset = offset };
}

/* The fields of the groups in @p used (bit per G_*), for @p family. */
static void
layout_make(struct layout *l, int family, uint32_t used)
{
	bool v6 = family == 6;
	uint32_t o_groups = v6 ? offsetof(struct cmts_acl_key6, fg_a) :
				 offsetof(struct cmts_acl_key4, fg_a);
	uint32_t o_src = v6 ? offsetof(struct cmts_acl_key6, src) : offsetof(struct cmts_acl_key4, src);
	uint32_t o_dst = v6 ? offsetof(struct cmts_acl_key6, dst) : offsetof(struct cmts_acl_key4, dst);
	uint32_t o_ports = v6 ? offsetof(struct cmts_acl_key6, sport) :
				offsetof(struct cmts_acl_key4, sport);
	uint32_t o_tos = v6 ? offsetof(struct cmts_acl_key6, tos) : offsetof(struct cmts_acl_key4, tos);
	int words = v6 ? 4 : 1;
	uint8_t in = 1;

	memset(l, 0, sizeof(*l));
	add_field(l, K_PROTO, 0, RTE_ACL_FIELD_TYPE_BITMASK, 1, 0, 0);
	if (used & (1u << G_GROUPS)) {
		add_field(l, K_FGA, 0, RTE_ACL_FIELD_TYPE_BITMASK, 1, in, o_groups);
		add_field(l, K_FGB, 0, RTE_ACL_FIELD_TYPE_BITMASK, 1, in, o_groups + 1);
		add_field(l, K_CM, 0, RTE_ACL_FIELD_TYPE_BITMASK, 2, in++, o_groups + 2);
	}
	for (int w = 0; (used & (1u << G_SRC)) && w < words; w++)
		add_field(l, K_SRC, (uint8_t)w, RTE_ACL_FIELD_TYPE_MASK, 4, in++, o_src + 4 * w);
	for (int w = 0; (used & (1u << G_DST)) && w < words; w++)
		add_field(l, K_DST, (uint8_t)w, RTE_ACL_FIELD_TYPE_MASK, 4, in++, o_dst + 4 * w);
	if (used & (1u << G_PORTS)) {
		add_field(l, K_SPORT, 0, RTE_ACL_FIELD_TYPE_RANGE, 2, in, o_ports);
		add_field(l, K_DPORT, 0, RTE_ACL_FIELD_TYPE_RANGE, 2, in++, o_ports + 2);
	}
	if (used & (1u << G_TOS))
		add_field(l, K_TOS, 0, RTE_ACL_FIELD_TYPE_RANGE, 1, in, o_tos);
}

/* The input groups a match constrains. */
static uint32_t
groups_of(const struct cmts_match *m)
{
	return (m->src_plen ? 1u << G_SRC : 0) | (m->dst_plen ? 1u << G_DST : 0) |
	       (m->sport_lo != 0 || m->sport_hi != 65535 || m->dport_lo != 0 ||
		m->dport_hi != 65535 ? 1u << G_PORTS : 0) |
	       (m->tos_lo != 0 || m->tos_hi != 255 ? 1u << G_TOS : 0);
}

static bool
in_family(const struct cmts_match *m, int family)
{
	return m->family == 0 || m->family == family;
}

/* The part of a prefix that falls in 32-bit word @p w (host order) and
 * its length. */
static void
prefix_word(const uint8_t *a, uint8_t plen, int w, uint32_t *v, uint32_t *len)
{
	uint32_t x;
	int bits = (int)plen - 32 * w;

	memcpy(&x, a + 4 * w, 4);
	*v = ntohl(x);
	*len = bits <= 0 ? 0 : bits >= 32 ? 32 : (uint32_t)bits;
	if (*len == 0)
		*v = 0;
	else if (*len < 32)
		*v &= ~0u << (32 - *len);
}

static void
rule_fill(struct cmts_rule *r, const struct layout *l, const struct cmts_match *m, uint8_t fga,
	  uint8_t fgb, uint16_t cm)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < l->n; i++) {
		struct rte_acl_field *f = &r->field[i];
		uint32_t v, len;

		switch (l->kind[i]) {
		case K_PROTO:
			f->value.u8 = m->has_proto ? m->proto : 0;
			f->mask_range.u8 = m->has_proto ? 0xff : 0;
			break;
		case K_FGA:
			f->value.u8 = fga;
			f->mask_range.u8 = fga ? 0xff : 0;
			break;
		case K_FGB:
			f->value.u8 = fgb;
			f->mask_range.u8 = fgb ? 0xff : 0;
			break;
		case K_CM:
			f->value.u16 = cm;
			f->mask_range.u16 = cm ? 0xffff : 0;
			break;
		case K_SRC:
		case K_DST:
			prefix_word(l->kind[i] == K_SRC ? m->src : m->dst,
				    l->kind[i] == K_SRC ? m->src_plen : m->dst_plen, l->word[i], &v, &len);
			f->value.u32 = v;
			f->mask_range.u32 = len;
			break;
		case K_SPORT:
			f->value.u16 = m->sport_lo;
			f->mask_range.u16 = m->sport_hi;
			break;
		case K_DPORT:
			f->value.u16 = m->dport_lo;
			f->mask_range.u16 = m->dport_hi;
			break;
		case K_TOS:
			f->value.u8 = m->tos_lo;
			f->mask_range.u8 = m->tos_hi;
			break;
		}
	}
}

void
cmts_acl_free(struct cmts_acl_set *s)
{
	if (s == NULL)
		return;
	rte_acl_free(s->ctx4);
	rte_acl_free(s->ctx6);
	rte_free(s->filter_permit);
	rte_free(s);
}

/* Every rule of the family in @p ctx (NULL: count them); their number. */
static int
add_rules(struct cmts_sg *sg, int family, struct rte_acl_ctx *ctx, const struct layout *l,
	  struct ep_err *err)
{
	struct cmts_rule r;
	int n = 0;

#define ADD(m, fga, fgb, cm, cat, prio, ud) do { \
	if (in_family((m), family)) { \
		if (ctx != NULL) { \
			rule_fill(&r, l, (m), (fga), (fgb), (cm)); \
			r.data = (struct rte_acl_rule_data){ .category_mask = 1u << (cat), \
				.priority = (prio), .userdata = (ud) }; \
			if (rte_acl_add_rules(ctx, (struct rte_acl_rule *)&r, 1) != 0) \
				return ep_err_set(err, "rte_acl_add_rules failed"); \
		} \
		n++; \
	} } while (0)

	for (uint32_t i = 0; i < sg->n_filters; i++) {
		const struct cmts_filter *f = &sg->filters[i];
		int32_t prio = (int32_t)(0x10000 - f->order);

		ADD(&f->m, f->group, 0, 0, CMTS_ACL_CAT_FG_A, prio, i + 1);
		ADD(&f->m, 0, f->group, 0, CMTS_ACL_CAT_FG_B, prio, i + 1);
	}
	for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
		const struct cmts_cm *cm = sg->cms[id];

		for (int k = 0; cm != NULL && k < CMTS_MAX_CLS; k++) {
			const struct cmts_cls *c = &cm->cls[k];

			if (c->in_use)
				ADD(&c->m, 0, 0, (uint16_t)id, CMTS_ACL_CAT_CLS,
				    1 + (int32_t)c->prio * 16 + (15 - k), CMTS_ACL_CLS_UD(k, c->sf));
		}
	}
#undef ADD
	return n;
}

/* The input groups the family's rules use. */
static uint32_t
groups_used(const struct cmts_sg *sg, int family)
{
	uint32_t used = 0;

	for (uint32_t i = 0; i < sg->n_filters; i++)
		if (in_family(&sg->filters[i].m, family))
			used |= groups_of(&sg->filters[i].m) | 1u << G_GROUPS;
	for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
		const struct cmts_cm *cm = sg->cms[id];

		for (int k = 0; cm != NULL && k < CMTS_MAX_CLS; k++)
			if (cm->cls[k].in_use && in_family(&cm->cls[k].m, family))
				used |= groups_of(&cm->cls[k].m) | 1u << G_GROUPS;
	}
	return used;
}

static struct rte_acl_ctx *
build_family(struct cmts_sg *sg, int family, uint32_t *n_rules, struct ep_err *err)
{
	static uint32_t seq;
	struct layout l;
	struct rte_acl_ctx *ctx;
	struct rte_acl_config cfg = { .num_categories = CMTS_ACL_CATS };
	char name[RTE_ACL_NAMESIZE];
	int n = add_rules(sg, family, NULL, NULL, err), rc;

	*n_rules = 0;
	if (n <= 0)
		return NULL;
	if ((uint32_t)n > sg->p.max_rules)
		return ep_err_set(err, "%d IPv%d filter rules and classifiers: more than max_rules "
				  "= %u", n, family, sg->p.max_rules), NULL;
	layout_make(&l, family, groups_used(sg, family));
	snprintf(name, sizeof(name), "cmts_acl%d_%u", family,
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	ctx = rte_acl_create(&(struct rte_acl_param){ .name = name, .socket_id = SOCKET_ID_ANY,
		.rule_size = RTE_ACL_RULE_SZ(MAX_FIELDS), .max_rule_num = (uint32_t)n });
	if (ctx == NULL)
		return ep_err_set(err, "acl: out of memory"), NULL;
	if (add_rules(sg, family, ctx, &l, err) < 0)
		goto fail;
	cfg.num_fields = (uint32_t)l.n;
	memcpy(cfg.defs, l.def, sizeof(l.def[0]) * l.n);
	rc = rte_acl_build(ctx, &cfg);
	if (rc != 0) {
		ep_err_set(err, "acl: rte_acl_build failed (%d) with %d rules", rc, n);
		goto fail;
	}
	*n_rules = (uint32_t)n;
	return ctx;
fail:
	rte_acl_free(ctx);
	return NULL;
}

struct cmts_acl_set *
cmts_acl_build(struct cmts_sg *sg, struct ep_err *err_out)
{
	struct cmts_acl_set *s = rte_zmalloc("cmts_acl", sizeof(*s), 0);
	struct ep_err local, *err = err_out != NULL ? err_out : &local;

	if (s == NULL)
		return ep_err_set(err, "acl: out of memory"), NULL;
	s->n_filters = sg->n_filters;
	s->filter_permit = rte_zmalloc("cmts_aclf", sg->n_filters + 1, 0);
	if (s->filter_permit == NULL) {
		rte_free(s);
		return ep_err_set(err, "acl: out of memory"), NULL;
	}
	for (uint32_t i = 0; i < sg->n_filters; i++)
		s->filter_permit[i] = sg->filters[i].permit;
	err->msg[0] = '\0';
	s->ctx4 = build_family(sg, 4, &s->n_rules4, err);
	if (s->ctx4 == NULL && err->msg[0] != '\0')
		goto fail;
	s->ctx6 = build_family(sg, 6, &s->n_rules6, err);
	if (s->ctx6 == NULL && err->msg[0] != '\0')
		goto fail;
	return s;
fail:
	cmts_acl_free(s);
	return NULL;
}
