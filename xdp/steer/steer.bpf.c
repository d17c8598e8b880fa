// SPDX-License-Identifier: GPL-2.0
/*
 * XDP steering function: tunnel-aware prioritisation with overflow offload
 * to alternative nodes (the seed's Algorithm 1, on ordinary NICs and veth).
 *
 *   parse Ethernet/VLAN/IP/L4, through VXLAN and GTP-U, to the innermost
 *   flow key (VNI, TEID, 5-tuple)
 *        |
 *   for each active mask: jhash2(key & mask) -> prio_map
 *        |
 *   prioritised?  --yes--> its CPU overloaded? --no--> cpumap to its CPU
 *        |                         |                   (XDP_PASS if none named)
 *        no                       yes
 *        |                         v
 *   host overloaded? --yes--> rewrite dst MAC+IP to alt_map[jhash2(key) % n],
 *        |                    fix checksums, XDP_TX
 *        no --> XDP_PASS
 *
 * The seed rewrote the rx queue index on a Netronome SmartNIC; on other
 * drivers that field is read-only, so a prioritised flow reaches its CPU
 * through a cpumap: the frame is queued to a kthread on that CPU, which
 * builds the skb there and runs the stack on it.
 *
 * Overload is not measured here: the agent samples CPU load, applies
 * hysteresis and writes node_map. The program only reads one word per packet.
 *
 * Cost (BPF_PROG_TEST_RUN, see docs/xdp-steering.md): the nested
 * VXLAN+GTP-U prioritised path is parse (three levels) + one masked jhash2
 * + one or two per-CPU array loads + a 48-byte key compare + one stats
 * lookup + the redirect.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "../include/parse_helpers.h"
#include "../include/jhash.h"
#include "../include/csum.h"
#include "steer.h"

#ifndef STEER_MAX_TUNNELS
#define STEER_MAX_TUNNELS 2   /* VXLAN then GTP-U, the seed's nesting */
#endif

#define KEY_WORDS (sizeof(struct flow_key) / 4)

/* Prioritised flows: jhash2 of the masked flow key -> rule and per-CPU
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
	PARSE_DROP,       /* malformed: drop with a reason */
	PARSE_MORE,       /* a tunnel header was parsed: parse the next level */
};

/* Offsets beyond this are not parsed (the key keeps what was found). */
#define PARSE_MAX_OFF 4096

/*
 * The parser's state between levels. Offsets, not packet pointers: a
 * global function may not take packet pointers, and scalar offsets re-checked
 * against data_end keep the verifier's state small (see parse_level).
 */
struct parse_state {
	struct flow_key key;
	__u32 off;        /* cursor: offset of the next header */
	__u32 l3_off;     /* outer IP header */
	__u32 l4_off;     /* outer L4 header, 0 when none */
	__u32 drop;       /* enum steer_drop, for PARSE_DROP */
	__u16 next;       /* EtherType (network order) of the header at off */
	__u8 l4_proto;    /* outer L4 protocol */
	__u8 outer_v6;    /* outer header is IPv6 */
};

struct steer_out {
	__u32 action;     /* enum xdp_action */
	__u32 path;       /* enum steer_path, when action is not XDP_DROP */
	__u32 drop;       /* enum steer_drop, when action is XDP_DROP */
};

static __always_inline void key_set_v4(__u8 *dst, __be32 addr)
{
	__u32 *w = (__u32 *)dst;

	w[0] = 0;
	w[1] = 0;
	w[2] = bpf_htonl(0x0000ffff);
	w[3] = addr;
}

static __always_inline int drop_with(struct parse_state *st, __u32 reason)
{
	st->drop = reason;
	return PARSE_DROP;
}

/*
 * One level: IP -> L4 -> (VXLAN -> Ethernet/VLAN | GTP-U). Called once for
 * the outer headers and once per tunnel, at most STEER_MAX_TUNNELS + 1 times.
 *
 * It is a global function on purpose: the verifier checks it once, with any
 * offset, instead of once per path through the levels before it. Inlined,
 * the variable header lengths (IPv4 IHL, IPv6 extension headers, the GTP-U
 * extension chain) multiply across three levels and the 6.18 verifier gives
 * up after a million instructions. The price is a call per level, about a
 * nanosecond each.
 */
