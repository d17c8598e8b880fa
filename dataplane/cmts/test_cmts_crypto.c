/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BPI+ through the vCMTS's own sessions (cmts_key_sessions) against DPDK's
 * DOCSIS security test vectors, read as data from
 * app/test/test_cryptodev_security_docsis_test_vectors.h in Debian's source
 * package of the installed DPDK, which scripts/peers/crypto_perf.sh unpacks
 * under build/peers/dpdk-src (or $EP_DPDK_SRC).  Every AES-128 case is run
 * both ways: downlink (CRC generate, then encrypt) must turn the plaintext
 * into the ciphertext, uplink (decrypt, then CRC verify) the ciphertext
 * into the plaintext with the CRC verified.  Without the source tree the
 * case says so and is skipped.
 *
 * Also printed, never asserted: what the two ways of doing BPI+ cost here
 * (cmts_crypto.c and docs/cmts.md quote it).
 */
#include "test_cmts.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_cryptodev.h>
#include <rte_cycles.h>
#include <rte_net_crc.h>
#include <rte_security.h>

#define IV_OFF (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))
#define VEC_FILE "app/test/test_cryptodev_security_docsis_test_vectors.h"

struct vec_buf {
	uint8_t data[1024];
	unsigned int len, cipher_offset, crc_offset;
	bool no_cipher, no_crc;
};

struct vec {
	int no;
	uint8_t key[32], iv[16];
	unsigned int key_len;
	struct vec_buf pt, ct;
};

/* ---- reading the vectors as data ---- */

static char *
slurp(void)
{
	char path[2 * PATH_MAX], exe[PATH_MAX], *dir, *text = NULL;
	const char *env = getenv("EP_DPDK_SRC");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = NULL;
	long sz;

	if (env != NULL) {
		snprintf(path, sizeof(path), "%s/" VEC_FILE, env);
		f = fopen(path, "r");
	}
	if (f == NULL && n > 0) {
		/* build/dp/test_cmts_crypto -> build/peers/dpdk-src */
		exe[n] = '\0';
		dir = strrchr(exe, '/');
		if (dir != NULL) {
			*dir = '\0';
			snprintf(path, sizeof(path), "%s/../peers/dpdk-src/" VEC_FILE, exe);
			f = fopen(path, "r");
		}
	}
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = malloc((size_t)sz + 1);
	if (fread(text, 1, (size_t)sz, f) != (size_t)sz) {
		free(text);
		text = NULL;
	} else {
		text[sz] = '\0';
	}
	fclose(f);
	return text;
}

/* The bytes of the "{ ... }" at @p p (C comments skipped); the end. */
static const char *
bytes(const char *p, uint8_t *out, unsigned int max, unsigned int *n)
{
	*n = 0;
	p = strchr(p, '{');
	if (p == NULL)
		return NULL;
	for (p++; *p != '\0' && *p != '}';) {
		if (p[0] == '/' && p[1] == '*') {
			p = strstr(p + 2, "*/");
			if (p == NULL)
				return NULL;
			p += 2;
		} else if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
			char *end;
			unsigned long v = strtoul(p, &end, 16);

			if (*n < max)
				out[(*n)++] = (uint8_t)v;
			p = end;
		} else {
			p++;
		}
	}
	return *p == '}' ? p + 1 : NULL;
}

static unsigned int
uint_field(const char *from, const char *to, const char *name)
{
	const char *p = strstr(from, name);

	return p != NULL && p < to ? (unsigned int)strtoul(p + strlen(name), NULL, 0) : 0;
}

static bool
bool_field(const char *from, const char *to, const char *name)
{
	const char *p = strstr(from, name);

	return p != NULL && p < to && strncmp(p + strlen(name), "true", 4) == 0;
}

