/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BPI+ through rte_cryptodev: one crypto_aesni_mb device per process, one
 * queue pair per vCMTS worker, one rte_security DOCSIS session per TEK and
 * direction, one pool of operations per worker.
 *
 * Why the rte_security DOCSIS protocol and not AES-DOCSISBPI plus
 * rte_net_crc: the protocol operation does the Ethernet CRC-32 and the
 * AES-128 CBC (with DOCSIS residual-block termination) in one pass over the
 * frame inside intel-ipsec-mb, where the two-step version reads the frame
 * twice.  Measured on this machine's EPYC (test_cmts_crypto prints it;
 * docs/cmts.md has the table), cycles per frame, bursts of 32, hugepages:
 *
 *   frame      rte_security DOCSIS    AES-DOCSISBPI + rte_net_crc
 *   84 B       ~147                   ~149 (AVX-512 CRC) .. same with SSE4.2
 *   256 B      ~228                   ~216 (AVX-512) .. ~298 (SSE4.2)
 *   1280 B     ~376                   ~463 (AVX-512) .. ~688 (SSE4.2)
 *
 * (rte_net_crc's AVX-512 path needs --force-max-simd-bitwidth=512; the
 * downstream iMix is 75 % 1280-byte frames.)
 *
 * Why a burst is enqueued whole and the stage takes whatever completed,
 * instead of waiting for its own burst: intel-ipsec-mb is a multi-buffer
 * library.  It runs up to 16 frames in parallel lanes and hands a job back
 * only when enough lanes are busy; waiting for the burst's last frame
 * forces a flush of half-empty lanes.  Measured here: 241 vs 147 cycles per
 * 84-byte frame, 469 vs 376 per 1280-byte frame -- ~90 cycles a frame, a
 * quarter of the whole budget.  dpdk-test-crypto-perf measures the
 * pipelined way.  So the crypto stage keeps up to one lane-set of frames in
 * the device between bursts (in order: ipsec-mb completes jobs in
 * submission order) and the worker's service hook flushes them when no new
 * traffic comes.  Keys used by operations in flight outlive their record:
 * cmts_cm.c waits until every downstream worker dequeued past the point
 * the old key was unpublished before destroying it.
 *
 * Memory: the device reads each frame once per lane step; with 4 KiB pages
 * (--no-huge) and 2.3 KiB mbuf strides, 16 lanes walking 16 frames cost
 * page walks that made the same operations 2x slower here.  Benchmarks run
 * on hugepages.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <string.h>

#include <rte_cryptodev.h>
#include <rte_dev.h>
#include <rte_malloc.h>
#include <rte_security.h>

#include "cmts.h"
#include "cmts_worker.h"

#define CMTS_QP_DESC        2048
#define CMTS_OPS_PER_WORKER 1024    /* burst in flight + one in the stage + flushes */
#define CMTS_IV_OFF (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))

static int
session_create(struct cmts *c, void **out, enum rte_security_docsis_direction dir,
	       const uint8_t *key)
{
	struct rte_crypto_sym_xform x = {
		.type = RTE_CRYPTO_SYM_XFORM_CIPHER,
		.cipher = {
			.op = dir == RTE_SECURITY_DOCSIS_DOWNLINK ? RTE_CRYPTO_CIPHER_OP_ENCRYPT :
				RTE_CRYPTO_CIPHER_OP_DECRYPT,
			.algo = RTE_CRYPTO_CIPHER_AES_DOCSISBPI,
			.key = { .data = key, .length = 16 },
			.iv = { .offset = CMTS_IV_OFF, .length = 16 },
		},
	};
	struct rte_security_session_conf conf = {
		.action_type = RTE_SECURITY_ACTION_TYPE_LOOKASIDE_PROTOCOL,
		.protocol = RTE_SECURITY_PROTOCOL_DOCSIS,
		.docsis = { .direction = dir },
		.crypto_xform = &x,
	};

	*out = rte_security_session_create(c->sec_ctx, &conf, c->sess_pool);
	return *out == NULL ? -1 : 0;
}

