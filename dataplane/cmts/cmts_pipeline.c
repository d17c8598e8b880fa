/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `cmts-ds`, `cmts-us` and `cmts-gen` pipeline types.  The first
 * setup() builds the process's vCMTS: the crypto device with one queue pair
 * per vCMTS worker, then one service group per [cmts NAME] section.  A
 * worker names its SG with `sg = NAME` (optional when there is one SG); a
 * downstream worker polls the SG's net_port, an upstream worker its
 * rpd_port.  Their output leaves by the SG's other port unless the worker
 * says `tx = PORT`: one port per SG and direction, each carrying both sides
 * of its direction, is how Intel's vCMTS reference is wired, and the
 * in-process benchmark sends the output to a null device while a cmts-gen
 * worker feeds the input ports.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <string.h>

#include <rte_malloc.h>

#include "cmts.h"
#include "cmts_gen.h"

static struct ep_pipeline_type ds_type, us_type, gen_type;

static bool
is_cmts(const struct ep_worker *w)
{
	return w->type == &ds_type || w->type == &us_type || w->type == &gen_type;
}

static int
cmts_setup(struct ep_engine *e, struct ep_err *err)
{
	struct cmts *c;
	uint16_t n_qp = 0;

	if (cmts_global != NULL)
		return 0;
	for (int i = 0; i < e->n_workers; i++)
		n_qp += is_cmts(e->workers[i]);
	c = rte_zmalloc("cmts", sizeof(*c), RTE_CACHE_LINE_SIZE);
	if (c == NULL)
		return ep_err_set(err, "cmts: out of memory");
	c->e = e;
	cmts_global = c;
	if (cmts_crypto_init(c, e->cfg, n_qp, err) < 0 || cmts_load_config(c, e->cfg, err) < 0)
		goto fail;
	if (c->n_sg == 0) {
		ep_err_set(err, "cmts-ds / cmts-us need a [cmts <name>] section (a service group)");
		goto fail;
	}
	return 0;
fail:
	cmts_free(c);
	return -1;
}

static struct cmts_sg *
worker_sg(struct ep_engine *e, struct ep_worker *w, uint16_t port, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, "sg", err);
	struct cmts_sg *sg;
	bool bad;

	if (cmts_global == NULL)
		return ep_err_set(err, "cmts: setup did not run"), NULL;
	sg = cmts_sg_find(cmts_global, kv != NULL ? kv->val : NULL);
	if (sg == NULL) {
		if (kv != NULL)
			ep_cfg_error(e->cfg, kv, err, "no [cmts %s]", kv->val);
		else
			ep_cfg_section_error(e->cfg, w->cfg, err, "sg = <name> is required with "
					     "more than one service group");
		return NULL;
	}
	if (port == 2)
		return sg;      /* the generator: no rx */
	bad = w->n_rx == 0;
	/* (An af_packet port may give the worker several queues of it.) */
	for (int i = 0; i < w->n_rx; i++)
		bad |= w->rx[i].port != (port == 0 ? sg->net_port : sg->rpd_port);
	if (bad) {
		ep_cfg_section_error(e->cfg, w->cfg, err, "a %s worker polls its service group's "
				     "%s (rx = %s)", port == 0 ? "cmts-ds" : "cmts-us",
				     port == 0 ? "net_port" : "rpd_port",
				     e->ports[port == 0 ? sg->net_port : sg->rpd_port].name);
		return NULL;
	}
	return sg;
}

static int
tx_port(struct ep_engine *e, struct ep_worker *w, uint16_t def, uint16_t *out,
	struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, "tx", err);
	struct ep_port *p;

	*out = def;
	if (kv == NULL)
		return err->msg[0] != '\0' ? -1 : 0;
	p = ep_port_by_name(e, kv->val);
	if (p == NULL)
		return ep_cfg_error(e->cfg, kv, err, "no [port %s]", kv->val);
	*out = p->index;
	return 0;
}

static int
ds_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct cmts_sg *sg = worker_sg(e, w, 0, err);
	uint16_t tx;

	if (sg == NULL || tx_port(e, w, sg->rpd_port, &tx, err) < 0)
		return -1;
	return cmts_ds_build(sg, w, tx, err);
}

static int
us_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct cmts_sg *sg = worker_sg(e, w, 1, err);
	uint16_t tx;

	if (sg == NULL || tx_port(e, w, sg->net_port, &tx, err) < 0)
		return -1;
	return cmts_us_build(sg, w, tx, err);
}

static int
gen_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct cmts_sg *sg = worker_sg(e, w, 2, err);

	return sg == NULL ? -1 : cmts_gen_build(e, w, sg, err);
}

static void
teardown(struct ep_engine *e, const struct ep_pipeline_type *t)
{
	struct cmts *c = cmts_global;
	bool left = false;

	if (c == NULL)
		return;
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w == NULL || w->pipeline_ctx == NULL)
			continue;
		if (w->type == t) {
			if (t == &ds_type)
				cmts_ds_free(w->pipeline_ctx);
			else if (t == &us_type)
				cmts_us_free(w->pipeline_ctx);
			else
				cmts_gen_free(w->pipeline_ctx);
			w->pipeline_ctx = NULL;
		} else if (is_cmts(w)) {
			left = true;
		}
	}
	if (!left)
		cmts_free(c);
}

static void
ds_teardown(struct ep_engine *e)
{
	teardown(e, &ds_type);
}

static void
us_teardown(struct ep_engine *e)
{
	teardown(e, &us_type);
}

static void
gen_teardown(struct ep_engine *e)
{
	teardown(e, &gen_type);
}

static struct ep_pipeline_type ds_type = {
	.name = "cmts-ds",
	.setup = cmts_setup,
	.build = ds_build,
	.service = cmts_ds_service,
	.teardown = ds_teardown,
	.stage_sets_in_port = true,
};
static struct ep_pipeline_type us_type = {
	.name = "cmts-us",
	.setup = cmts_setup,
	.build = us_build,
	.teardown = us_teardown,
};
static struct ep_pipeline_type gen_type = {
	.name = "cmts-gen",
	.setup = cmts_setup,
	.build = gen_build,
	.source = cmts_gen_source,
	.service = cmts_gen_service,
	.teardown = gen_teardown,
};
EP_PIPELINE_REGISTER(ds_type);
EP_PIPELINE_REGISTER(us_type);
EP_PIPELINE_REGISTER(gen_type);