static int
buf_field(const char *from, const char *to, const char *name, struct vec_buf *b)
{
	const char *p = strstr(from, name), *end;
	unsigned int n;

	if (p == NULL || p > to)
		return -1;
	end = bytes(strstr(p, ".data"), b->data, sizeof(b->data), &n);
	if (end == NULL)
		return -1;
	b->len = uint_field(end, to, ".len = ");
	b->cipher_offset = uint_field(end, to, ".cipher_offset = ");
	b->crc_offset = uint_field(end, to, ".crc_offset = ");
	b->no_cipher = bool_field(end, to, ".no_cipher = ");
	b->no_crc = bool_field(end, to, ".no_crc = ");
	return b->len == n ? 0 : -1;
}

/* All cases of the file; their number. */
static int
vectors(struct vec *v, int max)
{
	char *text = slurp(), *p;
	int n = 0;

	if (text == NULL)
		return -1;
	for (p = strstr(text, "docsis_test_case_"); p != NULL && n < max;) {
		char *next = strstr(p + 1, "const struct docsis_test_data"), *to;
		const char *k;
		unsigned int len;

		to = next != NULL ? next : p + strlen(p);
		memset(&v[n], 0, sizeof(v[n]));
		v[n].no = atoi(p + strlen("docsis_test_case_"));
		k = strstr(p, ".key");
		if (k == NULL || k > to || bytes(strstr(k, ".data"), v[n].key, 32, &v[n].key_len) == NULL)
			break;
		k = strstr(p, ".iv");
		if (k == NULL || k > to || bytes(strstr(k, ".data"), v[n].iv, 16, &len) == NULL ||
		    len != 16)
			break;
		if (buf_field(p, to, ".plaintext", &v[n].pt) < 0 ||
		    buf_field(p, to, ".ciphertext", &v[n].ct) < 0)
			break;
		n++;
		p = next != NULL ? strstr(next, "docsis_test_case_") : NULL;
	}
	free(text);
	return n;
}

/* ---- one operation, set up as the pipeline's stages do ---- */

static int
run(struct cb *t, void *sess, const struct cmts_key *k, const struct vec_buf *in, uint8_t *out)
{
	struct cmts_crypto_range r = {
		in->crc_offset, in->no_crc ? 0 : in->len - in->crc_offset - 4,
		in->cipher_offset, in->no_cipher ? 0 : in->len - in->cipher_offset,
	};

	memcpy(out, in->data, in->len);
	return cmts_crypto_once(t->c, t->qp, t->op_pool, ep_test_pool(), sess, k->iv, out, in->len,
				&r);
}

EP_TEST(dpdk_docsis_vectors_through_our_sessions)
{
	static struct vec v[64];
	struct cb *t;
	int n = vectors(v, 64), done = 0;

	if (n < 0) {
		printf("    SKIP: DPDK's source tree is not unpacked (scripts/peers/crypto_perf.sh "
		       "fetches it to build/peers/dpdk-src; or set EP_DPDK_SRC)\n");
		return;
	}
	EP_CHECK(n >= 20);
	t = cb_new("");
	for (int i = 0; i < n; i++) {
		struct cmts_key k = { 0 };
		uint8_t out[1024];
		struct ep_err err;

		/* The vCMTS keys are AES-128 (DOCSIS 3.0/3.1). */
		if (v[i].key_len != 16)
			continue;
		memcpy(k.key, v[i].key, 16);
		memcpy(k.iv, v[i].iv, 16);
		if (cmts_key_sessions(t->c, &k, &err) < 0) {
			EP_CHECK(0);
			break;
		}
		EP_CHECK_EQ(run(t, k.sess_ds, &k, &v[i].pt, out), 0);
		if (memcmp(out, v[i].ct.data, v[i].ct.len) != 0) {
			printf("    case %d downlink differs\n", v[i].no);
			EP_CHECK_MEM(out, v[i].ct.data, v[i].ct.len);
		}
		/* The plaintext vectors carry a placeholder where the CRC goes:
		 * the uplink checks the CRC (status) and yields the frame. */
		EP_CHECK_EQ(run(t, k.sess_us, &k, &v[i].ct, out), 0);
		if (memcmp(out, v[i].pt.data, v[i].pt.len - (v[i].ct.no_crc ? 0 : 4)) != 0) {
			printf("    case %d uplink differs\n", v[i].no);
			EP_CHECK_MEM(out, v[i].pt.data, v[i].pt.len - (v[i].ct.no_crc ? 0 : 4));
		}
		cmts_key_destroy(t->c, &k);
		done++;
	}
	printf("    %d of %d DPDK DOCSIS cases are AES-128: all ran both ways\n", done, n);
	EP_CHECK(done >= 10);
	cb_free(t);
}

