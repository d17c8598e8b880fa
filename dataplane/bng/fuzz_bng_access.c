/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the vBNG access-encapsulation parser (bng_access.h) and the
 * access key derived from what it accepts.
 *
 * The frame is copied into a malloc()ed buffer of exactly its length, so a
 * read one byte past the frame lands in ASAN's redzone.  Each input is
 * parsed twice: whole, and as a multi-segment frame whose first segment
 * ends half way (every header must then lie in that first part).  Checks:
 * an accepted frame's L3 offset and length stay inside the frame, and the
 * PPPoE session of an accepted PPPoE frame is never a reserved one.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "bng_access.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* --no-huge excludes --in-memory in DPDK 22.11: --no-shconf. */
	char *eal[] = { "fuzz_bng_access", "--no-huge", "-m", "64", "--no-shconf", "--no-pci",
			"--no-telemetry", "-l", "0", "--log-level", "*:error", NULL };

	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		abort();
	return 0;
}

static void
one(const uint8_t *frame, uint32_t seg_len, uint32_t frame_len)
{
	struct ep_meta m;
	struct bng_key k;
	int rc;

	memset(&m, 0xa5, sizeof(m));
	rc = bng_parse_access(frame, seg_len, frame_len, &m);
	if (rc != 0)
		return;
	if ((uint32_t)m.l3_off + m.l3_len > frame_len || m.l3_off >= seg_len)
		abort();
	if (m.l3_type != EP_L3_IPV4 && m.l3_type != EP_L3_IPV6)
		abort();
	bng_key_of(frame, &m, &k);
	if (k.pppoe && (k.session == 0 || k.session == 0xffff))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *frame;

	if (size > 9000)
		return 0;
	frame = malloc(size ? size : 1);
	memcpy(frame, data, size);
	one(frame, (uint32_t)size, (uint32_t)size);
	one(frame, (uint32_t)size / 2, (uint32_t)size);
	free(frame);
	return 0;
}
