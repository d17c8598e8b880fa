/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Building the filter + classifier rte_acl contexts of a service group
 * (cmts_acl.h has the key layout and the categories).  Control thread only.
 *
 * Priorities: rte_acl returns, per category, the matching rule with the
 * highest priority.  A filter group is an ordered list (lower order first,
 * as docsSubmgt3 filter entries), so a filter rule's priority is
 * 0x10000 - order.  A classifier has its own rule priority (MULPI: higher
 * first); ties go to the lower classifier index.
 *
 * Cost of a rebuild (cmts_acl_build, measured by test_cmts_acl): the
 * default SG profile's 6 x 16 filter rules and 300 x 16 classifiers build
 * in tens of milliseconds -- what a CM change costs on the control thread.
 */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_malloc.h>

#include "cmts.h"
#include "cmts_acl.h"

enum { F_PROTO, F_FGA, F_FGB, F_CM, F_SRC, F_DST, F_SPORT, F_DPORT, F_TOS, NF4 };
enum { G_PROTO, G_FGA, G_FGB, G_CM, G_SRC0, G_DST0 = G_SRC0 + 4, G_SPORT = G_DST0 + 4,
       G_DPORT, G_TOS, NF6 };

RTE_ACL_RULE_DEF(cmts_rule4, NF4);
RTE_ACL_RULE_DEF(cmts_rule6, NF6);

#define FD(t, sz, f, in, off) { .type = RTE_ACL_FIELD_TYPE_##t, .size = (sz), \
	.field_index = (f), .input_index = (in), .offset = (off) }

static const struct rte_acl_field_def defs4[NF4] = {
	FD(BITMASK, 1, F_PROTO, 0, offsetof(struct cmts_acl_key4, proto)),
	FD(BITMASK, 1, F_FGA, 1, offsetof(struct cmts_acl_key4, fg_a)),
	FD(BITMASK, 1, F_FGB, 1, offsetof(struct cmts_acl_key4, fg_b)),
	FD(BITMASK, 2, F_CM, 1, offsetof(struct cmts_acl_key4, cm)),
	FD(MASK, 4, F_SRC, 2, offsetof(struct cmts_acl_key4, src)),
	FD(MASK, 4, F_DST, 3, offsetof(struct cmts_acl_key4, dst)),
	FD(RANGE, 2, F_SPORT, 4, offsetof(struct cmts_acl_key4, sport)),
	FD(RANGE, 2, F_DPORT, 4, offsetof(struct cmts_acl_key4, dport)),
	FD(RANGE, 1, F_TOS, 5, offsetof(struct cmts_acl_key4, tos)),
};

static struct rte_acl_field_def defs6[NF6];

static void __attribute__((constructor))
defs6_init(void)
{
	defs6[G_PROTO] = (struct rte_acl_field_def)FD(BITMASK, 1, G_PROTO, 0,
		offsetof(struct cmts_acl_key6, proto));
	defs6[G_FGA] = (struct rte_acl_field_def)FD(BITMASK, 1, G_FGA, 1,
		offsetof(struct cmts_acl_key6, fg_a));
	defs6[G_FGB] = (struct rte_acl_field_def)FD(BITMASK, 1, G_FGB, 1,
		offsetof(struct cmts_acl_key6, fg_b));
	defs6[G_CM] = (struct rte_acl_field_def)FD(BITMASK, 2, G_CM, 1,
		offsetof(struct cmts_acl_key6, cm));
	for (int i = 0; i < 4; i++) {
		defs6[G_SRC0 + i] = (struct rte_acl_field_def)FD(MASK, 4, G_SRC0 + i, 2 + i,
			offsetof(struct cmts_acl_key6, src) + 4 * i);
		defs6[G_DST0 + i] = (struct rte_acl_field_def)FD(MASK, 4, G_DST0 + i, 6 + i,
			offsetof(struct cmts_acl_key6, dst) + 4 * i);
	}
	defs6[G_SPORT] = (struct rte_acl_field_def)FD(RANGE, 2, G_SPORT, 10,
		offsetof(struct cmts_acl_key6, sport));
	defs6[G_DPORT] = (struct rte_acl_field_def)FD(RANGE, 2, G_DPORT, 10,
		offsetof(struct cmts_acl_key6, dport));
	defs6[G_TOS] = (struct rte_acl_field_def)FD(RANGE, 1, G_TOS, 11,
		offsetof(struct cmts_acl_key6, tos));
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

/* The match fields common to both families: proto, ports, tos. */
#define SET_L4(f, P, SP, DP, TOS, m) do { \
	(f)[P].value.u8 = (m)->has_proto ? (m)->proto : 0; \
	(f)[P].mask_range.u8 = (m)->has_proto ? 0xff : 0; \
	(f)[SP].value.u16 = (m)->sport_lo; (f)[SP].mask_range.u16 = (m)->sport_hi; \
	(f)[DP].value.u16 = (m)->dport_lo; (f)[DP].mask_range.u16 = (m)->dport_hi; \
	(f)[TOS].value.u8 = (m)->tos_lo; (f)[TOS].mask_range.u8 = (m)->tos_hi; \
} while (0)

