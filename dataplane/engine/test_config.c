/* SPDX-License-Identifier: BSD-3-Clause */
/* Config parser: grammar, line numbers in errors, repeated and unused keys;
 * control requests turned into configuration text (ep_ctl.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ep_config.h"
#include "ep_ctl.h"
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

EP_TEST(config_mac_refuses_sign_and_blank)
{
	struct rte_ether_addr mac;

	EP_CHECK(ep_parse_mac("-1:00:00:00:00:0a", &mac) < 0);
	EP_CHECK(ep_parse_mac("+2:00:00:00:00:0a", &mac) < 0);
	EP_CHECK(ep_parse_mac(" 2:00:00:00:00:0a", &mac) < 0);
	EP_CHECK(ep_parse_mac("02-00-00-00-00-0a", &mac) < 0);
	EP_CHECK(ep_parse_mac("0A:00:00:00:00:0B", &mac) == 0);
}

EP_TEST(text_integer_is_never_truncated_wrapped_or_guessed)
{
	struct ep_err err;
	uint64_t v = 7;

	EP_CHECK(ep_parse_u64("4294967297", 0, UINT32_MAX, &v, &err) < 0);
	EP_CHECK(strstr(err.msg, "4294967297 is outside [0, 4294967295]") != NULL);
	EP_CHECK(ep_parse_u64("18446744073709551616", 0, UINT64_MAX, &v, &err) < 0);
	EP_CHECK(strstr(err.msg, "is outside") != NULL);
	EP_CHECK(ep_parse_u64("18446744073709551615", 0, UINT64_MAX, &v, &err) == 0);
	EP_CHECK_EQ(v, UINT64_MAX);
	static const char *const garbage[] = { "", "-1", "+1", " 1", "1 ", "1x", "0x10", "1e3",
					       "1.0", "\xff" };
	for (size_t i = 0; i < RTE_DIM(garbage); i++) {
		EP_CHECK(ep_parse_u64(garbage[i], 0, UINT64_MAX, &v, &err) < 0);
		EP_CHECK(strstr(err.msg, "is not a non-negative integer") != NULL);
	}
	EP_CHECK(strstr(err.msg, "\\xff") != NULL);     /* quoted, not raw */
	EP_CHECK(ep_parse_u64("010", 0, 100, &v, &err) == 0);
	EP_CHECK_EQ(v, 10);                              /* not octal */
	EP_CHECK(ep_parse_u64("5", 6, 9, &v, &err) < 0);
	EP_CHECK(ep_parse_u64_hex("0x0012", 1, 0xfffe, &v, &err) == 0);
	EP_CHECK_EQ(v, 0x12);
	EP_CHECK(ep_parse_u64_hex("0x", 0, 10, &v, &err) < 0);
	EP_CHECK(ep_parse_u64_hex("0x1g", 0, 100, &v, &err) < 0);
	EP_CHECK(ep_parse_u64_hex("0x10000000000000000", 0, UINT64_MAX, &v, &err) < 0);
}

EP_TEST(text_name_grammar_is_the_file_grammar)
{
	struct ep_err err;
	static const char *const bad[] = { "", " ", "a b", "a\nb", "%s%n", "a/b", "caf\xc3\xa9",
					   "n23456789012345678901234567890123" };

	EP_CHECK(ep_name_check("gold-1.5_x", &err) == 0);
	EP_CHECK(ep_name_check("n234567890123456789012345678901", &err) == 0);   /* 31 */
	for (size_t i = 0; i < RTE_DIM(bad); i++)
		EP_CHECK(ep_name_check(bad[i], &err) < 0);
	EP_CHECK(strstr(err.msg, "is not a name") != NULL);
	EP_CHECK(ep_name_check("a\nb", &err) < 0);
	EP_CHECK(strstr(err.msg, "a\\x0ab") != NULL);
}

struct lines {
	char text[8][64];
	int lineno[8];
	int n;
};

static int
collect(void *arg, char *line, int lineno, struct ep_err *err)
{
	struct lines *l = arg;

	if (strcmp(line, "fail") == 0)
		return ep_err_set(err, "asked to fail");
	if (l->n < 8) {
		snprintf(l->text[l->n], sizeof(l->text[0]), "%s", line);
		l->lineno[l->n++] = lineno;
	}
	return 0;
}

static void
write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	EP_CHECK(f != NULL);
	if (f == NULL)
		return;
	EP_CHECK_EQ(fwrite(data, 1, len, f), len);
	fclose(f);
}

