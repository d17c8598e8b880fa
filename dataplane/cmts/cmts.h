/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The vCMTS DOCSIS MAC data plane: service groups, cable modems, and the
 * two pipelines of a service group (SG), one worker each.
 *
 *   cmts-ds  (network -> Remote PHY Device), stages in order:
 *     lookup     Ethernet/IP parse, CM by destination IPv4/IPv6 address
 *                (the SG's immutable open-addressed table, struct
 *                cmts_addr_tab; the rte_hash when there is none)
 *     submgmt    subscriber management: the destination MAC is the CPE's
 *                (when known), the source is not one of the CM's own
 *                addresses
 *     filter     DOCSIS filter groups (up to 2 per CM): IPv4 frames in
 *                the SG's 16-lane group tables (struct cmts_fg4), IPv6
 *                frames and groups of more than 16 rules through the
 *                shared ACL module (dataplane/acl), one classify per
 *                family and burst, the key carrying the CM's two
 *                filter-group ids (two lanes); the CM's classifiers: IPv4 frames from the
 *                record's compiled table (struct cmts_cls4), IPv6 frames
 *                through the classifier instance (the CM id in the key)
 *     classify   the classifier match -> service flow (SF), default SF
 *                when none matched
 *     sf_sched   per-SF token bucket (max sustained rate, max traffic
 *                burst: rte_meter srTCM profile per SF, context per worker)
 *                and traffic priority; a flow over its rate waits in its
 *                SF queue (cmts_sched.c)
 *     ch_sched   channel of the CM's bonding group with the earliest free
 *                time at its rate; DS packet sequence number of a bonded
 *                flow; waits in the bonding group's priority queues when
 *                every channel is backlogged
 *     framing    DOCSIS Packet PDU MAC header: BPI+ privacy EH, DS service
 *                EH (priority, DSID, sequence), HCS from a per-CM template
 *     crypto     CRC-32 of the Ethernet PDU and BPI+ AES-128 encryption in
 *                one rte_security DOCSIS operation on crypto_aesni_mb; a
 *                burst is enqueued whole and whatever completed is
 *                dequeued (cmts_crypto.c says why)
 *     depi       L2TPv3 DEPI: PSP (several DOCSIS frames per packet) for
 *                OFDM channels, D-MPT (MPEG-TS) for SC-QAM channels
 *   The worker's service hook drains the SF and bonding-group queues and
 *   the crypto device when no new packets arrive, re-entering the
 *   pipeline at the stage that follows (ep_worker_run_from).
 *
 *   cmts-us  (Remote PHY Device -> network), per UEPI packet:
 *     uepi_verify  L2TPv3 session of a known upstream channel, sequence
 *     uepi_decap   PSP segment table: burst header, payload, trailer
 *     reassembly   a DOCSIS frame cut across UEPI packets completed
 *     extract      DOCSIS frames walked with HCS check
 *     decrypt      BPI+ decryption and CRC-32 check (the check is a per-SG
 *                  switch) in one rte_security DOCSIS operation per frame
 *     cm_lookup    CM by SID, source MAC and source address validation
 *     forward      DOCSIS header and CRC stripped; the Ethernet frames go
 *                  to the network port, in order
 *   After `extract` the stages' drop counters count DOCSIS frames (a UEPI
 *   packet carries several); pkts_in/out still count UEPI packets.
 *
 * How each table reaches the workers (ep_rcu.h):
 *
 *   table                  way
 *   CM records             array of pointers to immutable records; a change
 *                          publishes a new record, the old one (and keys it
 *                          no longer uses) goes to an RCU-QSBR defer queue
 *   address -> CM id       immutable open-addressed table rebuilt after
 *                          each CM change, published and freed by RCU-QSBR;
 *                          rte_hash (lock-free readers) is the control
 *                          side's index and the fallback
 *   filter-group tables    rebuilt with each filter-ACL commit, swapped
 *                          with the ACL under RCU
 *   SID -> CM id           array of 16-bit words, each written with one
 *                          atomic store (a reader sees the old or the new id;
 *                          the record it then reads is RCU-protected)
 *   filters + classifiers  ACL instances <sg>-filter and <sg>-cls (ep_acl.h:
 *                          double-buffered rte_acl contexts); each CM
 *                          record carries its classifiers compiled for
 *                          IPv4 (immutable with the record)
 *   BPI+ keys              immutable key objects (rte_security sessions)
 *                          referenced by the records, freed after a grace
 *                          period when no record uses them
 *   channels, bonding      static after start (copied into the worker
 *   groups, sessions       contexts)
 *
 * Per-CM dynamic state (SF token-bucket contexts, sequence numbers,
 * counters) is per worker and written without atomics; a record's
 * generation tells the worker to reset it when the CM was replaced by a
 * different one with the same id.
 */
