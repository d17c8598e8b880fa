// SPDX-License-Identifier: GPL-2.0
/*
 * XDP steering function: tunnel-aware prioritisation with overflow offload
 * to alternative nodes, on ordinary NICs and veth: Algorithm 1 of
 * Salva-Garcia et al., "XDP-Based SmartNIC Hardware Performance
 * Acceleration for Next-Generation Networks" (J. Netw. Syst. Manage. 30, 75,
 * 2022; docs/xdp-steering.md).
 *
 *   parse Ethernet/VLAN/IP/L4, through VXLAN and GTP-U, to the innermost
 *   flow key (VNI, TEID, 5-tuple)
 *        |
 *   for each active mask: flowhash(key & mask) -> prio_map set, key compared
 *        |
 *   prioritised?  --yes--> its CPU overloaded? --no--> cpumap to its CPU
 *        |                         |                   (XDP_PASS if none named)
 *        no                       yes
 *        |                         v
 *   host overloaded? --yes--> rewrite dst MAC+IP to alt_map[flowhash(key) * n >> 32],
 *        |                    fix checksums, XDP_TX
 *        no --> XDP_PASS
 *
 * The paper rewrote the rx queue index on a Netronome SmartNIC; on other
 * drivers that field is read-only, so a prioritised flow reaches its CPU
 * through a cpumap: the frame is queued to a kthread on that CPU, which
 * builds the skb there and runs the stack on it.
 *
 * Overload is not measured here: the agent samples CPU load, applies
 * hysteresis and writes node_map. The program only reads one word per packet.
 *
 * Cost (BPF_PROG_TEST_RUN, docs/xdp-steering.md has the measurements): the
 * nested VXLAN+GTP-U prioritised path is straight-line code with one
 * helper call, bpf_redirect_map. The fast parse of the common stacks
 * (constant offsets, one bounds check per header group, the key written at
 * the innermost level), one masked multiplicative hash, one or two inlined
 * per-CPU array loads, a six-word key compare, the rule's and the
 * program's counters, the redirect. Other stacks (VLAN tags, IPv6, IPv4
 * options, longer GTP-U extension chains) take the general parse.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "../include/parse_helpers.h"
#include "../include/flowhash.h"
#include "../include/csum.h"
#include "steer.h"

#ifndef STEER_MAX_TUNNELS
#define STEER_MAX_TUNNELS 2   /* VXLAN then GTP-U, the paper's nesting */
#endif

/* Prioritised flows: index hash of the masked flow key -> rule and per-CPU
 * counts, as a 2-way set-associative array (see struct prio_value). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STEER_PRIO_SLOTS);
	__type(key, __u32);
	__type(value, struct prio_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} prio_map SEC(".maps");

/* The field sets the rules use: one slot per distinct mask, in use order. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STEER_MAX_MASKS);
	__type(key, __u32);
	__type(value, struct flow_mask);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} mask_map SEC(".maps");

/* Alternative nodes for offloaded traffic; node_state.alt_count are valid. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STEER_MAX_ALT);
	__type(key, __u32);
	__type(value, struct alt_node);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} alt_map SEC(".maps");

/* The host's overload state, written by the agent from measured CPU load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct node_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} node_map SEC(".maps");

/* Target CPUs for prioritised flows; the agent fills one entry per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, STEER_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cpu_map SEC(".maps");

/* Counters by verdict, path and drop reason, one copy per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct steer_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} stats_map SEC(".maps");

/* No variable has the enum types (counters are indexed by __u32): these two
 * unused pointers put them into the object's BTF, where bpf2go (Go types)
 * and the agent (counter names) read them. Cost: a 16-byte .bss map. */
const enum steer_path *unused_path __attribute__((unused));
const enum steer_drop *unused_drop __attribute__((unused));

enum parse_result {
	PARSE_OK,         /* key filled: steer it */
	PARSE_NOT_IP,     /* not IP, multicast, or an outer fragment: pass untouched */
	PARSE_DROP,       /* malformed: dropped, and counted where it was found */
	PARSE_MORE,       /* a tunnel header was parsed: parse the next level */
	PARSE_SLOW,       /* not a shape the fast parse knows: parse_level's turn */
	PARSE_KEYED,      /* the fast parse filled the key itself: steer it */
};

