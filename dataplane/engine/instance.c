/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Named instances of the shared modules (an ACL, a FIB, a scheduler
 * tree), registered per engine by the modules that create them, so that a
 * control command finds "the FIB named router" and several engines (the
 * unit tests) never see each other's.  Control thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "ep_text.h"

struct ep_instance {
	char kind[16];
	char name[EP_INSTANCE_NAME_LEN];
	void *obj;
	struct ep_instance *next;
};

int
ep_instance_add(struct ep_engine *e, const char *kind, const char *name, void *obj,
		struct ep_err *err)
{
	struct ep_instance *in, **tail;

	if (name == NULL)
		return ep_err_set(err, "%s: an instance needs a name", kind);
	if (ep_name_check(name, err) < 0)
		return ep_err_prefix(err, "%s: instance name: ", kind);
	if (ep_instance_find(e, kind, name) != NULL)
		return ep_err_set(err, "%s: an instance named '%s' exists", kind, name);
	in = calloc(1, sizeof(*in));
	if (in == NULL)
		return ep_err_set(err, "%s %s: out of memory", kind, name);
	snprintf(in->kind, sizeof(in->kind), "%s", kind);
	snprintf(in->name, sizeof(in->name), "%s", name);
	in->obj = obj;
	for (tail = &e->instances; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = in;
	return 0;
}

void
ep_instance_del(struct ep_engine *e, const void *obj)
{
	for (struct ep_instance **pp = &e->instances; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->obj == obj) {
			struct ep_instance *in = *pp;

			*pp = in->next;
			free(in);
			return;
		}
}

void *
ep_instance_find(const struct ep_engine *e, const char *kind, const char *name)
{
	for (const struct ep_instance *in = e->instances; in != NULL; in = in->next)
		if (strcmp(in->kind, kind) == 0 && strcmp(in->name, name) == 0)
			return in->obj;
	return NULL;
}

void *
ep_instance_next(const struct ep_engine *e, const char *kind, const void *prev)
{
	const struct ep_instance *in = e->instances;

	if (prev != NULL) {
		while (in != NULL && in->obj != prev)
			in = in->next;
		in = in != NULL ? in->next : NULL;
	}
	for (; in != NULL; in = in->next)
		if (strcmp(in->kind, kind) == 0)
			return in->obj;
	return NULL;
}

void *
ep_ctl_instance(struct ep_engine *e, json_t *req, const char *kind, struct ep_err *err)
{
	json_t *t = json_object_get(req, "table");
	const struct ep_instance *first = NULL, *second = NULL;
	void *obj;

	if (t != NULL) {
		if (!json_is_string(t))
			return ep_err_set(err, "table: must be the name of a %s", kind), NULL;
		obj = ep_instance_find(e, kind, json_string_value(t));
		if (obj == NULL)
			ep_err_set(err, "table: no %s '%s'", kind, json_string_value(t));
		return obj;
	}
	for (const struct ep_instance *in = e->instances; in != NULL && second == NULL;
	     in = in->next)
		if (strcmp(in->kind, kind) == 0) {
			if (first == NULL)
				first = in;
			else
				second = in;
		}
	if (first == NULL)
		return ep_err_set(err, "no %s is configured", kind), NULL;
	if (second != NULL)
		return ep_err_set(err, "table: this process has several of them (%s, %s, ...): "
				  "name the %s", first->name, second->name, kind), NULL;
	return first->obj;
}
