/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmts-gen: a service group's traffic at speed, generated inside the engine
 * so the vCMTS can be driven without a NIC (the role of the Traffic-Sim
 * pktgen beside Intel's vCMTS reference data plane).  One worker plays both
 * sides of one SG:
 *
 *   downstream  Ethernet/IPv4-or-IPv6/UDP frames from the network toward
 *               every CPE address of every CM (flow f: CM f mod #CMs, its
 *               address f / #CMs), with the frame-size mix; ds_cls_share %
 *               of the flows aim at one of their CM's classifiers (its
 *               protocol and destination port) and ds_filter_share % at a
 *               rule of their CM's first filter group, the rest at port
 *               5000 + f mod 1000.  Sent on ds_port, the SG's net_port.
 *   upstream    what an RPD sends: UEPI (L2TPv3 PSP) packets on the SG's
 *               upstream channels, each burst one CM's us_burst_frames
 *               DOCSIS frames with a burst header segment and a trailer
 *               segment, frames cut across packets wherever the MTU falls,
 *               sequence numbers per channel.  Frames carry the BPI+ privacy
 *               EH and are encrypted with the CM's TEK (CRC-32 included) --
 *               once per CM and frame size at build time, through the SG's
 *               crypto device.  Sent on us_port, the SG's rpd_port.
 *
 * The worker has no rx: its source builds a burst per direction (timed as
 * the `rx` stage), the `gen_tx` stage sends them.  What the port does not
 * take stays pending, retried by the service hook, and the direction builds
 * nothing new until it is gone: nothing is dropped, so sequence numbers and
 * cut frames stay whole however slow the receiver.  Rates (packets per
 * second, 0 = as fast as the port takes) are token buckets in TSC cycles.
 *
 * Per generated frame: a 64-byte template copy, lengths and checksums, the
 * payload zeroed (a consumer in the same process encrypted it in place);
 * per upstream packet the frames' bytes are copied from the templates.
 *
 * Where the consumer finds the packets (`hold_pkts`).  A NIC writes a
 * received frame by DMA: into the last-level cache where the platform
 * injects I/O writes there (Intel's Data Direct I/O into a few ways of the
 * LLC; AMD's Smart Data Cache Injection into L3, steered by PCIe TLP
 * processing hints), otherwise into memory, invalidating cached copies.
 * Never into another core's private L1/L2 in the Modified state, which is
 * where a generator on another core leaves a packet it hands over at once:
 * the consumer then pulls every line out of the generator's core.  With
 * hold_pkts = N the generator keeps each packet back until N newer ones
 * were written (a FIFO, order kept): N packets' bytes larger than the
 * generator core's L2 have pushed the old one out of it, into the shared
 * L3 (a mostly-exclusive victim cache of the L2s on AMD's Zen), which is
 * what DDIO leaves.  0 (the default) hands every packet over at once.
 *
 * Frames use the same size convention as the gen pipeline (Ethernet frame
 * with its 4-byte FCS): a 1280-byte downstream frame is 1276 bytes in the
 * mbuf; an upstream 1280-byte frame is a DOCSIS PDU of 1280 bytes (the
 * Ethernet frame and its CRC) after the MAC header.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_net_crc.h>
#include <rte_udp.h>

#include "ep_ctl.h"
#include "ep_depi.h"
#include "ep_docsis.h"
#include "ep_meta.h"
#include "cmts_gen.h"
#include "cmts_worker.h"

#define GEN_POOL        16383           /* pool_mbufs by default */
#define GEN_TPL         64              /* template bytes copied per downstream frame */
#define GEN_MAX_FLOWS   (64 * 1024)
#define GEN_MIN_SIZE    66              /* Ethernet/IPv6/UDP and the FCS */
#define GEN_MAX_SIZE    1518
#define GEN_US_SEGS     32              /* PSP segments per UEPI packet at most */
#define GEN_CALL_MS     1000
#define GEN_MAX_HOLD    4096            /* hold_pkts: a quarter of the pool per direction */

static const uint8_t net_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x02 };

/* A downstream flow's Ethernet/IP/UDP headers, lengths and checksums 0. */
struct gen_flow {
	uint8_t hdr[GEN_TPL];
	uint32_t sum;           /* IPv4 header, or IPv6 pseudo-header + UDP ports */
	uint8_t v6;
} __rte_cache_aligned;

struct gen_pace {
	uint64_t rate;          /* packets/s, 0: no limit */
	uint64_t credit;        /* packets x hz */
	uint64_t last;
};

struct gen_dir {
	bool on;
	uint16_t port;          /* logical port */
	struct gen_pace pace;
	struct cmts_gen_mix mix;
	uint32_t slot;          /* position in mix.sched */
	struct rte_mbuf *pend[EP_BURST_MAX];
	uint16_t n_pend, pend_off;
	struct cmts_fifo hold;          /* written, not yet handed over (hold_pkts) */
	uint16_t hold_pkts;
	uint64_t pkts, frames, bytes, alloc_failed;
};

struct cmts_gen {
	struct cmts_sg *sg;
	struct ep_worker *w;
	struct rte_mempool *pool;
	uint64_t hz;
	struct gen_dir ds, us;

	/* downstream */
	struct gen_flow *flows;
	uint32_t n_flows, next_flow;

	/* upstream: per CM and size class one encrypted DOCSIS frame */
	uint8_t *frames;        /* [n_cm][classes][frame_room] */
	uint16_t *frame_len;    /* [n_cm][classes] */
	uint16_t *cm_sid;       /* [n_cm] scheduled SID of the CM's bursts */
	uint32_t n_cm, frame_room;
	uint8_t n_ch, ch[CMTS_MAX_US_CH];
	uint32_t us_sess[CMTS_MAX_US_CH];
	uint16_t seq[CMTS_MAX_US_CH];
	uint8_t uepi_tpl[34];   /* Ethernet + IPv4 toward the CMTS */
	uint32_t uepi_sum;
	uint32_t mtu, burst_frames;
	/* the burst being sent */
	bool in_burst;
	uint32_t cur_cm, cur_ch, frames_left, cur_bursts;
	const uint8_t *fr;
	uint32_t fr_len, fr_off;
};

/* ---- frame-size mixes ---- */

static uint32_t
gcd(uint32_t a, uint32_t b)
{
	while (b != 0) {
		uint32_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

int
cmts_gen_mix_parse(struct cmts_gen_mix *mx, const char *spec, struct ep_err *err)
{
	char buf[96], *tok, *save = NULL;
	uint32_t g = 0, total = 0, credit[CMTS_GEN_MAX_CLASSES] = { 0 };

	if (strcmp(spec, "imix-down") == 0)
		spec = "84:15,256:10,1280:75";
	else if (strcmp(spec, "imix-up") == 0)
		spec = "84:65,256:18,1280:17";
	if (strlen(spec) >= sizeof(buf))
		return ep_err_set(err, "size list too long");
	memset(mx, 0, sizeof(*mx));
	snprintf(mx->spec, sizeof(mx->spec), "%s", spec);
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		unsigned long size, weight = 1;
		char *end;

		if (mx->n == CMTS_GEN_MAX_CLASSES)
			return ep_err_set(err, "more than %d sizes", CMTS_GEN_MAX_CLASSES);
		size = strtoul(tok, &end, 10);
		if (*end == ':')
			weight = strtoul(end + 1, &end, 10);
		if (end == tok || *end != '\0' || size < GEN_MIN_SIZE || size > GEN_MAX_SIZE ||
		    weight == 0 || weight > CMTS_GEN_MAX_SCHED)
			return ep_err_set(err, "'%s': want size[:weight] with size %d..%d", tok,
					  GEN_MIN_SIZE, GEN_MAX_SIZE);
		mx->size[mx->n] = (uint16_t)size;
		mx->weight[mx->n++] = (uint32_t)weight;
		g = gcd(g, (uint32_t)weight);
	}
	if (mx->n == 0)
		return ep_err_set(err, "no size");
	for (int k = 0; k < mx->n; k++)
		total += mx->weight[k] / g;
	if (total > CMTS_GEN_MAX_SCHED)
		return ep_err_set(err, "'%s': the mix repeats after %u frames (at most %d)", spec,
				  total, CMTS_GEN_MAX_SCHED);
	mx->period = total;
	/* Smooth weighted round robin: each class as evenly spread as its
	 * weight allows, the same order every run. */
	for (uint32_t i = 0; i < total; i++) {
		int best = 0;

		for (int k = 0; k < mx->n; k++) {
			credit[k] += mx->weight[k] / g;
			if (credit[k] > credit[best])
				best = k;
		}
		credit[best] -= total;
		mx->sched[i] = (uint8_t)best;
	}
	return 0;
}

/* ---- pacing ---- */

static void
pace_init(struct gen_pace *p, uint64_t rate, uint64_t now)
{
	p->rate = rate;
	p->credit = 0;
	p->last = now;
}

/* Packets due now, at most @p max; the bucket holds one burst. */
static uint16_t
pace_take(struct gen_pace *p, uint64_t hz, uint64_t now, uint16_t max)
{
	uint64_t dt = now - p->last, cap = (uint64_t)max * hz, n;

	if (p->rate == 0)
		return max;
	p->last = now;
	if (dt > hz)
		dt = hz;        /* a long pause: no more than a burst anyway */
	p->credit += dt * p->rate;
	if (p->credit > cap)
		p->credit = cap;
	n = p->credit / hz;
	p->credit -= n * hz;
	return (uint16_t)n;
}

/* ---- downstream ---- */

static uint32_t
sum16(const void *p, size_t n, uint32_t sum)
{
	return __rte_raw_cksum(p, n, sum);
}

static void
flow_init(struct gen_flow *f, const struct cmts_cpe *cpe, const struct rte_ether_addr *src_mac,
	  uint16_t sport, uint16_t dport)
{
	static const uint8_t src6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)f->hdr;
	struct rte_udp_hdr *udp;

	memset(f, 0, sizeof(*f));
	if (cpe->has_mac)
		rte_ether_addr_copy(&cpe->mac, &eh->dst_addr);
	else
		memcpy(&eh->dst_addr, net_mac, 6);
	rte_ether_addr_copy(src_mac, &eh->src_addr);
	if (cpe->family == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);

		eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
		ip->version_ihl = 0x45;
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = RTE_BE32(0xc6120002);     /* 198.18.0.2 */
		memcpy(&ip->dst_addr, cpe->addr, 4);
		f->sum = sum16(ip, sizeof(*ip), 0);
		udp = (struct rte_udp_hdr *)(ip + 1);
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eh + 1);

		eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
		ip->vtc_flow = RTE_BE32(6u << 28);
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = 64;
		memcpy(ip->src_addr, src6, 16);
		memcpy(ip->dst_addr, cpe->addr, 16);
		f->v6 = 1;
		udp = (struct rte_udp_hdr *)(ip + 1);
	}
	udp->src_port = rte_cpu_to_be_16(sport);
	udp->dst_port = rte_cpu_to_be_16(dport);
	if (f->v6) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(eh + 1);
		uint32_t s = sum16(ip->src_addr, 32, 0);

		s += rte_cpu_to_be_16(IPPROTO_UDP);
		f->sum = sum16(udp, 4, s);
	}
}

