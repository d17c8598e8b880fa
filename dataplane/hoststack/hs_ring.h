/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The socket rings: single-producer single-consumer rings of datagram
 * descriptors over a circular data area, and the doorbell rings.  Header
 * only and DPDK-free: the dp and the preload library share every line of
 * it, and the unit tests drive it without either.
 *
 * A ring is two things in the socket region:
 *
 *   descriptors  [ d d d d . . . . ]   slots (a power of two), indices
 *                  ^cons    ^prod       free-running uint32 (prod - cons =
 *                                       datagrams queued, never > slots)
 *   data area    [...tail=====head.....]  each datagram's payload is one
 *                                         contiguous span, 64-byte aligned;
 *                                         a span that does not fit before
 *                                         the end starts again at 0
 *
 * Why descriptors plus a data area rather than VPP's byte FIFO with a
 * header per datagram: the consumer finds the next datagram's length and
 * peer in a fixed slot (FIONREAD, MSG_PEEK, recvmmsg need no parsing), a
 * datagram is never split across the end of the area (one memcpy each
 * way), and the dp can check a descriptor against the area's bounds in
 * two compares.  The data area frees in order: the oldest queued
 * datagram's offset is the tail; an empty ring starts again at 0.
 *
 * Capacity is the smaller of the slots and the bytes; the dp further caps
 * the bytes in use at the socket's effective SO_RCVBUF.
 */
#ifndef HS_RING_H
#define HS_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hs_abi.h"

#define HS_DATA_ALIGN 64u

static inline uint32_t
hs_align_up(uint32_t v)
{
	return (v + HS_DATA_ALIGN - 1) & ~(HS_DATA_ALIGN - 1);
}

