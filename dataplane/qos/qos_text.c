/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The text forms QoS configuration shares (ep_qos.h): rates, sizes,
 * key=value specs, and the DSCP -> traffic class map.  Control path only.
 */
/* rte_sched's PIE inlines (through ep_qos.h) are still experimental in
 * DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rte_common.h>

#include "ep_qos.h"
#include "ep_text.h"

static int
parse_scaled(const char *s, uint64_t unit, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mul = 1;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -1;
	v = strtod(s, &end);
	switch (*end) {
	case 'k': case 'K': mul = unit; end++; break;
	case 'm': case 'M': mul = unit * unit; end++; break;
	case 'g': case 'G': mul = unit * unit * unit; end++; break;
	default: break;
	}
	if (*end != '\0' || v < 0 || v * (double)mul > 1e18)
		return -1;
	*out = (uint64_t)(v * (double)mul + 0.5);
	return 0;
}

int
ep_qos_parse_rate(const char *s, uint64_t *bps)
{
	return parse_scaled(s, 1000, bps);
}

int
ep_qos_parse_size(const char *s, uint64_t *bytes)
{
	return parse_scaled(s, 1024, bytes);
}

int
ep_qos_each_kv(const char *spec,
	       int (*fn)(void *arg, const char *k, const char *v, struct ep_err *err),
	       void *arg, struct ep_err *err)
{
	char buf[512], *save = NULL;

	if (spec == NULL)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return ep_err_set(err, "longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, spec);
	for (char *t = strtok_r(buf, " \t", &save); t != NULL; t = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(t, '=');

		if (eq == NULL)
			return ep_err_set(err, "'%s' is not key=value", t);
		*eq = '\0';
		if (fn(arg, t, eq + 1, err) < 0)
			return -1;
	}
	return 0;
}

/* ---- DSCP -> traffic class ---- */

void
ep_qos_dscp_map_default(uint8_t map[64])
{
	for (int d = 0; d < 64; d++)
		map[d] = EP_QOS_TCQ(RTE_SCHED_TRAFFIC_CLASS_BE, 0);
	map[46] = EP_QOS_TCQ(0, 0);                 /* EF: the highest priority */
	map[44] = EP_QOS_TCQ(0, 0);                 /* VOICE-ADMIT */
	map[48] = map[56] = EP_QOS_TCQ(1, 0);       /* CS6, CS7: network control */
	map[40] = EP_QOS_TCQ(2, 0);                 /* CS5 */
	map[34] = map[36] = map[38] = EP_QOS_TCQ(3, 0); map[32] = EP_QOS_TCQ(4, 0);   /* AF4x, CS4 */
	map[26] = map[28] = map[30] = EP_QOS_TCQ(5, 0); map[24] = EP_QOS_TCQ(6, 0);   /* AF3x, CS3 */
	map[18] = map[20] = map[22] = EP_QOS_TCQ(7, 0); map[16] = EP_QOS_TCQ(8, 0);   /* AF2x, CS2 */
	map[10] = map[12] = map[14] = EP_QOS_TCQ(9, 0);                               /* AF1x */
	map[8] = EP_QOS_TCQ(RTE_SCHED_TRAFFIC_CLASS_BE, 3);  /* CS1: lower effort */
	map[1] = EP_QOS_TCQ(RTE_SCHED_TRAFFIC_CLASS_BE, 3);  /* LE (RFC 8622) */
}

static int
dscp_value(const char *s)
{
	static const struct { const char *n; int v; } names[] = {
		{ "be", 0 }, { "default", 0 }, { "ef", 46 }, { "va", 44 }, { "le", 1 },
		{ "cs0", 0 }, { "cs1", 8 }, { "cs2", 16 }, { "cs3", 24 }, { "cs4", 32 },
		{ "cs5", 40 }, { "cs6", 48 }, { "cs7", 56 },
	};
	uint64_t v;

	for (size_t i = 0; i < RTE_DIM(names); i++)
		if (strcasecmp(s, names[i].n) == 0)
			return names[i].v;
	if ((s[0] == 'a' || s[0] == 'A') && (s[1] == 'f' || s[1] == 'F') && s[2] >= '1' &&
	    s[2] <= '4' && s[3] >= '1' && s[3] <= '3' && s[4] == '\0')
		return (s[2] - '0') * 8 + (s[3] - '0') * 2;
	if (ep_parse_u64(s, 0, 63, &v, NULL) < 0)
		return -1;
	return (int)v;
}

int
ep_qos_dscp_map_parse(uint8_t map[64], const char *spec, struct ep_err *err)
{
	char buf[1024], *save = NULL;

	if (strlen(spec) >= sizeof(buf))
		return ep_err_set(err, "too long");
	strcpy(buf, spec);
	for (char *t = strtok_r(buf, " \t,", &save); t != NULL; t = strtok_r(NULL, " \t,", &save)) {
		char *colon = strchr(t, ':'), *dot;
		uint64_t tc, q = 0;
		int d;

		if (colon == NULL)
			return ep_err_set(err, "'%s' is not <dscp>:<tc>[.<queue>]", t);
		*colon = '\0';
		d = dscp_value(t);
		if (d < 0)
			return ep_err_set(err, "'%s' is not a DSCP (0-63, ef, afXY, csN, be, le, va)",
					  t);
		dot = strchr(colon + 1, '.');
		if (dot != NULL)
			*dot = '\0';
		if (ep_parse_u64(colon + 1, 0, RTE_SCHED_TRAFFIC_CLASS_BE, &tc, NULL) < 0)
			return ep_err_set(err, "'%s': traffic class must be 0-%d", colon + 1,
					  RTE_SCHED_TRAFFIC_CLASS_BE);
		if (dot != NULL) {
			if (ep_parse_u64(dot + 1, 0, RTE_SCHED_BE_QUEUES_PER_PIPE - 1, &q, NULL) < 0 ||
			    tc != RTE_SCHED_TRAFFIC_CLASS_BE)
				return ep_err_set(err, "'%s': only traffic class %d has queues 0-%d",
						  colon + 1, RTE_SCHED_TRAFFIC_CLASS_BE,
						  RTE_SCHED_BE_QUEUES_PER_PIPE - 1);
		}
		map[d] = EP_QOS_TCQ(tc, q);
	}
	return 0;
}
