/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bng-uplink stages (subscriber -> core):
 *
 *   parse      bng_parse_access per packet (prefetch 4 ahead), or where
 *              the CPU has AVX-512 eight QinQ IPoE or PPPoE frames at a
 *              time, which also give the ACL its inputs
 *              (up_parse_burst_x8); control frames are answered (ARP
 *              request / NS for the access port's own addresses, by the
 *              FIB's responder) or punted: to control_port as they are
 *              (tags kept: they name the subscriber), or into the punt
 *              ring (one burst enqueue)
 *   subscriber classify, anti-spoofing and policing: QinQ IPoE lines
 *              by their VLAN pair in a two-level map (struct bng_qinq),
 *              PPPoE sessions by their id in another (struct bng_pppoe),
 *              other keys built from ep_meta as two word stores and hashed
 *              from the same two registers (bng_key_hash), ONE
 *              rte_hash_lookup_with_hash_bulk_data for those (the cuckoo
 *              hash overlaps its bucket misses across keys), per-worker
 *              state of the hits
 *              prefetched for the whole burst, then per packet the
 *              subscriber's IPv4 ranges (up to 4 masked compares) or IPv6
 *              prefix (two masked 64-bit compares) and its rte_meter trTCM
 *              (RFC 2698 or RFC 4115), colour blind: green passes, yellow
 *              is DSCP-remarked, red is dropped.  It also starts the core
 *              route's tbl24 miss of each passing IPv4 destination.  The
 *              three are one stage: they read the same per-worker state
 *              (a copy of the record's hot fields beside the meter: one
 *              line a packet, struct bng_up_dyn), and the meter's two
 *              64-bit divisions overlap the next packet's compares (as a
 *              stage of its own, police cost ~19 cycles a packet, fused
 *              ~8)
 *   acl        the ACL module's filter on the uplink ACL ("bng-uplink"):
 *              after classification, so unknown and spoofed frames never
 *              pay rte_acl.  The policer runs first: a subscriber's rate
 *              covers everything it sends, as its access line's would, so
 *              a packet the ACL then denies has used its tokens
 *   route      the FIB's burst routing on the core FIB ("bng"): its lookups
 *              find their tbl24 lines prefetched (a /8 without longer routes
 *              at one fixed address of it: EP_FIB_ROUTE_BY8, 256 lines
 *              for the core's /1s instead of one per destination's /24),
 *              and the sources need no
 *              martian check (anti-spoofing proved them the subscriber's);
 *              a packet whose tbl24 word is the previous forwarded one's
 *              takes its next hop (EP_FIB_ROUTE_SAME_NH: the core's two /1s
 *              to one next hop, one decode and resolution a burst)
 *   encap      strip the access header and push the core one in a single
 *              data-offset move, TTL/hop limit - 1 (IPv4: one 32-bit load,
 *              add and store with the checksum), the header from a template
 *              of the next hop's built once while packets share it (one
 *              16-byte store untagged): three specialisations (none, VLAN,
 *              MPLS) of one always_inline body, chosen at build time, so no
 *              per-packet branch on the mode
 *
 * Measured (test_bng_cycles: 4096 subscribers, one flow each to 4096
 * scattered destinations, 128-byte QinQ IPv4, 150-rule ACL no packet
 * matches, bursts of 32, 2.6 GHz, minimum over trials on a shared 2-core
 * machine): see docs/bng.md, "Benchmarks", for the per-stage figures and
 * docs/benchmarks/bng-passes.md for how they moved.
 *
 * parse is mostly ep_parse_ipv4 (the header checksum); subscriber is mostly
 * the bulk hash (16-byte keys: one vector compare each); police is
 * rte_meter's colour check (two 64-bit divisions per packet).  Prefetching
 * the tbl24 lines in subscriber, one stage ahead of route, took route from
 * 30 to 16 cycles for ~5 more in subscriber; prefetching them in parse
 * instead moved the misses into parse (+13).
 *
 * Per-subscriber state (a copy of the record's ranges and policer, the
 * meter context, colour counters) is this worker's (u->dyn[id], the rarer
 * counters in u->cold[id]); the access key's data carries the record's
 * version, which tells the worker when to re-read the record, and a
 * generation number in the record resets the meter and counters when the
 * id was given to a new subscriber.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdalign.h>

#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "ep_ip.h"
#include "fib/ep_fib_x8.h"
#include "ep_parse_x8.h"
#include "ep_rcu.h"
#include "ep_rx.h"
#include "bng.h"
#include "bng_access.h"

/* ---- parse ---- */

/* Hand punted frames to the control plane. */
static __rte_noinline void
punt_out(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, const uint16_t *idx,
	 uint16_t np)
{
	struct rte_mbuf *tmp[EP_BURST_MAX];
	unsigned int k;

	if (u->control_port >= 0) {
		for (uint16_t j = 0; j < np; j++)
			next[idx[j]] = EP_NEXT_TX(u->control_port);
		return;
	}
	for (uint16_t j = 0; j < np; j++)
		tmp[j] = pkts[idx[j]];
	k = rte_ring_enqueue_burst(u->b->punt_ring, (void **)tmp, np, NULL);
	for (uint16_t j = 0; j < np; j++)
		next[idx[j]] = j < k ? EP_NEXT_CONSUMED : EP_NEXT_DROP(EP_DROP_BNG_PUNT_RING_FULL);
	u->punt_ring_full += np - k;
}

/* ARP requests and neighbour solicitations for the access port's addresses
 * are answered in place by the FIB's responder (double-tagged answers get
 * the 802.1ad outer TPID the downlink uses: ep_fib_worker_set_qinq_tpid);
 * the rest is punted. */
static __rte_noinline void
answer_nd(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, const uint16_t *idx,
	  uint16_t nn, uint16_t *punt, uint16_t *np)
{
	struct rte_mbuf *tmp[EP_BURST_MAX];
	uint16_t tn[EP_BURST_MAX] = {0};

	for (uint16_t j = 0; j < nn; j++)
		tmp[j] = pkts[idx[j]];
	ep_fib_neigh_burst(u->fw, tmp, tn, nn);
	for (uint16_t j = 0; j < nn; j++) {
		if (tn[j] & EP_NEXT_TX_FLAG) {
			next[idx[j]] = tn[j];
			pkts[idx[j]] = tmp[j];
			u->nd_answered++;
			continue;
		}
		if (tn[j] == EP_NEXT_CONSUMED) {
			next[idx[j]] = EP_NEXT_CONSUMED;
			continue;
		}
		u->punt[ep_meta(tmp[j])->l3_type == EP_L3_ARP ? BNG_PUNT_ARP : BNG_PUNT_ND]++;
		punt[(*np)++] = idx[j];
	}
}

