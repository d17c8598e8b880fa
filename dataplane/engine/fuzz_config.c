/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer: the config parser, its typed getters, the integer parsers, the
 * name grammar and the polling-policy keys on arbitrary text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ep_config.h"
#include "ep_power.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
visit(const struct ep_cfg_kv *kv, void *arg)
{
	return 0;
}

/* Every value through the integer parsers, the name grammar and every
 * polling-policy key too. */
static void
values(struct ep_cfg_section *s)
{
	struct ep_poll_cfg pc;
	struct ep_err err;
	uint64_t v;

	ep_poll_cfg_default(&pc);
	for (int k = 0; k < s->n_kv; k++) {
		ep_parse_u64(s->kv[k].val, 0, UINT64_MAX, &v, &err);
		ep_parse_u64_hex(s->kv[k].val, 1, 0xfffe, &v, &err);
		ep_name_check(s->kv[k].val, &err);
		for (int i = 0; ep_poll_cfg_keys[i] != NULL; i++)
			ep_poll_cfg_set(&pc, ep_poll_cfg_keys[i], s->kv[k].val, &err);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ep_err err;
	char *text = malloc(size + 1);
	struct ep_cfg *c;
	uint64_t v;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	c = ep_cfg_parse(text, "fuzz", &err);
	if (c != NULL) {
		for (int i = 0; i < c->n_sec; i++) {
			ep_cfg_u64(c, &c->sec[i], "burst", 1, 0, 100, &v, &err);
			ep_cfg_str(c, &c->sec[i], "device", NULL, &err);
			ep_cfg_each(&c->sec[i], "route", visit, NULL);
			values(&c->sec[i]);
		}
		ep_cfg_check_unused(c, &err);
		ep_cfg_free(c);
	}
	free(text);
	return 0;
}
