/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The eight-frame parse's loads (ep_parse_x8.h) two ways: as the parse
 * does them (ep_parse_x8_load: ep_x8_load_lines, each mbuf's first line
 * as one 64-byte load and each frame's bytes 0..31 and 4..35 as two
 * 32-byte loads, turned into the per-field vectors by transposes), and as
 * it did them before, seven gathers a group (the mbufs' buf_addr,
 * data_off, pkt_len/data_len; the frames' 8-byte words at 0, 12, 20, 28).
 *
 * Why: on AMD Zen 5 a 512-bit gather was measured at ~9 TSC cycles of
 * throughput against ~2.6 on an Intel Xeon, and the router's parse costs
 * more there (docs/benchmarks/router-passes-later.md, "The seventeenth
 * pass"); the forms tried then replaced the gathers by scalar loads and
 * inserts, which doubled the parse's instructions.  The line loads
 * replace them by full-width loads and shuffles.
 *
 * The case checks that the line-load form gives the gathers' values in
 * every lane (eligible or not, every lane mask) of frames of every length
 * around the minimum, so the figures compare like work.  With
 * EP_X8_LOADS_CYCLES=1 it also prints both forms' TSC cycles a packet
 * (least of 25 trials of 6400 bursts of 32, one form after the other,
 * five times, mbufs cycling through a pool of 64 (in L1) and of 1024 (in
 * L2)); never a threshold.  Results: docs/benchmarks/router-passes-later.md,
 * "The nineteenth pass".
 */
#include <stdalign.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "ep_parse_x8.h"
#include "ep_test.h"

#ifdef EP_PARSE_X8

/*
 * The reference: the loads as gathers, as the parses did them before
 * (ep_parse_x8.h, "Why no gathers below").  The mbufs' fields of @p lanes,
 * one gather each from the pointers' first line, and the frame's 8-byte
 * word at @p off of each eligible lane.
 */
static __rte_always_inline EP_X8_TARGET void
gather_mbufs(struct rte_mbuf *const *m, __mmask8 lanes, uint32_t min, struct ep_parse_x8_in *in)
{
	const __m512i lo16 = _mm512_set1_epi64(0xffff), lo32 = _mm512_set1_epi64(0xffffffff);
	const __m512i mb = _mm512_maskz_loadu_epi64(lanes, m);
	__m512i z = _mm512_setzero_si512();
	__m512i buf, off, lens, seg;

	buf = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, buf_addr), 1);
	off = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, data_off), 1);
	lens = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, pkt_len), 1);
	in->mb = mb;
	in->pkt_len = _mm512_and_si512(lens, lo32);
	seg = _mm512_min_epu64(_mm512_and_si512(_mm512_srli_epi64(lens, 32), lo16), in->pkt_len);
	in->seg = seg;
	in->elig = _mm512_mask_cmpge_epu64_mask(lanes, seg, _mm512_set1_epi64(min));
	in->p = _mm512_add_epi64(buf, _mm512_and_si512(off, lo16));
}

#define GATHER_WORD(in, off) \
	_mm512_mask_i64gather_epi64(_mm512_setzero_si512(), (in)->elig, (in)->p, (const void *)(off), 1)

/* ep_parse_x8_load's fields by gathers: seven a group. */
static __rte_always_inline EP_X8_TARGET void
load_by_gathers(struct rte_mbuf *const *m, __mmask8 lanes, struct ep_parse_x8_in *in)
{
	gather_mbufs(m, lanes, EP_PARSE_X8_MIN, in);
	in->q0 = GATHER_WORD(in, 0);
	in->q12 = GATHER_WORD(in, 12);
	in->q20 = GATHER_WORD(in, 20);
	in->q28 = GATHER_WORD(in, 28);
}

#define POOL_MAX 1024
#define ROOM 2048u

/* @p n mbufs over one allocation (the test pool's are 2176-byte rooms;
 * these are laid out like them, with no EAL object needed), frames of
 * pseudo-random bytes; lengths within 24 bytes around @p around when
 * @p short_ones (some with a first segment shorter than the frame). */
static struct rte_mbuf **
mbufs_make(int n, bool short_ones, uint32_t around, uint64_t *x)
{
	size_t sz = sizeof(struct rte_mbuf) + RTE_PKTMBUF_HEADROOM + ROOM;
	uint8_t *mem = aligned_alloc(64, sz * (size_t)n);
	struct rte_mbuf **m = calloc((size_t)n, sizeof(*m));

	if (mem == NULL || m == NULL)
		abort();
	memset(mem, 0, sz * (size_t)n);
	for (int i = 0; i < n; i++) {
		struct rte_mbuf *b = (struct rte_mbuf *)(void *)(mem + sz * (size_t)i);
		uint8_t *f;

		b->buf_addr = (uint8_t *)b + sizeof(*b);
		b->buf_len = (uint16_t)(RTE_PKTMBUF_HEADROOM + ROOM);
		*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
		b->data_off = (uint16_t)(RTE_PKTMBUF_HEADROOM - (short_ones ? (*x >> 40) % 64 : 0));
		b->packet_type = (uint32_t)*x;
		b->nb_segs = 1;
		b->pkt_len = short_ones ? (uint32_t)(around - 12 + (*x >> 20) % 24) : 60;
		b->data_len = (uint16_t)(short_ones && (*x & 1) ? b->pkt_len - (*x >> 8) % 12
							      : b->pkt_len);
		b->vlan_tci = (uint16_t)(*x >> 16);
		f = (uint8_t *)b->buf_addr + b->data_off;
		for (unsigned int k = 0; k < 64; k++) {
			*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
			f[k] = (uint8_t)*x;
		}
		m[i] = b;
	}
	return m;
}

