/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test bed for the BNG unit tests: an engine with two ports that are never
 * started (access 02:00:00:00:01:01 198.18.0.1/24 2001:db8:0:1::1/64, core
 * 02:00:00:00:02:01 198.18.1.1/24 2001:db8:0:2::1/64), a [bng] section from
 * text, one uplink and one downlink worker built with the real pipeline
 * builders, and a frame builder for crafted packets.
 */
#ifndef EP_TEST_BNG_H
#define EP_TEST_BNG_H

#define ALLOW_EXPERIMENTAL_API 1

#include <stdbool.h>
#include <stdint.h>

#include "ep_engine.h"
#include "ep_test.h"
#include "bng/bng.h"

#define TB_ACCESS 0
#define TB_CORE   1

extern const uint8_t tb_access_mac[6], tb_core_mac[6], tb_core_nh_mac[6], tb_sub_mac[6];

struct tb {
	struct ep_engine e;
	struct ep_cfg *cfg;
	struct bng *b;
	struct ep_worker *up, *down;
	struct ep_err err;
};

/** A test bed from the [bng] body @p text (ports as above, neighbours and
 *  default routes to 198.18.1.2 / 2001:db8:0:2::2 added before @p text). */
struct tb *tb_new(const char *text);
void tb_free(struct tb *t);
/** Config text only: NULL and the error in @p err on failure. */
struct tb *tb_try(const char *text, struct ep_err *err);
/** A whole config text (sections other than [bng] are ignored). */
struct tb *tb_try_raw(const char *cfgtext, struct ep_err *err);

/** Run one frame through a worker; returns its verdict: EP_NEXT_TX(port),
 *  EP_NEXT_CONSUMED or EP_NEXT_DROP(reason).  A transmitted frame is copied
 *  to @p out (if not NULL, up to 2048 bytes) with its length in @p out_len. */
uint16_t tb_run(struct tb *t, struct ep_worker *w, const uint8_t *frame, uint16_t len,
		uint8_t *out, uint16_t *out_len);
/** Total drops of @p reason over a worker's stages. */
uint64_t tb_drops(struct ep_worker *w, int reason);

/** Frame description for tb_frame(). */
struct tb_pkt {
	const uint8_t *dst, *src;    /**< MACs; NULL: the worker's port / sub MAC */
	int n_vlans;
	uint16_t vid[2];
	bool pppoe;
	uint16_t session;
	uint16_t ppp_proto;          /**< 0: by IP version */
	int ip;                      /**< 4 or 6; 0: no IP (raw payload after PPP) */
	const char *sip, *dip;
	uint8_t proto;               /**< IPPROTO_UDP by default */
	uint16_t sport, dport;
	uint8_t dscp;
	uint8_t ttl;                 /**< 0: 64 */
	uint16_t payload;            /**< bytes after the UDP header */
	uint16_t ether_type;         /**< override (ARP, discovery, MPLS...) */
};
/** Build a frame into @p buf; returns its length. */
uint16_t tb_frame(uint8_t *buf, const struct tb_pkt *p);
/** Bytes of an IP packet alone (no L2), for building expected frames. */
uint16_t tb_ip(uint8_t *buf, const struct tb_pkt *p);

/** bng_sub_add of one "id=1 qinq=..." line: 0, or -1 with the error printed. */
int tb_sub_add(struct tb *t, const char *line);

/** A burst from rx on @p port (the worker's rx_port set: a parse stage of a
 *  type with stage_sets_in_port writes in_port) against the same burst
 *  handed in with in_port set: 32 frames of the 4 @p kinds, every eighth
 *  with a byte of its first @p mutate_span flipped, through @p w's first
 *  stage.  Checks the same verdicts (some dropped, not all) and ep_meta,
 *  in_port @p port in every packet; frees what the stage did not consume. */
void tb_check_parse_from_rx(struct ep_worker *w, uint16_t port, const struct tb_pkt kinds[4],
			    unsigned int mutate_span);

#endif