EP_TEST(uplink_crc_mismatch_is_reported)
{
	static struct vec v[64];
	struct cb *t;
	int n = vectors(v, 64);

	if (n < 0) {
		printf("    SKIP: DPDK's source tree is not unpacked\n");
		return;
	}
	t = cb_new("");
	for (int i = 0; i < n; i++) {
		struct cmts_key k = { 0 };
		uint8_t out[1024];
		struct ep_err err;

		if (v[i].key_len != 16 || v[i].ct.no_crc || v[i].ct.len < 30)
			continue;
		memcpy(k.key, v[i].key, 16);
		memcpy(k.iv, v[i].iv, 16);
		cmts_key_sessions(t->c, &k, &err);
		v[i].ct.data[v[i].ct.len - 2] ^= 0x01;   /* in the encrypted CRC */
		EP_CHECK_EQ(run(t, k.sess_us, &k, &v[i].ct, out), -1);
		cmts_key_destroy(t->c, &k);
		break;
	}
	cb_free(t);
}

/* ---- the cost of the two ways (printed) ---- */

#define NB 256
#define HDR 17

/*
 * One timed trial of @p n operations in bursts of 32, enqueued whole and
 * dequeued at once as the crypto stage does, @p prep run on each burst
 * first; cycles per operation.
 */
typedef void burst_prep_fn(struct rte_crypto_op **ops, int b, const void *arg);

static double
timed_trial(struct cb *t, struct rte_crypto_op **ops, int n, burst_prep_fn *prep, const void *arg)
{
	struct rte_crypto_op *deq[64];
	uint64_t t0 = rte_rdtsc();
	int done = 0;

	for (int b = 0; b < n; b += 32) {
		if (prep != NULL)
			prep(ops, b, arg);
		rte_cryptodev_enqueue_burst(t->c->cdev, t->qp, ops + b, 32);
		done += rte_cryptodev_dequeue_burst(t->c->cdev, t->qp, deq, 32);
	}
	while (done < n)
		done += rte_cryptodev_dequeue_burst(t->c->cdev, t->qp, deq, 64);
	return (double)(rte_rdtsc() - t0) / n;
}

/* The two-step way's CRC pass over a burst (the frame length is the
 * operation's cipher length + 12). */
static void
crc_prep(struct rte_crypto_op **ops, int b, const void *arg __rte_unused)
{
	for (int i = b; i < b + 32; i++) {
		uint8_t *p = rte_pktmbuf_mtod(ops[i]->sym->m_src, uint8_t *);
		uint32_t fl = ops[i]->sym->cipher.data.length + 12u;
		uint32_t c = rte_net_crc_calc(p + HDR, fl - 4u, RTE_NET_CRC32_ETH);

		memcpy(p + HDR + fl - 4, &c, 4);
	}
}

static double
measure(struct cb *t, void *sess, bool two_step, uint16_t fl, struct rte_mbuf **m,
	struct rte_crypto_op **ops)
{
	double best = 1e18;

