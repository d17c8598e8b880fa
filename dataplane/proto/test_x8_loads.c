/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The eight-frame parse's loads (ep_parse_x8.h) two ways, for a
 * measurement: as the parse does them, seven gathers a group (the mbufs'
 * buf_addr, data_off, pkt_len/data_len; the frames' 8-byte words at 0,
 * 12, 20, 28), and with no gather at all: each mbuf's first line as one
 * 64-byte load and each frame's bytes 0..31 and 4..35 as two 32-byte
 * loads, turned into the same per-field vectors by transposes (eight
 * two-table permutes and four lane shuffles for the mbufs' four words;
 * eight inserts, six unpacks and four permutes for the frames' four).
 *
 * Why: on AMD Zen 5 a 512-bit gather was measured at ~9 TSC cycles of
 * throughput against ~2.6 on an Intel Xeon, and the router's parse costs
 * more there (docs/benchmarks/router-passes-later.md, "The seventeenth
 * pass"); the forms tried then replaced the gathers by scalar loads and
 * inserts.  This one replaces them by full-width loads and shuffles.
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

#include <rte_cycles.h>

#include "ep_parse_x8.h"
#include "ep_test.h"

#ifdef EP_PARSE_X8

/* A stand-in for lanes outside the mask or not eligible: the line-load
 * form reads here instead of through their pointers, as the gathers read
 * nothing for them. */
static const uint8_t dummy_line[64] __rte_aligned(64);

/*
 * ep_x8_load_mbufs (minimum EP_PARSE_X8_MIN) and the four EP_X8_WORDs of
 * ep_parse_x8_load, without a gather.
 */
static __rte_always_inline EP_X8_TARGET void
load_by_lines(struct rte_mbuf *const *m, __mmask8 lanes, struct ep_parse_x8_in *in)
{
	const __m512i lo16 = _mm512_set1_epi64(0xffff);
	const __m512i dummy = _mm512_set1_epi64((long long)(uintptr_t)dummy_line);
	const __m512i mb = _mm512_mask_loadu_epi64(dummy, lanes, m);
	alignas(64) uint64_t mp[8], fp[8];
	__m512i r[8], t[4], u[4], buf, off, c4, c5, seg, f0[4], f4[4];

	_mm512_store_si512(mp, mb);
	for (int i = 0; i < 8; i++)
		r[i] = _mm512_loadu_si512((const void *)(uintptr_t)mp[i]);
	/* The mbuf line's words 0 (buf_addr), 2 (data_off), 4 (packet_type,
	 * pkt_len) and 5 (data_len): pairs of rows, then quads, then eight. */
	const __m512i i1 = _mm512_set_epi64(13, 5, 12, 4, 10, 2, 8, 0);
	const __m512i lo = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
	const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);

	for (int i = 0; i < 4; i++)
		t[i] = _mm512_permutex2var_epi64(r[2 * i], i1, r[2 * i + 1]);
	u[0] = _mm512_permutex2var_epi64(t[0], lo, t[1]);
	u[1] = _mm512_permutex2var_epi64(t[0], hi, t[1]);
	u[2] = _mm512_permutex2var_epi64(t[2], lo, t[3]);
	u[3] = _mm512_permutex2var_epi64(t[2], hi, t[3]);
	buf = _mm512_shuffle_i64x2(u[0], u[2], 0x44);
	off = _mm512_shuffle_i64x2(u[0], u[2], 0xee);
	c4 = _mm512_shuffle_i64x2(u[1], u[3], 0x44);
	c5 = _mm512_shuffle_i64x2(u[1], u[3], 0xee);
	in->mb = _mm512_maskz_mov_epi64(lanes, mb);
	in->pkt_len = _mm512_maskz_srli_epi64(lanes, c4, 32);
	seg = _mm512_min_epu64(_mm512_and_si512(c5, lo16), in->pkt_len);
	in->seg = seg;
	in->elig = _mm512_mask_cmpge_epu64_mask(lanes, seg, _mm512_set1_epi64(EP_PARSE_X8_MIN));
	in->p = _mm512_maskz_add_epi64(lanes, buf, _mm512_and_si512(off, lo16));

	/* The frames' bytes 0..31 and 4..35 (nothing past EP_PARSE_X8_MIN),
	 * rows i and i + 4 in one register's halves. */
	_mm512_store_si512(fp, _mm512_mask_mov_epi64(dummy, in->elig, in->p));
	for (int i = 0; i < 4; i++) {
		const uint8_t *a = (const uint8_t *)(uintptr_t)fp[i];
		const uint8_t *b = (const uint8_t *)(uintptr_t)fp[i + 4];

		f0[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)a)),
					   _mm256_loadu_si256((const void *)b), 1);
		f4[i] = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_loadu_si256((const void *)(a + 4))),
			_mm256_loadu_si256((const void *)(b + 4)), 1);
	}
	/* 4 x 4 transposes in each half: word k of rows a..h in order. */
	const __m512i even = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
	const __m512i odd = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
	__m512i l01 = _mm512_unpacklo_epi64(f4[0], f4[1]), h01 = _mm512_unpackhi_epi64(f4[0], f4[1]);
	__m512i l23 = _mm512_unpacklo_epi64(f4[2], f4[3]), h23 = _mm512_unpackhi_epi64(f4[2], f4[3]);
	__m512i z01 = _mm512_unpacklo_epi64(f0[0], f0[1]), z23 = _mm512_unpacklo_epi64(f0[2], f0[3]);

	in->q0 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(z01, even, z23));
	in->q12 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(h01, even, h23));
	in->q20 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(l01, odd, l23));
	in->q28 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(h01, odd, h23));
}