__attribute__((noinline))
int parse_level(struct xdp_md *ctx, struct parse_state *st, int depth)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct hdr_cursor nh;
	struct udphdr *udph;
	struct tcphdr *tcph;
	struct ethhdr *eth;
	int l4proto, frag = 0, proto, r;
	__u8 gtp_type = 0;
	__u32 id = 0, off;

	if (st == NULL)
		return PARSE_NOT_IP;
	off = st->off;
	if (off > PARSE_MAX_OFF)
		return PARSE_OK;
	nh.pos = data + off;

	if (st->next == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph;

		l4proto = parse_iphdr(&nh, data_end, &iph);
		if (l4proto == PARSE_TRUNC)
			return drop_with(st, DROP_TRUNC_IPV4);
		if (l4proto < 0)
			return drop_with(st, DROP_BAD_IPV4);
		key_set_v4(st->key.saddr, iph->saddr);
		key_set_v4(st->key.daddr, iph->daddr);
		frag = (iph->frag_off & bpf_htons(0x3fff)) != 0;
	} else if (st->next == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h;

		l4proto = parse_ip6hdr(&nh, data_end, &ip6h, &frag);
		if (l4proto == PARSE_TRUNC)
			return drop_with(st, DROP_TRUNC_IPV6);
		if (l4proto < 0)
			return drop_with(st, DROP_BAD_INNER);
		__builtin_memcpy(st->key.saddr, &ip6h->saddr, 16);
		__builtin_memcpy(st->key.daddr, &ip6h->daddr, 16);
		if (depth == 0)
			st->outer_v6 = 1;
	} else {
		/* Non-IP: ARP, LLDP... outside; inside a tunnel the key keeps
		 * the tunnel ids and the last IP header seen. */
		return depth == 0 ? PARSE_NOT_IP : PARSE_OK;
	}
	st->key.proto = l4proto;
	st->key.sport = 0;
	st->key.dport = 0;
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
		r = parse_tcphdr(&nh, data_end, &tcph);
		if (r == PARSE_TRUNC)
			return drop_with(st, DROP_TRUNC_TCP);
		if (r < 0)
			return drop_with(st, DROP_BAD_TCP);
		st->key.sport = bpf_ntohs(tcph->source);
		st->key.dport = bpf_ntohs(tcph->dest);
		return PARSE_OK;
	}
	if (l4proto != IPPROTO_UDP)
		return PARSE_OK;
	if (parse_udphdr(&nh, data_end, &udph) < 0)
		return drop_with(st, DROP_TRUNC_UDP);
	st->key.sport = bpf_ntohs(udph->source);
	st->key.dport = bpf_ntohs(udph->dest);
	if (depth >= STEER_MAX_TUNNELS)
		return PARSE_OK;

	if (udph->dest == bpf_htons(VXLAN_PORT)) {
		r = parse_vxlanhdr(&nh, data_end, &id);
		if (r == PARSE_TRUNC)
			return drop_with(st, DROP_TRUNC_VXLAN);
		if (r > 0)
			return PARSE_OK;
		st->key.vni = id;
		proto = parse_ethhdr(&nh, data_end, &eth);
		if (proto < 0)
			return drop_with(st, DROP_TRUNC_ETH);
		proto = parse_vlans(&nh, data_end, proto);
		if (proto < 0)
			return drop_with(st, DROP_TRUNC_VLAN);
		st->next = proto;
		st->off = nh.pos - data;
		return PARSE_MORE;
	}
	if (udph->dest == bpf_htons(GTPU_PORT)) {
		__u8 *ver;

		r = parse_gtpuhdr(&nh, data_end, &id, &gtp_type);
		if (r == PARSE_TRUNC)
			return drop_with(st, DROP_TRUNC_GTP);
		if (r < 0)
			return drop_with(st, DROP_BAD_GTP_EXT);
		if (r > 0)
			return PARSE_OK;
		st->key.teid = id;
		/* Echo, error indication, end marker: no T-PDU inside. */
		if (gtp_type != GTP_TYPE_GPDU)
			return PARSE_OK;
		ver = nh.pos;
		if ((void *)(ver + 1) > data_end)
			return drop_with(st, DROP_BAD_INNER);
		if ((*ver >> 4) == 4)
			st->next = bpf_htons(ETH_P_IP);
		else if ((*ver >> 4) == 6)
			st->next = bpf_htons(ETH_P_IPV6);
		else
			return drop_with(st, DROP_BAD_INNER);
		st->off = nh.pos - data;
		return PARSE_MORE;
	}
	return PARSE_OK;
}