/* Offsets beyond this are not parsed (the key keeps what was found). */
#define PARSE_MAX_OFF 4096

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the flow key words below are laid out for little-endian BPF (bpfel)"
#endif

/*
 * The parser's state between levels. The levels only remember where the
 * last IP header and its ports are; the key's addresses and ports are read
 * once, after the last level (key_read), rather than at every level and
 * then overwritten by the next.
 */
struct parse_state {
	void *pos;        /* cursor: the next header */
	__u64 ip_off;     /* offset of the innermost IP header parsed */
	__u64 ports_off;  /* offset of its TCP/UDP ports, 0 when none (other
			   * protocol, fragment). Offsets rather than pointers:
			   * see key_read. */
	__u32 vni;        /* key word 0, low half */
	__u32 teid;       /* key word 0, high half */
	__u32 l3_off;     /* outer IP header */
	__u32 l4_off;     /* outer L4 header, 0 when none */
	__u16 next;       /* EtherType (network order) of the header at pos */
	__u8 ip_v6;       /* ip is IPv6 */
	__u8 proto;       /* ip's upper-layer protocol */
	__u8 l4_proto;    /* outer L4 protocol */
	__u8 outer_v6;    /* outer header is IPv6 */
	struct steer_counters *c; /* this CPU's counters, for drops */
	__u64 bytes;      /* frame length, for drops */
};

/*
 * The flow key as the lookup reads it: the six 64-bit words of struct
 * flow_key, each written whole. Writing it field by field (u32 addresses,
 * u16 ports) and reading it as 64-bit words would make each such load wait
 * for the stores to retire (an x86 store does not forward to a wider load).
 */
struct key_words {
	__u64 w[6];
};

/* prio_map's set mask: STEER_PRIO_SLOTS - 2 unless the loader resized the
 * map (Options.PrioSlots). A load-time constant (Cilium's DECLARE_CONFIG):
 * the loader rewrites .rodata before loading and the verifier sees a
 * constant. */
const volatile __u32 prio_set_mask = STEER_PRIO_SLOTS - 2;

/* 0: the general parse only. A load-time constant like prio_set_mask (the
 * verifier removes the branch not taken): the loader clears it when asked
 * (Options.GeneralParseOnly), so that a test can check that the two parses
 * decide alike. */
const volatile __u32 fast_parse = 1;

/* An unaligned 64-bit packet load (x86 has no alignment penalty, and the
 * verifier allows it without BPF_F_STRICT_ALIGNMENT). */
static __always_inline __u64 load64(const void *p)
{
	return *(const __u64 *)p;
}

/* ::ffff:a.b.c.d as key words: bytes 0-7 zero, then 00 00 ff ff a b c d. */
static __always_inline void key_set_v4(__u64 *dst, __be32 addr)
{
	dst[0] = 0;
	dst[1] = ((__u64)addr << 32) | 0xffff0000;
}

static __always_inline void count(struct datarec *d, __u64 bytes)
{
	d->packets++;
	d->bytes += bytes;
}

/*
 * Every return of the program goes through here (or drop_with), counting
 * the verdict and its path. The counters are this CPU's copy and XDP runs
 * in softirq context with preemption off, so plain increments are safe and
 * cost no atomic operation.
 */
static __always_inline int count_exit(struct steer_counters *c, __u32 action, __u32 path,
				      __u64 bytes)
{
	if (action <= XDP_REDIRECT)
		count(&c->verdict[action], bytes);
	if (path < PATH_MAX)
		count(&c->path[path], bytes);
	return action;
}

/*
 * A malformed header: counted here, where the reason is a constant, and
 * the packet dropped. Counting at the end instead, with the reason carried
 * out of every check, made clang set the reason and verdict registers
 * before each bounds check of the well-formed path (two or three register
 * moves each, some 60 instructions on the nested path).
 */
static __always_inline int drop_with(struct parse_state *st, __u32 reason)
{
	count(&st->c->verdict[XDP_DROP], st->bytes);
	count(&st->c->drop[reason], st->bytes);
	return PARSE_DROP;
}