EP_TEST(side_file_reads_lines_whole_or_refuses_them)
{
	char path[] = "/tmp/ep_side_XXXXXX", fifo[64];
	struct ep_err err;
	struct lines l = { .n = 0 };
	int fd = mkstemp(path);
	static char big[9000];

	EP_CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	/* A comment longer than any old read chunk stays one comment. */
	memset(big, ' ', sizeof(big));
	big[0] = '#';
	memcpy(big + 600, "deny src 198.18.1.2/32\n", 23);
	write_file(path, big, 623);
	EP_CHECK(ep_side_file_each(path, collect, &l, &err) == 0);
	EP_CHECK_EQ(l.n, 0);
	/* Blank lines, comments, CRLF, a last line without newline. */
	write_file(path, "\n# c\n  a b  # t\r\n\n\tlast", 23);
	EP_CHECK(ep_side_file_each(path, collect, &l, &err) == 0);
	EP_CHECK_EQ(l.n, 2);
	EP_CHECK(strcmp(l.text[0], "a b") == 0);
	EP_CHECK_EQ(l.lineno[0], 3);
	EP_CHECK(strcmp(l.text[1], "last") == 0);
	EP_CHECK_EQ(l.lineno[1], 5);
	/* Errors name the file and the line. */
	write_file(path, "ok\n\nfail\n", 9);
	EP_CHECK(ep_side_file_each(path, collect, &l, &err) != 0);
	EP_CHECK(strstr(err.msg, ":3: asked to fail") != NULL);
	memset(big, 'x', sizeof(big));
	write_file(path, big, sizeof(big));
	EP_CHECK(ep_side_file_each(path, collect, &l, &err) < 0);
	EP_CHECK(strstr(err.msg, ":1: line longer than 4095 bytes") != NULL);
	write_file(path, "a\nb\0c\n", 6);
	EP_CHECK(ep_side_file_each(path, collect, &l, &err) < 0);
	EP_CHECK(strstr(err.msg, ":2: NUL byte") != NULL);
	unlink(path);
	/* Not regular files: refused before anything is read. */
	EP_CHECK(ep_side_file_each("/dev/zero", collect, &l, &err) < 0);
	EP_CHECK(strstr(err.msg, "/dev/zero: not a regular file (a character device)") != NULL);
	EP_CHECK(ep_side_file_each("/tmp", collect, &l, &err) < 0);
	EP_CHECK(strstr(err.msg, "a directory") != NULL);
	snprintf(fifo, sizeof(fifo), "%s.fifo", path);
	EP_CHECK(mkfifo(fifo, 0600) == 0);
	EP_CHECK(ep_side_file_each(fifo, collect, &l, &err) < 0);
	EP_CHECK(strstr(err.msg, "a FIFO") != NULL);
	unlink(fifo);
	EP_CHECK(ep_side_file_each("/nonexistent/x", collect, &l, &err) < 0);
	EP_CHECK(strstr(err.msg, "No such file or directory") != NULL);
}

/* ep_ctl_spec: a request's fields as "k=v k=v", the text a configuration
 * line carries, for commands that set keys through the file's parser. */
static int
spec(const char *json, size_t n, char *buf, struct ep_err *err)
{
	static const char *const skip[] = { "name", NULL };
	json_t *req = json_loads(json, 0, NULL);
	int rc;

	memset(err, 0, sizeof(*err));
	rc = ep_ctl_spec(req, skip, buf, n, err);
	json_decref(req);
	return rc;
}

EP_TEST(ctl_spec_fields_become_config_text)
{
	struct ep_err err;
	char buf[128];

	EP_CHECK_EQ(spec("{\"cmd\": \"pipe-add\", \"name\": \"gold\", \"rate\": \"10M\", "
			 "\"tb_size\": 4096, \"wrr\": [1, \"2\", 3]}", sizeof(buf), buf, &err), 0);
	EP_CHECK(strcmp(buf, "rate=10M tb_size=4096 wrr=1,2,3") == 0);
	EP_CHECK_EQ(spec("{\"cmd\": \"pipe-add\", \"name\": \"gold\"}", sizeof(buf), buf, &err), 0);
	EP_CHECK_EQ(buf[0], '\0');
}

EP_TEST(ctl_spec_refuses_what_would_smuggle_a_key)
{
	struct ep_err err;
	char buf[128];

	/* A blank in a value, or a key outside the name grammar, would read
	 * as a key of its own. */
	EP_CHECK_EQ(spec("{\"rate\": \"10M prio=7\"}", sizeof(buf), buf, &err), -1);
	EP_CHECK(strstr(err.msg, "'rate'") != NULL && strstr(err.msg, "no blanks") != NULL);
	EP_CHECK_EQ(spec("{\"rate\": \"10M\\tprio=7\"}", sizeof(buf), buf, &err), -1);
	EP_CHECK_EQ(spec("{\"a b\": 1}", sizeof(buf), buf, &err), -1);
	EP_CHECK_EQ(spec("{\"a=b\": 1}", sizeof(buf), buf, &err), -1);
	/* Not a string, an integer or a flat list of them. */
	EP_CHECK_EQ(spec("{\"rate\": {\"bps\": 1}}", sizeof(buf), buf, &err), -1);
	EP_CHECK(strcmp(err.msg, "rate: must be a string, an integer or a list of them") == 0);
	EP_CHECK_EQ(spec("{\"rate\": [[1]]}", sizeof(buf), buf, &err), -1);
	EP_CHECK_EQ(spec("{\"rate\": null}", sizeof(buf), buf, &err), -1);
	EP_CHECK_EQ(spec("{\"rate\": 1.5}", sizeof(buf), buf, &err), -1);
	/* What does not fit the caller's buffer is refused, not cut. */
	EP_CHECK_EQ(spec("{\"rate\": \"100M\", \"burst\": 65536}", 12, buf, &err), -1);
	EP_CHECK(strstr(err.msg, "too long") != NULL);
}
