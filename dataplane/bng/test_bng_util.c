/* SPDX-License-Identifier: BSD-3-Clause */
/* BNG test bed: engine, [bng] from text, workers, frame builder. */
#include "test_bng.h"

#include <arpa/inet.h>
#include <stdlib.h>

#include <rte_ip.h>
#include <rte_malloc.h>


const uint8_t tb_access_mac[6] = { 0x02, 0, 0, 0, 0x01, 0x01 };
const uint8_t tb_core_mac[6] = { 0x02, 0, 0, 0, 0x02, 0x01 };
const uint8_t tb_core_nh_mac[6] = { 0x02, 0, 0, 0, 0x02, 0x02 };
const uint8_t tb_sub_mac[6] = { 0x02, 0, 0, 0, 0x10, 0x01 };

static void
tb_port(struct ep_engine *e, int i, const char *name, const uint8_t *mac, const char *v4,
	const char *v6)
{
	struct ep_port *p = &e->ports[i];
	struct ep_err err;

	snprintf(p->name, sizeof(p->name), "%s", name);
	p->index = (uint16_t)i;
	memcpy(&p->mac, mac, 6);
	ep_parse_prefix(v4, &p->v4[0].addr, &p->v4[0].plen, &err);
	ep_parse_prefix(v6, p->v6[0].addr, &p->v6[0].plen, &err);
	p->n_v4 = p->n_v6 = 1;
}

static struct ep_worker *
tb_worker(struct tb *t, const char *name, unsigned int id)
{
	struct ep_worker *w = rte_zmalloc("tb_worker", sizeof(*w), RTE_CACHE_LINE_SIZE);

	snprintf(w->name, sizeof(w->name), "%s", name);
	w->id = id;
	w->engine = &t->e;
	w->burst = 32;
	w->rx_port = EP_RX_PORT_META;   /* as ep_worker_create leaves it */
	return w;
}

static struct tb *tb_build(const char *cfgtext, struct ep_err *err);

struct tb *
tb_try(const char *text, struct ep_err *err)
{
	/* 11 lines: the text starts on line 12 of test.conf. */
	static const char head1[] =
		"[bng]\n"
		"access_port = access\n"
		"core_port = core\n";
	static const char head2[] =
		"neighbor = 198.18.1.2 02:00:00:00:02:02\n"
		"neighbor = 2001:db8:0:2::2 02:00:00:00:02:02\n"
		"# rte_lpm/rte_lpm6 take no /0 (depth 1-32/128): two /1s.\n"
		"route = 0.0.0.0/1 via 198.18.1.2\n"
		"route = 128.0.0.0/1 via 198.18.1.2\n"
		"route = ::/1 via 2001:db8:0:2::2\n"
		"route = 8000::/1 via 2001:db8:0:2::2\n";
	char *cfgtext = malloc(sizeof(head1) + sizeof(head2) + strlen(text) + 64);
	struct tb *t;

	/* Small by default (the unit tests' EAL has 512 MB, a FIB's
	 * tables take 192 of it), unless the text sizes it. */
	sprintf(cfgtext, "%s%s%s%s", head1, strstr(text, "max_subscribers") == NULL ?
		"max_subscribers = 1024\n" : "# sized below\n", head2, text);
	t = tb_build(cfgtext, err);
	free(cfgtext);
	return t;
}

struct tb *
tb_try_raw(const char *cfgtext, struct ep_err *err)
{
	return tb_build(cfgtext, err);
}

static struct tb *
tb_build(const char *cfgtext, struct ep_err *err)
{
	struct tb *t = calloc(1, sizeof(*t));
	struct ep_cfg_section *s;
	struct bng_params p;
	t->e.qsbr = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(2), RTE_CACHE_LINE_SIZE);
	rte_rcu_qsbr_init(t->e.qsbr, 2);
	t->e.n_ports = 2;
	tb_port(&t->e, TB_ACCESS, "access", tb_access_mac, "198.18.0.1/24", "2001:db8:0:1::1/64");
	tb_port(&t->e, TB_CORE, "core", tb_core_mac, "198.18.1.1/24", "2001:db8:0:2::1/64");
	t->cfg = ep_cfg_parse(cfgtext, "test.conf", err);
	if (t->cfg == NULL)
		goto fail;
	t->e.cfg = t->cfg;
	s = ep_cfg_find(t->cfg, "bng", NULL);
	if (bng_params_from_config(t->cfg, s, &p, err) < 0)
		goto fail;
	t->b = bng_create(&t->e, &p, err);
	if (t->b == NULL)
		goto fail;
	if (bng_load_config(t->b, t->cfg, s, err) < 0 || ep_cfg_check_unused(t->cfg, err) < 0)
		goto fail;
	t->up = tb_worker(t, "up", 0);
	t->down = tb_worker(t, "down", 1);
	t->up->type = ep_pipeline_find("bng-uplink");
	t->down->type = ep_pipeline_find("bng-downlink");
	if (bng_up_build(t->b, t->up, err) < 0 || bng_down_build(t->b, t->down, err) < 0 ||
	    bng_attach(&t->e, t->b) < 0)
		goto fail;
	return t;
