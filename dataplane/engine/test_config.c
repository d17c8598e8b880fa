/* SPDX-License-Identifier: BSD-3-Clause */
/* Config parser: grammar, line numbers in errors, repeated and unused keys. */
#include <string.h>

#include "ep_config.h"
#include "ep_engine.h"
#include "ep_test.h"

static struct ep_cfg *
parse(const char *text, struct ep_err *err)
{
	memset(err, 0, sizeof(*err));
	return ep_cfg_parse(text, "t.conf", err);
}

EP_TEST(config_sections_keys_and_comments)
{
	struct ep_err err;
	struct ep_cfg *c = parse("# top\n[engine]\nburst = 16 # trailing\n\n[port a]\n"
				 "device = \"net_null0,x=#1\"\n", &err);
	struct ep_cfg_section *s;
	uint64_t v;

	EP_CHECK(c != NULL);
	if (c == NULL)
		return;
	EP_CHECK_EQ(c->n_sec, 2);
	s = ep_cfg_find(c, "engine", NULL);
	EP_CHECK(ep_cfg_u64(c, s, "burst", 32, 1, 64, &v, &err) == 0);
	EP_CHECK_EQ(v, 16);
	s = ep_cfg_find(c, "port", "a");
	EP_CHECK(s != NULL);
	EP_CHECK(strcmp(ep_cfg_str(c, s, "device", NULL, &err), "net_null0,x=#1") == 0);
	EP_CHECK(ep_cfg_check_unused(c, &err) == 0);
	ep_cfg_free(c);
}

EP_TEST(config_error_names_file_and_line)
{
	struct ep_err err;

	EP_CHECK(parse("[engine]\nburst 32\n", &err) == NULL);
	EP_CHECK(strstr(err.msg, "t.conf:2:") != NULL);
	EP_CHECK(parse("burst = 1\n", &err) == NULL);
	EP_CHECK(strstr(err.msg, "before any [section]") != NULL);
	EP_CHECK(parse("[engine\n", &err) == NULL);
	EP_CHECK(strstr(err.msg, "t.conf:1:") != NULL);
	EP_CHECK(parse("[a]\n[a]\n", &err) == NULL);
	EP_CHECK(strstr(err.msg, "appears twice") != NULL);
	EP_CHECK(parse("[a]\nk = \"open\n", &err) == NULL);
	EP_CHECK(strstr(err.msg, "unterminated quote") != NULL);
}

EP_TEST(config_integer_range_and_garbage)
{
	struct ep_err err;
	struct ep_cfg *c = parse("[e]\na = 99\nb = 12x\nc = -1\n", &err);
	struct ep_cfg_section *s = ep_cfg_find(c, "e", NULL);
	uint64_t v;

	EP_CHECK(ep_cfg_u64(c, s, "a", 0, 1, 64, &v, &err) < 0);
	EP_CHECK(strstr(err.msg, "t.conf:2: key 'a'") != NULL);
	EP_CHECK(ep_cfg_u64(c, s, "b", 0, 0, 64, &v, &err) < 0);
	EP_CHECK(strstr(err.msg, "not a non-negative integer") != NULL);
	EP_CHECK(ep_cfg_u64(c, s, "c", 0, 0, 64, &v, &err) < 0);
	EP_CHECK(ep_cfg_u64(c, s, "absent", 7, 0, 64, &v, &err) == 0);
	EP_CHECK_EQ(v, 7);
	ep_cfg_free(c);
}

static int
count_kv(const struct ep_cfg_kv *kv, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

EP_TEST(config_repeated_keys_in_order_and_single_get_refuses_repeats)
{
	struct ep_err err;
	struct ep_cfg *c = parse("[r]\nroute = a\nroute = b\nroute = c\n", &err);
	struct ep_cfg_section *s = ep_cfg_find(c, "r", NULL);
	int n = 0;

	EP_CHECK(ep_cfg_each(s, "route", count_kv, &n) == 0);
	EP_CHECK_EQ(n, 3);
	EP_CHECK(ep_cfg_get(c, s, "route", &err) == NULL);
	EP_CHECK(strstr(err.msg, "given twice") != NULL);
	ep_cfg_free(c);
}

EP_TEST(config_unused_key_is_an_error_with_its_line)
{
	struct ep_err err;
	struct ep_cfg *c = parse("[engine]\nburts = 32\n", &err);

	EP_CHECK(ep_cfg_check_unused(c, &err) < 0);
	EP_CHECK(strstr(err.msg, "t.conf:2") != NULL);
	EP_CHECK(strstr(err.msg, "unknown key 'burts'") != NULL);
	ep_cfg_free(c);
}

EP_TEST(config_parse_prefix_and_mac)
{
	struct ep_err err;
	uint8_t a[16], plen;
	struct rte_ether_addr mac;

	EP_CHECK_EQ(ep_parse_prefix("198.18.0.1/24", a, &plen, &err), 4);
	EP_CHECK_EQ(plen, 24);
	EP_CHECK_EQ(ep_parse_prefix("2001:db8::1/64", a, &plen, &err), 6);
	EP_CHECK_EQ(plen, 64);
	EP_CHECK_EQ(ep_parse_prefix("2001:db8::1", a, &plen, &err), 6);
	EP_CHECK_EQ(plen, 128);
	EP_CHECK(ep_parse_prefix("198.18.0.1/33", a, &plen, &err) < 0);
	EP_CHECK(ep_parse_prefix("198.18.0.1/", a, &plen, &err) < 0);
	EP_CHECK(ep_parse_prefix("nonsense", a, &plen, &err) < 0);
	EP_CHECK(ep_parse_mac("02:00:00:00:00:0a", &mac) == 0);
	EP_CHECK_EQ(mac.addr_bytes[5], 0x0a);
	EP_CHECK(ep_parse_mac("02:00:00:00:00", &mac) < 0);
	EP_CHECK(ep_parse_mac("02:00:00:00:00:0a:", &mac) < 0);
}