/* The port of rule/classifier match @p m a UDP frame to @p fam can hit, or
 * -1 (another protocol, another family). */
static int
aim(const struct ep_acl_rule *m, uint8_t fam, uint16_t *sport)
{
	if ((!m->any_proto && m->proto != IPPROTO_UDP) || (m->family != 0 && m->family != fam))
		return -1;
	*sport = m->sport_lo != 0 ? m->sport_lo : 1024;
	return m->dport_lo;
}

static int
flows_build(struct cmts_gen *g, uint32_t cls_share, uint32_t filter_share, int socket,
	    struct ep_err *err)
{
	struct cmts_sg *sg = g->sg;
	const struct rte_ether_addr *src = &sg->e->ports[g->ds.port].mac;
	uint32_t n = 0, n_cm = 0;
	const struct cmts_cm **cms = calloc(sg->p.max_cms + 1, sizeof(*cms));

	if (cms == NULL)
		return ep_err_set(err, "cmts-gen: out of memory");
	for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
		const struct cmts_cm *cm = cmts_cm_get(sg, id);

		if (cm != NULL && cm->n_cpe != 0) {
			cms[n_cm++] = cm;
			n += cm->n_cpe;
		}
	}
	if (n == 0 || n > GEN_MAX_FLOWS) {
		free(cms);
		return ep_err_set(err, "cmts-gen: the SG's CMs have %u CPE addresses (want 1..%d)",
				  n, GEN_MAX_FLOWS);
	}
	g->flows = rte_zmalloc_socket("cmts_gen_flows", sizeof(g->flows[0]) * n,
				      RTE_CACHE_LINE_SIZE, socket);
	if (g->flows == NULL) {
		free(cms);
		return ep_err_set(err, "cmts-gen: out of memory for %u flows", n);
	}
	for (uint32_t k = 0; k < CMTS_MAX_CPE; k++) {
		for (uint32_t c = 0; c < n_cm; c++) {
			const struct cmts_cm *cm = cms[c];
			const struct cmts_cpe *cpe = &cm->cpe[k];
			uint32_t f = g->n_flows, r = f % 100, j = f / 100;
			uint16_t sport = 1024;
			int dport = -1;

			if (k >= cm->n_cpe)
				continue;
			if (r < cls_share) {
				/* the CM's classifiers in turn */
				for (uint32_t t = 0; t < CMTS_MAX_CLS && dport < 0; t++) {
					const struct cmts_cls *cl = &cm->cls[(j + t) % CMTS_MAX_CLS];

					if (cl->in_use)
						dport = aim(&cl->m, cpe->family, &sport);
				}
			} else if (r < cls_share + filter_share && cm->fg[0] != 0) {
				uint32_t seen = 0, want;

				for (uint32_t q = 0; q < sg->n_filters; q++)
					seen += sg->filters[q].set == cm->fg[0];
				want = seen != 0 ? j % seen : 0;
				for (uint32_t q = 0, s = 0; q < sg->n_filters && dport < 0; q++) {
					if (sg->filters[q].set != cm->fg[0])
						continue;
					if (s++ >= want)
						dport = aim(&sg->filters[q], cpe->family, &sport);
				}
			}
			if (dport < 0) {
				sport = 1024;
				dport = 5000 + (int)(f % 1000);
			}
			flow_init(&g->flows[g->n_flows++], cpe, src, sport, (uint16_t)dport);
		}
	}
	free(cms);
	return 0;
}