fail:
	tb_free(t);
	return NULL;
}

struct tb *
tb_new(const char *text)
{
	struct ep_err err;
	struct tb *t = tb_try(text, &err);

	if (t == NULL) {
		printf("    test bed: %s\n", err.msg);
		fflush(stdout);
		abort();
	}
	return t;
}

void
tb_free(struct tb *t)
{
	if (t == NULL)
		return;
	if (t->up != NULL)
		bng_up_free(t->up->pipeline_ctx);
	if (t->down != NULL)
		bng_down_free(t->down->pipeline_ctx);
	rte_free(t->up);
	rte_free(t->down);
	bng_attach(&t->e, NULL);
	bng_free(t->b);
	ep_cfg_free(t->cfg);
	rte_free(t->e.qsbr);
	free(t);
}

int
tb_sub_add(struct tb *t, const char *line)
{
	struct bng_sub_req r;
	struct ep_err err;

	if (bng_sub_req_parse(&r, line, &err) < 0 || bng_sub_add(t->b, &r, 1, NULL, &err) < 0) {
		printf("    %s: %s\n", line, err.msg);
		return -1;
	}
	return 0;
}

uint64_t
tb_drops(struct ep_worker *w, int reason)
{
	uint64_t n = 0;

	for (int i = 0; i < w->n_stages; i++)
		n += w->stages[i].stats.drops[reason];
	return n;
}

uint16_t
tb_run(struct tb *t, struct ep_worker *w, const uint8_t *frame, uint16_t len, uint8_t *out,
       uint16_t *out_len)
{
	uint64_t before[EP_DROP__COUNT];
	struct rte_mbuf *m = ep_test_mbuf(frame, len);
	uint16_t verdict = EP_NEXT_CONSUMED;

	for (int r = 0; r < EP_DROP__COUNT; r++)
		before[r] = tb_drops(w, r);
	ep_meta(m)->in_port = w == t->up ? TB_ACCESS : TB_CORE;
	ep_worker_run_burst(w, &m, 1);
	/* A dropped frame may have earned its sender an ICMP error: the drop
	 * is the verdict, whatever was sent about it. */
	for (int r = 0; r < EP_DROP__COUNT; r++)
		if (tb_drops(w, r) != before[r])
			verdict = EP_NEXT_DROP(r);
	for (int p = 0; p < t->e.n_ports; p++) {
		struct ep_txbuf *b = &w->txbuf[p];

		if (b->n == 0)
			continue;
		if (out != NULL && verdict == EP_NEXT_CONSUMED) {
			*out_len = (uint16_t)rte_pktmbuf_pkt_len(b->pkts[0]);
			memcpy(out, rte_pktmbuf_mtod(b->pkts[0], void *), RTE_MIN(*out_len, 2048));
		}
		rte_pktmbuf_free_bulk(b->pkts, b->n);
		b->n = 0;
		if (verdict == EP_NEXT_CONSUMED)
			verdict = EP_NEXT_TX(p);
	}
	w->tx_pending = 0;
	return verdict;
}

/* ---- frames ---- */

uint16_t
tb_ip(uint8_t *buf, const struct tb_pkt *p)
{
	uint16_t l4 = (uint16_t)(8 + p->payload);
	uint8_t proto = p->proto ? p->proto : IPPROTO_UDP;
	uint8_t *u;

	if (p->ip == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)buf;

		memset(ip, 0, 20);
		ip->version_ihl = 0x45;
		ip->type_of_service = (uint8_t)(p->dscp << 2);
		ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + l4));
		ip->time_to_live = p->ttl ? p->ttl : 64;
		ip->next_proto_id = proto;
		inet_pton(AF_INET, p->sip, &ip->src_addr);
		inet_pton(AF_INET, p->dip, &ip->dst_addr);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		u = buf + 20;
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)buf;
		uint32_t tc = (uint32_t)p->dscp << 2;

		memset(ip, 0, 40);
		ip->vtc_flow = rte_cpu_to_be_32(6u << 28 | tc << 20);
		ip->payload_len = rte_cpu_to_be_16(l4);
		ip->proto = proto;
		ip->hop_limits = p->ttl ? p->ttl : 64;
		inet_pton(AF_INET6, p->sip, ip->src_addr);
		inet_pton(AF_INET6, p->dip, ip->dst_addr);
		u = buf + 40;
	}
	memset(u, 0, l4);
	u[0] = (uint8_t)(p->sport >> 8);
	u[1] = (uint8_t)p->sport;
	u[2] = (uint8_t)(p->dport >> 8);
	u[3] = (uint8_t)p->dport;
	u[4] = (uint8_t)(l4 >> 8);
	u[5] = (uint8_t)l4;
	for (uint16_t i = 8; i < l4; i++)
		u[i] = (uint8_t)i;
	return (uint16_t)((p->ip == 4 ? 20 : 40) + l4);
}