static void
rule4(struct cmts_rule4 *r, const struct cmts_match *m, uint8_t fga, uint8_t fgb, uint16_t cm)
{
	uint32_t v, l;

	memset(r, 0, sizeof(*r));
	SET_L4(r->field, F_PROTO, F_SPORT, F_DPORT, F_TOS, m);
	r->field[F_FGA].value.u8 = fga;
	r->field[F_FGA].mask_range.u8 = fga ? 0xff : 0;
	r->field[F_FGB].value.u8 = fgb;
	r->field[F_FGB].mask_range.u8 = fgb ? 0xff : 0;
	r->field[F_CM].value.u16 = cm;
	r->field[F_CM].mask_range.u16 = cm ? 0xffff : 0;
	prefix_word(m->src, m->src_plen, 0, &v, &l);
	r->field[F_SRC].value.u32 = v;
	r->field[F_SRC].mask_range.u32 = l;
	prefix_word(m->dst, m->dst_plen, 0, &v, &l);
	r->field[F_DST].value.u32 = v;
	r->field[F_DST].mask_range.u32 = l;
}

static void
rule6(struct cmts_rule6 *r, const struct cmts_match *m, uint8_t fga, uint8_t fgb, uint16_t cm)
{
	memset(r, 0, sizeof(*r));
	SET_L4(r->field, G_PROTO, G_SPORT, G_DPORT, G_TOS, m);
	r->field[G_FGA].value.u8 = fga;
	r->field[G_FGA].mask_range.u8 = fga ? 0xff : 0;
	r->field[G_FGB].value.u8 = fgb;
	r->field[G_FGB].mask_range.u8 = fgb ? 0xff : 0;
	r->field[G_CM].value.u16 = cm;
	r->field[G_CM].mask_range.u16 = cm ? 0xffff : 0;
	for (int w = 0; w < 4; w++) {
		uint32_t v, l;

		prefix_word(m->src, m->src_plen, w, &v, &l);
		r->field[G_SRC0 + w].value.u32 = v;
		r->field[G_SRC0 + w].mask_range.u32 = l;
		prefix_word(m->dst, m->dst_plen, w, &v, &l);
		r->field[G_DST0 + w].value.u32 = v;
		r->field[G_DST0 + w].mask_range.u32 = l;
	}
}

struct acl_builder {
	struct rte_acl_ctx *ctx[2];         /* IPv4, IPv6 */
	uint32_t n[2];
	uint32_t max;
};