	for (int i = 0; i < NB; i++) {
		struct rte_crypto_sym_op *s = ops[i]->sym;

		s->m_src = m[i];
		s->session = sess;
		ops[i]->sess_type = two_step ? RTE_CRYPTO_OP_WITH_SESSION :
					       RTE_CRYPTO_OP_SECURITY_SESSION;
		s->auth.data.offset = HDR;
		s->auth.data.length = two_step ? 0 : fl - 4;
		s->cipher.data.offset = HDR + 12;
		s->cipher.data.length = fl - 12;
	}
	for (int trial = 0; trial < 30; trial++)
		best = RTE_MIN(best, timed_trial(t, ops, NB, two_step ? crc_prep : NULL, NULL));
	return best;
}

EP_TEST(crypto_cost_one_pass_vs_two_steps)
{
	struct cb *t = cb_new("");
	struct rte_mempool *opp = rte_crypto_op_pool_create("cc_ops", RTE_CRYPTO_OP_TYPE_SYMMETRIC,
							    NB, 0, 16, SOCKET_ID_ANY);
	struct rte_crypto_op *ops[NB];
	struct rte_mbuf *m[NB];
	struct cmts_key k = { .key = { 1, 2, 3 } };
	struct rte_crypto_sym_xform x = { .type = RTE_CRYPTO_SYM_XFORM_CIPHER,
		.cipher = { .op = RTE_CRYPTO_CIPHER_OP_ENCRYPT, .algo = RTE_CRYPTO_CIPHER_AES_DOCSISBPI,
			    .key = { k.key, 16 }, .iv = { IV_OFF, 16 } } };
	void *cipher_only;
	struct ep_err err;
	static const uint16_t sizes[] = { 84, 256, 1280 };

	cmts_key_sessions(t->c, &k, &err);
	cipher_only = rte_cryptodev_sym_session_create(t->c->cdev, &x, t->c->sess_pool);
	rte_crypto_op_bulk_alloc(opp, RTE_CRYPTO_OP_TYPE_SYMMETRIC, ops, NB);
	for (int i = 0; i < NB; i++)
		m[i] = rte_pktmbuf_alloc(ep_test_pool());
	printf("    BPI+ downlink, cycles per frame (min of 30 x %d frames, bursts of 32, %s; "
	       "EP_TEST_HUGE=1 for hugepages, see cmts_crypto.c):\n", NB,
	       getenv("EP_TEST_HUGE") ? "hugepages" : "4 KiB pages");
	for (size_t s = 0; s < RTE_DIM(sizes); s++) {
		for (int i = 0; i < NB; i++) {
			rte_pktmbuf_reset(m[i]);
			memset(rte_pktmbuf_append(m[i], (uint16_t)(HDR + sizes[s])), i, HDR + sizes[s]);
		}
		printf("      %4u B: rte_security DOCSIS %.0f, AES-DOCSISBPI + rte_net_crc %.0f\n",
		       sizes[s], measure(t, k.sess_ds, false, sizes[s], m, ops),
		       measure(t, cipher_only, true, sizes[s], m, ops));
	}
	rte_pktmbuf_free_bulk(m, NB);
	rte_mempool_put_bulk(opp, (void **)ops, NB);
	rte_cryptodev_sym_session_free(t->c->cdev, cipher_only);
	cmts_key_destroy(t->c, &k);
	rte_mempool_free(opp);
	cb_free(t);
}

/*
 * The downstream's crypto alone at the benchmark's mix, beside
 * dpdk-test-crypto-perf's figure (docs/benchmarks/cmts-history.md, "The
 * crypto and table stages round"): the iMix (15 % 84 B, 10 % 256 B,
 * 75 % 1280 B, a 20-frame schedule, 17-byte header) with the crypto
 * stage's per-frame operation set-up, through one session (as
 * crypto-perf) and through 300, one per CM in turn (as the benchmark's
 * 300 CMs).  Printed, never asserted.
 */
#define N_CM_KEYS 300
#define NBI 1024

static uint16_t
imix_len(int i)
{
	int k = i % 20;

	return k < 3 ? 84 : k < 5 ? 256 : 1280;
}