/*
 * One level: IP -> L4 -> (VXLAN -> Ethernet/VLAN | GTP-U). parse_packet
 * inlines it three times with a constant depth, so the depth tests fold.
 *
 * Inlined, not a global (BPF-to-BPF) function: on this AMD EPYC (Zen 4,
 * kernel 6.18.44 with the SRSO "Safe RET" mitigation) every kernel `ret`,
 * JITed BPF subprograms' included, goes through a return thunk that the
 * return predictor always misses: about 8 ns per call here, 25 ns for the
 * three levels (parse-only path, 64 -> 39 ns above the no-op). The 6.18
 * verifier takes the inlined levels (25k instructions processed for the
 * whole program, offload rewrite included) thanks to the offset bound
 * below; without it, it gives up at a million.
 */
static __always_inline int parse_level(void *data, void *data_end,
				       struct parse_state *st, const int depth)
{
	struct hdr_cursor nh;
	struct udphdr *udph;
	struct ethhdr *eth;
	int l4proto, frag = 0, proto, r;
	__u8 gtp_type = 0;
	__u32 id = 0;
	__u64 off;

	/*
	 * Verifier workaround (kernel 6.18.44, clang 14.0.6): the cursor is
	 * turned into an offset, bounded, and back into a pointer. A packet
	 * pointer carries the exact range of the path that made it (IHL,
	 * IPv6 and GTP-U extension lengths), so paths never match and the
	 * verifier explores their product over three levels: it gives up at a
	 * million instructions. data + a scalar in [0, PARSE_MAX_OFF] is the
	 * same state on every path (25k instructions for the program).
	 * barrier_var keeps clang from folding data + (pos - data) back into
	 * pos. Cost: three
	 * instructions per tunnel level. The outer level starts at a constant
	 * offset and needs none of it.
	 */
	nh.pos = st->pos;
	if (depth > 0) {
		off = nh.pos - data;
		barrier_var(off);
		if (off > PARSE_MAX_OFF)
			return PARSE_OK;
		nh.pos = data + off;
	}

	if (st->next == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph;

		l4proto = parse_iphdr(&nh, data_end, &iph);
		if (unlikely(l4proto == PARSE_TRUNC))
			return drop_with(st, DROP_TRUNC_IPV4);
		if (unlikely(l4proto < 0))
			return drop_with(st, DROP_BAD_IPV4);
		st->ip_off = (void *)iph - data;
		st->ip_v6 = 0;
		frag = (iph->frag_off & bpf_htons(0x3fff)) != 0;
	} else if (st->next == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h;

		l4proto = parse_ip6hdr(&nh, data_end, &ip6h, &frag);
		if (unlikely(l4proto == PARSE_TRUNC))
			return drop_with(st, DROP_TRUNC_IPV6);
		if (unlikely(l4proto < 0))
			return drop_with(st, DROP_BAD_INNER);
		st->ip_off = (void *)ip6h - data;
		st->ip_v6 = 1;
		if (depth == 0)
			st->outer_v6 = 1;
	} else {
		/* Non-IP: ARP, LLDP... outside; inside a tunnel the key keeps
		 * the tunnel ids and the last IP header seen. */
		return depth == 0 ? PARSE_NOT_IP : PARSE_OK;
	}
	st->proto = l4proto;
	st->ports_off = 0;
	/* An outer fragment cannot be classified consistently (later
	 * fragments have no ports): the stack reassembles it. An inner
	 * fragment is classified by addresses only, every fragment alike. */
	if (frag)
		return depth == 0 ? PARSE_NOT_IP : PARSE_OK;
	if (depth == 0) {
		st->l4_off = nh.pos - data;
		st->l4_proto = l4proto;
	}
	if (l4proto == IPPROTO_TCP) {
		struct tcphdr *tcph;

		r = parse_tcphdr(&nh, data_end, &tcph);
		if (unlikely(r == PARSE_TRUNC))
			return drop_with(st, DROP_TRUNC_TCP);
		if (unlikely(r < 0))
			return drop_with(st, DROP_BAD_TCP);
		st->ports_off = (void *)tcph - data;
		return PARSE_OK;
	}
	if (l4proto != IPPROTO_UDP)
		return PARSE_OK;
	if (unlikely(parse_udphdr(&nh, data_end, &udph) < 0))
		return drop_with(st, DROP_TRUNC_UDP);
	st->ports_off = (void *)udph - data;
	if (depth >= STEER_MAX_TUNNELS)
		return PARSE_OK;