#ifndef EP_CMTS_H
#define EP_CMTS_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_meter.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "acl/ep_acl.h"
#include "ep_engine.h"
#include "ep_err.h"
#include "ep_stage.h"

#define CMTS_MAX_SGS        8
#define CMTS_MAX_DS_CH      64      /**< DS channels per SG (2 OFDM + 32 SC-QAM fits) */
#define CMTS_MAX_BG         16      /**< bonding groups per SG */
#define CMTS_MAX_US_CH      16      /**< upstream channels (UEPI sessions) per SG */
#define CMTS_MAX_CPE        4       /**< CPE addresses per CM */
#define CMTS_MAX_FG_PER_CM  2       /**< filter groups a CM may use */
#define CMTS_MAX_FG         63      /**< filter group ids 1..63 */
#define CMTS_MAX_CLS        16      /**< classifiers per CM */
#define CMTS_MAX_SF         9       /**< SF 0 = the default (primary) flow, 1..8 */
#define CMTS_MAX_SID        8       /**< upstream SIDs per CM */
#define CMTS_SID_SPACE      0x4000  /**< 14-bit SIDs */
#define CMTS_PRIOS          8       /**< DOCSIS traffic priorities 0..7 (7 highest) */
#define CMTS_NAME_LEN       32

struct cmts;

enum cmts_ch_type { CMTS_CH_OFDM = 0, CMTS_CH_SCQAM = 1 };

/** A downstream channel: static after start. */
struct cmts_ds_ch {
	bool in_use;
	uint8_t type;                   /**< enum cmts_ch_type: PSP or D-MPT DEPI */
	uint8_t flow_id;                /**< DEPI flow id (0..7) */
	uint64_t rate_bps;              /**< PHY payload rate */
	uint32_t session;               /**< DEPI L2TPv3 session id at the RPD */
};

struct cmts_bg {
	bool in_use;
	uint8_t n_ch;
	uint8_t ch[CMTS_MAX_DS_CH];
};

struct cmts_us_ch {
	bool in_use;
	uint32_t session;               /**< UEPI L2TPv3 session id (ours) */
};

/**
 * One BPI+ traffic encryption key (TEK) of a CM: immutable once published.
 * It carries its own rte_security sessions for both directions (the key
 * schedule is computed once, when the key is installed).
 */
struct cmts_key {
	uint8_t kseq;                   /**< key sequence number, 0..15 (T bit = kseq & 1) */
	uint8_t key[16];                /**< AES-128 */
	uint8_t iv[16];                 /**< CBC IV of this TEK */
	void *sess_ds;                  /**< rte_security DOCSIS downlink: CRC, then encrypt */
	void *sess_us;                  /**< uplink: decrypt, then CRC check */
};

/** A CPE address of a CM (and the CPE's MAC, when known). */
struct cmts_cpe {
	uint8_t family;                 /**< 4 or 6 */
	bool has_mac;
	uint8_t addr[16];               /**< network order; IPv4 in the first 4 bytes */
	struct rte_ether_addr mac;
};

/** A downstream classifier of a CM (MULPI Annex C.2.1.5: IP fields). */
struct cmts_cls {
	bool in_use;
	uint8_t sf;                     /**< target SF 1..8 */
	uint8_t prio;                   /**< rule priority: higher wins */
	struct ep_acl_rule m;           /**< match fields (the ACL module's rule) */
};