/* What up_parse_one did with a frame (bits, ORed over the burst in a
 * register). */
#define UP_PARSE_DIVERTED 1u    /* dropped, punted or answered: next[] set */
#define UP_PARSE_NOT_ACL4 2u    /* passed on without an ACL input given */

/*
 * Frame @p i of a burst: the MAC check, bng_parse_access, and a punt or an
 * ARP/ND answer noted in @p punt / @p nd for the burst's end.  With
 * @p give, a frame that passes and is classifiable in place (IPv4 TCP or
 * UDP without options) gets its ACL input (ep_acl_filter_input4).
 */
static __rte_always_inline uint32_t
up_parse_one(struct bng_up *u, struct rte_mbuf *m, uint16_t i, uint16_t *next, uint16_t port,
	     uint16_t *punt, uint16_t *np, uint16_t *nd, uint16_t *nn, const bool give)
{
	struct ep_meta *md = ep_meta(m);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	enum bng_punt_kind kind;
	int rc;

	if (port != EP_RX_PORT_META)
		md->in_port = port;
	if (ep_rx_not_for_us(m, &u->access_mac)) {
		next[i] = EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
		return UP_PARSE_DIVERTED;
	}
	rc = bng_parse_access(p, m->data_len, m->pkt_len, md);
	if (likely(rc == 0)) {
		if (!give)
			return 0;
		if (md->l3_type == EP_L3_IPV4 && ep_acl_in_place(md, sizeof(struct rte_ipv4_hdr))) {
			ep_acl_filter_input4(u->acl, i, p + md->l3_off);
			return 0;
		}
		return UP_PARSE_NOT_ACL4;
	}
	if (rc > 0) {
		next[i] = EP_NEXT_DROP(rc);
		return UP_PARSE_DIVERTED;
	}
	kind = BNG_PUNT_KIND(rc);
	if (u->nd_answer && md->user == 0 && (kind == BNG_PUNT_ARP || kind == BNG_PUNT_ND)) {
		nd[(*nn)++] = i;
	} else {
		u->punt[kind]++;
		punt[(*np)++] = i;
	}
	return UP_PARSE_DIVERTED;
}

/* The burst's punts and ARP/ND answers, after its parse loop. */
static __rte_always_inline void
up_parse_finish(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, uint16_t *punt,
		uint16_t np, const uint16_t *nd, uint16_t nn)
{
	if (unlikely(nn != 0))
		answer_nd(u, pkts, next, nd, nn, punt, &np);
	if (unlikely(np != 0))
		punt_out(u, pkts, next, punt, np);
}

#ifdef EP_PARSE_X8
/* Whether a group of eight frames is loaded as QinQ PPPoE session frames
 * (bng_qinq_pppoe_x8_load) or as QinQ IPoE ones: by its first frame's
 * EtherType after two tags (a line the loads read next anyway).  A lane
 * of the other kind takes the scalar parse: right, only slower. */
static __rte_always_inline bool
up_group_is_pppoe(const struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	return m->data_len >= 22 && bng_be16(p + 20) == BNG_ETHER_PPPOE_SESS;
}

/*
 * The parse of a burst from rx, eight frames at a time (AVX-512, where the
 * CPU has it: bng_up.parse_x8), as the router's parse_burst_x8: first
 * every group's mbuf fields (ep_x8_load_mbufs), then every group's frame
 * words (ep_parse_qinq_x8_words, or bng_qinq_pppoe_x8_words for a group
 * whose first frame is a PPPoE session's: the loads of the four groups
 * overlap, and no frame's load waits for its own group's mbuf fields;
 * as gathers, ~0.5-0.8 cycles a packet, docs/benchmarks/bng-passes.md
 * "Seventeenth pass"), then per group the MAC check and the QinQ IPv4
 * checks (ep_parse_qinq_x8_check, proto/; or bng_qinq_pppoe_x8_check, the
 * session header's too).  A lane that passes and is not DHCP (bng_ip_control's ports, compared for
 * eight lanes) has its ep_meta written and its ACL input given (one
 * masked store for the group); a frame to another MAC is dropped here;
 * every other lane (the other kind, single-tagged, untagged, IPv6,
 * options, ARP, DHCP, any error) takes up_parse_one, which names the drop
 * or punt.
 * When every frame passed with an input, the ACL's own pass over the
 * meta lines is not run (ep_acl_filter_give); when every frame passed, the
 * QinQ IPoE lanes' VLAN pairs are looked up in the QinQ map for the
 * subscriber stage, two gathers for eight (u->pre_hits).
 *
 * The mbufs' fields and the frames' words are lines or gathers
 * (bng_up.parse_x8_lines, timed on this CPU: ep_parse_x8_lines).  Lines,
 * with the keep4 words from keep4b by permutes, on the Zen 5
 * (bench.bng_ab ipoe-128, 9 rounds, both orders): parse 16.7 -> 13.5
 * cycles a packet, B/A 0.941 and swapped 1.052
 * (docs/benchmarks/bng-uplink-passes.md, "The loads without gathers").
 */