static __rte_always_inline void
ds_fill(const struct gen_flow *f, struct rte_mbuf *m, uint16_t size, uint16_t port)
{
	uint16_t len = (uint16_t)(size - RTE_ETHER_CRC_LEN), l3 = (uint16_t)(len - 14);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct ep_meta *md = ep_meta(m);

	memcpy(d, f->hdr, GEN_TPL);
	if (len > GEN_TPL)
		memset(d + GEN_TPL, 0, len - GEN_TPL);
	if (!f->v6) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + 14);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		uint16_t tl = rte_cpu_to_be_16(l3);

		ip->total_length = tl;
		ip->hdr_checksum = (uint16_t)~__rte_raw_cksum_reduce(f->sum + tl);
		udp->dgram_len = rte_cpu_to_be_16((uint16_t)(l3 - 20));
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(d + 14);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		uint16_t ul = rte_cpu_to_be_16((uint16_t)(l3 - 40)), ck;

		ip->payload_len = ul;
		udp->dgram_len = ul;
		/* pseudo-header length and UDP length: the payload is zeros */
		ck = (uint16_t)~__rte_raw_cksum_reduce(f->sum + ul + ul);
		udp->dgram_cksum = ck == 0 ? 0xffff : ck;
	}
	m->data_len = len;
	m->pkt_len = len;
	memset(md, 0, sizeof(*md));
	md->in_port = port;
}

static uint16_t
ds_make(struct cmts_gen *g, struct rte_mbuf **pkts, uint16_t n)
{
	struct gen_dir *d = &g->ds;

	for (uint16_t i = 0; i < n; i++) {
		uint16_t size = d->mix.size[d->mix.sched[d->slot]];

		ds_fill(&g->flows[g->next_flow], pkts[i], size, d->port);
		if (++g->next_flow == g->n_flows)
			g->next_flow = 0;
		if (++d->slot == d->mix.period)
			d->slot = 0;
		d->bytes += size;
	}
	d->frames += n;
	return n;
}

/* ---- upstream ---- */