	if (udph->dest == bpf_htons(VXLAN_PORT)) {
		r = parse_vxlanhdr(&nh, data_end, &id);
		if (unlikely(r == PARSE_TRUNC))
			return drop_with(st, DROP_TRUNC_VXLAN);
		if (r > 0)
			return PARSE_OK;
		st->vni = id;
		proto = parse_ethhdr(&nh, data_end, &eth);
		if (unlikely(proto < 0))
			return drop_with(st, DROP_TRUNC_ETH);
		proto = parse_vlans(&nh, data_end, proto);
		if (unlikely(proto < 0))
			return drop_with(st, DROP_TRUNC_VLAN);
		st->next = proto;
		st->pos = nh.pos;
		return PARSE_MORE;
	}
	if (udph->dest == bpf_htons(GTPU_PORT)) {
		__u8 *ver;

		r = parse_gtpuhdr(&nh, data_end, &id, &gtp_type);
		if (unlikely(r == PARSE_TRUNC))
			return drop_with(st, DROP_TRUNC_GTP);
		if (unlikely(r < 0))
			return drop_with(st, DROP_BAD_GTP_EXT);
		if (r > 0)
			return PARSE_OK;
		st->teid = id;
		/* Echo, error indication, end marker: no T-PDU inside. */
		if (gtp_type != GTP_TYPE_GPDU)
			return PARSE_OK;
		ver = nh.pos;
		if (unlikely((void *)(ver + 1) > data_end))
			return drop_with(st, DROP_BAD_INNER);
		if ((*ver >> 4) == 4)
			st->next = bpf_htons(ETH_P_IP);
		else if (likely((*ver >> 4) == 6))
			st->next = bpf_htons(ETH_P_IPV6);
		else
			return drop_with(st, DROP_BAD_INNER);
		st->pos = nh.pos;
		return PARSE_MORE;
	}
	return PARSE_OK;
}

/*
 * The fast parse: one level of the common tunnel stacks, Ethernet without
 * tags around IPv4 without options, not a fragment, then UDP or TCP, and
 * for UDP VXLAN (I flag set, inner Ethernet without tags carrying IPv4) or
 * a GTP-U G-PDU (no optional fields, or the E flag with no extension or one
 * 4-octet extension such as the PDU session container of TS 38.415).
 * Offsets are constants from the level's start, one bounds check covers
 * the IPv4 and L4 headers and one the tunnel header with what follows, and
 * the fields are tested whole (version and IHL in one byte compare). Any
 * other shape, including every malformed one, returns PARSE_SLOW and the
 * packet is parsed again from the start by parse_level, which names the
 * drop reasons: the fast parse never drops and never decides a verdict the
 * general parse would not (TestFastParseMatchesGeneralParse runs both on
 * every tunnel case, truncation and inverted header byte). At the innermost
 * level it writes the key itself, from headers it has just checked.
 *
 * Cost (docs/xdp-steering.md): the nested VXLAN+GTP-U parse 12 ns above
 * the no-op program instead of 17, the prioritised path 25.5 instead of 31.
 * A frame it hands on late (two GTP-U extension headers) pays for the
 * levels before twice, 4 ns more than the general parse alone; one handed
 * on at the first header (VLAN tags, IPv6) pays a load and a compare.
 */
static __always_inline int fast_level(void *data, void *data_end, struct parse_state *st,
				      struct key_words *k, const int depth)
{
	__u8 *ip, *l4, *t;
	__u64 off, glen;
	int has_ports = 0;
	__be16 dport;
	__u8 proto;

