/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A router's instances: one FIB and one ACL, named after the router.
 * Control thread only.
 */
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "router.h"

void
router_params_default(struct router_params *p)
{
	ep_fib_params_default(&p->fib);
	p->max_acl_rules = 65536;
}

struct router *
router_create(struct ep_engine *e, const char *name, const struct router_params *p,
	      struct ep_err *err)
{
	struct router *r = rte_zmalloc("ep_router", sizeof(*r), RTE_CACHE_LINE_SIZE);
	struct ep_acl_params ap;

	if (r == NULL) {
		ep_err_set(err, "router: out of memory");
		return NULL;
	}
	r->e = e;
	ep_acl_params_default(&ap);
	ap.max_rules = p->max_acl_rules;
	r->fib = ep_fib_create(e, name, &p->fib, err);
	if (r->fib != NULL)
		r->acl = ep_acl_create(e, name, &ap, err);
	if (r->acl == NULL) {
		router_free(r);
		return NULL;
	}
	return r;
}

void
router_free(struct router *r)
{
	if (r == NULL)
		return;
	ep_acl_free(r->acl);
	ep_fib_free(r->fib);
	rte_free(r);
}
