/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer: the config parser and its typed getters on arbitrary text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ep_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
visit(const struct ep_cfg_kv *kv, void *arg)
{
	return 0;
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
		}
		ep_cfg_check_unused(c, &err);
		ep_cfg_free(c);
	}
	free(text);
	return 0;
}