static __rte_always_inline EP_X8_TARGET uint16_t
up_parse_burst_x8(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
		  uint16_t port, const bool lines)
{
	struct ep_parse_x8_in in[EP_BURST_MAX / 8];
	uint16_t punt[EP_BURST_MAX], nd[EP_BURST_MAX];
	uint16_t out = 0, np = 0, nn = 0, mac2;
	bool pppoe[EP_BURST_MAX / 8];
	uint32_t r = 0, mac4;
	uint64_t mac, pre = 0;
	__m512i hi[EP_BURST_MAX / 8], blk[EP_BURST_MAX / 8], dst[EP_BURST_MAX / 8];
	__mmask8 ipoe[EP_BURST_MAX / 8], oks[EP_BURST_MAX / 8], any_ipoe = 0;
	uint64_t words = 0;

	ep_mac_words(&u->access_mac, &mac4, &mac2);
	mac = mac4 | (uint64_t)mac2 << 32;
	/* Every group's mbuf fields, then every group's frame words: a
	 * frame's loads wait for its group's mbuf fields, and a group's in a
	 * row left the first frame loads of each waiting for them. */
	for (uint16_t i = 0; i < n; i += 8) {
		__mmask8 lanes = (__mmask8)((1u << RTE_MIN(n - i, 8)) - 1);

		pppoe[i / 8] = up_group_is_pppoe(pkts[i]);
		ep_x8_load_mbufs(&pkts[i], lanes,
				 pppoe[i / 8] ? BNG_PPPOE_X8_MIN : EP_PARSE_QINQ_X8_MIN, &in[i / 8],
				 lines);
	}
	for (uint16_t i = 0; i < n; i += 8) {
		if (pppoe[i / 8])
			bng_qinq_pppoe_x8_words(&in[i / 8], lines);
		else
			ep_parse_qinq_x8_words(&in[i / 8], lines);
	}
	/* No prefetch of the meta lines (the router's x8 parse has one): an
	 * mbuf comes back from tx through the mempool cache with its meta
	 * line still cached from its last burst, and the 32 prefetches cost
	 * more than they saved (bench.bng_ab ipoe-128 0.995 and swapped
	 * 1.012, docs/benchmarks/bng-passes.md "Twelfth pass"). */
	for (uint16_t i = 0; i < n; i += 8) {
		__mmask8 lanes = (__mmask8)((1u << RTE_MIN(n - i, 8)) - 1), ok, dhcp, acl_ok;
		struct ep_parse_qinq_x8 x;
		__m512i sport, dport;

		if (pppoe[i / 8])
			bng_qinq_pppoe_x8_check(&in[i / 8], mac, port, &x);
		else
			ep_parse_qinq_x8_check(&in[i / 8], mac, port, &x);
		/* bng_ip_control: UDP to port 67 or 68, or from 68 (network
		 * order in the low 16 bits of each port). */
		sport = _mm512_and_si512(x.ports, _mm512_set1_epi64(0xffff));
		dport = _mm512_srli_epi64(x.ports, 16);
		dhcp = _mm512_cmpeq_epi64_mask(x.proto, _mm512_set1_epi64(IPPROTO_UDP)) &
		       (_mm512_cmpeq_epi64_mask(dport, _mm512_set1_epi64(RTE_BE16(67))) |
			_mm512_cmpeq_epi64_mask(dport, _mm512_set1_epi64(RTE_BE16(68))) |
			_mm512_cmpeq_epi64_mask(sport, _mm512_set1_epi64(RTE_BE16(68))));
		ok = x.ok & ~dhcp;
		ep_parse_qinq_x8_store(&x, in[i / 8].mb, ok, pppoe[i / 8] ? BNG_USER_PPPOE : 0);
		ipoe[i / 8] = pppoe[i / 8] ? 0 : ok;
		any_ipoe |= ipoe[i / 8];
		hi[i / 8] = x.hi;
		oks[i / 8] = ok;
		dst[i / 8] = x.dst;
		ep_acl_filter_input4_x8(u->acl, i, ok, x.l3);
		acl_ok = _mm512_test_epi64_mask(ep_x8_table(ep_acl_port_protos, x.proto),
						_mm512_set1_epi64(EP_META_F_HAS_L4));
		r |= (ok & acl_ok) != ok ? UP_PARSE_NOT_ACL4 : 0;
		for (unsigned int b = x.not_for_us; b != 0; b &= b - 1) {
			uint16_t j = (uint16_t)(i + __builtin_ctz(b));

			ep_meta(pkts[j])->in_port = port;
			next[j] = EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
			out++;
		}
		for (unsigned int b = lanes & ~ok & ~x.not_for_us; b != 0; b &= b - 1) {
			uint16_t j = (uint16_t)(i + __builtin_ctz(b));
			uint32_t k = up_parse_one(u, pkts[j], j, next, port, punt, &np, nd, &nn, true);

			out += k & UP_PARSE_DIVERTED;
			r |= k;
		}
	}
	/* When the subscriber stage gets the burst whole: the QinQ IPoE
	 * lanes' subscriber data from the QinQ map (u->pre_hits), and every
	 * packet's core route tbl24 word for the route stage
	 * (u->route_words; the lines the subscriber stage would prefetch are
	 * read here).  Each is two gathers in a chain (blocks, then entries;
	 * keep4 words, then tbl24 words): every group's first gathers of
	 * both, then every group's second, so that the chains overlap. */
	if (out == 0) {
		const struct ep_fib *fib = u->fw->fib;
		__m512i keep[EP_BURST_MAX / 8];

		for (uint16_t i = 0; i < n; i += 8) {
			if (any_ipoe)
				blk[i / 8] = bng_qinq_x8_blocks(u->b->qinq, ipoe[i / 8], hi[i / 8]);
			keep[i / 8] = ep_fib_x8_keep(fib, oks[i / 8], dst[i / 8]);
		}
		for (uint16_t i = 0; i < n; i += 8) {
			__m512i v;
			__m256i w;
			__mmask8 has;

			if (any_ipoe) {
				has = bng_qinq_x8_entries(ipoe[i / 8], hi[i / 8], blk[i / 8], &v);
				_mm512_mask_storeu_epi64(&u->data[i], has, v);
				pre |= (uint64_t)has << i;
			}
			has = ep_fib_x8_words(fib, oks[i / 8], dst[i / 8], keep[i / 8], &w);
			_mm256_storeu_si256((__m256i *)&u->route_words.words[i], w);
			words |= (uint64_t)has << i;
		}
	}
	ep_fib_burst_words_give(&u->route_words,
				out == 0 && n != 0 && words == UINT64_MAX >> (64 - n) ? n : 0,
				n != 0 ? pkts[0] : NULL);
	up_parse_finish(u, pkts, next, punt, np, nd, nn);
	/* Every packet goes on to the ACL with its input given. */
	ep_acl_filter_give(u->acl, r == 0 && out == 0 ? n : 0, n != 0 ? pkts[0] : NULL);
	/* The map's answers name the burst as it is only if none left it. */
	u->pre_hits = pre;
	u->pre_n = out == 0 ? n : 0;
	u->pre_first = n != 0 ? pkts[0] : NULL;
	return out;
}

/* up_parse_burst_x8 for each form of the loads: one is chosen per CPU. */
static __rte_noinline EP_X8_TARGET uint16_t
up_parse_burst_x8_lines(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
			uint16_t port)
{
	return up_parse_burst_x8(u, pkts, next, n, port, true);
}

static __rte_noinline EP_X8_TARGET uint16_t
up_parse_burst_x8_gathers(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
			  uint16_t port)
{
	return up_parse_burst_x8(u, pkts, next, n, port, false);
}
#endif

