/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-socket commands of the ACL instances.  Every command names its
 * instance with `table=<name>`; without it, the only ACL of the process is
 * meant (a process with several refuses and lists their names).  Each
 * handler calls the one function of acl.c the config loader uses too.
 *
 *   acl-tables       each instance: rules, default, sets, classify (as configured)
 *                    classify_method (the rte_acl method in use: what
 *                    "auto" resolved to on this CPU and EAL) and, for
 *                    "auto", classify_calibration {method: cycles per key},
 *                    calibration_keys (timed, each built inside a rule) and
 *                    calibration_keys_matched (those the rules matched)
 *   acl-add          [table=<acl>] rule="<rule>" [index=<n>]   (before rule n; default: append)
 *   acl-del          [table=<acl>] index=<n>
 *   acl-list         [table=<acl>]
 *   acl-replace      [table=<acl>] rules=[...] | rules="<rule>; <rule>; ..."   (atomic)
 *   acl-set-default  [table=<acl>] action=permit|deny
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_acl.h"
#include "ep_ctl.h"

static struct ep_acl *
acl_of(struct ep_engine *e, json_t *req, struct ep_err *err)
{
	return ep_ctl_instance(e, req, EP_ACL_KIND, err);
}

/* The instance a command may edit: not one whose rules another table
 * derives (ep_acl.owner says which commands edit those). */
static struct ep_acl *
acl_to_edit(struct ep_engine *e, json_t *req, struct ep_err *err)
{
	struct ep_acl *a = acl_of(e, req, err);

	if (a != NULL && a->owner[0] != '\0') {
		ep_err_set(err, "table %s is derived from %s: edit it there", a->name, a->owner);
		return NULL;
	}
	return a;
}

/* {method: cycles per key} of the calibration "auto" ran (acl.c), or {}. */
static json_t *
calibration_json(const struct ep_acl *a)
{
	json_t *o = json_object();

	for (uint8_t i = 0; a->cur != NULL && i < a->cur->n_cal; i++)
		json_object_set_new(o, ep_acl_alg_name(a->cur->cal[i].alg),
				    json_real(a->cur->cal[i].cycles));
	return o;
}

static int
ctl_acl_tables(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	json_t *arr = json_array();

	for (struct ep_acl *a = ep_acl_next(e, NULL); a != NULL; a = ep_acl_next(e, a))
		json_array_append_new(arr, json_pack("{s:s, s:i, s:s, s:b, s:i, s:s, s:s, s:s, s:o, "
						     "s:i, s:i}",
			"table", a->name, "rules", (int)a->n_rules, "default",
			a->default_deny ? "deny" : "permit", "sets", a->p.sets,
			"lanes", a->cur != NULL ? a->cur->lanes : 1, "owner", a->owner,
			"classify", ep_acl_alg_name(a->p.alg), "classify_method",
			ep_acl_method_name(a), "classify_calibration", calibration_json(a),
			"calibration_keys", a->cur != NULL ? a->cur->cal_keys : 0,
			"calibration_keys_matched", a->cur != NULL ? a->cur->cal_matched : 0));
	json_object_set_new(res, "tables", arr);
	return 0;
}

static int
ctl_acl_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_acl *a = acl_to_edit(e, req, err);
	const char *rule;
	uint64_t index;

	if (a == NULL || (rule = ep_ctl_str(req, "rule", err)) == NULL ||
	    ep_ctl_u64(req, "index", a->n_rules, UINT32_MAX, &index, err) < 0)
		return -1;
	if (ep_acl_insert(a, rule, (int64_t)index, err) < 0)
		return -1;
	json_object_set_new(res, "index", json_integer((json_int_t)index));
	json_object_set_new(res, "rules", json_integer(a->n_rules));
	return 0;
}

static int
ctl_acl_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_acl *a = acl_to_edit(e, req, err);
	uint64_t index;

	if (a == NULL)
		return -1;
	if (json_object_get(req, "index") == NULL)
		return ep_err_set(err, "index: missing");
	if (ep_ctl_u64(req, "index", 0, UINT32_MAX, &index, err) < 0 ||
	    ep_acl_delete(a, index, err) < 0)
		return -1;
	json_object_set_new(res, "rules", json_integer(a->n_rules));
	return 0;
}

