/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the vCMTS upstream from the wire to the extracted DOCSIS
 * frames -- UEPI verification, PSP decapsulation, segment reassembly
 * across packets and frame extraction with the HCS check (the cmts-us
 * stages uepi_verify .. extract, called as the worker calls them).
 *
 * The input is a sequence of UEPI packets: [length (2 bytes, big endian)]
 * [L2TPv3 session + sub-layer + PSP table + segments], up to 16 of them,
 * delivered as bursts of up to 4; the harness puts a valid Ethernet and
 * IPv4 header (protocol 115, to the CMTS address) in front of each, so the
 * fuzzer spends its time behind the IP checksum.  Upstream channel 0 has
 * session 0x2000 and channel 1 0x2001.  Each packet's bytes sit in a
 * malloc()ed buffer of exactly their size (an mbuf with an external
 * buffer), so a read past a packet is an ASAN report.  Checks: every frame
 * the stages list lies inside its mbuf's data, and its header inside the
 * frame.  Partial frames kept by the reassembly are carried to the next
 * burst, as on a live channel, and freed at the end.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "ep_depi.h"
#include "ep_docsis.h"
#include "cmts.h"
#include "cmts_worker.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cmts_sg sg;
static struct cmts_us us;
static struct ep_worker w;
static struct ep_stage st[8];
static struct rte_mempool *pool, *frames;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *eal[] = { "fuzz_cmts_us", "--no-huge", "-m", "128", "--no-shconf", "--no-pci",
			"--no-telemetry", "-l", "0", "--log-level", "*:error", NULL };

	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		abort();
	pool = rte_pktmbuf_pool_create("fz_pkts", 255, 0, EP_META_SIZE, 0, SOCKET_ID_ANY);
	frames = rte_pktmbuf_pool_create("fz_frames", 1023, 0, EP_META_SIZE,
					 RTE_PKTMBUF_HEADROOM + EP_DOCSIS_HDR_MAX + EP_DOCSIS_PDU_MAX,
					 SOCKET_ID_ANY);
	us.fr = rte_malloc(NULL, sizeof(us.fr[0]) * CMTS_US_MAX_FRAMES, 0);
	if (pool == NULL || frames == NULL || us.fr == NULL)
		abort();
	sg.cmts_ip = rte_cpu_to_be_32(UINT32_C(0xc6120a01)); /* 198.18.10.1 */
	us.sg = &sg;
	us.w = &w;
	us.pool = frames;
	for (int c = 0; c < 2; c++) {
		us.ch[c].in_use = true;
		us.ch[c].session = 0x2000u + (uint32_t)c;
	}
	for (int i = 0; i < 8; i++)
		us.stage[i] = &st[i];
	return 0;
}

/* The packet's bytes and its shared-info block go together. */
static void
ext_free(void *addr, void *opaque)
{
	free(addr);
	free(opaque);
}

/* A packet whose bytes are a malloc()ed buffer of exactly their size. */
static struct rte_mbuf *
packet(const uint8_t *l2tp, uint16_t len)
{
	uint16_t total = (uint16_t)(14 + 20 + len);
	uint8_t *b = malloc(total);
	struct rte_mbuf_ext_shared_info *sh = malloc(sizeof(*sh));
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(b + 14);

	memset(b, 0, 14);
	b[12] = 0x08;
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + len));
	ip->time_to_live = 64;
	ip->next_proto_id = EP_IPPROTO_L2TP;
	ip->src_addr = rte_cpu_to_be_32(UINT32_C(0xc6120a02)); /* 198.18.10.2 */
	ip->dst_addr = sg.cmts_ip;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	memcpy(b + 34, l2tp, len);
	sh->free_cb = ext_free;
	sh->fcb_opaque = sh;
	rte_mbuf_ext_refcnt_set(sh, 1);
	rte_pktmbuf_attach_extbuf(m, b, 0, total, sh);
	m->data_off = 0;
	m->data_len = total;
	m->pkt_len = total;
	memset(ep_meta(m), 0, sizeof(struct ep_meta));
	return m;
}

static void
burst(struct rte_mbuf **pkts, uint16_t n)
{
	static ep_stage_fn const fn[] = { cmts_us_verify_stage, cmts_us_decap_stage,
					  cmts_us_reasm_stage, cmts_us_extract_stage };
	uint16_t next[EP_BURST_MAX];

	for (size_t s = 0; s < RTE_DIM(fn) && n != 0; s++) {
		uint16_t keep = 0;

		memset(next, 0, sizeof(next));
		fn[s](&us, pkts, next, n);
		for (uint16_t i = 0; i < n; i++) {
			if (next[i] == EP_NEXT_CONTINUE)
				pkts[keep++] = pkts[i];
			else
				rte_pktmbuf_free(pkts[i]);
		}
		n = keep;
	}
	for (uint32_t j = 0; j < us.n_fr; j++) {
		const struct cmts_us_frame *f = &us.fr[j];

		if ((uint32_t)f->off + f->len > f->m->data_len || f->hdr_len > f->len)
			abort();
		if (f->own)
			rte_pktmbuf_free(f->m);
	}
	rte_pktmbuf_free_bulk(pkts, n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rte_mbuf *pkts[4];
	uint16_t n = 0;
	int total = 0;

	while (size >= 2 && total < 16) {
		uint16_t len = (uint16_t)(data[0] << 8 | data[1]);

		data += 2;
		size -= 2;
		if (len > size || len > 9000)
			len = (uint16_t)RTE_MIN(size, 9000u);
		pkts[n++] = packet(data, len);
		data += len;
		size -= len;
		total++;
		if (n == RTE_DIM(pkts)) {
			burst(pkts, n);
			n = 0;
		}
	}
	if (n != 0)
		burst(pkts, n);
	for (int c = 0; c < 2; c++) {
		rte_pktmbuf_free(us.ch[c].part);
		memset(&us.ch[c], 0, sizeof(us.ch[c]));
		us.ch[c].in_use = true;
		us.ch[c].session = 0x2000u + (uint32_t)c;
	}
	return 0;
}
