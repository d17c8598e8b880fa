/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which form of the eight-frame loads (ep_parse_x8.h: gathers, or full
 * lines and shuffles) this CPU runs faster: ep_parse_x8_lines(), timed
 * once a process when a pipeline's worker first asks, and the control
 * command `parse-x8`, which shows the choice and its figures.
 *
 * Why timed and not decided by vendor or model: a 512-bit gather costs
 * ~2.6 TSC cycles of throughput on the Intel Xeon these benchmarks ran
 * on and ~9 on an AMD Zen 5 (docs/benchmarks/router-passes-later.md, "The
 * seventeenth pass"), microcode can change it (Intel's Gather Data
 * Sampling mitigation slows gathers), and a guest sees whatever its host
 * gives.  The rte_acl classify method is chosen the same way (acl.c).
 *
 * How: 64 mbufs laid out as a pool's (a 2176-byte room each, a 64-byte
 * frame at the headroom), in L1 after the first trial, so that a figure is
 * the loads' own cost and not the memory's; two layouts, the untagged
 * frame's (the router's parse: seven gathers a group) and the QinQ PPPoE
 * session frame's (three mbuf fields and seven words, ten gathers: the
 * most a parse loads);
 * four groups of eight loaded as a burst of 32 is, every field used; the
 * least TSC count of CAL_TRIALS trials of CAL_BURSTS bursts per form and
 * layout, the forms alternated trial by trial.  Lines are chosen when
 * their two layouts' sum is lower.  ~2 ms, once.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_cycles.h>

#include "ep_ctl.h"
#include "ep_parse_x8.h"

#ifdef EP_PARSE_X8

#define CAL_MBUFS  64
#define CAL_ROOM   (RTE_PKTMBUF_HEADROOM + 2048u)
#define CAL_TRIALS 21
#define CAL_BURSTS 64

/* 0: not timed yet; 1: gathers; 2: lines. */
static int chosen;
static const char *chosen_by = "timed";
/* TSC cycles a packet: [layout][form], form 0 gathers, 1 lines. */
static double figures[2][2];
static uint64_t cal_sink;

static EP_X8_TARGET uint64_t
time_form(struct rte_mbuf **m, int layout, const bool lines)
{
	static const uint8_t pppoe[8] = { 0, 12, 20, 28, 36, 44, 48 };
	__m512i s = _mm512_setzero_si512();
	alignas(64) uint64_t out[8];
	uint64_t t0 = rte_rdtsc_precise(), t;

	for (int k = 0; k < CAL_BURSTS; k++) {
		struct rte_mbuf **b = &m[(k * 32) % CAL_MBUFS];
		struct ep_parse_x8_in in[4];
		__m512i w[8];

		for (int g = 0; g < 4; g++) {
			if (layout == 0) {
				ep_parse_x8_load(b + 8 * g, 0xff, &in[g], lines);
			} else {
				ep_x8_load_mbufs(b + 8 * g, 0xff, 56, &in[g], lines);
				ep_x8_frame_words(&in[g], 56, pppoe, 7, w, lines);
				in[g].q36 = _mm512_xor_si512(_mm512_xor_si512(w[4], w[5]), w[6]);
				in[g].q0 = w[0], in[g].q12 = w[1], in[g].q20 = w[2], in[g].q28 = w[3];
			}
		}
		for (int g = 0; g < 4; g++)
			s = _mm512_add_epi64(
				s, _mm512_add_epi64(
					   _mm512_add_epi64(_mm512_xor_si512(in[g].q0, in[g].q12),
							    _mm512_xor_si512(in[g].q20, in[g].q28)),
					   _mm512_add_epi64(_mm512_add_epi64(in[g].seg, in[g].p),
							    layout ? in[g].q36 : in[g].mb)));
	}
	t = rte_rdtsc_precise() - t0;
	/* every field used: loads the compiler dropped would time nothing */
	_mm512_store_si512(out, s);
	__atomic_store_n(&cal_sink, out[0] ^ out[7], __ATOMIC_RELAXED);
	return t;
}

