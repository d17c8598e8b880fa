/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An engine with two ports for the tests of L3 stages (no devices: stages
 * never touch a port), and helpers to run one stage on crafted frames.
 *
 *   port 0 "access"  02:00:00:00:01:01  198.18.0.1/24  2001:db8:0:1::1/64
 *   port 1 "core"    02:00:00:00:02:01  198.18.1.1/24  2001:db8:0:2::1/64
 *   hosts: 198.18.0.2 / 2001:db8:0:1::2 (02:..:0a) on access,
 *          198.18.1.2 / 2001:db8:0:2::2 (02:..:0b) on core
 */
#ifndef EP_TEST_L3_H
#define EP_TEST_L3_H

#include <stdlib.h>
#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_parse.h"
#include "ep_test.h"
#include "test_pkt.h"

static const uint8_t MAC_A[6] = {2, 0, 0, 0, 0, 0x0a};
static const uint8_t MAC_B[6] = {2, 0, 0, 0, 0, 0x0b};
static const uint8_t MAC_P0[6] = {2, 0, 0, 0, 1, 1};
static const uint8_t MAC_P1[6] = {2, 0, 0, 0, 2, 1};

static struct ep_engine tr_eng;

static inline void
tr_engine_init(void)
{
	static const char *names[2] = {"access", "core"};

	if (tr_eng.qsbr == NULL) {
		size_t sz = rte_rcu_qsbr_get_memsize(4);

		tr_eng.qsbr = rte_zmalloc("tr_qsbr", sz, RTE_CACHE_LINE_SIZE);
		rte_rcu_qsbr_init(tr_eng.qsbr, 4);
	}
	tr_eng.n_ports = 2;
	tr_eng.burst = 32;
	for (int i = 0; i < 2; i++) {
		struct ep_port *p = &tr_eng.ports[i];
		char v6[64];

		memset(p, 0, sizeof(*p));
		snprintf(p->name, sizeof(p->name), "%s", names[i]);
		p->index = (uint16_t)i;
		p->mtu = 1500;
		memcpy(&p->mac, i == 0 ? MAC_P0 : MAC_P1, 6);
		p->v4[0].addr = htonl(tp_ip4(i == 0 ? "198.18.0.1" : "198.18.1.1"));
		p->v4[0].plen = 24;
		p->n_v4 = 1;
		snprintf(v6, sizeof(v6), "2001:db8:0:%d::1", i + 1);
		tp_ip6(p->v6[0].addr, v6);
		p->v6[0].plen = 64;
		p->n_v6 = 1;
	}
}

/* An mbuf holding @p len bytes of @p b, arriving on @p port, parsed. */
static inline struct rte_mbuf *
tr_mbuf(const uint8_t *b, uint16_t len, uint16_t port)
{
	struct rte_mbuf *m = ep_test_mbuf(b, len);

	ep_meta(m)->in_port = port;
	if (ep_parse_mbuf(m, ep_meta(m)) != 0)
		printf("    (fixture: frame does not parse)\n");
	return m;
}

/* Run one stage on one packet; returns its next action. */
static inline uint16_t
tr_stage1(ep_stage_fn fn, void *ctx, struct rte_mbuf *m)
{
	uint16_t next[1] = {0};

	fn(ctx, &m, next, 1);
	return next[0];
}

#endif
