/* SPDX-License-Identifier: BSD-3-Clause */
/* vCMTS test bed: engine, ring ports, [cmts sg0] from text, workers, helpers. */
#include "test_cmts.h"

#include <arpa/inet.h>
#include <stdlib.h>

#include <rte_cryptodev.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_net_crc.h>
#include <rte_security.h>

#include "ep_depi.h"
#include "ep_docsis.h"
#include "test_pkt.h"


const uint8_t cb_rpd_port_mac[6] = { 0x02, 0, 0, 0, 0x0a, 0x01 };
const uint8_t cb_net_port_mac[6] = { 0x02, 0, 0, 0, 0x0b, 0x01 };
const uint8_t cb_rpd_mac[6] = { 0x02, 0, 0, 0, 0x0a, 0x02 };

/* 19 lines: the text starts on line 20 of test.conf. */
static const char head[] =
	"[cmts]\n"
	"crypto_sessions = 1024\n"
	"[cmts sg0]\n"
	"rpd_port = rpd\n"
	"net_port = net\n"
	"cmts_ip = " CB_CMTS_IP "\n"
	"rpd_ip = " CB_RPD_IP "\n"
	"rpd_mac = 02:00:00:00:0a:02\n"
	"%s"
	"%s"
	"channel = 0 ofdm rate=1.89G session=0x1000\n"
	"channel = 1 ofdm rate=1.89G session=0x1001\n"
	"channel = 2 ofdm rate=1.89G session=0x1002\n"
	"channel = 3 scqam rate=42.24M session=0x1003\n"
	"bonding_group = 0 0,1,2\n"
	"bonding_group = 1 0\n"
	"bonding_group = 2 3\n"
	"us_channel = 0 session=0x2000\n"
	"us_channel = 1 session=0x2001\n";

static int
ring_port(struct cb *t, int i, const char *name, const uint8_t *mac, struct ep_err *err)
{
	static uint32_t seq;
	struct ep_port *p = &t->e.ports[i];
	uint16_t pid;

	snprintf(t->vdev[i], sizeof(t->vdev[i]), "net_ring_cb%u", seq++);
	if (rte_dev_probe(t->vdev[i]) != 0 || rte_eth_dev_get_port_by_name(t->vdev[i], &pid) != 0)
		return ep_err_set(err, "cannot create %s", t->vdev[i]);
	if (rte_eth_dev_configure(pid, 1, 1, &(struct rte_eth_conf){ 0 }) != 0 ||
	    rte_eth_rx_queue_setup(pid, 0, 1024, SOCKET_ID_ANY, NULL, ep_test_pool()) != 0 ||
	    rte_eth_tx_queue_setup(pid, 0, 1024, SOCKET_ID_ANY, NULL) != 0 ||
	    rte_eth_dev_start(pid) != 0)
		return ep_err_set(err, "cannot start %s", t->vdev[i]);
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->index = (uint16_t)i;
	p->port_id = pid;
	memcpy(&p->mac, mac, 6);
	p->started = true;
	return 0;
}

static struct ep_worker *
worker(struct cb *t, const char *name, unsigned int id)
{
	struct ep_worker *w = rte_zmalloc("cb_worker", sizeof(*w), RTE_CACHE_LINE_SIZE);

	snprintf(w->name, sizeof(w->name), "%s", name);
	w->id = id;
	w->engine = &t->e;
	w->burst = 32;
	t->e.workers[t->e.n_workers++] = w;
	return w;
}