static int
calibrate(void)
{
	uint8_t *mem = aligned_alloc(64, (sizeof(struct rte_mbuf) + CAL_ROOM) * CAL_MBUFS);
	struct rte_mbuf *m[CAL_MBUFS];
	uint64_t best[2][2] = { { UINT64_MAX, UINT64_MAX }, { UINT64_MAX, UINT64_MAX } };
	uint64_t x = 0x9e3779b97f4a7c15ull;

	if (mem == NULL) {
		chosen_by = "no memory to time: gathers";
		return 1;
	}
	memset(mem, 0, (sizeof(struct rte_mbuf) + CAL_ROOM) * CAL_MBUFS);
	for (int i = 0; i < CAL_MBUFS; i++) {
		struct rte_mbuf *b = (struct rte_mbuf *)(void *)(mem + (sizeof(struct rte_mbuf) + CAL_ROOM) * (size_t)i);
		uint8_t *f;

		b->buf_addr = (uint8_t *)b + sizeof(*b);
		b->buf_len = (uint16_t)CAL_ROOM;
		b->data_off = RTE_PKTMBUF_HEADROOM;
		b->nb_segs = 1;
		b->pkt_len = 64;
		b->data_len = 64;
		f = (uint8_t *)b->buf_addr + b->data_off;
		for (int k = 0; k < 64; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;        /* xorshift64 */
			f[k] = (uint8_t)x;
		}
		m[i] = b;
	}
	for (int t = 0; t < CAL_TRIALS; t++)
		for (int layout = 0; layout < 2; layout++) {
			best[layout][0] = RTE_MIN(best[layout][0], time_form(m, layout, false));
			best[layout][1] = RTE_MIN(best[layout][1], time_form(m, layout, true));
		}
	free(mem);
	for (int layout = 0; layout < 2; layout++)
		for (int f = 0; f < 2; f++)
			figures[layout][f] = (double)best[layout][f] / CAL_BURSTS / 32;
	return best[0][1] + best[1][1] < best[0][0] + best[1][0] ? 2 : 1;
}

bool
ep_parse_x8_lines(void)
{
	const char *env;

	if (__atomic_load_n(&chosen, __ATOMIC_ACQUIRE) != 0)
		return chosen == 2;
	env = getenv("EP_X8_LOADS");
	if (env != NULL && (strcmp(env, "lines") == 0 || strcmp(env, "gathers") == 0)) {
		chosen_by = "EP_X8_LOADS";
		__atomic_store_n(&chosen, strcmp(env, "lines") == 0 ? 2 : 1, __ATOMIC_RELEASE);
		return chosen == 2;
	}
	if (!ep_parse_x8_usable()) {
		chosen_by = "no AVX-512 F/BW/DQ/VBMI: the scalar parse";
		__atomic_store_n(&chosen, 1, __ATOMIC_RELEASE);
		return false;
	}
	__atomic_store_n(&chosen, calibrate(), __ATOMIC_RELEASE);
	return chosen == 2;
}

const char *
ep_parse_x8_figures(double f[2][2])
{
	memcpy(f, figures, sizeof(figures));
	return chosen_by;
}

/* parse-x8: whether the eight-frame parse runs here, its loads' form and
 * the figures it was chosen by. */
static int
ctl_parse_x8(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	static const char *const layouts[] = { "untagged", "qinq_pppoe" };
	bool usable = ep_parse_x8_usable();
	json_t *fig = json_object();

	json_object_set_new(res, "usable", json_boolean(usable));
	if (usable) {
		bool lines = ep_parse_x8_lines();

		json_object_set_new(res, "loads", json_string(lines ? "lines" : "gathers"));
	}
	json_object_set_new(res, "chosen_by", json_string(chosen_by));
	for (int l = 0; l < 2 && figures[l][0] > 0; l++) {
		json_t *one = json_object();

		json_object_set_new(one, "gathers", json_real(figures[l][0]));
		json_object_set_new(one, "lines", json_real(figures[l][1]));
		json_object_set_new(fig, layouts[l], one);
	}
	json_object_set_new(res, "tsc_cycles_a_packet", fig);
	return 0;
}

#else

bool
ep_parse_x8_lines(void)
{
	return false;
}

const char *
ep_parse_x8_figures(double f[2][2])
{
	memset(f, 0, 4 * sizeof(double));
	return "no eight-frame parse on this architecture";
}

static int
ctl_parse_x8(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	json_object_set_new(res, "usable", json_false());
	return 0;
}

#endif

static struct ep_ctl_cmd c_parse_x8 = { "parse-x8", "",
	"whether the eight-frame parse runs here, and its loads' form (lines or gathers, as timed)",
	ctl_parse_x8, NULL };

EP_CTL_REGISTER(c_parse_x8)