/** A classifier rule's value in the <sg>-cls ACL: its index and SF. */
#define CMTS_CLS_VALUE(idx, sf)     ((uint32_t)(idx) << 4 | (sf))
#define CMTS_CLS_VALUE_SF(v)        ((uint8_t)((v) & 0x0f))

/**
 * A CM's classifiers that can match IPv4, compiled for one 16-lane compare
 * per field (cmts_cls4_match): lane j is the j-th of the classifier ACL's
 * list for the CM (priority descending, index ascending), so the lowest
 * matching lane is the ACL's first match.  Fields no classifier restricts
 * are left out of the compare (`uses`).  Addresses and ports in host order.
 * Lines 0 and 2 are what a frame of the default profile's classifiers
 * (protocol and destination port) reads.
 */
struct cmts_cls4 {
	uint16_t dport_lo[CMTS_MAX_CLS], dport_hi[CMTS_MAX_CLS];
	uint16_t sport_lo[CMTS_MAX_CLS], sport_hi[CMTS_MAX_CLS];
	uint8_t proto[CMTS_MAX_CLS], proto_mask[CMTS_MAX_CLS];
	uint8_t value[CMTS_MAX_CLS];    /**< CMTS_CLS_VALUE(index, SF) */
	uint16_t valid;                 /**< lanes in use */
	uint8_t uses;                   /**< CMTS_CLS4_* */
	uint8_t tos_lo[CMTS_MAX_CLS] __rte_aligned(64), tos_hi[CMTS_MAX_CLS];
	uint32_t src[CMTS_MAX_CLS] __rte_aligned(64), src_mask[CMTS_MAX_CLS];
	uint32_t dst[CMTS_MAX_CLS], dst_mask[CMTS_MAX_CLS];
};
#define CMTS_CLS4_SPORT 0x01
#define CMTS_CLS4_TOS   0x02
#define CMTS_CLS4_SRC   0x04
#define CMTS_CLS4_DST   0x08

/**
 * The SG's filter groups as the downstream's filter stage matches IPv4
 * frames: group g's rules that can match IPv4 in the lanes of g[g], in the
 * filter ACL's order (a group is an ordered list, the first match decides),
 * each lane's value CMTS_FG4_PERMIT or CMTS_FG4_DENY.  Built with every
 * commit of the filter ACL and published beside it; NULL while a group has
 * more than 16 rules for IPv4, and the stage then takes the ACL for every
 * frame.  IPv6 frames always take the ACL.
 */
struct cmts_fg4 {
	struct cmts_cls4 g[CMTS_MAX_FG + 1];    /**< [0]: no group, matches nothing */
};
#define CMTS_FG4_PERMIT 0
#define CMTS_FG4_DENY   1

/** A downstream service flow (QoS parameter set, MULPI Annex C.2.2.7). */
struct cmts_sf {
	bool in_use;
	uint8_t prio;                   /**< traffic priority 0..7 */
	bool shaped;                    /**< rate != 0 */
	uint64_t rate_bps;              /**< max sustained rate, bit/s (0: unlimited) */
	uint32_t burst;                 /**< max traffic burst, bytes */
	struct rte_meter_srtcm_profile prof; /**< CIR = rate / 8 B/s, CBS = burst, EBS = 0 */
};

/**
 * A cable modem, as workers read it: immutable once published.  What the
 * downstream reads for every frame is packed into the first lines, derived
 * from the control side's fields below whenever a record is made
 * (cmts_cm.c, cm_derive), so a frame touches 4 lines of its CM's record
 * (5 when its SF is shaped) and not the key object, where the control
 * side's layout spread the same over 6 record lines and the key
 * (docs/benchmarks/cmts-history.md, "The hot lines round"):
 *
 *   line 0   framing and crypto: template, HCS, lengths, the DS key's
 *            session and IV (copied from the key object, which outlives
 *            every record that references it), bonding group, filter groups
 *   line 1   submgmt, classify, sf_sched: the IPv4 CPE addresses and the
 *            CPEs' MACs, the SFs' in-use and shaped bits and priorities
 *   sf_prof  the SFs' token-bucket profiles, 32 bytes each (one line a
 *            frame of a shaped SF)
 *   cls4     the classifiers (lines 0 and 2 for the default profile's)
 */