	/* The cursor as a bounded offset, as in parse_level (verifier). */
	off = st->pos - data;
	barrier_var(off);
	if (off > PARSE_MAX_OFF)
		return PARSE_SLOW;
	ip = data + off;
	/* IPv4 and the first 8 octets of its L4 header. */
	if ((void *)(ip + 28) > data_end)
		return PARSE_SLOW;
	if (ip[0] != 0x45 || (*(__be16 *)(ip + 6) & bpf_htons(0x3fff)))
		return PARSE_SLOW;
	proto = ip[9];
	l4 = ip + 20;
	if (depth == 0) {
		st->l4_off = off + 20;
		st->l4_proto = proto;
	}
	if (proto == IPPROTO_TCP) {
		if ((void *)(l4 + 20) > data_end || l4[12] < 0x50)
			return PARSE_SLOW;
		has_ports = 1;
	} else if (proto == IPPROTO_UDP) {
		has_ports = 1;
		dport = *(__be16 *)(l4 + 2);
		t = l4 + 8;
		if (depth < STEER_MAX_TUNNELS && dport == bpf_htons(VXLAN_PORT)) {
			/* VXLAN, then the inner Ethernet header. */
			if ((void *)(t + 22) > data_end || !(t[0] & 0x08) ||
			    *(__be16 *)(t + 20) != bpf_htons(ETH_P_IP))
				return PARSE_SLOW;
			st->vni = bpf_ntohl(*(__be32 *)(t + 4)) >> 8;
			st->pos = t + 22;
			return PARSE_MORE;
		}
		if (depth < STEER_MAX_TUNNELS && dport == bpf_htons(GTPU_PORT)) {
			/* Mandatory part, optional part, one extension header. */
			if ((void *)(t + 16) > data_end || t[1] != GTP_TYPE_GPDU)
				return PARSE_SLOW;
			if (t[0] == (GTP_F_VERSION_1 | GTP_F_PT))
				glen = 8;
			else if (t[0] == (GTP_F_VERSION_1 | GTP_F_PT | GTP_F_E) && t[11] == 0)
				glen = 12;
			else if (t[0] == (GTP_F_VERSION_1 | GTP_F_PT | GTP_F_E) && t[12] == 1 &&
				 t[15] == 0)
				glen = 16;
			else
				return PARSE_SLOW;
			st->teid = bpf_ntohl(*(__be32 *)(t + 4));
			st->pos = t + glen;
			return PARSE_MORE;
		}
	}
	/* The innermost header: the key, from the headers just checked (the
	 * general parse's key_read checks them again). */
	k->w[0] = (__u64)st->vni | (__u64)st->teid << 32;
	key_set_v4(&k->w[1], *(__be32 *)(ip + 12));
	key_set_v4(&k->w[3], *(__be32 *)(ip + 16));
	k->w[5] = (__u64)proto << 32;
	if (has_ports) {
		/* Both ports to host order in one swap: sport low, dport high. */
		__u32 p = bpf_ntohl(*(__be32 *)l4);

		k->w[5] |= (p >> 16) | (p << 16);
	}
	return PARSE_KEYED;
}

/* The fast parse of the whole packet: PARSE_KEYED, or PARSE_SLOW. */
static __always_inline int parse_fast(void *data, void *data_end, struct parse_state *st,
				      struct key_words *k)
{
	__u8 *eth = data;
	int r;

	if ((void *)(eth + ETH_HLEN) > data_end || (eth[0] & 1) ||
	    *(__be16 *)(eth + 12) != bpf_htons(ETH_P_IP))
		return PARSE_SLOW;
	st->l3_off = ETH_HLEN;
	st->pos = eth + ETH_HLEN;
	r = fast_level(data, data_end, st, k, 0);
	if (r == PARSE_MORE)
		r = fast_level(data, data_end, st, k, 1);
	if (r == PARSE_MORE)
		r = fast_level(data, data_end, st, k, 2);
	return r;
}

/* Ethernet and VLAN tags, then the levels. */
static __always_inline int parse_packet(void *data, void *data_end, struct parse_state *st,
					struct key_words *k)
{
	struct hdr_cursor nh = { .pos = data };
	struct ethhdr *eth;
	int proto, r;

	if (fast_parse && parse_fast(data, data_end, st, k) == PARSE_KEYED)
		return PARSE_KEYED;
	/* What the fast parse may have set: */
	st->vni = 0;
	st->teid = 0;
	st->l4_off = 0;
	st->l4_proto = 0;
	proto = parse_ethhdr(&nh, data_end, &eth);
	if (unlikely(proto < 0))
		return drop_with(st, DROP_TRUNC_ETH);
	proto = parse_vlans(&nh, data_end, proto);
	if (unlikely(proto < 0))
		return drop_with(st, DROP_TRUNC_VLAN);
	/* Broadcast and multicast (ARP, ND, MLD...) belong to every node on
	 * the segment: never steered, never rewritten to one other node. */
	if (eth->h_dest[0] & 1)
		return PARSE_NOT_IP;
	st->next = proto;
	st->pos = nh.pos;
	st->l3_off = nh.pos - data;

