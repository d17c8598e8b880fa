/* SPDX-License-Identifier: BSD-3-Clause */
/* Registry of pipeline types, filled by constructors before main(). */
#include <string.h>

#include "ep_engine.h"

static struct ep_pipeline_type *types;

void
ep_pipeline_register(struct ep_pipeline_type *t)
{
	t->next_type = types;
	types = t;
}

const struct ep_pipeline_type *
ep_pipeline_find(const char *name)
{
	for (struct ep_pipeline_type *t = types; t != NULL; t = t->next_type)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

const struct ep_pipeline_type *
ep_pipeline_first(void)
{
	return types;
}