/* An Ethernet frame of @p size bytes with FCS from CPE 0 of @p cm (or the
 * CM itself) toward the network: @p out gets size - 4 bytes. */
static void
us_ether(const struct cmts_cm *cm, uint16_t size, uint8_t *out)
{
	static const uint8_t dst6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	uint16_t len = (uint16_t)(size - RTE_ETHER_CRC_LEN);
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)out;
	const struct cmts_cpe *cpe = cm->n_cpe != 0 ? &cm->cpe[0] : NULL;
	struct rte_udp_hdr *udp = NULL;
	uint16_t l3 = (uint16_t)(len - 14);

	memset(out, 0, len);
	memcpy(&eh->dst_addr, net_mac, 6);
	rte_ether_addr_copy(cpe != NULL && cpe->has_mac ? &cpe->mac : &cm->mac, &eh->src_addr);
	if (cpe == NULL) {
		eh->ether_type = RTE_BE16(0x88b5);      /* IEEE local experimental */
		return;
	}
	if (cpe->family == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);

		eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
		ip->version_ihl = 0x45;
		ip->total_length = rte_cpu_to_be_16(l3);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		memcpy(&ip->src_addr, cpe->addr, 4);
		ip->dst_addr = RTE_BE32(0xc6120002);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp = (struct rte_udp_hdr *)(ip + 1);
		udp->dgram_len = rte_cpu_to_be_16((uint16_t)(l3 - 20));
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eh + 1);

		eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
		ip->vtc_flow = RTE_BE32(6u << 28);
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(l3 - 40));
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = 64;
		memcpy(ip->src_addr, cpe->addr, 16);
		memcpy(ip->dst_addr, dst6, 16);
		udp = (struct rte_udp_hdr *)(ip + 1);
		udp->dgram_len = ip->payload_len;
		udp->src_port = RTE_BE16(5000);
		udp->dst_port = RTE_BE16(5001);
		udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);
		return;
	}
	udp->src_port = RTE_BE16(5000);
	udp->dst_port = RTE_BE16(5001);
}

/* One DOCSIS frame as the CM sends it: MAC header (privacy EH with the SID
 * and key sequence when BPI+ is on), Ethernet frame, CRC; encrypted. */
static int
us_frame(struct cmts_gen *g, const struct cmts_cm *cm, uint16_t size, uint16_t qp,
	 struct rte_mempool *ops, uint8_t *out, uint16_t *out_len)
{
	struct ep_docsis_pdu_spec s = { 0 };
	const struct cmts_key *k = cm->bpi ? cm->ds_key : NULL;
	uint16_t hl;

	if (k != NULL) {
		s.bpi_type = EP_DOCSIS_EH_BP_UP2;
		s.key_seq = k->kseq;
		s.enc = true;
		s.said = cm->sid[0];
	}
	hl = ep_docsis_build(out, g->frame_room, &s, size);
	if (hl == 0 || hl + size > g->frame_room)
		return -1;
	us_ether(cm, size, out + hl);
	*out_len = (uint16_t)(hl + size);
	if (k == NULL) {
		uint32_t crc = rte_cpu_to_le_32(rte_net_crc_calc(out + hl, size - 4u,
								 RTE_NET_CRC32_ETH));

		memcpy(out + hl + size - 4, &crc, 4);
		return 0;
	}
	{
		/* CRC, then encryption: the CM's direction is the downlink
		 * operation's (rte_security DOCSIS). */
		struct cmts_crypto_range r = { hl, size - 4u, hl + 12u, size - 12u };

		return cmts_crypto_once(g->sg->c, qp, ops, g->pool, k->sess_ds, k->iv, out,
					*out_len, &r);
	}
}

static int
us_build(struct cmts_gen *g, int socket, struct ep_err *err)
{
	struct cmts_sg *sg = g->sg;
	struct cmts_gen_mix *mx = &g->us.mix;
	struct rte_crypto_op **free_ops = NULL;
	struct rte_mempool *ops = NULL;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(g->uepi_tpl + 14);
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)g->uepi_tpl;
	char name[RTE_MEMPOOL_NAMESIZE];
	uint32_t n_free = 0, c = 0;
	uint16_t qp;
	int rc = -1;

	for (int k = 0; k < CMTS_MAX_US_CH; k++)
		if (sg->us_ch[k].in_use)
			g->us_sess[g->n_ch++] = sg->us_ch[k].session;
	if (g->n_ch == 0)
		return ep_err_set(err, "cmts-gen: service group %s has no us_channel", sg->name);
	for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
		const struct cmts_cm *cm = cmts_cm_get(sg, id);

		g->n_cm += cm != NULL && cm->n_sid != 0;
	}
	if (g->n_cm == 0)
		return ep_err_set(err, "cmts-gen: service group %s has no CM with a SID", sg->name);
	g->frame_room = EP_DOCSIS_HDR_MAX + GEN_MAX_SIZE;
	g->frames = rte_malloc_socket("cmts_gen_us", (size_t)g->n_cm * mx->n * g->frame_room, 0,
				      socket);
	g->frame_len = rte_malloc_socket("cmts_gen_usl", sizeof(uint16_t) * g->n_cm * mx->n, 0,
					 socket);
	g->cm_sid = rte_malloc_socket("cmts_gen_sid", sizeof(uint16_t) * g->n_cm, 0, socket);
	snprintf(name, sizeof(name), "cmts_gops_%u", g->w->id);
	if (g->frames == NULL || g->frame_len == NULL || g->cm_sid == NULL ||
	    cmts_crypto_worker_init(sg->c, &ops, &free_ops, &n_free, &qp, name, socket, err) < 0) {
		if (err->msg[0] == '\0')
			ep_err_set(err, "cmts-gen: out of memory for the upstream frames");
		return -1;
	}
	/* One operation at a time from the pool itself. */
	rte_mempool_put_bulk(ops, (void **)free_ops, n_free);
	n_free = 0;
	for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
		const struct cmts_cm *cm = cmts_cm_get(sg, id);

		if (cm == NULL || cm->n_sid == 0)
			continue;
		g->cm_sid[c] = cm->sid[0];
		for (int k = 0; k < mx->n; k++) {
			size_t at = ((size_t)c * mx->n + (size_t)k);

			if (us_frame(g, cm, mx->size[k], qp, ops, g->frames + at * g->frame_room,
				     &g->frame_len[at]) < 0) {
				ep_err_set(err, "cmts-gen: CM %u: could not build its %u-byte frame",
					   cm->id, mx->size[k]);
				goto out;
			}
		}
		c++;
	}
	/* Toward the CMTS as the RPD sends it. */
	rte_ether_addr_copy(&sg->e->ports[g->us.port].mac, &eh->dst_addr);
	rte_ether_addr_copy(&sg->rpd_mac, &eh->src_addr);
	eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = 0x45;
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = EP_IPPROTO_L2TP;
	ip->src_addr = sg->rpd_ip;
	ip->dst_addr = sg->cmts_ip;
	g->uepi_sum = sum16(ip, sizeof(*ip), 0);
	rc = 0;