/* Ethernet and VLAN tags inline (fixed offsets), then the levels. */
static __always_inline int parse_packet(struct xdp_md *ctx, struct parse_state *st)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct hdr_cursor nh = { .pos = data };
	struct ethhdr *eth;
	int proto, r;

	proto = parse_ethhdr(&nh, data_end, &eth);
	if (proto < 0)
		return drop_with(st, DROP_TRUNC_ETH);
	proto = parse_vlans(&nh, data_end, proto);
	if (proto < 0)
		return drop_with(st, DROP_TRUNC_VLAN);
	/* Broadcast and multicast (ARP, ND, MLD...) belong to every node on
	 * the segment: never steered, never rewritten to one other node. */
	if (eth->h_dest[0] & 1)
		return PARSE_NOT_IP;
	st->next = proto;
	st->off = nh.pos - data;
	st->l3_off = st->off;

	_Static_assert(STEER_MAX_TUNNELS == 2, "parse_packet calls 3 levels");
	r = parse_level(ctx, st, 0);
	if (r == PARSE_MORE)
		r = parse_level(ctx, st, 1);
	if (r == PARSE_MORE)
		r = parse_level(ctx, st, 2);
	return r;
}

/* Does this slot hold the rule for the masked key? The hash is compared
 * first: almost every miss ends there, before the 12-word compare. */
static __always_inline int slot_hit(const struct prio_value *pv, const __u32 *masked,
				    __u32 h, __u32 slot)
{
	const __u32 *pw = (const __u32 *)&pv->key;
	__u32 w, diff = 0;

	if (pv->hash != h || !pv->active || pv->mask_id != slot)
		return 0;
#pragma unroll
	for (w = 0; w < KEY_WORDS; w++)
		diff |= masked[w] ^ pw[w];
	return diff == 0;
}

static __always_inline struct prio_value *lookup_slot(const struct flow_key *key,
						     __u32 slot)
{
	const __u32 *kw = (const __u32 *)key;
	struct flow_mask *m = bpf_map_lookup_elem(&mask_map, &slot);
	struct prio_value *pv;
	__u32 masked[KEY_WORDS];
	const __u32 *mw;
	__u32 h, idx, w;

	if (m == NULL || !m->active)
		return NULL;
	mw = (const __u32 *)&m->mask;
#pragma unroll
	for (w = 0; w < KEY_WORDS; w++)
		masked[w] = kw[w] & mw[w];
	h = jhash2(masked, KEY_WORDS, STEER_JHASH_INITVAL);
	idx = h & (STEER_PRIO_SLOTS - 2);
	pv = bpf_map_lookup_elem(&prio_map, &idx);
	if (pv != NULL && slot_hit(pv, masked, h, slot))
		return pv;
	idx |= 1;
	pv = bpf_map_lookup_elem(&prio_map, &idx);
	if (pv != NULL && slot_hit(pv, masked, h, slot))
		return pv;
	return NULL;
}

/*
 * Tuple-space lookup: one masked hash and one lookup per active mask, so the
 * common case of one field set costs one jhash2 and two array loads, and an
 * unused slot costs one inlined array load. The stored key is compared too,
 * so a 32-bit hash collision never prioritises a flow no intent named. The
 * slots are unrolled by hand: a loop whose counter is passed by address to
 * a map lookup is neither unrolled by clang 14 nor proven finite by the
 * 6.18 verifier.
 */
static __always_inline struct prio_value *lookup_prio(const struct flow_key *key)
{
	struct prio_value *pv;

	_Static_assert(STEER_MAX_MASKS == 4, "lookup_prio unrolls 4 mask slots");
	pv = lookup_slot(key, 0);
	if (pv == NULL)
		pv = lookup_slot(key, 1);
	if (pv == NULL)
		pv = lookup_slot(key, 2);
	if (pv == NULL)
		pv = lookup_slot(key, 3);
	return pv;
}

static __always_inline int cpu_overloaded(const struct node_state *ns, __u32 cpu)
{
	if (cpu >= STEER_MAX_CPUS)
		return 0;
	return (ns->cpu_overloaded[cpu / 64] >> (cpu % 64)) & 1;
}

/*
 * Rewrite the outer destination to an alternative node: the frame leaves by
 * the port it came in (XDP_TX), so the new source MAC is the old destination
 * (ours). The source IP is kept, so the alternative node answers the sender.
 * Returns 0, or -1 when the node has no address of the outer family (the
 * packet is then untouched). A global function, checked once by the
 * verifier; it runs only on the offload path.
 */