/*
 * The byte of a record's header template (hdr_tpl) whose high nibble is
 * the key sequence of its BPI extended header, the first EH (FC, MAC_PARM,
 * LEN, EH type/length, then this): with BPI on (ds_sess set) it is the
 * downstream's key sequence, ds_kseq, on line 0, where the crypto stage
 * compares each frame's own (ds_kseq itself sits in the cold control-side
 * lines: reading it cost a miss a frame).
 */
#define CMTS_TPL_KSEQ 5

struct cmts_cm {
	/* Line 0: downstream framing and crypto. */
	uint32_t id;
	uint32_t gen;                   /**< unique per CM, kept on replace */
	uint8_t bg;                     /**< bonding group */
	uint8_t bonded;                 /**< bonding group has >1 channel: 5-byte DS EH with PSN */
	uint8_t hdr_len;                /**< DOCSIS header bytes (template length) */
	uint8_t tp_pos;                 /**< offset of the DS EH byte holding the priority */
	uint16_t tpl_hcs;               /**< HCS of hdr_tpl (LEN, priority, PSN zero) */
	uint8_t fg[CMTS_MAX_FG_PER_CM]; /**< filter group ids, 0 = none */
	void *ds_sess;                  /**< ds_key->sess_ds; NULL: BPI off (CRC only) */
	uint8_t ds_iv[16];              /**< ds_key->iv */
	uint8_t hdr_tpl[24];            /**< the header with LEN, priority and PSN zero */
	/* Line 1: subscriber management, classify, sf_sched. */
	uint32_t cpe4[CMTS_MAX_CPE] __rte_cache_aligned; /**< IPv4 CPE addresses (cpe4_mask), network order */
	struct rte_ether_addr cpe_mac[CMTS_MAX_CPE];     /**< CPE k's MAC when bit k of cpe_mac_mask */
	uint16_t sf_in_use, sf_shaped;  /**< bit s: sf[s].in_use, sf[s].shaped */
	uint8_t sf_prio[CMTS_MAX_SF];   /**< sf[s].prio */
	uint8_t n_cpe;
	uint8_t cpe4_mask;              /**< bit k: cpe[k] is IPv4 (its address in cpe4[k]) */
	uint8_t cpe_mac_mask;           /**< bit k: cpe[k].has_mac */
	/* The SFs' token-bucket profiles (sf[s].prof), two to a line. */
	struct rte_meter_srtcm_profile sf_prof[CMTS_MAX_SF] __rte_cache_aligned;
	/* The classifiers as the downstream's filter stage matches IPv4. */
	struct cmts_cls4 cls4 __rte_cache_aligned;
	/* Control side and upstream: what the lines above are derived from. */
	const struct cmts_key *ds_key;  /**< DS TEK; NULL: BPI off (CRC only) */
	uint16_t said;
	uint32_t dsid;
	struct cmts_cpe cpe[CMTS_MAX_CPE];
	struct cmts_sf sf[CMTS_MAX_SF];
	struct rte_ether_addr mac;
	const struct cmts_key *key[2];  /**< upstream / installed TEKs by T bit (kseq & 1) */
	uint8_t ds_kseq;                /**< key sequence the downstream encrypts with */
	bool bpi;                       /**< BPI+ enabled */
	uint8_t n_sid;
	uint16_t sid[CMTS_MAX_SID];
	struct cmts_cls cls[CMTS_MAX_CLS];
} __rte_cache_aligned;

/** Per-worker state of one SF of a CM: its token bucket and counters
 *  (40 bytes: one cache line holds all an SF's packet needs). */
