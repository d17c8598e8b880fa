/* SPDX-License-Identifier: BSD-3-Clause */
#include "ep_test.h"

#include <stdlib.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "ep_meta.h"

int ep_test_failed;
static struct ep_test_case *cases;
static struct rte_mempool *pool;

void
ep_test_register(struct ep_test_case *tc)
{
	/* Keep source order: append. */
	struct ep_test_case **p = &cases;

	while (*p != NULL)
		p = &(*p)->next_case;
	*p = tc;
}

struct rte_mempool *
ep_test_pool(void)
{
	return pool;
}

struct rte_mbuf *
ep_test_mbuf(const void *data, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	char *p;

	if (m == NULL)
		abort();
	p = rte_pktmbuf_append(m, len);
	if (p == NULL)
		abort();
	memcpy(p, data, len);
	memset(ep_meta(m), 0, sizeof(struct ep_meta));
	return m;
}

void
ep_test_hexdump(const char *label, const void *p, size_t len)
{
	const uint8_t *b = p;

	printf("    %s:", label);
	for (size_t i = 0; i < len; i++)
		printf("%s%02x", (i % 16) ? " " : "\n      ", b[i]);
	printf("\n");
}

int
main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "512", "--no-shconf", "--no-pci",
			"--no-telemetry", "-l", "0", "--log-level", "lib.*:error", NULL };

	/* EP_TEST_HUGE=1: hugepages instead of 4 KiB pages, for the cases that
	 * print what something costs (page walks change the figures). */
	if (getenv("EP_TEST_HUGE") != NULL) {
		eal[1] = "--in-memory";
		eal[4] = "--no-telemetry";
	}
	const char *filter = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;

	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	if (ep_meta_register() < 0) {
		fprintf(stderr, "ep_meta dynamic field: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	pool = rte_pktmbuf_pool_create("ep_test", 4096, 0, EP_META_SIZE,
				       RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (pool == NULL) {
		fprintf(stderr, "mempool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	for (struct ep_test_case *tc = cases; tc != NULL; tc = tc->next_case) {
		if (filter != NULL && strstr(tc->name, filter) == NULL)
			continue;
		ep_test_failed = 0;
		tc->fn();
		if (ep_test_failed) {
			printf("FAIL %s\n", tc->name);
			failed++;
		} else {
			printf("ok   %s\n", tc->name);
			passed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	rte_eal_cleanup();
	return failed ? 1 : 0;
}
