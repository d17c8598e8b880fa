/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Latency histogram: log-linear, HdrHistogram-like, in TSC cycles.  The
 * sink's end-to-end latency and a worker's wake-up latency after a pause
 * (ep_power.h) both keep one.
 *
 * Values below 256 cycles have their own bucket; above, each power of two
 * is split into 128 buckets, so a bucket is at most 1/128 (0.78%) of its
 * value wide and the reported midpoint is within 0.4%.  Values up to 2^47
 * cycles (13 hours at 3 GHz) fit; 5248 buckets, 42 KB.  Adding a value is
 * a count-leading-zeros, a shift and three stores: cheap enough for every
 * packet of a sink.
 */
#ifndef EP_HIST_H
#define EP_HIST_H

#include <stdint.h>

#define EP_HIST_SUB_BITS 7
#define EP_HIST_MAX_BITS 47
#define EP_HIST_BUCKETS  ((EP_HIST_MAX_BITS - EP_HIST_SUB_BITS + 1) << EP_HIST_SUB_BITS)

static inline uint32_t
ep_hist_index(uint64_t v)
{
	unsigned int shift;

	if (v >= (1ull << EP_HIST_MAX_BITS))
		v = (1ull << EP_HIST_MAX_BITS) - 1;
	if (v < (2u << EP_HIST_SUB_BITS))
		return (uint32_t)v;
	shift = (unsigned int)(63 - __builtin_clzll(v)) - EP_HIST_SUB_BITS;
	/* v >> shift is in [128, 256): the index is continuous with the exact
	 * buckets below. */
	return (uint32_t)((shift << EP_HIST_SUB_BITS) + (v >> shift));
}

/** Lowest value of bucket @p i and its width. */
static inline uint64_t
ep_hist_lower(uint32_t i, uint64_t *width)
{
	unsigned int shift;

	if (i < (2u << EP_HIST_SUB_BITS)) {
		*width = 1;
		return i;
	}
	shift = (i >> EP_HIST_SUB_BITS) - 1;
	*width = 1ull << shift;
	return (uint64_t)(i - (shift << EP_HIST_SUB_BITS)) << shift;
}

struct ep_hist {
	uint64_t count;
	uint64_t min, max, sum;      /**< cycles; min is UINT64_MAX when empty */
	uint64_t b[EP_HIST_BUCKETS];
};

static inline void
ep_hist_add(struct ep_hist *h, uint64_t v)
{
	h->b[ep_hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/** TSC cycles to nanoseconds without overflowing for any 64-bit @p cyc. */
static inline uint64_t
ep_cyc_to_ns(uint64_t cyc, uint64_t hz)
{
	return cyc / hz * 1000000000ull + cyc % hz * 1000000000ull / hz;
}

void ep_hist_reset(struct ep_hist *h);
void ep_hist_merge(struct ep_hist *dst, const struct ep_hist *src);
/** Value at @p permille (500 = median, 999 = p99.9): the midpoint of the
 *  bucket holding that rank, clamped to [min, max]; 0 when empty. */
uint64_t ep_hist_percentile(const struct ep_hist *h, unsigned int permille);

#endif