struct cb *
cb_try(const char *text, struct ep_err *err)
{
	struct cb *t = calloc(1, sizeof(*t));
	char *cfgtext = malloc(sizeof(head) + strlen(text) + 64);
	char *p;

	/* Small tables unless the text sizes them (the unit tests' EAL has 256
	 * MB); a comment keeps the line numbers when it does. */
	p = cfgtext + sprintf(cfgtext, head,
			      strstr(text, "max_cms") ? "# sized below\n" : "max_cms = 64\n",
			      strstr(text, "max_rules") ? "# sized below\n" : "max_rules = 4096\n");
	strcpy(p, text);
	t->e.qsbr = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(2), RTE_CACHE_LINE_SIZE);
	rte_rcu_qsbr_init(t->e.qsbr, 2);
	t->e.n_ports = 2;
	t->e.burst = 32;
	if (ring_port(t, CB_RPD, "rpd", cb_rpd_port_mac, err) < 0 ||
	    ring_port(t, CB_NET, "net", cb_net_port_mac, err) < 0)
		goto fail;
	t->cfg = ep_cfg_parse(cfgtext, "test.conf", err);
	if (t->cfg == NULL)
		goto fail;
	t->e.cfg = t->cfg;
	t->ds = worker(t, "ds", 0);
	t->us = worker(t, "us", 1);
	t->c = rte_zmalloc("cmts", sizeof(*t->c), RTE_CACHE_LINE_SIZE);
	t->c->e = &t->e;
	cmts_global = t->c;
	/* Three queue pairs: the two workers' and the helpers'. */
	if (cmts_crypto_init(t->c, t->cfg, 3, err) < 0 || cmts_load_config(t->c, t->cfg, err) < 0 ||
	    ep_cfg_check_unused(t->cfg, err) < 0)
		goto fail;
	t->sg = t->c->sg[0];
	if (cmts_ds_build(t->sg, t->ds, t->sg->rpd_port, err) < 0 ||
	    cmts_us_build(t->sg, t->us, t->sg->net_port, err) < 0)
		goto fail;
	t->qp = 2;
	t->op_pool = rte_crypto_op_pool_create("cb_ops", RTE_CRYPTO_OP_TYPE_SYMMETRIC, 64, 0, 16,
					       SOCKET_ID_ANY);
	if (t->op_pool == NULL) {
		ep_err_set(err, "no crypto op pool");
		goto fail;
	}
	free(cfgtext);
	return t;
fail:
	free(cfgtext);
	cb_free(t);
	return NULL;
}

struct cb *
cb_new(const char *text)
{
	struct ep_err err;
	struct cb *t = cb_try(text, &err);

	if (t == NULL) {
		printf("    test bed: %s\n", err.msg);
		fflush(stdout);
		abort();
	}
	return t;
}

void
cb_free(struct cb *t)
{
	if (t == NULL)
		return;
	if (t->ds != NULL)
		cmts_ds_free(t->ds->pipeline_ctx);
	if (t->us != NULL)
		cmts_us_free(t->us->pipeline_ctx);
	rte_free(t->ds);
	rte_free(t->us);
	if (t->c != NULL)
		cmts_free(t->c);
	rte_mempool_free(t->op_pool);
	for (int i = 0; i < 2; i++) {
		struct rte_mbuf *m[32];
		uint16_t k;

		if (!t->e.ports[i].started)
			continue;
		while ((k = rte_eth_rx_burst(t->e.ports[i].port_id, 0, m, 32)) != 0)
			rte_pktmbuf_free_bulk(m, k);
		rte_eth_dev_stop(t->e.ports[i].port_id);
		rte_eth_dev_close(t->e.ports[i].port_id);
		rte_eal_hotplug_remove("vdev", t->vdev[i]);
	}
	ep_cfg_free(t->cfg);
	rte_free(t->e.qsbr);
	free(t);
}

void
cb_key(uint32_t id, uint8_t kseq, uint8_t key[16], uint8_t iv[16])
{
	for (int i = 0; i < 16; i++) {
		key[i] = (uint8_t)(id * 31 + kseq * 7 + i * 13);
		iv[i] = (uint8_t)(id * 17 + kseq * 3 + i * 5 + 1);
	}
}

const char *
cb_cm_line(uint32_t id, int bg, const char *extra)
{
	static char line[512];
	uint8_t key[16], iv[16];
	char k[33], v[33];

	cb_key(id, 1, key, iv);
	for (int i = 0; i < 16; i++) {
		sprintf(k + 2 * i, "%02x", key[i]);
		sprintf(v + 2 * i, "%02x", iv[i]);
	}
	snprintf(line, sizeof(line), "cm = id=%u mac=02:00:00:01:00:%02x cpe=198.19.%u.1@02:00:00:02:00:%02x,"
		 "198.19.%u.2 bg=%d said=%u sid=%u kseq=1 key=%s iv=%s %s\n", id, id, id, id, id, bg, id,
		 id, k, v, extra ? extra : "");
	return line;
}

uint16_t
cb_sent(struct cb *t, int port, struct rte_mbuf **out, uint16_t max)
{
	uint16_t n = 0, k;

	while (n < max && (k = rte_eth_rx_burst(t->e.ports[port].port_id, 0, out + n,
						(uint16_t)RTE_MIN(max - n, 32))) != 0)
		n = (uint16_t)(n + k);
	return n;
}