static void
mbufs_free(struct rte_mbuf **m)
{
	free(m[0]);     /* the allocation starts at the first */
	free(m);
}

/* The fields two forms loaded, alike in every lane. */
static EP_X8_TARGET bool
same_in(const struct ep_parse_x8_in *a, const struct ep_parse_x8_in *b)
{
	__mmask8 ne;

	ne = _mm512_cmpneq_epi64_mask(a->mb, b->mb) | _mm512_cmpneq_epi64_mask(a->pkt_len, b->pkt_len) |
	     _mm512_cmpneq_epi64_mask(a->seg, b->seg) | _mm512_cmpneq_epi64_mask(a->p, b->p) |
	     _mm512_cmpneq_epi64_mask(a->q0, b->q0) | _mm512_cmpneq_epi64_mask(a->q12, b->q12) |
	     _mm512_cmpneq_epi64_mask(a->q20, b->q20) | _mm512_cmpneq_epi64_mask(a->q28, b->q28) |
	     _mm512_cmpneq_epi64_mask(a->q36, b->q36) | _mm512_cmpneq_epi64_mask(a->q40, b->q40) |
	     _mm512_cmpneq_epi64_mask(a->q44, b->q44) | _mm512_cmpneq_epi64_mask(a->q48, b->q48);
	return ne == 0 && a->elig == b->elig;
}

/* The three layouts' loads of the group at @p m, @p lanes, alike by
 * gathers and by lines: the router's (untagged), QinQ IPoE (words to
 * 40), and a layout of seven words to 48 (the vBNG's QinQ PPPoE session
 * frames', minimum 56). */
static EP_X8_TARGET bool
same_loads(struct rte_mbuf *const *m, __mmask8 lanes, int layout)
{
	struct ep_parse_x8_in a, b;
	__m512i w[8];

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (layout == 0) {
		load_by_gathers(m, lanes, &a);
		ep_parse_x8_load(m, lanes, &b);
	} else if (layout == 1) {
		gather_mbufs(m, lanes, EP_PARSE_QINQ_X8_MIN, &a);
		a.q0 = GATHER_WORD(&a, 0);
		a.q12 = GATHER_WORD(&a, 12);
		a.q20 = GATHER_WORD(&a, 20);
		a.q28 = GATHER_WORD(&a, 28);
		a.q36 = GATHER_WORD(&a, 36);
		a.q40 = GATHER_WORD(&a, 40);
		ep_parse_qinq_x8_load(m, lanes, &b);
	} else {
		gather_mbufs(m, lanes, 56, &a);
		a.q0 = GATHER_WORD(&a, 0);
		a.q12 = GATHER_WORD(&a, 12);
		a.q20 = GATHER_WORD(&a, 20);
		a.q28 = GATHER_WORD(&a, 28);
		a.q36 = GATHER_WORD(&a, 36);
		a.q44 = GATHER_WORD(&a, 44);
		a.q48 = GATHER_WORD(&a, 48);
		ep_x8_load_mbufs(m, lanes, 56, &b);
		ep_x8_frame_words(&b, 56, EP_X8_WORDS_AT(0, 12, 20, 28, 36, 44, 48, 0), w);
		b.q0 = w[0], b.q12 = w[1], b.q20 = w[2], b.q28 = w[3];
		b.q36 = w[4], b.q44 = w[5], b.q48 = w[6];
		/* the eighth word (offset 0 again) and the unused ones: 0 or word 0 */
		if (_mm512_cmpneq_epi64_mask(w[7], b.q0) != 0)
			return false;
	}
	return same_in(&a, &b);
}

static EP_X8_TARGET double
cycles_a_packet(struct rte_mbuf **m, int n, bool lines)
{
	const int bursts = 6400;
	uint64_t best = UINT64_MAX;
	__m512i s = _mm512_setzero_si512();
	alignas(64) uint64_t out[8];

	for (int t = 0; t < 25; t++) {
		uint64_t t0 = rte_rdtsc_precise();

		for (int k = 0; k < bursts; k++) {
			struct rte_mbuf **b = &m[(k * 32) % n];
			struct ep_parse_x8_in in[4];

			for (int g = 0; g < 4; g++) {
				if (lines)
					ep_parse_x8_load(b + 8 * g, 0xff, &in[g]);
				else
					load_by_gathers(b + 8 * g, 0xff, &in[g]);
			}
			/* every field used, as the checks use them */
			for (int g = 0; g < 4; g++)
				s = _mm512_add_epi64(
					s, _mm512_add_epi64(
						_mm512_add_epi64(_mm512_xor_si512(in[g].q0, in[g].q12),
								 _mm512_xor_si512(in[g].q20, in[g].q28)),
						_mm512_add_epi64(in[g].seg, in[g].p)));
		}
		best = RTE_MIN(best, rte_rdtsc_precise() - t0);
	}
	_mm512_store_si512(out, s);
	__asm__ volatile("" : : "r"(out[0]) : "memory");
	return (double)best / bursts / 32;
}

