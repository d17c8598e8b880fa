/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test bed for the vCMTS unit tests: an engine with two net_ring ports
 * (rpd 02:00:00:00:0a:01, net 02:00:00:00:0b:01) whose transmit rings loop
 * back to their receive rings, so what a worker sends can be read back;
 * a [cmts sg0] section from text after a standard head (4 downstream
 * channels: 0-2 OFDM, 3 SC-QAM; bonding groups 0 = {0,1,2}, 1 = {0},
 * 2 = {3}; upstream channels 0 and 1); the crypto device; one downstream
 * and one upstream worker built by the real builders.  Helpers build CM
 * frames the way a cable modem would (BPI+ through the same crypto device
 * on a queue pair of their own) and take the DEPI output apart with the
 * proto helpers.
 */
#ifndef EP_TEST_CMTS_H
#define EP_TEST_CMTS_H

#define ALLOW_EXPERIMENTAL_API 1

#include <stdbool.h>
#include <stdint.h>

#include "ep_engine.h"
#include "ep_test.h"
#include "cmts/cmts.h"
#include "cmts/cmts_worker.h"

#define CB_RPD 0
#define CB_NET 1
#define CB_DEPI_SESSION(ch) (0x1000u + (ch))
#define CB_UEPI_SESSION(ch) (0x2000u + (ch))
#define CB_CMTS_IP "198.18.10.1"
#define CB_RPD_IP  "198.18.10.2"

extern const uint8_t cb_rpd_port_mac[6], cb_net_port_mac[6], cb_rpd_mac[6];

struct cb {
	struct ep_engine e;
	struct ep_cfg *cfg;
	struct cmts *c;
	struct cmts_sg *sg;
	struct ep_worker *ds, *us;
	struct rte_mempool *op_pool;     /* the helpers' crypto operations */
	uint16_t qp;
	char vdev[2][32];
};

/** A bed from the [cmts sg0] body @p text; aborts with the error. */
struct cb *cb_new(const char *text);
/** NULL and the error in @p err on failure. */
struct cb *cb_try(const char *text, struct ep_err *err);
void cb_free(struct cb *t);

/** A standard CM line: id, MAC 02:00:00:01:<id>, CPE 198.19.<id>.1-2 (the
 *  first with MAC 02:00:00:02:<id>), bonding group @p bg, SAID and SID =
 *  id, key sequence 1 with cb_key(id, 1). */
const char *cb_cm_line(uint32_t id, int bg, const char *extra);
/** The TEK and IV the tests give CM @p id with key sequence @p kseq. */
void cb_key(uint32_t id, uint8_t kseq, uint8_t key[16], uint8_t iv[16]);

/** Downstream: run @p n frames (mbufs) through, drain the crypto device,
 *  return the DEPI packets sent to the RPD port (up to @p max). */
uint16_t cb_ds(struct cb *t, struct rte_mbuf **in, uint16_t n, struct rte_mbuf **out,
	       uint16_t max);
/** Upstream: the same for UEPI packets; returns the Ethernet frames sent to
 *  the network port. */
uint16_t cb_us(struct cb *t, struct rte_mbuf **in, uint16_t n, struct rte_mbuf **out,
	       uint16_t max);
/** Read back what the workers sent on @p port (tx looped to rx). */
uint16_t cb_sent(struct cb *t, int port, struct rte_mbuf **out, uint16_t max);

/** One DOCSIS frame taken out of a DEPI packet. */
struct cb_frame {
	uint8_t b[2400];
	uint16_t len;
	uint32_t session;
	uint8_t depi_segs;       /* PSP segments in its DEPI packet (0: D-MPT) */
};
/** The DOCSIS frames of DEPI packets (PSP segments, or MPEG-TS reassembled),
 *  in order; -1 when a packet is malformed. */
int cb_depi_frames(struct rte_mbuf **pkts, uint16_t n, struct cb_frame *f, int max);
/** Decrypt (when encrypted) and CRC-check a downstream DOCSIS frame with the
 *  key CM @p cm has for its key sequence: the Ethernet frame, -1 when the CRC
 *  fails or the key is unknown. */
int cb_ds_decode(struct cb *t, uint32_t cm, const struct cb_frame *f, uint8_t *eth);

/** An upstream DOCSIS frame as CM @p cm sends it: BP_UP2 EH (SID, key
 *  sequence @p kseq, encrypted unless @p kseq < 0), CRC, BPI+. */
uint16_t cb_us_frame(struct cb *t, uint32_t cm, int kseq, const uint8_t *eth, uint16_t len,
		     uint8_t *out);
/** UEPI packets of one burst: a header segment (scheduled SID @p sid), the
 *  @p len bytes cut at the @p ncuts offsets in @p cuts, a trailer segment.
 *  Sequence numbers from *@p seq. */
uint16_t cb_uepi(struct cb *t, uint32_t session, uint16_t *seq, uint16_t sid, const uint8_t *burst,
		 uint32_t len, const uint32_t *cuts, int ncuts, struct rte_mbuf **out);

/** Total drops of @p reason over a worker's stages. */
uint64_t cb_drops(struct ep_worker *w, int reason);
/** An IPv4 UDP frame from 198.18.0.2:@p sport to @p dst:@p dport, @p size
 *  bytes without FCS, destination MAC @p dmac (NULL: 02:00:00:02:00:01). */
uint16_t cb_udp4(uint8_t *b, const char *dst, uint16_t sport, uint16_t dport, uint16_t size,
		 const uint8_t *dmac);

#endif