bool
bng_up_parse_x8_usable(void)
{
#ifdef EP_PARSE_X8
	return ep_parse_x8_usable();
#else
	return false;
#endif
}

bool
bng_up_parse_x8_lines(void)
{
#ifdef EP_PARSE_X8
	return ep_parse_x8_lines();     /* false where the x8 parse cannot run */
#else
	return false;
#endif
}

uint16_t
bng_up_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct bng_up *u = ctx;
	uint16_t punt[EP_BURST_MAX], nd[EP_BURST_MAX];
	uint16_t out = 0, np = 0, nn = 0;
	/* A burst from rx: in_port is written here with the rest of the meta
	 * line (up_type.stage_sets_in_port), not by an engine pass of its own;
	 * a burst handed in (tests, ep_worker_run_burst) keeps its in_port. */
	const uint16_t port = u->w != NULL ? u->w->rx_port : EP_RX_PORT_META;

#ifdef EP_PARSE_X8
	if (u->parse_x8 && port != EP_RX_PORT_META)
		return u->parse_x8_lines ? up_parse_burst_x8_lines(u, pkts, next, n, port) :
					   up_parse_burst_x8_gathers(u, pkts, next, n, port);
#endif
	u->pre_n = 0;   /* no QinQ map answers (bng_qinq_x8_entries) */
	ep_fib_burst_words_give(&u->route_words, 0, NULL);     /* no tbl24 words */
	ep_rx_prefetch_first(pkts, n, 1);
	for (uint16_t i = 0; i < n; i++) {
		ep_rx_prefetch_next(pkts, i, n, 1);
		out += up_parse_one(u, pkts[i], i, next, port, punt, &np, nd, &nn, false) &
		       UP_PARSE_DIVERTED;
	}
	up_parse_finish(u, pkts, next, punt, np, nd, nn);
	return out;
}

/* ---- subscriber: classify, anti-spoofing ---- */

/*
 * The access key of a parsed data frame, as bng_key_of builds it (the
 * layout of struct bng_key, checked by test_bng_up), but assembled in two
 * 64-bit registers (the PPPoE map compares them as they are; for the hash
 * they are stored as two words): rte_hash's CRC reads the key 8
 * bytes at a time, and an 8-byte load over several narrow stores cannot be
 * forwarded from the store buffer (a ~12-cycle stall per load, two per key).
 * Tagged IPoE keys come from ep_meta alone, without touching the frame;
 * PPPoE and untagged IPoE read the source MAC (the frame's first line).
 */
static __rte_always_inline void
up_key(const uint8_t *p, const struct ep_meta *md, uint64_t *k0, uint64_t *k1)
{
	uint64_t outer = md->n_vlans >= 1 ? md->vlan_tci[0] & 0x0fff : 0;
	uint64_t inner = md->n_vlans == 2 ? md->vlan_tci[1] & 0x0fff : 0;
	uint64_t w0 = outer | inner << 16, w1 = (uint64_t)md->n_vlans << 32;

	RTE_BUILD_BUG_ON(sizeof(struct bng_key) != 16 || offsetof(struct bng_key, session) != 4 ||
			 offsetof(struct bng_key, mac) != 6 ||
			 offsetof(struct bng_key, n_vlans) != 12 ||
			 offsetof(struct bng_key, pppoe) != 13);
	if (md->user == BNG_USER_PPPOE || md->n_vlans == 0) {
		/* The client MAC (source MAC at 6): part of a PPPoE session's
		 * key, the whole key of untagged IPoE. */
		uint16_t m01;
		uint32_t m25;

		memcpy(&m01, p + 6, 2);
		memcpy(&m25, p + 8, 4);
		w0 |= (uint64_t)m01 << 48;
		w1 |= m25;
	}
	if (unlikely(md->user == BNG_USER_PPPOE)) {
		/* Session id 8 bytes before the IP header. */
		uint64_t sess = bng_be16(p + md->l3_off - 2 - BNG_PPPOE_HDR + 2);

		w0 |= sess << 32;
		w1 |= 1ull << 40;
	}
	*k0 = w0;
	*k1 = w1;
}

/*
 * The key data of a PPPoE session frame whose key words are @p w0, @p w1
 * from the PPPoE map (struct bng_pppoe), 0 when its entry is another
 * key's or none (the frame then goes to the hash): the block pointer, then
 * the entry's data, key words and data again, one line.
 */
static __rte_always_inline uint64_t
up_pppoe_data(const struct bng *b, uint64_t w0, uint64_t w1)
{
	uint16_t sess = (uint16_t)(w0 >> 32);
	const struct bng_pppoe_ent *blk = __atomic_load_n(&b->pppoe->blk[sess / BNG_PPPOE_BLK],
							   __ATOMIC_ACQUIRE);
	const struct bng_pppoe_ent *e;
	uint64_t v;

	if (unlikely(blk == NULL))
		return 0;
	e = &blk[sess % BNG_PPPOE_BLK];
	v = __atomic_load_n(&e->data, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->key[0], __ATOMIC_ACQUIRE) != w0 ||
	    __atomic_load_n(&e->key[1], __ATOMIC_ACQUIRE) != w1)
		return 0;
	return __atomic_load_n(&e->data, __ATOMIC_RELAXED) == v ? v : 0;
}

/* The green counters and the rest of the cold line change inside its
 * sequence count (bng_up_green_read): odd while they change. */
