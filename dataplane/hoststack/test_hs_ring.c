/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The socket rings and doorbells of hs_ring.h, which the dp and the preload
 * library share: the data area's allocator (empty, full, wrap-around, the
 * strict tail), index validation against a hostile peer, doorbell batches,
 * and the region layout check.
 */
#include <stdlib.h>

#include "ep_test.h"
#include "hs_ring.h"

EP_TEST(data_alloc_on_an_empty_area_starts_at_zero)
{
	uint32_t off = 99, nh = 0;

	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 3000, 2000, true, 100, &off, &nh), 0);
	EP_CHECK_EQ(off, 0);
	EP_CHECK_EQ(nh, 128);           /* 64-byte aligned spans */
}

EP_TEST(data_alloc_appends_after_the_head)
{
	uint32_t off, nh;

	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 128, 0, false, 1860, &off, &nh), 0);
	EP_CHECK_EQ(off, 128);
	EP_CHECK_EQ(nh, 128 + 1920);
}

EP_TEST(data_alloc_wraps_to_zero_when_the_end_is_too_short)
{
	uint32_t off, nh;

	/* live data [1024, 3968): 128 bytes left at the end, 1024 at the start */
	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 3968, 1024, false, 500, &off, &nh), 0);
	EP_CHECK_EQ(off, 0);
	EP_CHECK_EQ(nh, 512);
	/* once wrapped, spans go between head and tail */
	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 512, 1024, false, 400, &off, &nh), 0);
	EP_CHECK_EQ(off, 512);
	EP_CHECK_EQ(nh, 960);
}

EP_TEST(data_alloc_refuses_when_full_and_never_lets_head_meet_tail)
{
	uint32_t off, nh;

	/* wrapped: head 960, tail 1024: 64 bytes free, but strictly less is usable */
	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 960, 1024, false, 64, &off, &nh), -1);
	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 960, 1024, false, 1, &off, &nh), -1);
	/* not wrapped: neither the end nor the start has room */
	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 4000, 64, false, 100, &off, &nh), -1);
	/* a span longer than the area never fits */
	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 0, 0, true, 4097, &off, &nh), -1);
}

EP_TEST(data_alloc_respects_the_socket_buffer_limit)
{
	uint32_t off, nh;

	/* 1024 bytes in use, limit 1500: another 640-byte span would pass it */
	EP_CHECK_EQ(hs_data_alloc(4096, 1500, 1024, 0, false, 600, &off, &nh), -1);
	EP_CHECK_EQ(hs_data_alloc(4096, 1500, 1024, 0, false, 400, &off, &nh), 0);
	/* an empty area takes one datagram up to the limit */
	EP_CHECK_EQ(hs_data_alloc(4096, 1500, 0, 0, true, 1500, &off, &nh), -1);
	EP_CHECK_EQ(hs_data_alloc(4096, 1536, 0, 0, true, 1500, &off, &nh), 0);
}

EP_TEST(data_alloc_takes_zero_length_datagrams)
{
	uint32_t off, nh;

	EP_CHECK_EQ(hs_data_alloc(4096, 4096, 960, 1024, false, 0, &off, &nh), 0);
	EP_CHECK_EQ(nh, 960);
}

EP_TEST(ring_count_refuses_an_impossible_producer_index)
{
	EP_CHECK_EQ(hs_ring_count(10, 10, 256), 0);
	EP_CHECK_EQ(hs_ring_count(266, 10, 256), 256);
	EP_CHECK_EQ(hs_ring_count(267, 10, 256), -1);
	EP_CHECK_EQ(hs_ring_count(5, 10, 256), -1);       /* behind the consumer */
	/* free-running indices wrap at 2^32 */
	EP_CHECK_EQ(hs_ring_count(3, UINT32_MAX - 4, 256), 8);
}

EP_TEST(consumer_index_must_lie_between_last_seen_and_published)
{
	EP_CHECK(hs_cons_valid(10, 10, 20));
	EP_CHECK(hs_cons_valid(20, 10, 20));
	EP_CHECK(!hs_cons_valid(21, 10, 20));
	EP_CHECK(!hs_cons_valid(9, 10, 20));
	EP_CHECK(hs_cons_valid(2, UINT32_MAX - 2, 5));
}

EP_TEST(doorbells_pop_in_batches_and_wrap_around)
{
	struct hs_db_ring *r = calloc(1, sizeof(*r));
	uint32_t slots[8], out[8], cons = 0, id = 0;
	int got = 0;

	/* 40 ids through an 8-slot ring, pushed 5 at a time, popped 3 at a time */
	for (int round = 0; round < 8; round++) {
		for (int i = 0; i < 5; i++)
			EP_CHECK_EQ(hs_db_push(r, slots, 8, id++), 0);
		while (hs_db_pop(r, slots, 8, &cons, out, 3) > 0)
			;
	}
	EP_CHECK_EQ(cons, 40);
	EP_CHECK_EQ(r->cons.v, 40);
	for (int i = 0; i < 8; i++)
		EP_CHECK_EQ(hs_db_push(r, slots, 8, (uint32_t)i), 0);
	EP_CHECK_EQ(hs_db_push(r, slots, 8, 99), -1);   /* full */
	got = hs_db_pop(r, slots, 8, &cons, out, 8);
	EP_CHECK_EQ(got, 8);
	for (int i = 0; i < 8; i++)
		EP_CHECK_EQ(out[i], i);
	EP_CHECK_EQ(hs_db_pop(r, slots, 8, &cons, out, 8), 0);    /* empty */
	free(r);
}

EP_TEST(doorbell_pop_refuses_a_hostile_producer_index)
{
	struct hs_db_ring *r = calloc(1, sizeof(*r));
	uint32_t slots[8], out[8], cons = 0;

	r->prod.v = 1000;       /* an application wrote nonsense */
	EP_CHECK_EQ(hs_db_pop(r, slots, 8, &cons, out, 8), -1);
	EP_CHECK_EQ(cons, 0);
	free(r);
}

EP_TEST(region_layout_check_refuses_tampered_geometry)
{
	struct hs_sock_shm *h = calloc(1, sizeof(*h));
	uint32_t size;

	h->magic = HS_ABI_MAGIC;
	h->version = HS_ABI_VERSION;
	h->rx_slots = h->tx_slots = 256;
	h->rx_bytes = h->tx_bytes = 65536;
	size = hs_sock_layout(h);
	EP_CHECK(hs_sock_layout_valid(h, size));
	EP_CHECK(!hs_sock_layout_valid(h, size - 4096));       /* mapped short */
	h->rx_data_off += 64;
	EP_CHECK(!hs_sock_layout_valid(h, size));
	h->rx_data_off -= 64;
	h->tx_slots = 300;                                     /* not a power of two */
	EP_CHECK(!hs_sock_layout_valid(h, size));
	free(h);
}