__attribute__((noinline))
int rewrite_to_alt(struct xdp_md *ctx, const struct parse_state *st, __u32 idx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct alt_node *alt;
	__u16 *l4check = NULL;
	__u16 from[8], to[8];
	__u64 l3, l4; /* 64-bit: clang 14 zero-extends a 32-bit copy to compare it */

	if (st == NULL || (void *)(eth + 1) > data_end)
		return -1;
	alt = bpf_map_lookup_elem(&alt_map, &idx);
	if (alt == NULL)
		return -1;
	/* barrier_var: clang 14 would otherwise compare one register and
	 * reuse another, unchecked, for the pointer arithmetic. */
	l3 = st->l3_off;
	l4 = st->l4_off;
	barrier_var(l3);
	barrier_var(l4);
	if (l3 > 64 || l4 > PARSE_MAX_OFF)
		return -1;
	if (l4 != 0) {
		if (st->l4_proto == IPPROTO_UDP) {
			struct udphdr *uh = data + l4;

			if ((void *)(uh + 1) > data_end)
				return -1;
			/* IPv4 UDP checksum 0 means none (RFC 768). */
			if (uh->check != 0 || st->outer_v6)
				l4check = &uh->check;
		} else if (st->l4_proto == IPPROTO_TCP) {
			struct tcphdr *th = data + l4;

			if ((void *)(th + 1) > data_end)
				return -1;
			l4check = &th->check;
		}
	}

	if (!st->outer_v6) {
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
	if (l4check != NULL && st->l4_proto == IPPROTO_UDP && *l4check == 0)
		*l4check = 0xffff;
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, alt->mac, ETH_ALEN);
	return 0;
}

/* Offload to the alternative node the flow hash picks; XDP_PASS if none. */
static __always_inline void offload(struct xdp_md *ctx, const struct parse_state *st,
				    const struct node_state *ns,
				    struct steer_out *out, __u32 path)
{
	__u32 n = ns->alt_count, idx;

	out->action = XDP_PASS;
	out->path = PATH_NO_ALT_NODE;
	if (n == 0 || n > STEER_MAX_ALT)
		return;
	idx = jhash2((const __u32 *)&st->key, KEY_WORDS, STEER_JHASH_INITVAL) % n;
	if (rewrite_to_alt(ctx, st, idx) < 0)
		return;
	out->action = XDP_TX;
	out->path = path;
}

static __always_inline void steer(struct xdp_md *ctx, struct steer_out *out, __u64 bytes)
{
	struct parse_state st = {};
	struct node_state *ns;
	struct prio_value *pv;
	__u32 zero = 0, cpu;
	int r;

	r = parse_packet(ctx, &st);
	if (r == PARSE_DROP) {
		out->action = XDP_DROP;
		out->drop = st.drop;
		return;
	}
	if (r == PARSE_NOT_IP)
		return;

	ns = bpf_map_lookup_elem(&node_map, &zero);
	if (ns == NULL)
		return;

	pv = lookup_prio(&st.key);
	if (pv != NULL) {
		/* This CPU's copy of the rule: no other writer, no atomics. */
		pv->packets++;
		pv->bytes += bytes;
		cpu = pv->cpu;
		if (cpu == STEER_NO_CPU) {
			if (!cpu_overloaded(ns, bpf_get_smp_processor_id())) {
				out->path = PATH_PRIO_HOST;
				return;
			}
		} else if (!cpu_overloaded(ns, cpu)) {
			/* Falls back to XDP_PASS when the CPU has no entry. */
			out->action = bpf_redirect_map(&cpu_map, cpu, XDP_PASS);
			out->path = out->action == XDP_REDIRECT ? PATH_PRIO_CPU : PATH_CPU_MISSING;
			return;
		}
		offload(ctx, &st, ns, out, PATH_PRIO_OVERFLOW);
		return;
	}
	if (!ns->host_overloaded) {
		out->path = PATH_HEADROOM;
		return;
	}
	offload(ctx, &st, ns, out, PATH_OFFLOAD);
}

/*
 * The one exit: counts the verdict and its path or drop reason. The value is
 * this CPU's copy and XDP runs in softirq context with preemption off, so
 * plain increments are safe and cost no atomic operation.
 */
static __always_inline int record_exit(const struct steer_out *out, __u64 bytes)
{
	struct steer_counters *c;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&stats_map, &zero);
	if (c == NULL)
		return out->action;
	if (out->action <= XDP_REDIRECT) {
		c->verdict[out->action].packets++;
		c->verdict[out->action].bytes += bytes;
	}
	if (out->action == XDP_DROP) {
		if (out->drop < DROP_MAX) {
			c->drop[out->drop].packets++;
			c->drop[out->drop].bytes += bytes;
		}
	} else if (out->path < PATH_MAX) {
		c->path[out->path].packets++;
		c->path[out->path].bytes += bytes;
	}
	return out->action;
}

SEC("xdp")
int xdp_steer(struct xdp_md *ctx)
{
	struct steer_out out = {
		.action = XDP_PASS,
		.path = PATH_NOT_STEERABLE,
		.drop = DROP_MAX,
	};
	__u64 bytes = ctx->data_end - ctx->data;

	steer(ctx, &out, bytes);
	return record_exit(&out, bytes);
}

char _license[] SEC("license") = "GPL";