int
cmts_crypto_init(struct cmts *c, struct ep_cfg *cfg, uint16_t n_qp, struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(cfg, "cmts", "");
	const char *dev = "crypto_aesni_mb_cmts";
	struct rte_cryptodev_info info;
	uint64_t sessions = 16384;
	uint32_t ssz, secsz;
	char args[160];
	static const uint8_t zero[16];
	int id;

	if (s != NULL) {
		dev = ep_cfg_str(cfg, s, "cryptodev", dev, err);
		if (ep_cfg_u64(cfg, s, "crypto_sessions", sessions, 64, 1u << 22, &sessions,
			       err) < 0)
			return -1;
	}
	id = rte_cryptodev_get_dev_id(dev);
	if (id < 0) {
		/* Not given on the EAL command line: create it with enough
		 * queue pairs for every vCMTS worker. */
		snprintf(args, sizeof(args), "%s,max_nb_queue_pairs=%u", dev, RTE_MAX(n_qp, 1));
		if (strncmp(dev, "crypto_aesni_mb", 15) != 0 || rte_dev_probe(args) != 0)
			return ep_err_set(err, "cmts: crypto device '%s' not found and cannot be "
					  "created (a crypto_aesni_mb vdev name is expected)", dev);
		id = rte_cryptodev_get_dev_id(dev);
		if (id < 0)
			return ep_err_set(err, "cmts: crypto device '%s' did not appear", dev);
		c->cdev_created = true;
	}
	c->cdev = (uint8_t)id;
	rte_cryptodev_info_get(c->cdev, &info);
	if (info.max_nb_queue_pairs < n_qp)
		return ep_err_set(err, "cmts: %s has %u queue pairs, %u vCMTS workers need one each",
				  dev, info.max_nb_queue_pairs, n_qp);
	c->sec_ctx = rte_cryptodev_get_sec_ctx(c->cdev);
	if (c->sec_ctx == NULL ||
	    !(info.feature_flags & RTE_CRYPTODEV_FF_SECURITY))
		return ep_err_set(err, "cmts: %s offers no rte_security DOCSIS protocol "
				  "(crypto_aesni_mb does)", dev);
	ssz = rte_cryptodev_sym_get_private_session_size(c->cdev);
	secsz = rte_security_session_get_size(c->sec_ctx);
	c->sess_pool = rte_cryptodev_sym_session_pool_create("cmts_sess", (uint32_t)sessions,
		RTE_MAX(ssz, secsz), 0, 0, SOCKET_ID_ANY);
	if (c->sess_pool == NULL)
		return ep_err_set(err, "cmts: no memory for %" PRIu64 " crypto sessions", sessions);
	if (rte_cryptodev_configure(c->cdev, &(struct rte_cryptodev_config){
			.socket_id = SOCKET_ID_ANY, .nb_queue_pairs = RTE_MAX(n_qp, 1),
			.ff_disable = RTE_CRYPTODEV_FF_ASYMMETRIC_CRYPTO }) != 0)
		return ep_err_set(err, "cmts: rte_cryptodev_configure(%s) failed", dev);
	for (uint16_t q = 0; q < RTE_MAX(n_qp, 1); q++)
		if (rte_cryptodev_queue_pair_setup(c->cdev, q, &(struct rte_cryptodev_qp_conf){
				.nb_descriptors = CMTS_QP_DESC, .mp_session = c->sess_pool },
				SOCKET_ID_ANY) != 0)
			return ep_err_set(err, "cmts: queue pair %u of %s failed", q, dev);
	if (rte_cryptodev_start(c->cdev) != 0)
		return ep_err_set(err, "cmts: rte_cryptodev_start(%s) failed", dev);
	c->cdev_up = true;
	c->n_qp = RTE_MAX(n_qp, 1);
	/* CMs without BPI still get the CRC: a DOCSIS operation with cipher
	 * length 0 computes only the CRC. */
	if (session_create(c, &c->crc_only_ds, RTE_SECURITY_DOCSIS_DOWNLINK, zero) < 0)
		return ep_err_set(err, "cmts: cannot create the CRC-only DOCSIS session");
	return 0;
}

void
cmts_crypto_fini(struct cmts *c)
{
	if (c->crc_only_ds != NULL)
		rte_security_session_destroy(c->sec_ctx, c->crc_only_ds);
	c->crc_only_ds = NULL;
	if (c->cdev_up) {
		rte_cryptodev_stop(c->cdev);
		c->cdev_up = false;
	}
	if (c->cdev_created) {
		/* We made it: take it away, so a later setup in the same
		 * process (tests) starts from nothing. */
		struct rte_cryptodev_info info;

		rte_cryptodev_info_get(c->cdev, &info);
		rte_cryptodev_close(c->cdev);
		if (info.device != NULL)
			rte_dev_remove(info.device);
		c->cdev_created = false;
	}
	rte_mempool_free(c->sess_pool);
	c->sess_pool = NULL;
}

