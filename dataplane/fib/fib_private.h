/* SPDX-License-Identifier: BSD-3-Clause */
/* Declarations shared by the FIB's own files; not for pipelines. */
#ifndef EP_FIB_PRIVATE_H
#define EP_FIB_PRIVATE_H

#include "ep_fib_node.h"

/* The outer TPID of a reply or error leaving on @p port with two tags
 * (ep_fib_worker_set_qinq_tpid). */
static inline void
fib_reply_tpid(const struct ep_fib_worker *fw, uint8_t *frame, uint16_t port, uint8_t n_vlans)
{
	if (n_vlans == 2 && fw->port[port].qinq_tpid != 0)
		memcpy(frame + 12, &fw->port[port].qinq_tpid, 2);
}

struct route_key {
	uint8_t family;
	uint8_t plen;
	uint8_t pad[2];
	uint8_t addr[16];
};

struct nh_key {
	uint8_t family;
	uint8_t pad[3];
	uint8_t ip[16];
};

#define RT_VAL(kind, nh) ((void *)(uintptr_t)(((uintptr_t)(kind) << 24) | (nh)))
#define RT_KIND(v) ((enum ep_fib_route_kind)((uintptr_t)(v) >> 24))
#define RT_NH(v) ((uint32_t)((uintptr_t)(v) & 0xffffff))

extern const char *const ep_fib_route_kind_name[4];

/* fib.c: routes */
void fib_route_key(struct route_key *k, uint8_t family, const uint8_t *addr, uint8_t plen);
bool fib_route_lookup(struct ep_fib *fib, const struct route_key *k, void **val);
int fib_route_install(struct ep_fib *fib, uint8_t family, const uint8_t *addr, uint8_t plen,
		  enum ep_fib_route_kind kind, uint32_t nh, struct ep_err *err);
void fib_route_remove(struct ep_fib *fib, const struct route_key *k);

/* fib_nh.c: next hops */
int fib_nh_publish(struct ep_fib *fib, uint32_t idx, struct ep_err *err);
int fib_nh_find(struct ep_fib *fib, uint8_t family, const uint8_t *ip);
int fib_nh_create(struct ep_fib *fib, uint8_t family, const uint8_t *ip, uint16_t port,
	      struct ep_err *err);
void fib_nh_put(struct ep_fib *fib, uint32_t idx);
bool fib_nh_is_static(const struct ep_fib *fib, const struct ep_fib_nh *v);

#endif
