/* SPDX-License-Identifier: BSD-3-Clause */
/* Engine-private declarations: not for pipelines. */
#ifndef EP_ENGINE_INTERNAL_H
#define EP_ENGINE_INTERNAL_H

#include "ep_engine.h"

const struct ep_pipeline_type *ep_pipeline_first(void);

struct ep_worker *ep_worker_create(struct ep_engine *e, unsigned int id, const char *name,
				   struct ep_err *err);
void ep_worker_free(struct ep_worker *w);
void ep_worker_kick(struct ep_worker *w);
int ep_worker_main(void *arg);
/* One poll of the worker loop: each rx queue (or the pipeline's source)
 * received from and its burst run through the stages and sent; @p tsc as
 * in the loop (the time now, advanced past each burst's tx).  Returns the
 * packets received. */
uint32_t ep_worker_poll_rx(struct ep_worker *w, uint64_t *tsc);

/* port.c */
int ep_ports_parse(struct ep_engine *e, struct ep_err *err);
int ep_ports_probe(struct ep_engine *e, struct ep_err *err);
/** Bytes of the ports' mbuf pools, before the EAL (queues not yet known:
 *  every port sized for @p n_workers rx and tx queues). */
uint64_t ep_ports_memory_estimate(const struct ep_engine *e, int n_workers);

/* memory.c: `[engine] memory = auto` */
uint64_t ep_memory_estimate(struct ep_engine *e);
/** The decision: hugepages for @p need bytes with @p free_huge free? */
bool ep_memory_use_hugepages(enum ep_memory mode, uint64_t need, uint64_t free_huge);
/** -m (MiB) for --no-huge: the estimate, at least 1024. */
uint64_t ep_memory_no_huge_mb(uint64_t need);
/** Free hugepage memory in bytes; @p real ignores the test hook
 *  EP_TEST_HUGEPAGES_FREE_MB. */
uint64_t ep_memory_free_hugepages(bool real);
/** Estimate, read the free count, decide (e->mem_*) and log both numbers. */
void ep_memory_plan(struct ep_engine *e, bool check_only);
/** Did a failed start on hugepages run out of them?  @p used: bytes of
 *  hugepages the heap holds, @p free_now: left in the pool. */
bool ep_memory_ran_out(uint64_t need, uint64_t used, uint64_t free_now);
/** After a failed start on hugepages: if the pool ran dry, say so in @p err
 *  with what was needed and the two ways out. */
void ep_memory_explain_failure(const struct ep_engine *e, struct ep_err *err);
int ep_ports_start(struct ep_engine *e, struct ep_err *err);
void ep_ports_stop(struct ep_engine *e);

/* af_packet.c: af_packet ports without kernel reassembly; their kernel drops */
void ep_af_packet_claim(uint16_t port);          /* sockets probed since: port's */
unsigned int ep_af_packet_sockets(uint16_t port);
int ep_af_packet_fd(uint16_t port, uint16_t queue);  /* its rx queue's socket, or -1 */
int ep_port_rx_fd(uint16_t port, uint16_t queue);    /* af_packet or AF_XDP socket, or -1 */
uint64_t ep_af_packet_drops(uint16_t port);      /* ring-full drops since start */
uint64_t ep_xsk_ring_full(uint16_t port);       /* AF_XDP rx-ring-full drops since start */
unsigned int ep_xsk_sockets(uint16_t port);      /* AF_XDP sockets of a port */
void ep_xsk_claim(uint16_t port);                /* AF_XDP sockets set up since: port's */
void ep_af_packet_forget(void);                  /* before the PMD closes them */

/* promisc.c: a kernel interface's promiscuous flag put back at stop, also
 * after a crash (the record beside the control socket) */
void ep_promisc_note(struct ep_engine *e, struct ep_port *p, unsigned int ifindex);
void ep_promisc_restore(struct ep_engine *e);

/* engine.c */
struct ep_engine_opts {
	const char *config;
	bool check_only;        /* validate: no devices probed, no workers launched */
};
int ep_engine_run(const struct ep_engine_opts *o);

/* ctl_server.c: the socket server, polled on the main lcore */
int ep_ctl_open(struct ep_engine *e, struct ep_err *err);
void ep_ctl_poll(struct ep_engine *e, int timeout_ms);
void ep_ctl_close(struct ep_engine *e);
const struct ep_ctl_cmd *ep_ctl_first(void);

/* cli.c */
int ep_cli_main(int argc, char **argv);

#endif