	_Static_assert(STEER_MAX_TUNNELS == 2, "parse_packet inlines 3 levels");
	r = parse_level(data, data_end, st, 0);
	if (r == PARSE_MORE)
		r = parse_level(data, data_end, st, 1);
	if (r == PARSE_MORE)
		r = parse_level(data, data_end, st, 2);
	return r;
}

/*
 * The key from the headers parse_packet found. The levels keep offsets,
 * not pointers: a packet pointer carries the exact range of the path that
 * made it, and held across the levels it made the verifier check each
 * level once per path through the levels before (220k instructions
 * instead of 14k, measured before the offload rewrite was inlined). The headers were bounds-checked while parsing; the
 * offsets are bounded and the headers checked again here for the verifier,
 * at the cost of a few predicted branches.
 */
static __always_inline int key_read(const struct parse_state *st, void *data,
				    void *data_end, struct key_words *k)
{
	__u64 ip_off = st->ip_off, ports_off = st->ports_off;
	__be16 *ports;

	if (ip_off > PARSE_MAX_OFF || ports_off > PARSE_MAX_OFF)
		return -1;
	k->w[0] = (__u64)st->vni | (__u64)st->teid << 32;
	if (st->ip_v6) {
		struct ipv6hdr *ip6h = data + ip_off;

		if (unlikely((void *)(ip6h + 1) > data_end))
			return -1;
		k->w[1] = load64(&ip6h->saddr);
		k->w[2] = load64((__u8 *)&ip6h->saddr + 8);
		k->w[3] = load64(&ip6h->daddr);
		k->w[4] = load64((__u8 *)&ip6h->daddr + 8);
	} else {
		struct iphdr *iph = data + ip_off;

		if (unlikely((void *)(iph + 1) > data_end))
			return -1;
		key_set_v4(&k->w[1], iph->saddr);
		key_set_v4(&k->w[3], iph->daddr);
	}
	k->w[5] = (__u64)st->proto << 32;
	if (ports_off != 0) {
		ports = data + ports_off;
		if (unlikely((void *)(ports + 2) > data_end))
			return -1;
		k->w[5] |= (__u64)bpf_ntohs(ports[0]) | (__u64)bpf_ntohs(ports[1]) << 16;
	}
	return 0;
}

/* Does this slot hold an active rule of mask slot `slot` for the masked
 * key? The flags are tested first: an empty slot ends there. */
static __always_inline int slot_hit(const struct prio_value *pv, const struct key_words *m,
				    __u32 slot)
{
	const __u64 *pw = (const __u64 *)&pv->key;

	if (!pv->active || pv->mask_id != slot)
		return 0;
	return ((m->w[0] ^ pw[0]) | (m->w[1] ^ pw[1]) | (m->w[2] ^ pw[2]) |
		(m->w[3] ^ pw[3]) | (m->w[4] ^ pw[4]) | (m->w[5] ^ pw[5])) == 0;
}

static __always_inline struct prio_value *lookup_slot(const struct key_words *k, __u32 slot)
{
	struct flow_mask *m = bpf_map_lookup_elem(&mask_map, &slot);
	struct prio_value *pv;
	struct key_words mk;
	const __u64 *mw;
	__u32 idx;

	if (m == NULL)
		return NULL;
	mw = (const __u64 *)&m->mask;
	mk.w[0] = k->w[0] & mw[0];
	mk.w[1] = k->w[1] & mw[1];
	mk.w[2] = k->w[2] & mw[2];
	mk.w[3] = k->w[3] & mw[3];
	mk.w[4] = k->w[4] & mw[4];
	mk.w[5] = k->w[5] & mw[5];
	idx = flowhash6(mk.w[0], mk.w[1], mk.w[2], mk.w[3], mk.w[4], mk.w[5]) & prio_set_mask;
	pv = bpf_map_lookup_elem(&prio_map, &idx);
	if (pv != NULL && slot_hit(pv, &mk, slot))
		return pv;
	idx |= 1;
	pv = bpf_map_lookup_elem(&prio_map, &idx);
	if (pv != NULL && slot_hit(pv, &mk, slot))
		return pv;
	return NULL;
}