uint16_t
cb_ds(struct cb *t, struct rte_mbuf **in, uint16_t n, struct rte_mbuf **out, uint16_t max)
{
	struct cmts_ds *d = t->ds->pipeline_ctx;

	if (n != 0)
		ep_worker_run_burst(t->ds, in, n);
	ep_worker_flush_tx(t->ds);
	for (int i = 0; i < 100 && d->in_flight != 0; i++) {
		t->ds->stage_tsc = rte_rdtsc();
		cmts_ds_service(t->ds);
	}
	return cb_sent(t, CB_RPD, out, max);
}

uint16_t
cb_us(struct cb *t, struct rte_mbuf **in, uint16_t n, struct rte_mbuf **out, uint16_t max)
{
	if (n != 0)
		ep_worker_run_burst(t->us, in, n);
	ep_worker_flush_tx(t->us);
	return cb_sent(t, CB_NET, out, max);
}

uint64_t
cb_drops(struct ep_worker *w, int reason)
{
	uint64_t n = w->rx_stage.stats.drops[reason] + w->tx_stage.stats.drops[reason] +
		     w->service_stage.stats.drops[reason];

	for (int i = 0; i < w->n_stages; i++)
		n += w->stages[i].stats.drops[reason];
	return n;
}

uint16_t
cb_udp4(uint8_t *b, const char *dst, uint16_t sport, uint16_t dport, uint16_t size,
	const uint8_t *dmac)
{
	static const uint8_t def[6] = { 0x02, 0, 0, 0x02, 0, 0x01 };
	struct tp_spec s = tp_default(0, IPPROTO_UDP);

	memcpy(s.dmac, dmac != NULL ? dmac : def, 6);
	s.dst4 = tp_ip4(dst);
	s.sport = sport;
	s.dport = dport;
	s.payload = (uint16_t)(size - 14 - 20 - 8);
	return tp_build(b, &s);
}

/* ---- taking DEPI packets apart ---- */

static int
push_frame(struct cb_frame *f, int *nf, int max, const uint8_t *p, uint32_t len, uint32_t session,
	   uint8_t segs)
{
	if (*nf == max || len > sizeof(f[0].b))
		return -1;
	memcpy(f[*nf].b, p, len);
	f[*nf].len = (uint16_t)len;
	f[*nf].session = session;
	f[*nf].depi_segs = segs;
	(*nf)++;
	return 0;
}

/* The frames of a D-MPT stream: TS payloads joined (pointer bytes out),
 * parsed as MAC frames and 0xFF stuffing; every pointer must land on the
 * start of a frame or of stuffing. */
static int
mpt_frames(const uint8_t *ts, uint32_t n_ts, uint32_t session, struct cb_frame *f, int *nf,
	   int max)
{
	static uint8_t stream[64 * 1024];
	uint32_t len = 0, starts[512], n_starts = 0, pos = 0;
	bool synced = false;

	for (uint32_t k = 0; k < n_ts; k++) {
		const uint8_t *t = ts + EP_MPT_TS_LEN * k;
		bool pusi = (t[1] & 0x40) != 0;

		if (t[0] != EP_MPT_SYNC || ((t[1] & 0x1f) << 8 | t[2]) != EP_MPT_DOCSIS_PID)
			return -1;
		if (pusi) {
			if (n_starts == RTE_DIM(starts))
				return -1;
			starts[n_starts++] = len + t[4];
			memcpy(stream + len, t + 5, EP_MPT_TS_LEN - 5);
			len += EP_MPT_TS_LEN - 5;
		} else {
			memcpy(stream + len, t + 4, EP_MPT_TS_LEN - 4);
			len += EP_MPT_TS_LEN - 4;
		}
	}
	if (n_starts == 0)
		return 0;
	pos = starts[0];
	synced = true;
	for (uint32_t s = 1; s < n_starts; s++)
		if (starts[s] < starts[0])
			return -1;
	while (synced && pos < len) {
		struct ep_docsis_hdr h;
		bool ok = false;

		if (stream[pos] == EP_DOCSIS_FC_STUFF) {
			for (uint32_t s = 0; s < n_starts; s++)
				ok |= starts[s] == pos;
			pos++;
			continue;
		}
		if (ep_docsis_parse(stream + pos, len - pos, &h) != EP_DOCSIS_OK ||
		    h.frame_len > len - pos)
			return -1;
		if (push_frame(f, nf, max, stream + pos, h.frame_len, session, 0) < 0)
			return -1;
		/* A pointer between pos and the frame's end would be wrong. */
		for (uint32_t s = 0; s < n_starts; s++)
			if (starts[s] > pos && starts[s] < pos + h.frame_len)
				return -1;
		pos += h.frame_len;
		(void)ok;
	}
	return 0;
}

