/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmts-gen: a service group's traffic at speed, from inside the engine (see
 * cmts_gen.c).  Private to dataplane/cmts.
 */
#ifndef EP_CMTS_GEN_H
#define EP_CMTS_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "ep_engine.h"
#include "ep_err.h"
#include "cmts.h"

#define CMTS_GEN_MAX_CLASSES 8      /**< frame sizes in one mix */
#define CMTS_GEN_MAX_SCHED   1000   /**< a mix's period, frames */

/** Frame sizes (Ethernet with FCS, RFC 2544's convention) and weights. */
struct cmts_gen_mix {
	uint8_t n;
	uint16_t size[CMTS_GEN_MAX_CLASSES];
	uint32_t weight[CMTS_GEN_MAX_CLASSES];
	uint32_t period;                        /**< frames per round of the schedule */
	uint8_t sched[CMTS_GEN_MAX_SCHED];      /**< class of frame i of a round */
	char spec[96];
};

/** "imix-down" (84:15,256:10,1280:75), "imix-up" (84:65,256:18,1280:17),
 *  or "size[:weight],...": 64..1518 bytes. */
int cmts_gen_mix_parse(struct cmts_gen_mix *mx, const char *spec, struct ep_err *err);

struct cmts_gen;
int cmts_gen_build(struct ep_engine *e, struct ep_worker *w, struct cmts_sg *sg,
		   struct ep_err *err);
void cmts_gen_free(struct cmts_gen *g);
uint16_t cmts_gen_source(struct ep_worker *w, struct rte_mbuf **pkts, uint16_t max);
uint16_t cmts_gen_tx_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t cmts_gen_service(struct ep_worker *w);

#endif
