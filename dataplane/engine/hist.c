/* SPDX-License-Identifier: BSD-3-Clause */
/* The latency histogram's control-path half (ep_hist.h). */
#include <string.h>

#include <rte_common.h>

#include "ep_hist.h"

void
ep_hist_reset(struct ep_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void
ep_hist_merge(struct ep_hist *dst, const struct ep_hist *src)
{
	for (uint32_t i = 0; i < EP_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum += src->sum;
	dst->min = RTE_MIN(dst->min, src->min);
	dst->max = RTE_MAX(dst->max, src->max);
}

uint64_t
ep_hist_percentile(const struct ep_hist *h, unsigned int permille)
{
	uint64_t rank, cum = 0;

	if (h->count == 0)
		return 0;
	/* The smallest value with at least permille/1000 of the samples at or
	 * below it (nearest-rank definition). */
	rank = (h->count * permille + 999) / 1000;
	if (rank == 0)
		rank = 1;
	for (uint32_t i = 0; i < EP_HIST_BUCKETS; i++) {
		cum += h->b[i];
		if (cum >= rank) {
			uint64_t width, v = ep_hist_lower(i, &width);

			v += (width - 1) / 2;
			return RTE_MAX(h->min, RTE_MIN(v, h->max));
		}
	}
	return h->max;
}