static __rte_always_inline void
up_seq_begin(struct bng_up_cold *o)
{
	__atomic_store_n(&o->seq, o->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static __rte_always_inline void
up_seq_end(struct bng_up_cold *o)
{
	__atomic_store_n(&o->seq, o->seq + 1, __ATOMIC_RELEASE);
}

/*
 * This worker's state of subscriber @p id brought up to record @p s: the
 * hot fields copied, the meter and counters reset when the id was given to
 * a new subscriber (another generation).  Off the fast path: a packet gets
 * here once per record change per worker (bng_key_data).
 */
static __rte_noinline void
up_dyn_refresh(struct bng_up *u, struct bng_up_dyn *d, const struct bng_sub *s)
{
	struct bng_up_cold *o = &u->cold[s->id];

	if (o->gen != s->gen) {
		uint32_t seq = o->seq;

		up_seq_begin(o);
		memset(d, 0, sizeof(*d));
		memset(o, 0, sizeof(*o));
		o->seq = seq + 1;
		o->gen = s->gen;
		up_seq_end(o);
	}
	u->ranges[s->id] = s->ranges;
	d->policer = s->policer;
	d->n_v4 = s->n_v4;
	d->has_v6 = s->has_v6;
	/* No range: a net no masked address equals. */
	d->v4_net = s->n_v4 != 0 ? s->ranges.v4_net[0] : UINT32_MAX;
	d->v4_mask = s->n_v4 != 0 ? s->ranges.v4_mask[0] : 0;
	d->ver = s->ver;
}

/*
 * Anti-spoofing: the source of @p l3 is one of subscriber @p id's.  The
 * first IPv4 range is in the state line; the other ranges and the IPv6
 * prefix, in u->ranges[id], are read only when that one does not hold it.
 */
static __rte_always_inline int
up_src_ok(const struct bng_up *u, const struct bng_up_dyn *d, uint32_t id, const uint8_t *l3,
	  uint8_t l3_type)
{
	if (likely(l3_type == EP_L3_IPV4)) {
		uint32_t a;

		memcpy(&a, l3 + 12, 4);
		if (likely((a & d->v4_mask) == d->v4_net))
			return 1;
		if (d->n_v4 <= 1)
			return 0;
	}
	return ep_prefix_set_has_src(&u->ranges[id], d->n_v4, d->has_v6, l3, l3_type);
}

/* The green counters' 32-bit remainders into the cold line's totals,
 * before the byte counter can wrap (BNG_UP_GREEN_SPILL). */
static __rte_noinline void
up_green_spill(struct bng_up *u, uint32_t id, struct bng_up_dyn *d)
{
	struct bng_up_cold *o = &u->cold[id];

	up_seq_begin(o);
	o->pkts[RTE_COLOR_GREEN] += d->green_pkts;
	o->bytes[RTE_COLOR_GREEN] += d->green_bytes;
	d->green_pkts = 0;
	d->green_bytes = 0;
	up_seq_end(o);
}

/* The worker's green totals of a burst, added to u->colour_* once at its
 * end: kept in registers, they are not a store-to-load chain through
 * memory from one packet to the next. */
struct up_green { uint64_t pkts, bytes; };

/*
 * Police one packet of a subscriber whose state is @p d: counts it by
 * colour (the worker's green totals into @p g), remarks a yellow one,
 * returns 1 for red (to be dropped).
 */
static __rte_always_inline int
police_one(struct bng_up *u, uint32_t id, struct bng_up_dyn *d, uint8_t *l3,
	   const struct ep_meta *md, uint64_t now, struct up_green *g)
{
	uint32_t len = md->l3_len;
	enum rte_color c = RTE_COLOR_GREEN;
	struct ep_policer *pol = NULL;
	struct bng_up_cold *o;

	if (likely(d->policer != BNG_NO_POLICER)) {
		pol = ep_policer_read(u->b->pol, d->policer);
		c = ep_policer_color(&d->meter, pol, now, len);
	}
	if (likely(c == RTE_COLOR_GREEN)) {
		/* len < 2^16: the byte counter stays below 2^32 until the
		 * spill; bytes >= packets, so the packets never wrap first. */
		d->green_pkts++;
		d->green_bytes += len;
		if (unlikely(d->green_bytes >= BNG_UP_GREEN_SPILL))
			up_green_spill(u, id, d);
		g->pkts++;
		g->bytes += len;
		return 0;
	}
	o = &u->cold[id];
	o->pkts[c]++;
	o->bytes[c] += len;
	u->colour_pkts[c]++;
	u->colour_bytes[c] += len;
	if (c == RTE_COLOR_YELLOW) {
		ep_policer_remark_yellow(pol, l3, md->l3_type);
		return 0;
	}
	return 1;
}

uint16_t
bng_up_police_at(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
		 uint64_t now)
{
	struct up_green g = {0};
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		const struct ep_meta *md = ep_meta(pkts[i]);
		const struct bng_sub *s = (const struct bng_sub *)(uintptr_t)md->user;
		uint8_t *l3 = rte_pktmbuf_mtod_offset(pkts[i], uint8_t *, md->l3_off);
		struct bng_up_dyn *d = &u->dyn[s->id];

		if (d->ver != s->ver)
			up_dyn_refresh(u, d, s);
		if (police_one(u, s->id, d, l3, md, now, &g)) {
			next[i] = EP_NEXT_DROP(EP_DROP_BNG_POLICER_RED);
			out++;
		}
	}
	u->colour_pkts[RTE_COLOR_GREEN] += g.pkts;
	u->colour_bytes[RTE_COLOR_GREEN] += g.bytes;
	return out;
}

/*
 * Pass 1 of the subscriber stage for packet @p i: its data from the QinQ
 * or the PPPoE map (bit @p i of @p hits set), or its key and hash queued
 * for the bulk hash lookup (@p hidx, @p nh).
 */
static __rte_always_inline void
up_classify_one(struct bng_up *u, const struct bng *b, struct rte_mbuf *m, uint16_t i,
		uint64_t *hits, uint16_t *hidx, uint16_t *nh)
{
	const struct ep_meta *md = ep_meta(m);
	const uint8_t *p;
	uint64_t w0, w1;

	if (likely(md->n_vlans == 2 && md->user != BNG_USER_PPPOE)) {
		/* A QinQ IPoE line: its VLAN pair, if mapped, is the whole
		 * lookup (struct bng_qinq). */
		const uint64_t *blk = __atomic_load_n(&b->qinq->blk[md->vlan_tci[0] & 0x0fff],
						      __ATOMIC_ACQUIRE);

		if (likely(blk != NULL)) {
			uint64_t v = __atomic_load_n(&blk[md->vlan_tci[1] & 0x0fff],
						     __ATOMIC_ACQUIRE);

			if (likely(v != 0)) {
				u->data[i] = (void *)(uintptr_t)v;
				*hits |= 1ull << i;
				return;
			}
		}
	}
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	up_key(p, md, &w0, &w1);
	if (md->user == BNG_USER_PPPOE) {
		/* A PPPoE session: its id, if mapped to this key, is the whole
		 * lookup (struct bng_pppoe). */
		uint64_t v = up_pppoe_data(b, w0, w1);

		if (likely(v != 0)) {
			u->data[i] = (void *)(uintptr_t)v;
			*hits |= 1ull << i;
			return;
		}
	}
	memcpy(&u->keys[*nh], &w0, 8);
	memcpy((uint8_t *)&u->keys[*nh] + 8, &w1, 8);
	u->sig[*nh] = bng_key_hash(w0, w1);
	u->key_ptr[*nh] = &u->keys[*nh];
	hidx[(*nh)++] = i;
}

/*
 * Stage `subscriber`: classification, anti-spoofing and policing of the
 * burst.
 *
 *   pass 1  a QinQ IPoE frame whose VLAN pair is in the QinQ map (struct
 *           bng_qinq) has its key data from there: two loads, the first
 *           of a line every frame of that outer VID shares; or, for the
 *           lanes the x8 parse checked, two gathers for eight frames
 *           there (bng_qinq_x8_blocks, bng_qinq_x8_entries: the answers
 *           in u->pre_hits when the parse passed the burst on whole),
 *           and pass 1 looks only at the other lanes (~1.5 cycles a
 *           packet less in this stage, ~1 more in parse).  A PPPoE
 *           session frame whose session id maps to its own key in the
 *           PPPoE map (struct bng_pppoe) has it from there: the block
 *           pointer and one line of the entry.  The others:
 *           keys from ep_meta (two word stores each, see up_key) and
 *           their hashes (two CRC32C instructions on the same registers:
 *           rte_hash would call its hash function through a pointer per
 *           key and reload the key, ~5 cycles a packet more)
 *   pass 2  ONE rte_hash_lookup_with_hash_bulk_data for those (the cuckoo
 *           hash prefetches every key's buckets before comparing any)
 *   pass 3  the key's data (bng_key_data: id and record version) -> this
 *           worker's state line, prefetched for the whole burst before
 *           any is used (and, for an IPv6 packet, the subscriber's ranges
 *           line; the lanes the x8 parse answered are IPv4, and with them
 *           the state lines' prefetches are a loop of their own, ~1.4
 *           cycles a packet less).  No record and no subs[id]: the state
 *           holds a copy of the record's hot fields (first IPv4 range,
 *           policer)
 *   pass 4  per packet: unknown subscriber, the copy's version (re-read
 *           from the record when it changed: up_dyn_refresh), source check
 *           (the first IPv4 range from the state line; the other three
 *           and the IPv6 prefix from u->ranges[id], up_src_ok), the meter (the TSC the engine read when it called
 *           the stage is its clock); for a packet that passes, the core
 *           route's tbl24 line is prefetched (its lookup follows in
 *           `route`, after the ACL).  In pass 1 the 32 prefetches, on top
 *           of the hash's and the state's, stalled issue on the full miss
 *           buffers; here the meter's work spaces them, and dropped
 *           packets issue none
 */
uint16_t
bng_up_subscriber_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct bng_up *u = ctx;
	struct bng *b = u->b;
	uint64_t hits = 0, pre, now = u->w->stage_tsc, known = 0;
	struct up_green g = {0};
	uint16_t out = 0, nh = 0, hidx[EP_BURST_MAX];

	RTE_BUILD_BUG_ON(sizeof(struct bng_up_dyn) != RTE_CACHE_LINE_SIZE);
	RTE_BUILD_BUG_ON(EP_BURST_MAX > 64);
	/* The x8 parse read every packet's tbl24 word (ep_fib_x8_words): its
	 * line is in cache, no prefetch here. */
	const bool tbl24_read = ep_fib_burst_words_for(&u->route_words, pkts, n);

	/* The lanes the x8 parse found in the QinQ map (bng_qinq_x8_entries). */
	if (u->pre_n == n && n != 0 && u->pre_first == pkts[0])
		hits = u->pre_hits;
	pre = hits;
	u->pre_n = 0;
	if (hits == 0) {
		for (uint16_t i = 0; i < n; i++)
			up_classify_one(u, b, pkts[i], i, &hits, hidx, &nh);
	} else {
		/* Only the lanes without an answer: a loop over their bits. */
		for (uint64_t todo = (n == 64 ? ~0ull : (1ull << n) - 1) & ~hits; todo != 0;
		     todo &= todo - 1) {
			uint16_t i = (uint16_t)__builtin_ctzll(todo);

			up_classify_one(u, b, pkts[i], i, &hits, hidx, &nh);
		}
	}
	if (nh != 0) {
		void *hd[EP_BURST_MAX];
		uint64_t hh = 0;

		rte_hash_lookup_with_hash_bulk_data(b->keys, u->key_ptr, u->sig, nh, &hh, hd);
		for (uint16_t j = 0; j < nh; j++) {
			if ((hh >> j) & 1) {
				u->data[hidx[j]] = hd[j];
				hits |= 1ull << hidx[j];
			}
		}
	}
	/* A miss leaves data[i] as it was: not an id to prefetch.  An IPv6
	 * source is checked against the ranges' line. */
	if (pre != 0) {
		/* The lanes the parse answered are IPv4 (its eight-frame checks
		 * pass nothing else): only the other lanes' meta lines are read
		 * for their type, in a loop of their own, so that the state
		 * lines' prefetches go out back to back (one loop testing both:
		 * subscriber as before; docs/benchmarks/bng-passes.md
		 * "Thirteenth pass"). */
		for (uint16_t i = 0; i < n; i++)
			if (likely((hits >> i) & 1))
				rte_prefetch0(&u->dyn[(uint32_t)(uintptr_t)u->data[i]]);
		for (uint64_t todo = hits & ~pre; todo != 0; todo &= todo - 1) {
			uint16_t i = (uint16_t)__builtin_ctzll(todo);

			if (unlikely(ep_meta(pkts[i])->l3_type != EP_L3_IPV4))
				rte_prefetch0(&u->ranges[(uint32_t)(uintptr_t)u->data[i]]);
		}
	} else {
		for (uint16_t i = 0; i < n; i++) {
			uint32_t id = (uint32_t)(uintptr_t)u->data[i];

			if (likely((hits >> i) & 1)) {
				rte_prefetch0(&u->dyn[id]);
				if (unlikely(ep_meta(pkts[i])->l3_type != EP_L3_IPV4))
					rte_prefetch0(&u->ranges[id]);
			}
		}
	}
	for (uint16_t i = 0; i < n; i++) {
		struct ep_meta *md = ep_meta(pkts[i]);
		uint8_t *l3 = rte_pktmbuf_mtod_offset(pkts[i], uint8_t *, md->l3_off);
		uint64_t data = (uint64_t)(uintptr_t)u->data[i];
		uint32_t id = (uint32_t)data;
		struct bng_up_dyn *d;

		if (unlikely(!((hits >> i) & 1)))
			goto unknown;
		d = &u->dyn[id];
		if (unlikely(d->ver != (uint32_t)(data >> 32))) {
			/* The record changed (or this worker never saw it). */
			const struct bng_sub *s = ep_rcu_read(&b->subs[id]);

			if (s == NULL)
				goto unknown;
			up_dyn_refresh(u, d, s);
		}
		known++;
		if (unlikely(!up_src_ok(u, d, id, l3, md->l3_type))) {
			u->cold[id].spoofed++;
			next[i] = EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE);
			out++;
			continue;
		}
		if (unlikely(police_one(u, id, d, l3, md, now, &g))) {
			next[i] = EP_NEXT_DROP(EP_DROP_BNG_POLICER_RED);
			out++;
			continue;
		}
		if (!tbl24_read && likely(md->l3_type == EP_L3_IPV4)) {
			uint32_t dst;

			memcpy(&dst, l3 + 16, 4);
			ep_fib_prefetch4_by8(b->fib, rte_be_to_cpu_32(dst));
		}
		continue;
unknown:
		next[i] = EP_NEXT_DROP(md->user == BNG_USER_PPPOE ?
				       EP_DROP_BNG_PPPOE_BAD_SESSION :
				       EP_DROP_BNG_UNKNOWN_SUBSCRIBER);
		out++;
	}
	/* The ACL inputs the parse gave name the burst as it was. */
	if (unlikely(out != 0))
		ep_acl_filter_give(u->acl, 0, NULL);
	u->pkts += known;
	u->colour_pkts[RTE_COLOR_GREEN] += g.pkts;
	u->colour_bytes[RTE_COLOR_GREEN] += g.bytes;
	return out;
}