static int
ctl_acl_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_acl *a = acl_of(e, req, err);
	json_t *arr;

	if (a == NULL)
		return -1;
	arr = json_array();
	for (uint32_t i = 0; i < a->n_rules; i++) {
		char text[512];

		ep_acl_rule_format(&a->rules[i], text, sizeof(text));
		json_array_append_new(arr, json_pack("{s:i, s:s}", "index", (int)i, "rule", text));
	}
	json_object_set_new(res, "table", json_string(a->name));
	json_object_set_new(res, "rules", arr);
	json_object_set_new(res, "default", json_string(a->default_deny ? "deny" : "permit"));
	json_object_set_new(res, "classify", json_string(ep_acl_alg_name(a->p.alg)));
	json_object_set_new(res, "classify_method", json_string(ep_acl_method_name(a)));
	return 0;
}

static int
ctl_acl_replace(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_acl *a = acl_to_edit(e, req, err);
	json_t *v = json_object_get(req, "rules");
	const char **list = NULL;
	char *copy = NULL;
	uint32_t n = 0;
	int rc;

	if (a == NULL)
		return -1;
	if (json_is_array(v)) {
		list = calloc(json_array_size(v) + 1, sizeof(*list));
		for (size_t i = 0; list != NULL && i < json_array_size(v); i++) {
			if (!json_is_string(json_array_get(v, i))) {
				free(list);
				return ep_err_set(err, "rules[%zu]: must be a string", i);
			}
			list[n++] = json_string_value(json_array_get(v, i));
		}
	} else if (json_is_string(v)) {
		/* The CLI sends one string: rules separated by ';'. */
		char *save = NULL;

		copy = strdup(json_string_value(v));
		list = calloc(strlen(json_string_value(v)) / 2 + 2, sizeof(*list));
		for (char *t = copy ? strtok_r(copy, ";", &save) : NULL; list != NULL && t != NULL;
		     t = strtok_r(NULL, ";", &save)) {
			while (*t == ' ')
				t++;
			if (*t != '\0')
				list[n++] = t;
		}
		/* "" or " " is more likely a mistake than a wish to drop every
		 * rule: emptying the ACL takes an explicit empty list. */
		if (list != NULL && n == 0) {
			free(list);
			free(copy);
			return ep_err_set(err, "rules: the string holds no rule; to remove every "
					  "rule send an empty list (rules=[])");
		}
	} else {
		return ep_err_set(err, "rules: missing (an array of rule strings, or one "
				  "string with rules separated by ';')");
	}
	if (list == NULL) {
		free(copy);
		return ep_err_set(err, "out of memory");
	}
	rc = ep_acl_replace(a, list, n, err);
	free(list);
	free(copy);
	if (rc == 0)
		json_object_set_new(res, "rules", json_integer(a->n_rules));
	return rc;
}

static int
ctl_acl_set_default(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_acl *a = acl_to_edit(e, req, err);
	const char *action;

	if (a == NULL || (action = ep_ctl_str(req, "action", err)) == NULL)
		return -1;
	return ep_acl_set_default(a, action, err);
}

static struct ep_ctl_cmd c_acl_tables = { "acl-tables", "",
	"the ACL instances with their rule counts, default actions and classify methods", ctl_acl_tables, NULL };
static struct ep_ctl_cmd c_acl_add = { "acl-add", "[table=<acl>] rule=<rule> [index=<n>]",
	"insert an ACL rule before rule n (default: append)", ctl_acl_add, NULL };
static struct ep_ctl_cmd c_acl_del = { "acl-del", "[table=<acl>] index=<n>",
	"delete ACL rule n", ctl_acl_del, NULL };
static struct ep_ctl_cmd c_acl_list = { "acl-list", "[table=<acl>]",
	"list ACL rules in order and the default action", ctl_acl_list, NULL };
static struct ep_ctl_cmd c_acl_replace = { "acl-replace", "[table=<acl>] rules=<rule;rule;...>",
	"replace the whole ACL atomically", ctl_acl_replace, NULL };
static struct ep_ctl_cmd c_acl_set_default = { "acl-set-default",
	"[table=<acl>] action=permit|deny", "action when no rule matches", ctl_acl_set_default,
	NULL };

EP_CTL_REGISTER(c_acl_tables)
EP_CTL_REGISTER(c_acl_add)
EP_CTL_REGISTER(c_acl_del)
EP_CTL_REGISTER(c_acl_list)
EP_CTL_REGISTER(c_acl_replace)
EP_CTL_REGISTER(c_acl_set_default)