out:
	cmts_crypto_worker_fini(ops, free_ops, n_free);
	return rc;
}

static void
next_frame(struct cmts_gen *g)
{
	struct gen_dir *d = &g->us;
	size_t at = (size_t)g->cur_cm * d->mix.n + d->mix.sched[d->slot];

	g->fr = g->frames + at * g->frame_room;
	g->fr_len = g->frame_len[at];
	g->fr_off = 0;
	d->bytes += d->mix.size[d->mix.sched[d->slot]];
	if (++d->slot == d->mix.period)
		d->slot = 0;
}

/*
 * One UEPI packet of the current burst (a new burst if none): a header
 * segment first in a burst's first packet, one segment per frame or frame
 * piece, the trailer segment last in its last packet.
 */
static void
us_fill(struct cmts_gen *g, struct rte_mbuf *m)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *), *l2tp = d + 34, *tab = l2tp + EP_DEPI_HDR_LEN;
	uint8_t *data = tab + 2 * GEN_US_SEGS, *w = data;
	uint32_t room = g->mtu - 20 - EP_DEPI_HDR_LEN, nseg = 0, tl, ch;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + 14);
	struct ep_meta *md = ep_meta(m);

	if (!g->in_burst) {
		struct ep_uepi_burst hb = { .flags = 0x40, .iuc = 6,
					    .sid = g->cm_sid[g->cur_cm], .minislot = 0 };

		g->in_burst = true;
		g->cur_ch = g->cur_bursts++ % g->n_ch;
		g->frames_left = g->burst_frames;
		next_frame(g);
		ep_uepi_put_hdr_seg(w, &hb);
		ep_psp_put_seg(tab + 2 * nseg++, true, false, EP_UEPI_HDR_SEG_LEN);
		w += EP_UEPI_HDR_SEG_LEN;
		room -= 2 + EP_UEPI_HDR_SEG_LEN;
	}
	ch = g->cur_ch;
	while (g->frames_left != 0 && room > 2 && nseg < GEN_US_SEGS - 1) {
		uint32_t take = RTE_MIN(g->fr_len - g->fr_off, room - 2);

		memcpy(w, g->fr + g->fr_off, take);
		ep_psp_put_seg(tab + 2 * nseg++, false, false, (uint16_t)take);
		w += take;
		room -= 2 + take;
		g->fr_off += take;
		if (g->fr_off < g->fr_len)
			break;          /* cut: the rest goes in the next packet */
		g->us.frames++;
		if (--g->frames_left != 0)
			next_frame(g);
	}
	if (g->frames_left == 0 && room >= 2 + EP_UEPI_TRL_SEG_LEN) {
		ep_uepi_put_trl_seg(w, 10);
		ep_psp_put_seg(tab + 2 * nseg++, false, true, EP_UEPI_TRL_SEG_LEN);
		w += EP_UEPI_TRL_SEG_LEN;
		g->in_burst = false;
		if (++g->cur_cm == g->n_cm)
			g->cur_cm = 0;
	}
	/* The table was sized for GEN_US_SEGS: close it up behind nseg. */
	memmove(tab + 2 * nseg, data, (size_t)(w - data));
	memcpy(d, g->uepi_tpl, 34);
	ep_depi_put_hdr(l2tp, g->us_sess[ch], 0, (uint8_t)nseg, g->seq[ch]++);
	tl = (uint32_t)(20 + EP_DEPI_HDR_LEN + 2 * nseg + (w - data));
	ip->total_length = rte_cpu_to_be_16((uint16_t)tl);
	ip->hdr_checksum = (uint16_t)~__rte_raw_cksum_reduce(g->uepi_sum +
							      rte_cpu_to_be_16((uint16_t)tl));
	m->data_len = (uint16_t)(14 + tl);
	m->pkt_len = m->data_len;
	memset(md, 0, sizeof(*md));
	md->in_port = g->us.port;
}

static uint16_t
us_make(struct cmts_gen *g, struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		us_fill(g, pkts[i]);
	return n;
}

/* ---- source, stage, service hook ---- */