uint16_t
tb_frame(uint8_t *buf, const struct tb_pkt *p)
{
	static const uint16_t tpid[2][2] = { { 0x8100, 0 }, { 0x88a8, 0x8100 } };
	uint16_t o = 12, ipl = 0, et;

	memcpy(buf, p->dst ? p->dst : tb_access_mac, 6);
	memcpy(buf + 6, p->src ? p->src : tb_sub_mac, 6);
	for (int i = 0; i < p->n_vlans; i++) {
		buf[o] = (uint8_t)(tpid[p->n_vlans - 1][i] >> 8);
		buf[o + 1] = (uint8_t)tpid[p->n_vlans - 1][i];
		buf[o + 2] = (uint8_t)(p->vid[i] >> 8);
		buf[o + 3] = (uint8_t)p->vid[i];
		o += 4;
	}
	et = p->ether_type ? p->ether_type : p->pppoe ? 0x8864 : p->ip == 6 ? 0x86dd : 0x0800;
	buf[o] = (uint8_t)(et >> 8);
	buf[o + 1] = (uint8_t)et;
	o += 2;
	if (p->pppoe) {
		uint16_t proto = p->ppp_proto ? p->ppp_proto : p->ip == 6 ? 0x0057 : 0x0021;
		uint8_t *h = buf + o;

		o += 8;
		if (p->ip != 0)
			ipl = tb_ip(buf + o, p);
		else {
			ipl = p->payload;
			memset(buf + o, 0x01, ipl);
		}
		h[0] = 0x11;
		h[1] = 0;
		h[2] = (uint8_t)(p->session >> 8);
		h[3] = (uint8_t)p->session;
		h[4] = (uint8_t)((ipl + 2) >> 8);
		h[5] = (uint8_t)(ipl + 2);
		h[6] = (uint8_t)(proto >> 8);
		h[7] = (uint8_t)proto;
		return (uint16_t)(o + ipl);
	}
	if (p->ip != 0)
		return (uint16_t)(o + tb_ip(buf + o, p));
	memset(buf + o, 0, p->payload);
	return (uint16_t)(o + p->payload);
}

void
tb_check_parse_from_rx(struct ep_worker *w, uint16_t port, const struct tb_pkt kinds[4],
		       unsigned int mutate_span)
{
	struct ep_stage *st = &w->stages[0];
	struct rte_mbuf *via_rx[32], *via_meta[32];
	uint16_t next_rx[32] = {0}, next_meta[32] = {0};
	unsigned int wrong = 0;
	uint8_t f[1024];

	for (unsigned int i = 0; i < 32; i++) {
		uint16_t len = tb_frame(f, &kinds[i % 4]);

		if (i % 8 == 7)
			f[(i * 5) % mutate_span] ^= 0x10;   /* a MAC, a tag or a header byte off */
		via_rx[i] = ep_test_mbuf(f, len);
		via_meta[i] = ep_test_mbuf(f, len);
		memset(ep_meta(via_rx[i]), 0x5a, sizeof(struct ep_meta));
		memset(ep_meta(via_meta[i]), 0x5a, sizeof(struct ep_meta));
		ep_meta(via_meta[i])->in_port = port;
	}
	w->rx_port = port;
	uint16_t out_rx = st->fn(st->ctx, via_rx, next_rx, 32);
	w->rx_port = EP_RX_PORT_META;
	uint16_t out_meta = st->fn(st->ctx, via_meta, next_meta, 32);

	EP_CHECK_EQ(out_rx, out_meta);
	EP_CHECK(out_rx > 0 && out_rx < 32);
	EP_CHECK_MEM(next_rx, next_meta, sizeof(next_rx));
	for (unsigned int i = 0; i < 32; i++) {
		wrong += ep_meta(via_rx[i])->in_port != port;
		wrong += memcmp(ep_meta(via_rx[i]), ep_meta(via_meta[i]),
				sizeof(struct ep_meta)) != 0;
	}
	EP_CHECK_EQ(wrong, 0);
	for (unsigned int i = 0; i < 32; i++)
		if (next_rx[i] != EP_NEXT_CONSUMED) {
			rte_pktmbuf_free(via_rx[i]);
			rte_pktmbuf_free(via_meta[i]);
		}
}
