/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * Types shared by the XDP steering program (steer.bpf.c) and its agent.
 *
 * This header is the one declaration of every map value, every steering path
 * and every drop reason. The Go agent gets the same layouts from bpf2go's
 * `-type` output, and reads the enum names from the object's BTF at load time,
 * so a counter added here appears in the REST statistics and the Prometheus
 * labels without a second list to keep in step (Cilium keeps two by hand and
 * they drift).
 */
#ifndef EDGEPLANE_STEER_H
#define EDGEPLANE_STEER_H

#include <linux/types.h>

/* Limits, overridable at build time (-D). */
#ifndef STEER_MAX_CPUS
#define STEER_MAX_CPUS 128     /* cpumap size and overload bitmap width */
#endif
#ifndef STEER_PRIO_SLOTS
#define STEER_PRIO_SLOTS 16384 /* prio_map slots, a power of two: 8192 sets of 2 */
#endif
#ifndef STEER_MAX_MASKS
#define STEER_MAX_MASKS 4      /* distinct field sets among the rules */
#endif
#ifndef STEER_MAX_ALT
#define STEER_MAX_ALT 16       /* alternative nodes */
#endif

#define STEER_NO_CPU 0xffffffffu  /* prio_value.cpu: no CPU named, XDP_PASS */
#define STEER_JHASH_INITVAL 0x45505344u /* "EPSD": the flow hash seed (agent side) */

/*
 * The flow key: tunnel ids and the innermost 5-tuple. 48 bytes: six 64-bit
 * words for the program's index hash (xdp/include/flowhash.h), twelve 32-bit
 * words for the flow hash of the intent API (jhash2, computed by the agent).
 * Numbers are in host order, addresses in network order; IPv4 addresses are
 * stored IPv4-mapped (::ffff:a.b.c.d) so the two families never collide.
 * A rule matches a masked key: the agent keeps up to STEER_MAX_MASKS masks
 * (one per distinct set of fields the intents name) in mask_map.
 */
struct flow_key {
	__u32 vni;        /* VXLAN network identifier, 0 when no VXLAN */
	__u32 teid;       /* GTP-U tunnel endpoint identifier, 0 when no GTP-U */
	__u8 saddr[16];   /* innermost source address */
	__u8 daddr[16];   /* innermost destination address */
	__u16 sport;      /* innermost L4 source port, 0 when none or a fragment */
	__u16 dport;      /* innermost L4 destination port */
	__u8 proto;       /* innermost IP protocol (UDP, TCP, ...) */
	__u8 pad[3];
};

/* One slot of mask_map: the fields a group of rules names. */
struct flow_mask {
	__u32 active;     /* slot in use; the program reads node_state.masks_active */
	__u32 pad;
	struct flow_key mask; /* all-ones bytes for the fields that count */
};

/*
 * prio_map value (Listing 2 of the XDP steering paper, docs/xdp-steering.md), one copy per CPU: the agent writes
 * the same rule into every copy, the program counts into its own copy without
 * atomics, and the agent sums the copies to read the flow statistics.
 *
 * prio_map is a 2-way set-associative table indexed by the index hash of
 * the masked key: a rule whose key hashes to h lives in slot
 * (h & prio_set_mask) or the one after (prio_set_mask is the map's size - 2,
 * set by the loader). The program already has the hash, so an array lookup
 * (inlined, a few instructions) replaces the kernel hash table, which would
 * hash the key again and walk a bucket: 27 ns less per prioritised packet,
 * measured. The key, mask slot and active flag are compared; the flow hash
 * is the agent's name for the rule, never read by the program.
 */
struct prio_value {
	struct flow_key key;  /* masked key this rule matches (the paper's f_struct) */
	__u32 cpu;            /* target CPU, or STEER_NO_CPU (the paper's rx queue) */
	__u32 hash;           /* the rule's flow hash (jhash2 of key; agent bookkeeping) */
	__u8 active;          /* the paper's is_active: 0 keeps the rule but skips it */
	__u8 used;            /* slot holds a rule (agent bookkeeping) */
	__u8 mask_id;         /* mask_map slot the key was masked with */
	__u8 pad[5];
	__u64 packets;        /* packets this CPU matched to the rule */
	__u64 bytes;          /* their bytes, Ethernet header included */
};

