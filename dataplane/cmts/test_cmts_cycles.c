/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * In-process micro-run of the downstream and the upstream with the default
 * service-group profile (the benchmark's, bench/bench_cmts.py writes the
 * same): 300 CMs with 4 CPE addresses each, 6 filter groups of 16 rules (2
 * per CM, 10 % of the flows match one), 16 classifiers per CM (10 % match,
 * into one of 3 SFs), 4 active SFs per CM (1 Gbit/s, 256 KB bursts), 6 OFDM channels in 2 bonding
 * groups, 100 % AES, the downstream iMix (15 % 84 B, 10 % 256 B, 75 %
 * 1280 B frames with FCS).  Bursts of 32 through the real stages with the
 * engine's stage accounting; per-stage cycles per packet (minimum over
 * trials) are printed, never asserted.  What is checked: every frame
 * leaves.  EP_TEST_HUGE=1 runs it on hugepages, as the benchmark does.
 *
 * EP_CYCLES_COLD=1 evicts every frame's lines (mbuf, metadata, headroom,
 * data) from the caches before its burst, as frames a NIC wrote to memory
 * (or another core wrote) arrive: the micro-run then shows where the
 * pipeline pays for first touches, which the warm run hides and the
 * benchmark mixes with its neighbours' noise.  EP_CYCLES_COLD=2 also
 * evicts, before each burst, the state its frames' CMs bring: the whole
 * CM record, the worker's per-CM state and SF queues, the BPI key object
 * (not the crypto device's session: that is the PMD's) -- what the
 * benchmark's stream of ~1.4 MB of frames a ring's turn, and the
 * neighbours, push out of L2 between two frames of one CM.
 */
#include "test_cmts.h"

#include <rte_cycles.h>
#ifdef RTE_ARCH_X86
#include <immintrin.h>
#endif

#define N_CMS 300
#define BURST 32
#define ROUNDS 64
#define TRIALS 40

/* CPE address k of CM i: 198.19.0.0 + 4 i + k. */
static void
cpe_addr(char *out, size_t n, uint32_t i, uint32_t k)
{
	uint32_t a = 4 * i + k;

	snprintf(out, n, "198.19.%u.%u", a >> 8, a & 0xff);
}

static char *
profile(void)
{
	size_t cap = 4u << 20, o = 0;
	char *t = malloc(cap);

	o += (size_t)snprintf(t + o, cap - o, "max_cms = 512\nmax_rules = 16384\n");
	for (int g = 1; g <= 6; g++)
		for (int r = 0; r < 16; r++)
			o += (size_t)snprintf(t + o, cap - o, "filter = %d %d permit proto=17 "
					      "dport=%d\n", g, r, 20000 + g * 16 + r);
	for (uint32_t i = 1; i <= N_CMS; i++) {
		uint8_t key[16], iv[16];
		char a[4][32], k[33], v[33];

		cb_key(i, 1, key, iv);
		for (int b = 0; b < 16; b++) {
			sprintf(k + 2 * b, "%02x", key[b]);
			sprintf(v + 2 * b, "%02x", iv[b]);
		}
		for (uint32_t c = 0; c < 4; c++)
			cpe_addr(a[c], sizeof(a[c]), i, c);
		o += (size_t)snprintf(t + o, cap - o, "cm = id=%u mac=02:00:00:01:%02x:%02x "
				      "cpe=%s,%s,%s,%s bg=%u fg=%u,%u said=%u sid=%u kseq=1 key=%s "
				      "iv=%s\n", i, i >> 8, i & 0xff, a[0], a[1], a[2], a[3], i % 2,
				      1 + i % 6, 1 + (i + 1) % 6, i, i, k, v);
		for (int s = 0; s < 4; s++)
			o += (size_t)snprintf(t + o, cap - o, "sf = %u %d rate=1G burst=262144 prio=%d\n", i, s,
					      2 * s);
		for (int c = 0; c < 16; c++)
			o += (size_t)snprintf(t + o, cap - o, "cls = %u %d sf=%d proto=17 "
					      "dport=%d\n", i, c, 1 + c % 3, 10000 + c);
	}
	return t;
}

static const char channels[] =
	"channel = 4 ofdm rate=100G session=0x1004\n"
	"channel = 5 ofdm rate=100G session=0x1005\n"
	"bonding_group = 3 1,4,5\n";

/* Flow f: CM 1 + f % 300, its CPE f / 300 % 4 (consecutive packets go to
 * different CMs, as 300 CMs' traffic mixes); 1 in 10 matches a
 * classifier, 1 in 10 a filter rule of one of the CM's groups, the rest
 * neither. */
static uint16_t
flow_frame(uint8_t *b, uint32_t f, uint16_t size)
{
	uint32_t cm = 1 + f % N_CMS;
	uint16_t dport;
	char a[32];

	if (f % 10 == 0)
		dport = (uint16_t)(10000 + (f / 10) % 16);
	else if (f % 10 == 1)
		dport = (uint16_t)(20000 + (1 + cm % 6) * 16 + f % 16);
	else
		dport = (uint16_t)(5000 + f % 1000);
	cpe_addr(a, sizeof(a), cm, f / N_CMS % 4);
	return cb_udp4(b, a, (uint16_t)(1024 + f % 4096), dport, (uint16_t)(size - 4),
		       (const uint8_t[]){ 0x02, 0, 0, 0x02, 0, 0x01 });
}

struct best { double stage[EP_MAX_STAGES]; };