static uint16_t
dir_make(struct cmts_gen *g, struct gen_dir *d, uint64_t now, struct rte_mbuf **pkts,
	 uint16_t max, uint16_t (*make)(struct cmts_gen *, struct rte_mbuf **, uint16_t))
{
	uint16_t n;

	if (!d->on || d->n_pend != 0 || max == 0)
		return 0;
	n = pace_take(&d->pace, g->hz, now, max);
	if (n == 0)
		return 0;
	if (rte_pktmbuf_alloc_bulk(g->pool, pkts, n) != 0) {
		d->alloc_failed += n;
		return 0;
	}
	n = make(g, pkts, n);
	if (d->hold_pkts == 0)
		return n;
	/* The new packets join the line; what is beyond hold_pkts leaves
	 * (the FIFO has room for hold_pkts plus a burst). */
	for (uint16_t i = 0; i < n; i++)
		cmts_fifo_push(&d->hold, pkts[i]);
	n = 0;
	while (d->hold.n > d->hold_pkts)
		pkts[n++] = cmts_fifo_pop(&d->hold);
	return n;
}

/* The worker's source: a burst of each direction that has nothing pending
 * (half a burst each when both are on). */
uint16_t
cmts_gen_source(struct ep_worker *w, struct rte_mbuf **pkts, uint16_t max)
{
	struct cmts_gen *g = w->pipeline_ctx;
	uint64_t now = rte_rdtsc();
	uint16_t n;

	n = dir_make(g, &g->ds, now, pkts, g->us.on ? max / 2 : max, ds_make);
	return (uint16_t)(n + dir_make(g, &g->us, now, pkts + n, (uint16_t)(max - n), us_make));
}

/* Send what the port takes; keep the rest for the service hook. */
static void
dir_send(struct cmts_gen *g, struct gen_dir *d, struct rte_mbuf **pkts, uint16_t n)
{
	const struct ep_port *p = &g->sg->e->ports[d->port];
	uint16_t k = rte_eth_tx_burst(p->port_id, g->w->txq[d->port], pkts, n);

	d->pkts += k;
	memcpy(d->pend, pkts + k, sizeof(pkts[0]) * (n - k));
	d->n_pend = (uint16_t)(n - k);
	d->pend_off = 0;
}

/* gen_tx: the source's downstream packets come first, then the upstream. */
uint16_t
cmts_gen_tx_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_gen *g = ctx;
	uint16_t n_ds = 0;

	while (n_ds < n && g->ds.on && ep_meta(pkts[n_ds])->in_port == g->ds.port)
		n_ds++;
	if (n_ds != 0)
		dir_send(g, &g->ds, pkts, n_ds);
	if (n_ds < n)
		dir_send(g, &g->us, pkts + n_ds, (uint16_t)(n - n_ds));
	for (uint16_t i = 0; i < n; i++)
		next[i] = EP_NEXT_CONSUMED;
	return n;
}

static uint16_t
dir_retry(struct cmts_gen *g, struct gen_dir *d)
{
	const struct ep_port *p = &g->sg->e->ports[d->port];
	uint16_t k;

	if (d->n_pend == 0)
		return 0;
	k = rte_eth_tx_burst(p->port_id, g->w->txq[d->port], d->pend + d->pend_off,
			     (uint16_t)(d->n_pend - d->pend_off));
	d->pend_off = (uint16_t)(d->pend_off + k);
	d->pkts += k;
	if (d->pend_off == d->n_pend)
		d->n_pend = 0;
	return k;
}

uint16_t
cmts_gen_service(struct ep_worker *w)
{
	struct cmts_gen *g = w->pipeline_ctx;

	return (uint16_t)(dir_retry(g, &g->ds) + dir_retry(g, &g->us));
}

/* ---- build ---- */

static int
port_of(struct ep_engine *e, struct ep_worker *w, const char *key, bool *have, uint16_t *out,
	struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, key, err);
	struct ep_port *p;

	*have = kv != NULL;
	if (kv == NULL)
		return err->msg[0] != '\0' ? -1 : 0;
	p = ep_port_by_name(e, kv->val);
	if (p == NULL)
		return ep_cfg_error(e->cfg, kv, err, "no [port %s]", kv->val);
	*out = p->index;
	return 0;
}

static int
mix_of(struct ep_engine *e, struct ep_worker *w, const char *key, const char *def,
       struct cmts_gen_mix *mx, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, key, err);

	if (kv == NULL && err->msg[0] != '\0')
		return -1;
	if (cmts_gen_mix_parse(mx, kv != NULL ? kv->val : def, err) < 0 && kv != NULL) {
		char inner[sizeof(err->msg)];

		snprintf(inner, sizeof(inner), "%s", err->msg);
		return ep_cfg_error(e->cfg, kv, err, "%s", inner);
	}
	return err->msg[0] != '\0' ? -1 : 0;
}

static int
on_off(struct ep_engine *e, struct ep_worker *w, const char *key, bool def, bool *out,
       struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, key, err);

	*out = def;
	if (kv == NULL)
		return err->msg[0] != '\0' ? -1 : 0;
	if (strcasecmp(kv->val, "on") == 0 || strcasecmp(kv->val, "yes") == 0)
		*out = true;
	else if (strcasecmp(kv->val, "off") == 0 || strcasecmp(kv->val, "no") == 0)
		*out = false;
	else
		return ep_cfg_error(e->cfg, kv, err, "want on or off");
	return 0;
}