static int
builder_add(struct acl_builder *b, const struct cmts_match *m, uint8_t fga, uint8_t fgb,
	    uint16_t cm, uint32_t cat_mask, int32_t prio, uint32_t userdata, struct ep_err *err)
{
	for (int f = 0; f < 2; f++) {
		int rc;

		if (m->family != 0 && m->family != (f == 0 ? 4 : 6))
			continue;
		if (b->n[f] == b->max)
			return ep_err_set(err, "more than max_rules = %u filter rules and classifiers",
					  b->max);
		if (f == 0) {
			struct cmts_rule4 r;

			rule4(&r, m, fga, fgb, cm);
			r.data = (struct rte_acl_rule_data){ .category_mask = cat_mask,
				.priority = prio, .userdata = userdata };
			rc = rte_acl_add_rules(b->ctx[0], (struct rte_acl_rule *)&r, 1);
		} else {
			struct cmts_rule6 r;

			rule6(&r, m, fga, fgb, cm);
			r.data = (struct rte_acl_rule_data){ .category_mask = cat_mask,
				.priority = prio, .userdata = userdata };
			rc = rte_acl_add_rules(b->ctx[1], (struct rte_acl_rule *)&r, 1);
		}
		if (rc != 0)
			return ep_err_set(err, "rte_acl_add_rules failed (%d)", rc);
		b->n[f]++;
	}
	return 0;
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

struct cmts_acl_set *
cmts_acl_build(struct cmts_sg *sg, struct ep_err *err)
{
	static uint32_t seq;
	struct cmts_acl_set *s = rte_zmalloc("cmts_acl", sizeof(*s), 0);
	struct acl_builder b = { .max = sg->p.max_rules };
	int rc;

	if (s == NULL)
		return ep_err_set(err, "acl: out of memory"), NULL;
	s->n_filters = sg->n_filters;
	s->filter_permit = rte_zmalloc("cmts_aclf", sg->n_filters + 1, 0);
	if (s->filter_permit == NULL)
		goto nomem;
	for (int f = 0; f < 2; f++) {
		char name[RTE_ACL_NAMESIZE];

		snprintf(name, sizeof(name), "cmts_acl%d_%u", f ? 6 : 4,
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		b.ctx[f] = rte_acl_create(&(struct rte_acl_param){ .name = name,
			.socket_id = SOCKET_ID_ANY,
			.rule_size = f ? RTE_ACL_RULE_SZ(NF6) : RTE_ACL_RULE_SZ(NF4),
			.max_rule_num = b.max });
		if (b.ctx[f] == NULL)
			goto nomem;
	}
	for (uint32_t i = 0; i < sg->n_filters; i++) {
		const struct cmts_filter *fl = &sg->filters[i];
		int32_t prio = (int32_t)(0x10000 - fl->order);

		s->filter_permit[i] = fl->permit;
		if (builder_add(&b, &fl->m, fl->group, 0, 0, 1u << CMTS_ACL_CAT_FG_A, prio, i + 1,
				err) < 0 ||
		    builder_add(&b, &fl->m, 0, fl->group, 0, 1u << CMTS_ACL_CAT_FG_B, prio, i + 1,
				err) < 0)
			goto fail;
	}
	for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
		const struct cmts_cm *cm = sg->cms[id];

		if (cm == NULL)
			continue;
		for (int k = 0; k < CMTS_MAX_CLS; k++) {
			const struct cmts_cls *c = &cm->cls[k];

			if (c->in_use && builder_add(&b, &c->m, 0, 0, (uint16_t)id,
					1u << CMTS_ACL_CAT_CLS, 1 + (int32_t)c->prio * 16 + (15 - k),
					CMTS_ACL_CLS_UD(k, c->sf), err) < 0)
				goto fail;
		}
	}
	for (int f = 0; f < 2; f++) {
		struct rte_acl_config cfg = { .num_categories = CMTS_ACL_CATS,
			.num_fields = f ? NF6 : NF4 };

		if (b.n[f] == 0) {
			rte_acl_free(b.ctx[f]);
			b.ctx[f] = NULL;
			continue;
		}
		memcpy(cfg.defs, f ? defs6 : defs4, sizeof(cfg.defs[0]) * cfg.num_fields);
		rc = rte_acl_build(b.ctx[f], &cfg);
		if (rc != 0) {
			ep_err_set(err, "acl: rte_acl_build failed (%d) with %u rules", rc, b.n[f]);
			goto fail;
		}
	}
	s->ctx4 = b.ctx[0];
	s->ctx6 = b.ctx[1];
	s->n_rules4 = b.n[0];
	s->n_rules6 = b.n[1];
	return s;
nomem:
	ep_err_set(err, "acl: out of memory (max_rules %u)", b.max);
fail:
	rte_acl_free(b.ctx[0]);
	rte_acl_free(b.ctx[1]);
	rte_free(s->filter_permit);
	rte_free(s);
	return NULL;
}