static void
evict_range(const void *p, size_t len)
{
#ifdef RTE_ARCH_X86
	const uint8_t *c = (const uint8_t *)((uintptr_t)p & ~(uintptr_t)(RTE_CACHE_LINE_SIZE - 1));

	for (; c < (const uint8_t *)p + len; c += RTE_CACHE_LINE_SIZE)
		_mm_clflush(c);
	_mm_mfence();
#else
	(void)p;
	(void)len;
#endif
}

/* Every line from the mbuf's header to the end of its data out of the
 * caches (one mempool element: header, metadata, headroom, data). */
static void
evict(struct rte_mbuf *m)
{
	evict_range(m, (size_t)(rte_pktmbuf_mtod(m, const uint8_t *) + m->data_len -
				(const uint8_t *)m));
}

/* Every line of CM @p id's state, as EP_CYCLES_COLD=2 says. */
static void
evict_cm(struct cmts_ds *d, uint32_t id)
{
	const struct cmts_cm *cm = d->sg->cms[id];

	evict_range(cm, sizeof(*cm));
	if (cm->ds_key != NULL)
		evict_range(cm->ds_key, sizeof(*cm->ds_key));
	evict_range(&d->dyn[id], sizeof(d->dyn[id]));
	evict_range(&d->sfq[id * CMTS_MAX_SF], sizeof(d->sfq[0]) * CMTS_MAX_SF);
}

static void
report(const char *what, struct ep_worker *w, const struct best *b, double crypto_only)
{
	double total = 0;

	printf("    %s, cycles/packet by stage (min of %d trials):\n     ", what, TRIALS);
	for (int i = 0; i < w->n_stages; i++) {
		printf(" %s %.1f", w->stages[i].name, b->stage[i]);
		total += b->stage[i];
	}
	printf("\n      = %.1f (rx/tx not included)", total);
	if (crypto_only > 0)
		printf("; everything but crypto %.1f", total - crypto_only);
	printf("\n");
}

EP_TEST(downstream_cycles_default_profile)
{
	char *text = profile(), *full = malloc(strlen(text) + sizeof(channels) + 64);
	static const uint16_t sched[20] = { 84, 1280, 1280, 256, 1280, 1280, 1280, 84, 1280, 1280,
					    1280, 256, 1280, 1280, 84, 1280, 1280, 1280, 1280, 1280 };
	struct best b;
	struct cb *t;
	uint32_t f = 0;
	uint8_t frame[2048];
	int cold = getenv("EP_CYCLES_COLD") != NULL ? atoi(getenv("EP_CYCLES_COLD")) : 0;

	/* The 6 OFDM channels in 2 bonding groups of Intel's vCMTS reference
	 * benchmark configuration, at rates the
	 * scheduler never reaches (the run measures cost, not shaping):
	 * channels 0-2 of the bed are group 0, 1 and 4-5 group 3. */
	sprintf(full, "%s%s", channels, text);
	for (char *p = strstr(full, " bg=1 "); p != NULL; p = strstr(p + 1, " bg=1 "))
		p[4] = '3';
	t = cb_new(full);
	/* The bed's channels 0-2 are 1.89G: run them at 100G too (the
	 * worker's copy of the rate). */
	for (int i = 0; i < 3; i++)
		((struct cmts_ds *)t->ds->pipeline_ctx)->ch[i].cyc_per_kb =
			rte_get_tsc_hz() * 8 * 1024 / 100000000000ull;
	for (int i = 0; i < EP_MAX_STAGES; i++)
		b.stage[i] = 1e18;
	for (int trial = 0; trial < TRIALS; trial++) {
		uint64_t pkts = 0, out_pkts = 0;

		for (int r = 0; r < ROUNDS; r++) {
			struct rte_mbuf *in[BURST], *out[64];
			uint16_t k;

			for (int i = 0; i < BURST; i++, f++) {
				uint16_t len = flow_frame(frame, f % (4 * N_CMS), sched[f % 20]);

				in[i] = ep_test_mbuf(frame, len);
			}
			for (int i = 0; cold && i < BURST; i++)
				evict(in[i]);
			for (int i = 0; cold >= 2 && i < BURST; i++)
				evict_cm(t->ds->pipeline_ctx, 1 + (f - BURST + i) % (4 * N_CMS) % N_CMS);
			ep_worker_run_burst(t->ds, in, BURST);
			ep_worker_flush_tx(t->ds);
			pkts += BURST;
			while ((k = cb_sent(t, CB_RPD, out, 64)) != 0) {
				out_pkts += k;
				rte_pktmbuf_free_bulk(out, k);
			}
		}
		EP_CHECK(out_pkts != 0);
		for (int i = 0; i < t->ds->n_stages; i++) {
			struct ep_stage_stats *s = &t->ds->stages[i].stats;

			if (trial != 0)
				b.stage[i] = RTE_MIN(b.stage[i], (double)s->cycles / (double)pkts);
			memset(s, 0, sizeof(*s));
		}
	}
	for (int i = 0; i < t->ds->n_stages; i++)
		EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_FILTER_DENY) +
			    cb_drops(t->ds, EP_DROP_CMTS_UNKNOWN_CPE), 0);
	report(cold >= 2 ? "downstream, 300 CMs, iMix 15/10/75, frames and CM state cold" :
	       cold ? "downstream, 300 CMs, iMix 15/10/75, frames cold" :
		      "downstream, 300 CMs, iMix 15/10/75", t->ds, &b, b.stage[7]);
	free(text);
	free(full);
	cb_free(t);
}