int
cb_depi_frames(struct rte_mbuf **pkts, uint16_t n, struct cb_frame *f, int max)
{
	static uint8_t ts[256 * EP_MPT_TS_LEN];
	uint32_t n_ts = 0, mpt_session = 0;
	int nf = 0;

	for (uint16_t i = 0; i < n; i++) {
		uint8_t buf[9216];
		const uint8_t *p = rte_pktmbuf_read(pkts[i], 0, pkts[i]->pkt_len, buf);
		uint32_t len = pkts[i]->pkt_len, l2tp_len;
		const uint8_t *l2tp = p + 34;
		struct ep_depi_info d;

		if (len < 34 + EP_DEPI_HDR_LEN || p[12] != 0x08 || p[13] != 0x00 || p[23] != 115)
			return -1;
		l2tp_len = (uint32_t)(p[16] << 8 | p[17]) - 20;
		if (34 + l2tp_len != len || ep_depi_get_hdr(l2tp, l2tp_len, &d) < 0)
			return -1;
		if (l2tp[EP_DEPI_HDR_LEN] == EP_MPT_SYNC) {
			uint32_t k = (l2tp_len - EP_DEPI_HDR_LEN) / EP_MPT_TS_LEN;

			if ((l2tp_len - EP_DEPI_HDR_LEN) % EP_MPT_TS_LEN != 0 ||
			    n_ts + k > RTE_DIM(ts) / EP_MPT_TS_LEN)
				return -1;
			memcpy(ts + EP_MPT_TS_LEN * n_ts, l2tp + EP_DEPI_HDR_LEN, EP_MPT_TS_LEN * k);
			n_ts += k;
			mpt_session = d.session;
		} else {
			uint16_t seg[EP_PSP_MAX_SEGS];
			int off = ep_psp_parse(l2tp, l2tp_len, d.count, seg, EP_PSP_MAX_SEGS);

			if (off < 0)
				return -1;
			for (int s = 0; s < d.count; s++) {
				uint16_t sl = seg[s] & EP_PSP_LEN_MASK;

				if ((seg[s] & (EP_PSP_B | EP_PSP_E)) != (EP_PSP_B | EP_PSP_E) ||
				    push_frame(f, &nf, max, l2tp + off, sl, d.session, d.count) < 0)
					return -1;
				off += sl;
			}
		}
	}
	if (n_ts != 0 && mpt_frames(ts, n_ts, mpt_session, f, &nf, max) < 0)
		return -1;
	return nf;
}

/* ---- BPI+ as a cable modem does it (same device, the helpers' queue pair) ---- */

static int
crypt(struct cb *t, void *sess, uint8_t *buf, uint32_t at, uint32_t pdu, bool crc, bool cipher,
      const uint8_t iv[16])
{
	struct cmts_crypto_range r = { at, crc ? pdu - 4 : 0, at + 12, cipher ? pdu - 12 : 0 };

	return cmts_crypto_once(t->c, t->qp, t->op_pool, ep_test_pool(), sess, iv, buf, at + pdu, &r);
}

int
cb_ds_decode(struct cb *t, uint32_t cm_id, const struct cb_frame *f, uint8_t *eth)
{
	const struct cmts_cm *cm = cmts_cm_get(t->sg, cm_id);
	struct ep_docsis_hdr h;
	uint8_t buf[2400];
	uint32_t pdu;

	if (cm == NULL || ep_docsis_parse(f->b, f->len, &h) != EP_DOCSIS_OK ||
	    h.frame_len != f->len || !ep_docsis_hcs_ok(f->b, h.hdr_len))
		return -1;
	pdu = f->len - h.hdr_len;
	memcpy(buf, f->b, f->len);
	if (h.bpi_type == EP_DOCSIS_EH_BP_DOWN && h.enc) {
		const struct cmts_key *k = cm->key[h.key_seq & 1];

		if (k == NULL || k->kseq != h.key_seq ||
		    crypt(t, k->sess_us, buf, h.hdr_len, pdu, true, true, k->iv) < 0)
			return -1;
	} else {
		uint32_t c = rte_cpu_to_le_32(rte_net_crc_calc(buf + h.hdr_len, pdu - 4,
							       RTE_NET_CRC32_ETH));

		if (memcmp(&c, buf + h.hdr_len + pdu - 4, 4) != 0)
			return -1;
	}
	memcpy(eth, buf + h.hdr_len, pdu - 4);
	return (int)(pdu - 4);
}