/*
 * Tuple-space lookup: one masked hash and one set per mask in use, in slot
 * order. The stored key is compared, so a hash collision never prioritises
 * a flow no intent named. Which slots are in use is one word of node_state,
 * already loaded: a slot not in use costs a bit test, not a mask_map lookup
 * (about 0.8 ns each, measured, so 2.5 ns on every packet with one field set
 * in use). The slots are unrolled by hand: a loop whose counter is passed
 * by address to a map lookup is neither unrolled by clang 14 nor proven
 * finite by the 6.18 verifier.
 */
static __always_inline struct prio_value *lookup_prio(const struct key_words *k,
						     __u32 active)
{
	struct prio_value *pv = NULL;

	_Static_assert(STEER_MAX_MASKS == 4, "lookup_prio unrolls 4 mask slots");
	if (active & 1)
		pv = lookup_slot(k, 0);
	if (pv == NULL && (active & 2))
		pv = lookup_slot(k, 1);
	if (pv == NULL && (active & 4))
		pv = lookup_slot(k, 2);
	if (pv == NULL && (active & 8))
		pv = lookup_slot(k, 3);
	return pv;
}

static __always_inline int cpu_overloaded(const struct node_state *ns, __u32 cpu)
{
	if (cpu >= STEER_MAX_CPUS)
		return 0;
	return (ns->cpu_overloaded[cpu / 64] >> (cpu % 64)) & 1;
}

/* Outer header facts rewrite_to_alt needs, packed into one scalar argument. */
#define ALT_L4_PROTO(x) ((x) & 0xff)
#define ALT_OUTER_V6 0x100

/*
 * Rewrite the outer destination to an alternative node: the frame leaves by
 * the port it came in (XDP_TX), so the new source MAC is the old destination
 * (ours). The source IP is kept, so the alternative node answers the sender.
 * Returns 0, or -1 when the node has no address of the outer family (the
 * packet is then untouched). Inlined at its two call sites: as a global
 * function it cost a call whose return goes through the SRSO return thunk
 * (see parse_level), about 7 ns on each offloaded packet; the verifier
 * takes the two copies (25k instructions processed for the program).
 */
static __always_inline int rewrite_to_alt(struct xdp_md *ctx, __u32 idx, __u32 l3_off,
					  __u32 l4_off, __u32 outer)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct alt_node *alt;
	__u16 *l4check = NULL;
	__u16 from[8], to[8];
	__u64 l3, l4; /* 64-bit: clang 14 zero-extends a 32-bit copy to compare it */
	__u32 l4_proto = ALT_L4_PROTO(outer);

	if ((void *)(eth + 1) > data_end)
		return -1;
	alt = bpf_map_lookup_elem(&alt_map, &idx);
	if (alt == NULL)
		return -1;
	/* barrier_var: clang 14 would otherwise compare one register and
	 * reuse another, unchecked, for the pointer arithmetic. */
	l3 = l3_off;
	l4 = l4_off;
	barrier_var(l3);
	barrier_var(l4);
	if (l3 > 64 || l4 > PARSE_MAX_OFF)
		return -1;
	if (l4 != 0) {
		if (l4_proto == IPPROTO_UDP) {
			struct udphdr *uh = data + l4;

			if ((void *)(uh + 1) > data_end)
				return -1;
			/* IPv4 UDP checksum 0 means none (RFC 768). */
			if (uh->check != 0 || (outer & ALT_OUTER_V6))
				l4check = &uh->check;
		} else if (l4_proto == IPPROTO_TCP) {
			struct tcphdr *th = data + l4;

			if ((void *)(th + 1) > data_end)
				return -1;
			l4check = &th->check;
		}
	}

	if (!(outer & ALT_OUTER_V6)) {
		struct iphdr *iph = data + l3;

		if (!alt->has_ip4 || (void *)(iph + 1) > data_end)
			return -1;
		__builtin_memcpy(from, &iph->daddr, 4);
		__builtin_memcpy(to, alt->ip4, 4);
		__builtin_memcpy(&iph->daddr, alt->ip4, 4);
		csum_replace_words(&iph->check, from, to, 2);
		if (l4check != NULL)
			csum_replace_words(l4check, from, to, 2);
	} else {
		struct ipv6hdr *ip6h = data + l3;

		if (!alt->has_ip6 || (void *)(ip6h + 1) > data_end)
			return -1;
		__builtin_memcpy(from, &ip6h->daddr, 16);
		__builtin_memcpy(to, alt->ip6, 16);
		__builtin_memcpy(&ip6h->daddr, alt->ip6, 16);
		if (l4check != NULL)
			csum_replace_words(l4check, from, to, 8);
	}
	/* A UDP checksum that comes out 0 is sent as all ones (RFC 768). */
	if (l4check != NULL && l4_proto == IPPROTO_UDP && *l4check == 0)
		*l4check = 0xffff;
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, alt->mac, ETH_ALEN);
	return 0;
}