/* The crypto stage's per-frame operation set-up (m_src is set once): frame i with key
 * i % n_keys (struct imix_keys). */
struct imix_keys {
	const struct cmts_key *k;
	int n;
};

static void
stage_prep(struct rte_crypto_op **ops, int b, const void *arg)
{
	const struct imix_keys *ks = arg;

	for (int i = b; i < b + 32; i++) {
		struct rte_crypto_sym_op *s = ops[i]->sym;
		const struct cmts_key *k = &ks->k[i % ks->n];
		uint16_t fl = imix_len(i);

		ops[i]->status = RTE_CRYPTO_OP_STATUS_NOT_PROCESSED;
		ops[i]->sess_type = RTE_CRYPTO_OP_SECURITY_SESSION;
		s->m_dst = NULL;
		s->session = k->sess_ds;
		memcpy(rte_crypto_op_ctod_offset(ops[i], uint8_t *, IV_OFF), k->iv, 16);
		s->auth.data.offset = HDR;
		s->auth.data.length = fl - 4u;
		s->cipher.data.offset = HDR + 12;
		s->cipher.data.length = fl - 12u;
	}
}

static double
measure_imix(struct cb *t, const struct cmts_key *keys, int n_keys, struct rte_crypto_op **ops)
{
	struct imix_keys ks = { keys, n_keys };
	double best = 1e18;

	for (int trial = 0; trial < 30; trial++)
		best = RTE_MIN(best, timed_trial(t, ops, NBI, stage_prep, &ks));
	return best;
}

EP_TEST(crypto_cost_imix_one_session_vs_one_per_cm)
{
	struct cb *t = cb_new("");
	struct rte_mempool *opp = rte_crypto_op_pool_create("cc_ops_imix",
							    RTE_CRYPTO_OP_TYPE_SYMMETRIC, NBI, 0, 16,
							    SOCKET_ID_ANY);
	static struct cmts_key keys[N_CM_KEYS];
	struct rte_crypto_op *ops[NBI];
	struct rte_mbuf *m[NBI];
	struct ep_err err;
	int made = 0;

	EP_CHECK(opp != NULL);
	EP_CHECK_EQ(rte_crypto_op_bulk_alloc(opp, RTE_CRYPTO_OP_TYPE_SYMMETRIC, ops, NBI), NBI);
	for (int i = 0; i < N_CM_KEYS; i++) {
		memset(&keys[i], 0, sizeof(keys[i]));
		for (int b = 0; b < 16; b++) {
			keys[i].key[b] = (uint8_t)(i * 31 + b);
			keys[i].iv[b] = (uint8_t)(i * 17 + b);
		}
		if (cmts_key_sessions(t->c, &keys[i], &err) == 0)
			made++;
	}
	EP_CHECK_EQ(made, N_CM_KEYS);
	for (int i = 0; i < NBI; i++) {
		m[i] = rte_pktmbuf_alloc(ep_test_pool());
		memset(rte_pktmbuf_append(m[i], (uint16_t)(HDR + imix_len(i))), i, HDR + imix_len(i));
		ops[i]->sym->m_src = m[i];
	}
	printf("    BPI+ downlink at the iMix, cycles per frame with the crypto stage's operation "
	       "set-up (min of 30 x %d frames, bursts of 32, %s): one session %.0f, %d sessions "
	       "in turn %.0f\n", NBI, getenv("EP_TEST_HUGE") ? "hugepages" : "4 KiB pages",
	       measure_imix(t, keys, 1, ops), N_CM_KEYS,
	       measure_imix(t, keys, N_CM_KEYS, ops));
	rte_pktmbuf_free_bulk(m, NBI);
	rte_mempool_put_bulk(opp, (void **)ops, NBI);
	for (int i = 0; i < N_CM_KEYS; i++)
		cmts_key_destroy(t->c, &keys[i]);
	rte_mempool_free(opp);
	cb_free(t);
}