EP_TEST(x8_loads_by_lines_give_the_gathers_values_in_every_lane_of_three_layouts)
{
	uint64_t x = 0x243f6a8885a308d3ull;
	int cases = 0;

	if (!ep_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the vector path does not run\n");
		return;
	}
	static const uint32_t mins[] = { EP_PARSE_X8_MIN, EP_PARSE_QINQ_X8_MIN, 56 };

	for (int layout = 0; layout < 3; layout++)
		for (int round = 0; round < 2; round++) {
			struct rte_mbuf **m = mbufs_make(256, round == 1, mins[layout], &x);

			for (int g = 0; g + 8 <= 256; g += 8)
				for (unsigned int lanes = 0; lanes < 256;
				     lanes += 1 + (unsigned int)(g % 7)) {
					EP_CHECK(same_loads(&m[g], (__mmask8)lanes, layout));
					cases++;
				}
			mbufs_free(m);
		}
	printf("    %d groups of eight alike\n", cases);
	if (getenv("EP_X8_LOADS_CYCLES") == NULL)
		return;
	for (int pool = 64; pool <= POOL_MAX; pool *= 16) {
		struct rte_mbuf **m = mbufs_make(pool, false, 60, &x);

		for (int rep = 0; rep < 5; rep++)
			printf("    pool %4d: gathers %.2f, lines %.2f TSC cycles a packet\n", pool,
			       cycles_a_packet(m, pool, false), cycles_a_packet(m, pool, true));
		mbufs_free(m);
	}
}

/* Layout @p layout's loads (same_loads' numbering) of the eight mbufs
 * @p m, whose frames are each exactly @p min bytes. */
static EP_X8_TARGET __mmask8
load_layout(struct rte_mbuf *const *m, int layout, uint32_t min)
{
	struct ep_parse_x8_in in;
	__m512i w[8], all;
	alignas(64) uint64_t sink[8];

	memset(w, 0, sizeof(w));
	if (layout == 0) {
		ep_parse_x8_load(m, 0xff, &in);
		w[0] = in.q0, w[1] = in.q12, w[2] = in.q20, w[3] = in.q28;
	} else {
		ep_x8_load_mbufs(m, 0xff, min, &in);
		if (layout == 1) {
			ep_parse_qinq_x8_words(&in);
			w[0] = in.q0, w[1] = in.q12, w[2] = in.q20, w[3] = in.q28;
			w[4] = in.q36, w[5] = in.q40;
		} else {
			ep_x8_frame_words(&in, min, EP_X8_WORDS_AT(0, 12, 20, 28, 36, 44, 48, 0), w);
		}
	}
	/* every word used: a load the compiler dropped would prove nothing */
	all = w[0];
	for (int k = 1; k < 8; k++)
		all = _mm512_xor_si512(all, w[k]);
	_mm512_store_si512(sink, all);
	__asm__ volatile("" : : "r"(sink) : "memory");
	return in.elig;
}

/*
 * The line loads read nothing past a layout's minimum: eight frames of
 * exactly that many bytes, each ending where an inaccessible page begins
 * (a read past its end faults), loaded in every layout.
 */
EP_TEST(x8_loads_read_nothing_past_the_minimum_of_each_layout)
{
	static const uint32_t mins[] = { EP_PARSE_X8_MIN, EP_PARSE_QINQ_X8_MIN, 56 };
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct rte_mbuf mb[8], *m[8];
	uint8_t *area;

	if (!ep_parse_x8_usable())
		return;
	area = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EP_CHECK(area != MAP_FAILED);
	if (area == MAP_FAILED)
		return;
	for (int i = 0; i < 8; i++)
		EP_CHECK_EQ(mprotect(area + (2 * (size_t)i + 1) * pg, pg, PROT_NONE), 0);
	for (int layout = 0; layout < 3; layout++) {
		memset(mb, 0, sizeof(mb));
		for (int i = 0; i < 8; i++) {
			/* the frame's last byte is its page's last */
			mb[i].buf_addr = area + 2 * (size_t)i * pg;
			mb[i].data_off = (uint16_t)(pg - mins[layout]);
			mb[i].pkt_len = mins[layout];
			mb[i].data_len = (uint16_t)mins[layout];
			mb[i].nb_segs = 1;
			m[i] = &mb[i];
		}
		EP_CHECK_EQ(load_layout(m, layout, mins[layout]), 0xff);
	}
	munmap(area, 16 * pg);
	printf("    three layouts loaded against a guard page\n");
}

#endif