static int
hold_init(struct gen_dir *d, uint16_t hold, int socket)
{
	uint32_t size = rte_align32pow2((uint32_t)hold + EP_BURST_MAX);

	d->hold.slot = rte_zmalloc_socket("cmts_gen_hold", sizeof(d->hold.slot[0]) * size,
					  RTE_CACHE_LINE_SIZE, socket);
	if (d->hold.slot == NULL)
		return -1;
	d->hold.mask = (uint16_t)(size - 1);
	d->hold_pkts = hold;
	return 0;
}

static void
hold_free(struct gen_dir *d)
{
	while (d->hold.n != 0)
		rte_pktmbuf_free(cmts_fifo_pop(&d->hold));
	rte_free(d->hold.slot);
}

int
cmts_gen_build(struct ep_engine *e, struct ep_worker *w, struct cmts_sg *sg, struct ep_err *err)
{
	int socket = (int)rte_lcore_to_socket_id(w->lcore);
	uint64_t ds_rate, us_rate, cls, flt, bf, mtu, hold, pool;
	char name[RTE_MEMPOOL_NAMESIZE];
	bool have_ds, have_us;
	struct cmts_gen *g;

	g = rte_zmalloc_socket("cmts_gen", sizeof(*g), RTE_CACHE_LINE_SIZE, socket);
	if (g == NULL)
		return ep_err_set(err, "cmts-gen: out of memory");
	g->sg = sg;
	g->w = w;
	g->hz = rte_get_tsc_hz();
	w->pipeline_ctx = g;
	if (port_of(e, w, "ds_port", &have_ds, &g->ds.port, err) < 0 ||
	    port_of(e, w, "us_port", &have_us, &g->us.port, err) < 0 ||
	    on_off(e, w, "ds", have_ds, &g->ds.on, err) < 0 ||
	    on_off(e, w, "us", have_us, &g->us.on, err) < 0 ||
	    mix_of(e, w, "ds_size", "imix-down", &g->ds.mix, err) < 0 ||
	    mix_of(e, w, "us_size", "imix-up", &g->us.mix, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "ds_rate_pps", 0, 0, 1000000000, &ds_rate, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "us_rate_pps", 0, 0, 1000000000, &us_rate, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "ds_cls_share", 10, 0, 100, &cls, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "ds_filter_share", 10, 0, 100, &flt, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "us_burst_frames", 8, 1, 64, &bf, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "us_mtu", 1500, 576, 9000, &mtu, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "hold_pkts", 0, 0, GEN_MAX_HOLD, &hold, err) < 0 ||
	    ep_cfg_u64(e->cfg, w->cfg, "pool_mbufs", GEN_POOL, 2047, 65535, &pool, err) < 0)
		return -1;
	if (pool < 2 * hold + 2047)
		return ep_cfg_section_error(e->cfg, w->cfg, err, "pool_mbufs must be at least "
					    "twice hold_pkts and 2047 more (the rings, the "
					    "workers' caches, the crypto device)");
	if (!have_ds && !have_us)
		return ep_cfg_section_error(e->cfg, w->cfg, err, "cmts-gen needs ds_port, us_port "
					    "or both");
	if ((g->ds.on && !have_ds) || (g->us.on && !have_us))
		return ep_cfg_section_error(e->cfg, w->cfg, err, "a direction that is on needs "
					    "its port");
	if (have_ds && have_us && g->ds.port == g->us.port)
		return ep_cfg_section_error(e->cfg, w->cfg, err, "ds_port and us_port must differ");
	if (cls + flt > 100)
		return ep_cfg_section_error(e->cfg, w->cfg, err, "ds_cls_share + ds_filter_share "
					    "is more than 100 %%");
	g->mtu = (uint32_t)mtu;
	g->burst_frames = (uint32_t)bf;
	snprintf(name, sizeof(name), "cmts_gen_%u", w->id);
	/*
	 * The consumers free our packets from other lcores, the downstream and
	 * the upstream worker both.  Two of them sharing one CPU (2 cores here)
	 * on the default multi-producer ring: one preempted between claiming a
	 * slot and publishing it leaves the other spinning on the tail for a
	 * whole time slice (measured: tx stage at 10^5 cycles a packet).  The
	 * relaxed-tail-sync ring is made for overcommitted CPUs.
	 *
	 * The consumers free into their lcore caches, which flush to that
	 * ring, and we allocate from ours, refilled from it: the whole pool
	 * cycles in FIFO order, so a packet's metadata and headroom lines were
	 * last touched one pool cycle ago (~40 MB of mbufs at the default),
	 * where a NIC's worker reuses its own recently freed mbufs.
	 * pool_mbufs=6143 read 0.96-0.98 of the downstream's cycles a frame
	 * in alternating rounds (docs/benchmarks/cmts-history.md, "The
	 * crypto pipelining and input round"); the benchmark's input is its
	 * own decision.
	 */
	g->pool = rte_pktmbuf_pool_create_by_ops(name, (unsigned int)pool, 256, EP_META_SIZE,
		(uint16_t)(RTE_PKTMBUF_HEADROOM + RTE_MAX(mtu + 14, 2048u)), socket, "ring_mt_rts");
	if (g->pool == NULL)
		return ep_err_set(err, "cmts-gen: no memory for its packet pool");
	if (hold != 0 && (hold_init(&g->ds, (uint16_t)hold, socket) < 0 ||
			  hold_init(&g->us, (uint16_t)hold, socket) < 0))
		return ep_err_set(err, "cmts-gen: no memory for hold_pkts");
	if (have_ds && flows_build(g, (uint32_t)cls, (uint32_t)flt, socket, err) < 0)
		return -1;
	if (have_us && us_build(g, socket, err) < 0)
		return -1;
	pace_init(&g->ds.pace, ds_rate, rte_rdtsc());
	pace_init(&g->us.pace, us_rate, rte_rdtsc());
	return ep_worker_add_stage(w, "gen_tx", cmts_gen_tx_stage, g, err);
}