#define POOL_MAX 1024
#define ROOM 2048u

/* @p n mbufs over one allocation (the test pool's are 2176-byte rooms;
 * these are laid out like them, with no EAL object needed), frames of
 * pseudo-random bytes; lengths around the minimum when @p short_ones. */
static struct rte_mbuf **
mbufs_make(int n, bool short_ones, uint64_t *x)
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
		b->pkt_len = short_ones ? (uint32_t)(28 + (*x >> 20) % 24) : 60;
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

/* Both forms' loads of the group at @p m, @p lanes, alike. */
static EP_X8_TARGET bool
same_loads(struct rte_mbuf *const *m, __mmask8 lanes)
{
	struct ep_parse_x8_in a, b;
	__mmask8 ne;

	ep_parse_x8_load(m, lanes, &a);
	load_by_lines(m, lanes, &b);
	ne = _mm512_cmpneq_epi64_mask(a.mb, b.mb) | _mm512_cmpneq_epi64_mask(a.pkt_len, b.pkt_len) |
	     _mm512_cmpneq_epi64_mask(a.seg, b.seg) | _mm512_cmpneq_epi64_mask(a.p, b.p) |
	     _mm512_cmpneq_epi64_mask(a.q0, b.q0) | _mm512_cmpneq_epi64_mask(a.q12, b.q12) |
	     _mm512_cmpneq_epi64_mask(a.q20, b.q20) | _mm512_cmpneq_epi64_mask(a.q28, b.q28);
	return ne == 0 && a.elig == b.elig;
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
					load_by_lines(b + 8 * g, 0xff, &in[g]);
				else
					ep_parse_x8_load(b + 8 * g, 0xff, &in[g]);
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

EP_TEST(x8_loads_by_lines_give_the_gathers_values_in_every_lane)
{
	uint64_t x = 0x243f6a8885a308d3ull;
	int cases = 0;

	if (!ep_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the vector path does not run\n");
		return;
	}
	for (int round = 0; round < 2; round++) {
		struct rte_mbuf **m = mbufs_make(256, round == 1, &x);

		for (int g = 0; g + 8 <= 256; g += 8)
			for (unsigned int lanes = 0; lanes < 256; lanes += 1 + (unsigned int)(g % 7)) {
				EP_CHECK(same_loads(&m[g], (__mmask8)lanes));
				cases++;
			}
		mbufs_free(m);
	}
	printf("    %d groups of eight alike\n", cases);
	if (getenv("EP_X8_LOADS_CYCLES") == NULL)
		return;
	for (int pool = 64; pool <= POOL_MAX; pool *= 16) {
		struct rte_mbuf **m = mbufs_make(pool, false, &x);

		for (int rep = 0; rep < 5; rep++)
			printf("    pool %4d: gathers %.2f, lines %.2f TSC cycles a packet\n", pool,
			       cycles_a_packet(m, pool, false), cycles_a_packet(m, pool, true));
		mbufs_free(m);
	}
}

#endif