uint16_t
cb_us_frame(struct cb *t, uint32_t cm_id, int kseq, const uint8_t *eth, uint16_t len, uint8_t *out)
{
	const struct cmts_cm *cm = cmts_cm_get(t->sg, cm_id);
	struct ep_docsis_pdu_spec s = { 0 };
	uint16_t hl;
	uint32_t crc;

	if (kseq >= 0) {
		s.bpi_type = EP_DOCSIS_EH_BP_UP2;
		s.key_seq = (uint8_t)kseq;
		s.enc = true;
		s.said = cm->sid[0];
	}
	hl = ep_docsis_build(out, 64, &s, len + 4u);
	memcpy(out + hl, eth, len);
	if (kseq >= 0) {
		const struct cmts_key *k = cm->key[kseq & 1];

		/* CRC, then encryption: what the downlink direction does. */
		if (k == NULL || crypt(t, k->sess_ds, out, hl, len + 4u, true, true, k->iv) < 0)
			return 0;
	} else {
		crc = rte_cpu_to_le_32(rte_net_crc_calc(eth, len, RTE_NET_CRC32_ETH));
		memcpy(out + hl + len, &crc, 4);
	}
	return (uint16_t)(hl + len + 4);
}

static struct rte_mbuf *
uepi_pkt(uint32_t session, uint16_t seq, const uint16_t *segs, int nseg, const uint8_t *data,
	 uint32_t dlen)
{
	uint8_t b[9216];
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(b + 14);
	uint32_t l2tp = 34, len = l2tp + EP_DEPI_HDR_LEN + 2u * nseg + dlen;

	memcpy(b, cb_rpd_port_mac, 6);
	memcpy(b + 6, cb_rpd_mac, 6);
	b[12] = 0x08;
	b[13] = 0x00;
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = 0x45;
	ip->total_length = htons((uint16_t)(len - 14));
	ip->time_to_live = 64;
	ip->next_proto_id = 115;
	inet_pton(AF_INET, CB_RPD_IP, &ip->src_addr);
	inet_pton(AF_INET, CB_CMTS_IP, &ip->dst_addr);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	ep_depi_put_hdr(b + l2tp, session, 0, (uint8_t)nseg, seq);
	for (int k = 0; k < nseg; k++)
		ep_psp_put_seg(b + l2tp + EP_DEPI_HDR_LEN + 2 * k, segs[k] & EP_PSP_B,
			       segs[k] & EP_PSP_E, segs[k] & EP_PSP_LEN_MASK);
	memcpy(b + l2tp + EP_DEPI_HDR_LEN + 2 * nseg, data, dlen);
	return ep_test_mbuf(b, (uint16_t)len);
}

uint16_t
cb_uepi(struct cb *t, uint32_t session, uint16_t *seq, uint16_t sid, const uint8_t *burst,
	uint32_t len, const uint32_t *cuts, int ncuts, struct rte_mbuf **out)
{
	uint8_t hdr[EP_UEPI_HDR_SEG_LEN], trl[EP_UEPI_TRL_SEG_LEN], data[9216];
	struct ep_uepi_burst hb = { .flags = 0x40, .iuc = 6, .sid = sid, .minislot = 1000 };
	uint32_t from = 0;
	uint16_t n = 0;

	(void)t;
	ep_uepi_put_hdr_seg(hdr, &hb);
	ep_uepi_put_trl_seg(trl, 10);
	for (int k = 0; k <= ncuts; k++) {
		uint32_t to = k < ncuts ? cuts[k] : len, dl = 0;
		uint16_t segs[3];
		int ns = 0;

		if (k == 0) {
			memcpy(data, hdr, sizeof(hdr));
			dl = sizeof(hdr);
			segs[ns++] = EP_PSP_B | sizeof(hdr);
		}
		if (to > from) {
			memcpy(data + dl, burst + from, to - from);
			dl += to - from;
			segs[ns++] = (uint16_t)(to - from);
		}
		if (k == ncuts) {
			memcpy(data + dl, trl, sizeof(trl));
			dl += sizeof(trl);
			segs[ns++] = EP_PSP_E | sizeof(trl);
		}
		out[n++] = uepi_pkt(session, (*seq)++, segs, ns, data, dl);
		from = to;
	}
	return n;
}