/* Shared indices: release on publish, acquire on read. */
static inline uint32_t
hs_load_acq(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
hs_store_rel(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/** Full barrier between a store and a later load (the wake-up handshakes). */
static inline void
hs_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/**
 * Room for @p len payload bytes in a data area of @p bytes.
 *
 * @param head   end of the newest queued span (where the next one goes)
 * @param tail   start of the oldest queued span
 * @param empty  true when no datagram is queued (head/tail are then
 *               meaningless and the area starts again at 0)
 * @param limit  bytes that may be in use (SO_RCVBUF), <= bytes
 * @param off    where the payload goes
 * @param nhead  the head after it
 * @return 0, or -1 when it does not fit now
 *
 * Spans never wrap: a span that does not fit between head and the end
 * starts at 0 when it fits strictly below the tail (strictly, so that a
 * non-empty area never has head == tail with data on both sides).
 */
static inline int
hs_data_alloc(uint32_t bytes, uint32_t limit, uint32_t head, uint32_t tail, bool empty,
	      uint32_t len, uint32_t *off, uint32_t *nhead)
{
	uint32_t need = hs_align_up(len), used;

	if (need < len || need > bytes)
		return -1;
	if (empty) {
		if (need > limit && len != 0)
			return -1;
		*off = 0;
		*nhead = need;
		return 0;
	}
	used = head >= tail ? head - tail : bytes - tail + head;
	if ((uint64_t)used + need > limit)
		return -1;
	if (head >= tail) {
		if (bytes - head >= need) {
			*off = head;
			*nhead = head + need;
			return 0;
		}
		if (tail > need) {
			*off = 0;
			*nhead = need;
			return 0;
		}
		return -1;
	}
	if (tail - head > need) {
		*off = head;
		*nhead = head + need;
		return 0;
	}
	return -1;
}

/** A descriptor read from the other side is inside its area. */
static inline bool
hs_desc_in_area(uint32_t off, uint32_t len, uint32_t bytes)
{
	return off <= bytes && len <= bytes - off;
}

/**
 * Validate a producer index read from the other side: the consumer at
 * @p cons may trust at most @p slots entries.  Returns the count, or -1
 * when the index is impossible (corrupt or hostile peer).
 */
static inline int64_t
hs_ring_count(uint32_t prod, uint32_t cons, uint32_t slots)
{
	uint32_t n = prod - cons;

	return n > slots ? -1 : (int64_t)n;
}

/**
 * Validate a consumer index read from the other side against what the
 * producer published: @p cons must lie in [@p last_cons, @p prod].
 */
static inline bool
hs_cons_valid(uint32_t cons, uint32_t last_cons, uint32_t prod)
{
	return cons - last_cons <= prod - last_cons;
}

/* ------------------------------------------------------------------------ */
/* Doorbell rings                                                            */
/* ------------------------------------------------------------------------ */

/** Producer (application, under its ring lock): push a socket id.
 *  Returns 0, or -1 when the ring is full. */
static inline int
hs_db_push(struct hs_db_ring *r, uint32_t *slots, uint32_t n_slots, uint32_t id)
{
	uint32_t prod = r->prod.v;
	uint32_t cons = hs_load_acq(&r->cons.v);

	if (prod - cons >= n_slots)
		return -1;
	slots[prod & (n_slots - 1)] = id;
	hs_store_rel(&r->prod.v, prod + 1);
	return 0;
}

/**
 * Consumer (worker): pop up to @p max ids into @p out.  @p *cons is the
 * worker's private copy of the consumer index; an impossible producer
 * index (more than the ring holds) returns -1 and changes nothing: the
 * caller treats the ring as hostile.
 */
static inline int
hs_db_pop(struct hs_db_ring *r, const uint32_t *slots, uint32_t n_slots, uint32_t *cons,
	  uint32_t *out, uint32_t max)
{
	uint32_t prod = hs_load_acq(&r->prod.v);
	int64_t n = hs_ring_count(prod, *cons, n_slots);
	uint32_t k;

	if (n < 0)
		return -1;
	k = (uint32_t)n < max ? (uint32_t)n : max;
	for (uint32_t i = 0; i < k; i++)
		out[i] = __atomic_load_n(&slots[(*cons + i) & (n_slots - 1)], __ATOMIC_RELAXED);
	*cons += k;
	hs_store_rel(&r->cons.v, *cons);
	return (int)k;
}

/* ------------------------------------------------------------------------ */
/* Region geometry                                                           */
/* ------------------------------------------------------------------------ */

/** Lay out a socket region: fills the offsets and region_size of @p h from
 *  the slot counts and byte sizes already in it.  Returns the size. */
static inline uint32_t
hs_sock_layout(struct hs_sock_shm *h)
{
	uint64_t off = sizeof(*h);

	off = (off + 4095) & ~4095ull;
	h->rx_desc_off = (uint32_t)off;
	off += (uint64_t)h->rx_slots * sizeof(struct hs_desc);
	off = (off + 4095) & ~4095ull;
	h->tx_desc_off = (uint32_t)off;
	off += (uint64_t)h->tx_slots * sizeof(struct hs_desc);
	off = (off + 4095) & ~4095ull;
	h->rx_data_off = (uint32_t)off;
	off += h->rx_bytes;
	off = (off + 4095) & ~4095ull;
	h->tx_data_off = (uint32_t)off;
	off += h->tx_bytes;
	off = (off + 4095) & ~4095ull;
	h->region_size = (uint32_t)off;
	return h->region_size;
}

/** A mapped region's header agrees with its size (the library checks what
 *  it maps; a region that fails is refused rather than trusted). */
static inline bool
hs_sock_layout_valid(const struct hs_sock_shm *h, uint64_t mapped)
{
	struct hs_sock_shm c;

	if (h->magic != HS_ABI_MAGIC || h->version != HS_ABI_VERSION)
		return false;
	if (h->rx_slots == 0 || (h->rx_slots & (h->rx_slots - 1)) != 0 ||
	    h->tx_slots == 0 || (h->tx_slots & (h->tx_slots - 1)) != 0 ||
	    h->rx_slots > (1u << 20) || h->tx_slots > (1u << 20) ||
	    h->rx_bytes > (1u << 30) || h->tx_bytes > (1u << 30))
		return false;
	memset(&c, 0, sizeof(c));
	c.rx_slots = h->rx_slots;
	c.tx_slots = h->tx_slots;
	c.rx_bytes = h->rx_bytes;
	c.tx_bytes = h->tx_bytes;
	hs_sock_layout(&c);
	return c.region_size == h->region_size && c.region_size <= mapped &&
	       c.rx_desc_off == h->rx_desc_off && c.tx_desc_off == h->tx_desc_off &&
	       c.rx_data_off == h->rx_data_off && c.tx_data_off == h->tx_data_off;
}

/** Size of an app region with @p n_workers doorbell rings of @p db_slots. */
static inline uint32_t
hs_app_layout(struct hs_app_shm *a)
{
	uint64_t off = sizeof(*a);

	a->db_off = (uint32_t)off;
	off += (uint64_t)a->n_workers * a->db_slots * sizeof(uint32_t);
	off = (off + 4095) & ~4095ull;
	a->region_size = (uint32_t)off;
	return a->region_size;
}

static inline uint32_t *
hs_app_db_slots(struct hs_app_shm *a, uint32_t worker)
{
	return (uint32_t *)((uint8_t *)a + a->db_off) + (uint64_t)worker * a->db_slots;
}

#endif