/* ---- route ---- */

/* Echo requests to the BNG's own addresses are answered; anything else to
 * them is not for a subscriber to send. */
static uint16_t
up_local(struct ep_fib_worker *fw, struct rte_mbuf *m, void *arg)
{
	(void)arg;
	return ep_fib_local_echo(fw, m, NULL);
}

uint16_t
bng_up_route_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct bng_up *u = ctx;
	const uint32_t *words = ep_fib_burst_words_take(&u->route_words, pkts, n);

	/* Every packet's tbl24 word read by the x8 parse: a compare each. */
	if (words != NULL)
		return ep_fib_route_burst_words(u->fw, pkts, next, n, words, up_local, NULL);
	/* No prefetch (subscriber did it), no source check (anti-spoofing
	 * proved every source is the subscriber's); the core's few next hops
	 * answered once per tbl24 word a burst (EP_FIB_ROUTE_SAME_NH). */
	return ep_fib_route_burst(u->fw, pkts, next, n, EP_FIB_ROUTE_BY8 | EP_FIB_ROUTE_SAME_NH,
				  up_local, NULL);
}

/* ---- strip + core encapsulation ---- */

/*
 * The core-side header of one next hop and family, built once and reused
 * by every packet of the burst that has both (the white paper's core has
 * one next hop: one build a burst).  Bytes 2.. hold the header; the two in
 * front let a 14-byte header leave as one 16-byte store starting two bytes
 * before the frame, in the headroom the strip just left (the stores are
 * then the template's two 16-byte halves at most, not the next hop's MACs
 * copied 8 + 4 bytes and the type stored apart).
 */