/* Offload to the alternative node the flow hash picks; XDP_PASS if none. */
static __always_inline int offload(struct xdp_md *ctx, struct steer_counters *c,
				   const struct parse_state *st, const struct key_words *k,
				   const struct node_state *ns, __u32 path, __u64 bytes)
{
	__u32 n = ns->alt_count, idx, h;

	if (n == 0 || n > STEER_MAX_ALT)
		return count_exit(c, XDP_PASS, PATH_NO_ALT_NODE, bytes);
	/* h * n / 2^32 spreads the hash over n nodes as h % n would, without
	 * a division (Lemire's range reduction). */
	h = flowhash6(k->w[0], k->w[1], k->w[2], k->w[3], k->w[4], k->w[5]);
	idx = ((__u64)h * n) >> 32;
	if (rewrite_to_alt(ctx, idx, st->l3_off, st->l4_off,
			   st->l4_proto | (st->outer_v6 ? ALT_OUTER_V6 : 0)) < 0)
		return count_exit(c, XDP_PASS, PATH_NO_ALT_NODE, bytes);
	return count_exit(c, XDP_TX, path, bytes);
}

SEC("xdp")
int xdp_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 bytes = data_end - data;
	struct steer_counters *c;
	struct parse_state st;
	struct node_state *ns;
	struct prio_value *pv;
	struct key_words k;
	__u32 zero = 0, cpu;
	int r;

	c = bpf_map_lookup_elem(&stats_map, &zero);
	if (c == NULL)
		return XDP_PASS; /* cannot happen: index 0 of an array */

	/* Only what a path may read before writing it. */
	st.vni = 0;
	st.teid = 0;
	st.l4_off = 0;
	st.l4_proto = 0;
	st.outer_v6 = 0;
	st.c = c;
	st.bytes = bytes;
	r = parse_packet(data, data_end, &st, &k);
	if (r == PARSE_DROP)
		return XDP_DROP; /* counted by drop_with */
	if (r == PARSE_NOT_IP)
		return count_exit(c, XDP_PASS, PATH_NOT_STEERABLE, bytes);

	ns = bpf_map_lookup_elem(&node_map, &zero);
	if (ns == NULL)
		return count_exit(c, XDP_PASS, PATH_NOT_STEERABLE, bytes);

	if (r == PARSE_OK && key_read(&st, data, data_end, &k) < 0)
		return count_exit(c, XDP_PASS, PATH_NOT_STEERABLE, bytes);
	pv = lookup_prio(&k, ns->masks_active);
	if (pv != NULL) {
		/* This CPU's copy of the rule: no other writer, no atomics. */
		pv->packets++;
		pv->bytes += bytes;
		cpu = pv->cpu;
		if (cpu == STEER_NO_CPU) {
			if (!cpu_overloaded(ns, bpf_get_smp_processor_id()))
				return count_exit(c, XDP_PASS, PATH_PRIO_HOST, bytes);
		} else if (!cpu_overloaded(ns, cpu)) {
			/* Returns the fallback, XDP_PASS, when the CPU has no
			 * entry. */
			if (bpf_redirect_map(&cpu_map, cpu, XDP_PASS) == XDP_REDIRECT)
				return count_exit(c, XDP_REDIRECT, PATH_PRIO_CPU, bytes);
			return count_exit(c, XDP_PASS, PATH_CPU_MISSING, bytes);
		}
		return offload(ctx, c, &st, &k, ns, PATH_PRIO_OVERFLOW, bytes);
	}
	if (!ns->host_overloaded)
		return count_exit(c, XDP_PASS, PATH_HEADROOM, bytes);
	return offload(ctx, c, &st, &k, ns, PATH_OFFLOAD, bytes);
}

char _license[] SEC("license") = "GPL";