int
cmts_key_sessions(struct cmts *c, struct cmts_key *k, struct ep_err *err)
{
	if (session_create(c, &k->sess_ds, RTE_SECURITY_DOCSIS_DOWNLINK, k->key) < 0 ||
	    session_create(c, &k->sess_us, RTE_SECURITY_DOCSIS_UPLINK, k->key) < 0) {
		cmts_key_destroy(c, k);
		return ep_err_set(err, "out of crypto sessions (crypto_sessions in [cmts])");
	}
	return 0;
}

/* Destroys the sessions; the caller frees the key object. */
void
cmts_key_destroy(struct cmts *c, struct cmts_key *k)
{
	if (k->sess_ds != NULL)
		rte_security_session_destroy(c->sec_ctx, k->sess_ds);
	if (k->sess_us != NULL)
		rte_security_session_destroy(c->sec_ctx, k->sess_us);
	k->sess_ds = k->sess_us = NULL;
}

int
cmts_crypto_worker_init(struct cmts *c, struct rte_mempool **pool,
			struct rte_crypto_op ***free_ops, uint32_t *n_free, uint16_t *qp,
			const char *name, int socket, struct ep_err *err)
{
	if (c->next_qp >= c->n_qp)
		return ep_err_set(err, "cmts: no crypto queue pair left for worker %s", name);
	*pool = rte_crypto_op_pool_create(name, RTE_CRYPTO_OP_TYPE_SYMMETRIC,
					  CMTS_OPS_PER_WORKER, 0, 16, socket);
	*free_ops = rte_malloc_socket("cmts_ops", sizeof(**free_ops) * CMTS_OPS_PER_WORKER, 0,
				      socket);
	if (*pool == NULL || *free_ops == NULL ||
	    rte_crypto_op_bulk_alloc(*pool, RTE_CRYPTO_OP_TYPE_SYMMETRIC, *free_ops,
				     CMTS_OPS_PER_WORKER) != CMTS_OPS_PER_WORKER) {
		rte_free(*free_ops);
		rte_mempool_free(*pool);
		*free_ops = NULL;
		*pool = NULL;
		return ep_err_set(err, "cmts: out of memory for crypto operations (%s)", name);
	}
	*n_free = CMTS_OPS_PER_WORKER;
	*qp = c->next_qp++;
	return 0;
}

void
cmts_crypto_worker_fini(struct rte_mempool *pool, struct rte_crypto_op **free_ops,
			uint32_t n_free)
{
	/* Operations still in a queue pair at shutdown go with the pool. */
	if (free_ops != NULL && n_free != 0)
		rte_mempool_put_bulk(pool, (void **)free_ops, n_free);
	rte_free(free_ops);
	rte_mempool_free(pool);
}

int
cmts_crypto_once(struct cmts *c, uint16_t qp, struct rte_mempool *ops, struct rte_mempool *mbufs,
		 void *sess, const uint8_t iv[16], uint8_t *buf, uint32_t len,
		 const struct cmts_crypto_range *r)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mbufs);
	struct rte_crypto_op *op = rte_crypto_op_alloc(ops, RTE_CRYPTO_OP_TYPE_SYMMETRIC), *d = NULL;
	uint64_t spins = 0;
	int rc = -1;

	if (m == NULL || op == NULL || len > rte_pktmbuf_tailroom(m))
		goto out;
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), buf, len);
	op->sess_type = RTE_CRYPTO_OP_SECURITY_SESSION;
	op->sym->session = sess;
	op->sym->m_src = m;
	memcpy(rte_crypto_op_ctod_offset(op, uint8_t *, CMTS_IV_OFF), iv, 16);
	op->sym->auth.data.offset = r->crc_off;
	op->sym->auth.data.length = r->crc_len;
	op->sym->cipher.data.offset = r->cipher_off;
	op->sym->cipher.data.length = r->cipher_len;
	if (rte_cryptodev_enqueue_burst(c->cdev, qp, &op, 1) != 1)
		goto out;
	/* aesni_mb flushes its lanes when a dequeue finds nothing done: the
	 * operation comes back on the first or second call. */
	while (rte_cryptodev_dequeue_burst(c->cdev, qp, &d, 1) == 0 && ++spins < 100000000)
		;
	if (d == NULL)
		goto out;       /* the operation stays with the device: do not free it */
	if (d->status == RTE_CRYPTO_OP_STATUS_SUCCESS) {
		memcpy(buf, rte_pktmbuf_mtod(m, uint8_t *), len);
		rc = 0;
	}
	rte_crypto_op_free(op);
	rte_pktmbuf_free(m);
	return rc;
out:
	rte_pktmbuf_free(m);
	rte_crypto_op_free(op);
	return -1;
}