struct cmts_sf_dyn {
	struct rte_meter_srtcm meter;
	uint64_t pkts, bytes;
};

/** Per-worker, per-CM downstream state.  The first line is what the
 *  classify, sf_sched and ch_sched stages touch for every packet, with
 *  SF 0's entry; the other SFs' entries follow. */
struct cmts_ds_dyn {
	uint32_t gen;
	uint16_t psn;                   /**< next DS packet sequence number (bonded DSID) */
	uint16_t sf_queued;             /**< bit s: the SF's queue holds frames (sf_sched
					 *   reads this line, not the queue's) */
	uint64_t cls_matched, cls_unmatched;
	struct cmts_sf_dyn sf[CMTS_MAX_SF];
} __rte_cache_aligned;

/** Per-worker, per-CM upstream counters. */
struct cmts_us_dyn {
	uint32_t gen;
	uint64_t pkts, bytes;
};

/**
 * CPE address -> CM id as the downstream's lookup reads it: open
 * addressing with linear probing, immutable once published (rebuilt whole
 * from the CM records after every change and published with RCU), at most
 * two thirds full, so every probe run ends at an empty slot.  An IPv4 slot
 * is the address (host order) and the id in one 8-byte word, eight to a
 * cache line: the default profile's 1200 addresses take 16 KB.  Why not
 * the SG's rte_hash, which stays the control side's index (ownership
 * checks) and the lookup's fallback when this is NULL: its bulk lookup of
 * 16-byte keys computes a signature, reads a bucket and then the key store
 * for the compare (docs/cmts.md: ~35 of the lookup's ~70 cycles a frame).
 */
struct cmts_addr6_slot {
	uint8_t a[16];
	uint32_t id;                    /**< 0: empty */
	uint32_t pad[3];
};

struct cmts_addr_tab {
	uint32_t mask4, mask6;          /**< slots - 1 (powers of two) */
	uint64_t *s4;                   /**< address << 32 | id; 0: empty (ids are >= 1) */
	struct cmts_addr6_slot *s6;
};

/* ------------------------------------------------------------------ */
/* Service group (control side + what workers read).                   */

struct cmts_sg_params {
	uint32_t max_cms;
	uint32_t max_rules;             /**< filter rules + classifiers (ACL size) */
	uint32_t sf_qsize;              /**< packets an SF queue holds (power of 2) */
	uint32_t bg_qsize;              /**< per bonding group and priority */
	uint32_t depi_mtu;              /**< IP MTU toward the RPD */
	uint32_t mpt_ts;                /**< TS packets per D-MPT DEPI packet (1..7) */
	uint32_t ch_backlog_us;         /**< what a channel may hold beyond its rate */
	bool crc_verify;                /**< upstream: check each frame's CRC-32 */
	bool filter_default_permit;
};

struct cmts_sg {
	char name[CMTS_NAME_LEN];
	struct cmts *c;
	struct ep_engine *e;
	struct cmts_sg_params p;

	/* Static after start. */
	uint16_t rpd_port, net_port;
	struct rte_ether_addr rpd_mac;  /**< next hop toward the RPD */
	uint32_t cmts_ip, rpd_ip;       /**< network order */
	struct cmts_ds_ch ds_ch[CMTS_MAX_DS_CH];
	uint8_t n_ds_ch;
	struct cmts_bg bg[CMTS_MAX_BG];
	struct cmts_us_ch us_ch[CMTS_MAX_US_CH];

	/* Read by workers. */
	struct cmts_cm **cms;           /**< [max_cms + 1] */
	struct rte_hash *addr;          /**< 16-byte address -> CM id */
	struct cmts_addr_tab *addr_tab; /**< the same for the lookup stage, or NULL (RCU) */
	uint16_t *sid_cm;               /**< [CMTS_SID_SPACE] -> CM id, 0 none */
	struct ep_acl *filter_acl;      /**< filter groups: set = group, 2 lanes */
	struct cmts_fg4 *fg4;           /**< the same for IPv4 frames, or NULL (RCU) */
	struct ep_acl *cls_acl;         /**< classifiers: set = CM id, value = CMTS_CLS_VALUE */

