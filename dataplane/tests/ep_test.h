/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A small named-test harness for the C unit tests.
 *
 *   EP_TEST(ipv4_bad_checksum_is_dropped) {
 *       struct rte_mbuf *m = ep_test_mbuf(bytes, len);
 *       EP_CHECK_EQ(verdict, EP_NEXT_DROP(EP_DROP_IPV4_BAD_CHECKSUM));
 *   }
 *
 * Every EP_TEST registers itself; main() (in ep_test.c) brings up a small
 * EAL (--no-huge --in-memory, no devices), runs each case by name, prints
 * "ok"/"FAIL" per case and closes with "N passed, N failed".  A filter
 * argument runs only the cases whose names contain it.
 */
#ifndef EP_TEST_H
#define EP_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <inttypes.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

struct ep_test_case {
	const char *name;
	void (*fn)(void);
	struct ep_test_case *next_case;
};

void ep_test_register(struct ep_test_case *tc);
/** Set by EP_CHECK on failure; the case is reported failed. */
extern int ep_test_failed;

#define EP_TEST(name) \
	static void ep_test_fn_##name(void); \
	static struct ep_test_case ep_test_case_##name = { #name, ep_test_fn_##name, NULL }; \
	static void __attribute__((constructor)) ep_test_reg_##name(void) \
	{ ep_test_register(&ep_test_case_##name); } \
	static void ep_test_fn_##name(void)

#define EP_CHECK(cond) do { \
	if (!(cond)) { \
		printf("    %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		ep_test_failed = 1; \
	} } while (0)

#define EP_CHECK_EQ(a, b) do { \
	uint64_t ep_a_ = (uint64_t)(a), ep_b_ = (uint64_t)(b); \
	if (ep_a_ != ep_b_) { \
		printf("    %s:%d: %s == %s failed: %" PRIu64 " (0x%" PRIx64 ") != %" PRIu64 " (0x%" PRIx64 ")\n", \
		       __FILE__, __LINE__, #a, #b, ep_a_, ep_a_, ep_b_, ep_b_); \
		ep_test_failed = 1; \
	} } while (0)

#define EP_CHECK_MEM(a, b, len) do { \
	if (memcmp((a), (b), (len)) != 0) { \
		printf("    %s:%d: memory %s != %s (%zu bytes)\n", __FILE__, __LINE__, #a, #b, \
		       (size_t)(len)); \
		ep_test_hexdump("got", (a), (len)); \
		ep_test_hexdump("want", (b), (len)); \
		ep_test_failed = 1; \
	} } while (0)

/** The mempool every test mbuf comes from (with ep_meta private area). */
struct rte_mempool *ep_test_pool(void);
/** A new mbuf holding a copy of @p data; ep_meta zeroed, in_port 0.  The
 *  data is placed so that it ends exactly at the end of the segment's
 *  buffer when possible, so a read past the frame lands in ASAN's redzone
 *  only if the test copies it; parsers must use the mbuf lengths. */
struct rte_mbuf *ep_test_mbuf(const void *data, uint16_t len);
void ep_test_hexdump(const char *label, const void *p, size_t len);

#endif