struct up_tmpl {
	alignas(16) uint8_t b[2 + RTE_ETHER_HDR_LEN + 4];
	const struct ep_fib_nh *nh;     /**< NULL: nothing built yet */
	uint8_t l3_type;
	uint16_t mtu;                   /**< the next hop's, less a label's 4 bytes */
	uint16_t next;                  /**< EP_NEXT_TX(its port) */
};

static __rte_always_inline void
up_tmpl_build(struct up_tmpl *t, const struct ep_fib_nh *nh, uint8_t l3_type, uint32_t core_tag,
	      const enum bng_core_encap mode)
{
	uint16_t et = l3_type == EP_L3_IPV4 ? RTE_BE16(RTE_ETHER_TYPE_IPV4) :
					      RTE_BE16(RTE_ETHER_TYPE_IPV6);
	uint8_t *e = t->b + 2;

	memset(t->b, 0, sizeof(t->b));
	memcpy(e, nh->eth, 12);
	if (mode == BNG_CORE_NONE) {
		memcpy(e + 12, &et, 2);
	} else if (mode == BNG_CORE_VLAN) {
		uint16_t tpid = RTE_BE16(RTE_ETHER_TYPE_VLAN);
		uint16_t tci = rte_cpu_to_be_16((uint16_t)core_tag);

		memcpy(e + 12, &tpid, 2);
		memcpy(e + 14, &tci, 2);
		memcpy(e + 16, &et, 2);
	} else {
		uint16_t mpls = RTE_BE16(RTE_ETHER_TYPE_MPLS);

		memcpy(e + 12, &mpls, 2);       /* the label: per packet */
	}
	t->nh = nh;
	t->l3_type = l3_type;
	/* A label takes 4 bytes of the core link's MTU; a VLAN tag none. */
	t->mtu = (uint16_t)(nh->mtu - (mode == BNG_CORE_MPLS ? 4 : 0));
	t->next = EP_NEXT_TX(nh->port);
}

/* The template's header at @p e (the frame's new start, @p hdr bytes).
 * @p room: two bytes of headroom in front of @p e (after the strip of an
 * access header there always are; a prepend may leave fewer). */
static __rte_always_inline void
up_tmpl_store(const struct up_tmpl *t, uint8_t *e, uint16_t hdr, bool room)
{
	if (hdr == RTE_ETHER_HDR_LEN) {
		if (likely(room))
			memcpy(e - 2, t->b, 16);
		else
			memcpy(e, t->b + 2, RTE_ETHER_HDR_LEN);
	} else {
		memcpy(e, t->b + 2, 2);
		memcpy(e + 2, t->b + 4, 16);
	}
}