void
cmts_gen_free(struct cmts_gen *g)
{
	if (g == NULL)
		return;
	rte_pktmbuf_free_bulk(g->ds.pend + g->ds.pend_off, g->ds.n_pend - g->ds.pend_off);
	rte_pktmbuf_free_bulk(g->us.pend + g->us.pend_off, g->us.n_pend - g->us.pend_off);
	hold_free(&g->ds);
	hold_free(&g->us);
	rte_free(g->flows);
	rte_free(g->frames);
	rte_free(g->frame_len);
	rte_free(g->cm_sid);
	/* The pool stays: packets may still sit in a port's ring (rte_eal_cleanup). */
	rte_free(g);
}

/* ---- control: cmts-gen-set, cmts-gen-stats ---- */

struct gen_set {
	int ds_on, us_on;               /* -1: unchanged */
	int64_t ds_rate, us_rate;       /* -1: unchanged */
};

static void
apply(struct ep_worker *w, void *arg)
{
	struct cmts_gen *g = w->pipeline_ctx;
	const struct gen_set *s = arg;
	uint64_t now = rte_rdtsc();

	if (s->ds_on >= 0)
		g->ds.on = s->ds_on;
	if (s->us_on >= 0)
		g->us.on = s->us_on;
	if (s->ds_rate >= 0)
		pace_init(&g->ds.pace, (uint64_t)s->ds_rate, now);
	if (s->us_rate >= 0)
		pace_init(&g->us.pace, (uint64_t)s->us_rate, now);
}

#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static json_t *
dir_json(const struct gen_dir *d, bool have)
{
	if (!have)
		return json_null();
	return json_pack("{s:b, s:s, s:I, s:I, s:I, s:I, s:I}", "on", d->on,
			 "size", d->mix.spec, "rate_pps", (json_int_t)d->pace.rate,
			 "sent_pkts", (json_int_t)RD(d->pkts), "sent_frames", (json_int_t)RD(d->frames),
			 "sent_bytes", (json_int_t)RD(d->bytes),
			 "alloc_failed_pkts", (json_int_t)RD(d->alloc_failed));
}

static int
flag(json_t *req, const char *key, int *out, struct ep_err *err)
{
	json_t *v = json_object_get(req, key);

	*out = -1;
	if (v == NULL)
		return 0;
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (json_is_string(v) && (strcmp(json_string_value(v), "on") == 0 ||
				  strcmp(json_string_value(v), "off") == 0)) {
		*out = strcmp(json_string_value(v), "on") == 0;
		return 0;
	}
	return ep_err_set(err, "%s: want on or off", key);
}

static int
gen_ctl(struct ep_engine *e, json_t *req, json_t *res, bool set, struct ep_err *err)
{
	json_t *v = json_object_get(req, "worker"), *list = json_array();
	struct gen_set s = { -1, -1, -1, -1 };
	int found = 0;

	json_object_set_new(res, "workers", list);
	if (v != NULL && !json_is_string(v))
		return ep_err_set(err, "worker: must be a string");
	if (set) {
		uint64_t r;

		if (flag(req, "ds", &s.ds_on, err) < 0 || flag(req, "us", &s.us_on, err) < 0)
			return -1;
		if (json_object_get(req, "ds_rate_pps") != NULL) {
			if (ep_ctl_u64(req, "ds_rate_pps", 0, 1000000000, &r, err) < 0)
				return -1;
			s.ds_rate = (int64_t)r;
		}
		if (json_object_get(req, "us_rate_pps") != NULL) {
			if (ep_ctl_u64(req, "us_rate_pps", 0, 1000000000, &r, err) < 0)
				return -1;
			s.us_rate = (int64_t)r;
		}
	}
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];
		struct cmts_gen *g;

		if (strcmp(w->type->name, "cmts-gen") != 0 || w->pipeline_ctx == NULL ||
		    (v != NULL && strcmp(json_string_value(v), w->name) != 0))
			continue;
		g = w->pipeline_ctx;
		if (set && ((s.ds_on == 1 && g->flows == NULL) || (s.us_on == 1 && g->frames == NULL)))
			return ep_err_set(err, "worker %s: that direction has no port", w->name);
		if (set && ep_worker_call(w, apply, &s, GEN_CALL_MS, err) < 0)
			return -1;
		found++;
		json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:o}", "worker", w->name,
			"sg", g->sg->name, "downstream", dir_json(&g->ds, g->flows != NULL),
			"upstream", dir_json(&g->us, g->frames != NULL)));
	}
	if (found == 0)
		return ep_err_set(err, v != NULL ? "no cmts-gen worker '%s'" : "no cmts-gen worker%s",
				  v != NULL ? json_string_value(v) : "");
	return 0;
}

static int
ctl_gen_set(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	return gen_ctl(e, req, res, true, err);
}

static int
ctl_gen_stats(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	return gen_ctl(e, req, res, false, err);
}

static struct ep_ctl_cmd c_gen_set = { "cmts-gen-set", "[worker=] [ds=on|off] [us=on|off] "
	"[ds_rate_pps=] [us_rate_pps=]", "turn a cmts-gen direction on or off, set its rate "
	"(0: as fast as the port takes)", ctl_gen_set, NULL };
static struct ep_ctl_cmd c_gen_stats = { "cmts-gen-stats", "[worker=]",
	"what cmts-gen workers sent, per direction", ctl_gen_stats, NULL };
EP_CTL_REGISTER(c_gen_set)
EP_CTL_REGISTER(c_gen_stats)
