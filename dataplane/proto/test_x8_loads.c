/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The eight-frame parses' loads (ep_parse_x8.h, "The loads, two ways"):
 * as gathers and as lines (each mbuf's first line as one 64-byte load,
 * each frame's first bytes as full-width loads, turned into the per-field
 * vectors by shuffles), which a pipeline chooses between per CPU
 * (ep_parse_x8_lines, ep_parse_x8.c).
 *
 * The cases check that both forms give the same values in every lane
 * (eligible or not, every lane mask) of frames of every length around
 * each layout's minimum, for the three layouts the parses load (the
 * router's untagged frame, QinQ IPoE, the vBNG's QinQ PPPoE session
 * frame's seven words), and that neither reads a byte past the minimum
 * (frames that end where an inaccessible page begins).  With
 * EP_X8_LOADS_CYCLES=1 the first also prints both forms' TSC cycles a
 * packet for the untagged layout (least of 25 trials of 6400 bursts of
 * 32, five times, mbufs cycling through a pool of 64 (in L1) and of 1024
 * (in L2)); never a threshold.  Results: docs/benchmarks/router-passes-later.md,
 * "The nineteenth pass" and "The twentieth pass".
 */
#include <stdalign.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "ep_parse_x8.h"
#include "ep_test.h"

#ifdef EP_PARSE_X8

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

/* Layout @p layout's loads of the group at @p m, @p lanes, in the form
 * @p lines: 0 the router's untagged frame, 1 QinQ IPoE (words to 40), 2
 * the vBNG's QinQ PPPoE session frame (seven words to 48, minimum 56). */
static EP_X8_TARGET void
load_layout(struct rte_mbuf *const *m, __mmask8 lanes, int layout, bool lines,
	    struct ep_parse_x8_in *in)
{
	static const uint8_t pppoe[8] = { 0, 12, 20, 28, 36, 44, 48 };
	__m512i w[8];

	memset(in, 0, sizeof(*in));
	if (layout == 0) {
		ep_parse_x8_load(m, lanes, in, lines);
	} else if (layout == 1) {
		ep_parse_qinq_x8_load(m, lanes, in, lines);
	} else {
		ep_x8_load_mbufs(m, lanes, 56, in, lines);
		ep_x8_frame_words(in, 56, pppoe, 7, w, lines);
		in->q0 = w[0], in->q12 = w[1], in->q20 = w[2], in->q28 = w[3];
		in->q36 = w[4], in->q44 = w[5], in->q48 = w[6];
	}
}

/* Both forms' loads of the group at @p m, @p lanes, alike. */
static EP_X8_TARGET bool
same_loads(struct rte_mbuf *const *m, __mmask8 lanes, int layout)
{
	struct ep_parse_x8_in a, b;

	load_layout(m, lanes, layout, false, &a);
	load_layout(m, lanes, layout, true, &b);
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
				ep_parse_x8_load(b + 8 * g, 0xff, &in[g], lines);
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

/* Layout @p layout's loads of the eight mbufs @p m in the form @p lines,
 * every word used (a load the compiler dropped would prove nothing); the
 * eligible lanes. */
static EP_X8_TARGET __mmask8
load_all_words(struct rte_mbuf *const *m, int layout, bool lines)
{
	struct ep_parse_x8_in in;
	alignas(64) uint64_t sink[8];
	__m512i all;

	load_layout(m, 0xff, layout, lines, &in);
	all = _mm512_xor_si512(_mm512_xor_si512(in.q0, in.q12), _mm512_xor_si512(in.q20, in.q28));
	all = _mm512_xor_si512(all, _mm512_xor_si512(_mm512_xor_si512(in.q36, in.q40),
						     _mm512_xor_si512(in.q44, in.q48)));
	_mm512_store_si512(sink, all);
	__asm__ volatile("" : : "r"(sink) : "memory");
	return in.elig;
}

/*
 * Neither form reads a byte past a layout's minimum: eight frames of
 * exactly that many bytes, each ending where an inaccessible page begins
 * (a read past its end faults), loaded in every layout both ways.
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
		EP_CHECK_EQ(load_all_words(m, layout, false), 0xff);
		EP_CHECK_EQ(load_all_words(m, layout, true), 0xff);
	}
	munmap(area, 16 * pg);
	printf("    three layouts loaded both ways against a guard page\n");
}

/* The form is chosen once a process: every worker gets the same answer;
 * the figures it was chosen by are printed, never compared to a bound. */
EP_TEST(x8_loads_form_is_timed_once_and_kept)
{
	double f[2][2];
	bool first;
	const char *by;

	if (!ep_parse_x8_usable())
		return;
	first = ep_parse_x8_lines();
	EP_CHECK_EQ(ep_parse_x8_lines(), first);
	by = ep_parse_x8_figures(f);
	printf("    %s (%s): untagged gathers %.2f lines %.2f, QinQ PPPoE gathers %.2f "
	       "lines %.2f TSC cycles a packet\n", first ? "lines" : "gathers", by, f[0][0],
	       f[0][1], f[1][0], f[1][1]);
	if (getenv("EP_X8_LOADS") == NULL) {
		EP_CHECK(f[0][0] > 0 && f[0][1] > 0 && f[1][0] > 0 && f[1][1] > 0);
		EP_CHECK_EQ(first, f[0][1] + f[1][1] < f[0][0] + f[1][0]);
	}
}

#endif