static __rte_always_inline uint16_t
up_encap(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
	 const enum bng_core_encap mode)
{
	const uint16_t hdr = mode == BNG_CORE_NONE ? RTE_ETHER_HDR_LEN : RTE_ETHER_HDR_LEN + 4;
	/* Headroom the untagged header's 16-byte store needs in front. */
	const uint16_t room = mode == BNG_CORE_NONE ? 2 : 0;
	/* Locals: the frame stores below could alias them (char stores). */
	struct ep_fib_worker *const fw = u->fw;
	const uint32_t core_tag = u->core_tag;
	struct up_tmpl t = { .nh = NULL };
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_meta *md = ep_meta(m);
		const struct ep_fib_nh *nh = ep_meta_nh(m);
		/* ep_meta's fields as locals too: read once, before any store. */
		const uint16_t l3_off = md->l3_off, l4_off = md->l4_off, l3_len = md->l3_len;
		const uint8_t l3_type = md->l3_type;
		uint8_t *l3 = rte_pktmbuf_mtod_offset(m, uint8_t *, l3_off);
		uint32_t end = (uint32_t)l3_off + l3_len;
		int rc = ep_ip_ttl_dec(l3, l3_type);
		bool frag = false;
		uint8_t *e;

		out++;
		if (unlikely(rc != 0)) {
			/* Time exceeded back to the subscriber (traceroute). */
			ep_fib_icmp_error(fw, m, EP_FIB_ICMP_TIME_EXCEEDED, 0);
			next[i] = EP_NEXT_DROP(rc);
			continue;
		}
		if (unlikely(nh != t.nh || l3_type != t.l3_type))
			up_tmpl_build(&t, nh, l3_type, core_tag, mode);
		if (unlikely(l3_len > t.mtu)) {
			next[i] = ep_fib_too_big(fw, m, t.mtu);
			if (next[i] != 0)
				continue;
			frag = true;
		}
		if (likely(l3_off >= hdr + room && m->nb_segs == 1 && m->pkt_len >= end)) {
			/* One segment: the strip and the trim of Ethernet padding
			 * (and of bytes past the PPPoE payload) in three stores,
			 * what rte_pktmbuf_trim and rte_pktmbuf_adj leave, without
			 * their tests; two bytes of headroom in front at least. */
			m->data_off = (uint16_t)(m->data_off + l3_off - hdr);
			m->data_len = (uint16_t)(hdr + l3_len);
			m->pkt_len = (uint32_t)hdr + l3_len;
			e = rte_pktmbuf_mtod(m, uint8_t *);
			up_tmpl_store(&t, e, hdr, true);
		} else {
			if (m->pkt_len > end)
				rte_pktmbuf_trim(m, (uint16_t)(m->pkt_len - end));
			if (l3_off >= hdr) {
				rte_pktmbuf_adj(m, (uint16_t)(l3_off - hdr));
			} else if (unlikely(rte_pktmbuf_prepend(m, (uint16_t)(hdr - l3_off)) ==
					    NULL)) {
				next[i] = EP_NEXT_DROP(EP_DROP_BNG_NO_ENCAP);
				continue;
			}
			e = rte_pktmbuf_mtod(m, uint8_t *);
			up_tmpl_store(&t, e, hdr, m->data_off >= 2);
		}
		if (mode == BNG_CORE_MPLS) {
			/* One label, bottom of stack; TC = the DSCP's class
			 * selector bits, TTL = the IP TTL (RFC 3443 uniform). */
			uint32_t lse = rte_cpu_to_be_32(core_tag |
				(uint32_t)(ep_ip_dscp(l3, l3_type) >> 3) << 9 | 1u << 8 |
				ep_ip_ttl(l3, l3_type));

			memcpy(e + 14, &lse, 4);
		}
		md->l4_off = (uint16_t)(l4_off - l3_off + hdr);
		md->l3_off = hdr;
		md->n_vlans = mode == BNG_CORE_VLAN;
		next[i] = unlikely(frag) ? ep_fib_fragment(fw, m, nh->port, t.mtu) : t.next;
	}
	return out;
}

uint16_t
bng_up_encap_none_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	return up_encap(ctx, pkts, next, n, BNG_CORE_NONE);
}

uint16_t
bng_up_encap_vlan_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	return up_encap(ctx, pkts, next, n, BNG_CORE_VLAN);
}

uint16_t
bng_up_encap_mpls_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	return up_encap(ctx, pkts, next, n, BNG_CORE_MPLS);
}

/* ---- worker ---- */

struct bng_up *
bng_up_create(struct bng *b, struct ep_worker *w, int socket, struct ep_err *err)
{
	struct bng_up *u = rte_zmalloc_socket("ep_bng_up", sizeof(*u), RTE_CACHE_LINE_SIZE, socket);

	if (u == NULL) {
		ep_err_set(err, "bng: out of memory for an uplink worker");
		return NULL;
	}
	u->b = b;
	u->w = w;
	u->dyn = rte_zmalloc_socket("ep_bng_updyn", sizeof(u->dyn[0]) * (b->p.max_subscribers + 1),
				    alignof(struct bng_up_dyn), socket);
	u->ranges = rte_zmalloc_socket("ep_bng_upranges",
				       sizeof(u->ranges[0]) * (b->p.max_subscribers + 1),
				       RTE_CACHE_LINE_SIZE, socket);
	u->cold = rte_zmalloc_socket("ep_bng_upcold",
				     sizeof(u->cold[0]) * (b->p.max_subscribers + 1), 0, socket);
	u->fw = ep_fib_worker_create(b->fib, w, socket);
	u->acl = ep_acl_filter_create(b->acl, socket);
	if (u->dyn == NULL || u->ranges == NULL || u->cold == NULL || u->fw == NULL || u->acl == NULL) {
		ep_err_set(err, "bng: out of memory for an uplink worker (%u subscribers)",
			   b->p.max_subscribers);
		bng_up_free(u);
		return NULL;
	}
	u->access_port = b->access_port;
	u->core_port = b->core_port;
	u->control_port = b->control_port;
	u->nd_answer = b->nd_answer;
	u->parse_x8 = bng_up_parse_x8_usable();
	u->parse_x8_lines = u->parse_x8 && bng_up_parse_x8_lines();
	u->access_mac = b->e->ports[b->access_port].mac;
	u->core_tag = b->core_tag;
	/* The access side's ARP and ND, beyond the answers, belong to the
	 * subscribers' control plane (punted), not to the core FIB. */
	ep_fib_worker_no_learning(u->fw, b->access_port);
	ep_fib_worker_set_qinq_tpid(u->fw, b->access_port, RTE_BE16(RTE_ETHER_TYPE_QINQ));
	return u;
}

void
bng_up_free(struct bng_up *u)
{
	if (u == NULL)
		return;
	ep_acl_filter_free(u->acl);
	ep_fib_worker_free(u->fw);
	rte_free(u->cold);
	rte_free(u->ranges);
	rte_free(u->dyn);
	rte_free(u);
}