	/* Control thread only. */
	struct rte_rcu_qsbr_dq *dq;
	struct cmts_cm *rec_pool;
	struct cmts_cm **rec_free;
	uint32_t n_rec, n_rec_free;
	uint32_t gen;
	uint32_t n_cms;
	/* Filter rules (docsSubmgt3 / DOCSIS IP filters): set = group,
	 * value = order, sorted by both: the filter ACL's list. */
	struct ep_acl_rule *filters;
	uint32_t n_filters, cap_filters;
	struct cmts_ds *ds[EP_MAX_WORKERS];
	int n_ds;
	struct cmts_us *us[EP_MAX_WORKERS];
	int n_us;
};

/** The process's vCMTS: its service groups and the crypto device. */
struct cmts {
	struct ep_engine *e;
	struct cmts_sg *sg[CMTS_MAX_SGS];
	int n_sg;
	/* crypto (cmts_crypto.c) */
	uint8_t cdev;
	bool cdev_up;
	bool cdev_created;              /**< probed by us (removed at the end) */
	void *sec_ctx;                  /**< struct rte_security_ctx * */
	struct rte_mempool *sess_pool;
	uint16_t n_qp, next_qp;
	void *crc_only_ds;              /**< DS session for CMs without BPI (cipher length 0) */
};

extern struct cmts *cmts_global;

/* ---- process and service groups (cmts.c) ---- */
void cmts_sg_params_default(struct cmts_sg_params *p);
struct cmts_sg *cmts_sg_create(struct cmts *c, const char *name, const struct cmts_sg_params *p,
			       struct ep_err *err);
void cmts_sg_free(struct cmts_sg *sg);
struct cmts_sg *cmts_sg_find(struct cmts *c, const char *name);
void cmts_free(struct cmts *c);
/** rte_free @p obj after a grace period (never waits). */
void cmts_defer_free(struct cmts_sg *sg, void *obj);
/** A replaced record back to the free list after a grace period. */
void cmts_defer_record(struct cmts_sg *sg, struct cmts_cm *rec);
/** A replaced ACL set freed after a grace period. */
/** A free record (waits for a grace period when none is left). */
struct cmts_cm *cmts_rec_alloc(struct cmts_sg *sg);

/* ---- cable modems (cmts_cm.c) ---- */

/** One CM add/replace, field by field from text: config and socket alike. */
struct cmts_cm_req {
	uint32_t id;
	struct rte_ether_addr mac;
	bool has_mac;
	uint8_t n_cpe;
	struct cmts_cpe cpe[CMTS_MAX_CPE];
	int bg;                         /**< -1: missing */
	uint8_t n_fg;
	uint8_t fg[CMTS_MAX_FG_PER_CM];
	int said;                       /**< -1: missing (BPI off) */
	uint32_t dsid;                  /**< 0: the CM id */
	uint8_t n_sid;
	uint16_t sid[CMTS_MAX_SID];
	bool has_key;
	uint8_t kseq;
	uint8_t key[16], iv[16];
	bool bpi_off;
};
void cmts_cm_req_init(struct cmts_cm_req *r);
int cmts_cm_req_set(struct cmts_cm_req *r, const char *key, const char *val, struct ep_err *err);
int cmts_cm_req_parse(struct cmts_cm_req *r, const char *line, struct ep_err *err);

/** Add or replace CMs, then rebuild the ACL once.  SFs and classifiers of a
 *  replaced CM are kept.  Stops at the first bad entry (@p failed). */
int cmts_cm_add_bulk(struct cmts_sg *sg, const struct cmts_cm_req *r, uint32_t n,
		     uint32_t *failed, struct ep_err *err);
int cmts_cm_del(struct cmts_sg *sg, uint32_t id, struct ep_err *err);
/** Rebuild and publish sg->addr_tab from the published records (NULL when
 *  out of memory: the lookup then takes the rte_hash).  0 or -1. */