/* An alternative node, chosen by flow hash when the host is overloaded. */
struct alt_node {
	__u8 mac[6];      /* next-hop MAC the frame is rewritten to */
	__u8 has_ip4;     /* 1 when ip4 is set */
	__u8 has_ip6;     /* 1 when ip6 is set */
	__u8 ip4[4];      /* destination for IPv4 outer packets */
	__u8 ip6[16];     /* destination for IPv6 outer packets */
};

/*
 * The host's state as the agent measured it (CPU load with hysteresis), and
 * which mask_map slots are in use. One entry, read once per packet; written
 * whole by the agent. A reader that races a write sees a mix of two
 * consecutive states, which only moves one packet between two valid paths.
 */
struct node_state {
	__u32 host_overloaded;  /* 1: offload non-prioritised traffic */
	__u32 alt_count;        /* valid entries at the start of alt_map */
	__u32 masks_active;     /* bit n: mask_map slot n is in use (set after
				 * the slot is written, cleared before it is) */
	__u32 pad;
	__u64 cpu_overloaded[STEER_MAX_CPUS / 64]; /* bit n: CPU n is overloaded */
};

/* Why a packet left the way it did (not a drop). */
enum steer_path {
	PATH_PRIO_CPU,       /* prioritised: cpumap to its target CPU */
	PATH_PRIO_HOST,      /* prioritised, no CPU named: XDP_PASS */
	PATH_PRIO_OVERFLOW,  /* prioritised beyond capacity (CPU overloaded): XDP_TX */
	PATH_HEADROOM,       /* not prioritised, host has headroom: XDP_PASS */
	PATH_OFFLOAD,        /* not prioritised, host overloaded: XDP_TX */
	PATH_NO_ALT_NODE,    /* overloaded but no alternative node for the family: XDP_PASS */
	PATH_CPU_MISSING,    /* target CPU has no cpumap entry: XDP_PASS */
	PATH_NOT_STEERABLE,  /* not IP, multicast/broadcast, or an outer IP fragment: XDP_PASS */
	PATH_MAX,
};

/* Why a packet was dropped. Every XDP_DROP has exactly one. */
enum steer_drop {
	DROP_TRUNC_ETH,      /* shorter than an Ethernet header */
	DROP_TRUNC_VLAN,     /* VLAN tag cut short */
	DROP_TRUNC_IPV4,     /* IPv4 header cut short */
	DROP_BAD_IPV4,       /* IPv4 version or IHL invalid */
	DROP_TRUNC_IPV6,     /* IPv6 header or extension header cut short */
	DROP_TRUNC_UDP,      /* UDP header cut short */
	DROP_TRUNC_TCP,      /* TCP header cut short */
	DROP_BAD_TCP,        /* TCP data offset below 5 */
	DROP_TRUNC_VXLAN,    /* VXLAN header cut short */
	DROP_TRUNC_GTP,      /* GTP-U header or an extension header cut short */
	DROP_BAD_GTP_EXT,    /* GTP-U extension header of length 0, or a chain too long */
	DROP_BAD_INNER,      /* tunnel payload is neither IPv4 nor IPv6 (GTP-U T-PDU) */
	DROP_MAX,
};

/* Packets and bytes for one counter. */
struct datarec {
	__u64 packets;
	__u64 bytes;
};

/*
 * stats_map value, one per CPU: one lookup per packet finds every counter.
 * verdict[] is indexed by enum xdp_action (XDP_ABORTED..XDP_REDIRECT).
 */
struct steer_counters {
	struct datarec verdict[5];
	struct datarec path[PATH_MAX];
	struct datarec drop[DROP_MAX];
};

#endif