int cmts_addr_tab_publish(struct cmts_sg *sg);
const struct cmts_cm *cmts_cm_get(const struct cmts_sg *sg, uint32_t id);
/** CM id of an IPv4/IPv6 CPE address (4 or 16 bytes), or -1. */
int64_t cmts_cm_find_addr(const struct cmts_sg *sg, int family, const void *addr);

/** Install TEK @p kseq (slot kseq & 1) for CM @p id; the downstream keeps
 *  its current key until cmts_key_activate. */
int cmts_key_set(struct cmts_sg *sg, uint32_t id, uint8_t kseq, const uint8_t key[16],
		 const uint8_t iv[16], struct ep_err *err);
/** Encrypt the downstream with installed key @p kseq from now on. */
int cmts_key_activate(struct cmts_sg *sg, uint32_t id, uint8_t kseq, struct ep_err *err);

/** SF @p sf (0..8) of CM @p id: "rate=100M burst=3044 prio=5"; rate 0 is
 *  unlimited.  sf 0 always exists. */
int cmts_sf_set(struct cmts_sg *sg, uint32_t id, uint8_t sf, const char *spec,
		struct ep_err *err);
int cmts_sf_del(struct cmts_sg *sg, uint32_t id, uint8_t sf, struct ep_err *err);
/** Classifier @p cls (0..15) of CM @p id: "sf=2 prio=10 proto=17 dst=... dport=5000-5999" */
int cmts_cls_set(struct cmts_sg *sg, uint32_t id, uint8_t cls, const char *spec,
		 struct ep_err *err);
int cmts_cls_del(struct cmts_sg *sg, uint32_t id, uint8_t cls, struct ep_err *err);
/** Batch form for config loading: no ACL rebuild per call. */
int cmts_cls_set_nobuild(struct cmts_sg *sg, uint32_t id, uint8_t cls, const char *spec,
			 struct ep_err *err);

/** Filter rule "<group> <order> permit|deny [match...]" (replaces the rule
 *  with the same group and order). */
int cmts_filter_add(struct cmts_sg *sg, const char *text, bool rebuild, struct ep_err *err);
int cmts_filter_del(struct cmts_sg *sg, uint8_t group, uint16_t order, struct ep_err *err);
/** Rebuild and publish both ACL instances (filters and every CM's
 *  classifiers); nothing changes on error. */
int cmts_acl_rebuild(struct cmts_sg *sg, struct ep_err *err);
/** Publish the classifier ACL with CM @p rec in place of its published
 *  record (NULL: as published); nothing changes on error. */
int cmts_cls_commit(struct cmts_sg *sg, const struct cmts_cm *rec, struct ep_err *err);

/* ---- configuration ([cmts], [cmts NAME]; cmts_config.c) ---- */
int cmts_load_config(struct cmts *c, struct ep_cfg *cfg, struct ep_err *err);

/* ---- crypto (cmts_crypto.c) ---- */
int cmts_crypto_init(struct cmts *c, struct ep_cfg *cfg, uint16_t n_qp, struct ep_err *err);
void cmts_crypto_fini(struct cmts *c);
int cmts_key_sessions(struct cmts *c, struct cmts_key *k, struct ep_err *err);
void cmts_key_destroy(struct cmts *c, struct cmts_key *k);

/* ---- workers (cmts_ds.c, cmts_us.c) ---- */
struct cmts_ds;
struct cmts_us;
/** A worker of @p sg whose output leaves by logical port @p tx (the SG's
 *  rpd_port for cmts-ds and net_port for cmts-us unless the worker says). */
int cmts_ds_build(struct cmts_sg *sg, struct ep_worker *w, uint16_t tx, struct ep_err *err);
int cmts_us_build(struct cmts_sg *sg, struct ep_worker *w, uint16_t tx, struct ep_err *err);
void cmts_ds_free(struct cmts_ds *d);
void cmts_us_free(struct cmts_us *u);
uint16_t cmts_ds_service(struct ep_worker *w);

#endif
