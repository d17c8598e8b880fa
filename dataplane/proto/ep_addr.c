/* SPDX-License-Identifier: BSD-3-Clause */
/* Addresses, prefixes and MACs as text (ep_addr.h).  inet_pton/inet_ntop
 * do the address forms; this adds the prefix length, the host-bit rule and
 * error text that quotes what was wrong. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "ep_addr.h"
#include "ep_ip.h"
#include "ep_text.h"

int
ep_addr_parse(const char *s, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (s == NULL)
		return 0;
	if (inet_pton(AF_INET, s, addr) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, addr) == 1)
		return 6;
	memset(addr, 0, 16);
	return 0;
}

static bool
has_host_bits(int family, const uint8_t *addr, uint8_t plen)
{
	for (unsigned int bit = plen; bit < ep_addr_bits(family); bit++)
		if (addr[bit / 8] & (0x80u >> (bit % 8)))
			return true;
	return false;
}

void
ep_prefix_clear_host(int family, uint8_t addr[16], uint8_t plen)
{
	for (unsigned int bit = plen; bit < ep_addr_bits(family); bit++)
		addr[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
}

int
ep_prefix_parse(const char *s, uint8_t addr[16], uint8_t *plen, unsigned int flags,
		struct ep_err *err)
{
	char ip[64];
	const char *slash;
	uint64_t len = 0;
	size_t n;
	int fam;

	memset(addr, 0, 16);
	if (s == NULL || s[0] == '\0')
		return ep_err_set(err, "missing prefix");
	slash = strchr(s, '/');
	n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	if (n == 0 || n >= sizeof(ip))
		return ep_err_set(err, "'%s' is not a prefix (address/length)", s);
	memcpy(ip, s, n);
	ip[n] = '\0';
	fam = ep_addr_parse(ip, addr);
	if (fam == 0)
		return ep_err_set(err, "'%s' is not an IPv4 or IPv6 %s", s,
				  slash != NULL ? "prefix" : "address");
	if (slash == NULL) {
		if (!(flags & EP_PREFIX_BARE_OK))
			return ep_err_set(err, "'%s' needs a prefix length (%s/%u)", s, ip,
					  ep_addr_bits(fam));
		*plen = (uint8_t)ep_addr_bits(fam);
		return fam;
	}
	if (ep_parse_u64(slash + 1, 0, ep_addr_bits(fam), &len, NULL) < 0)
		return ep_err_set(err, "'%s': prefix length must be 0..%u", s, ep_addr_bits(fam));
	*plen = (uint8_t)len;
	if (flags & EP_PREFIX_KEEP_HOST)
		return fam;
	if (has_host_bits(fam, addr, *plen)) {
		if (!(flags & EP_PREFIX_CLEAR_HOST))
			return ep_err_set(err, "'%s' has host bits set beyond the prefix length", s);
		ep_prefix_clear_host(fam, addr, *plen);
	}
	return fam;
}

int
ep_parse_prefix(const char *s, void *addr, uint8_t *plen, struct ep_err *err)
{
	uint8_t a[16];
	int fam = ep_prefix_parse(s, a, plen, EP_PREFIX_BARE_OK | EP_PREFIX_KEEP_HOST, err);

	if (fam > 0)
		memcpy(addr, a, fam == 4 ? 4 : 16);
	return fam;
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
ep_parse_mac(const char *s, struct rte_ether_addr *mac)
{
	struct rte_ether_addr t;

	if (s == NULL || strlen(s) != 17)
		return -1;
	for (int i = 0; i < 6; i++) {
		int hi = hex_digit(s[3 * i]), lo = hex_digit(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return -1;
		t.addr_bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	*mac = t;
	return 0;
}

const char *
ep_addr_str(int family, const uint8_t *addr, char *buf, size_t n)
{
	if (inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, buf, (socklen_t)n) == NULL)
		snprintf(buf, n, "?");
	return buf;
}

const char *
ep_prefix_str(int family, const uint8_t *addr, uint8_t plen, char *buf, size_t n)
{
	char a[EP_ADDR_STRLEN];

	snprintf(buf, n, "%s/%u", ep_addr_str(family, addr, a, sizeof(a)), plen);
	return buf;
}

bool
ep_prefix_contains(const uint8_t *net, uint8_t plen, const uint8_t *ip)
{
	unsigned int full = plen / 8u, rest = plen % 8u;

	if (memcmp(net, ip, full) != 0)
		return false;
	return rest == 0 || ((net[full] ^ ip[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

void
ep_prefix_set_v4(struct ep_prefix_set *s, int i, uint32_t addr, uint8_t plen)
{
	s->v4_mask[i] = ep_ipv4_mask_be(plen);
	s->v4_net[i] = addr & s->v4_mask[i];
}

void
ep_prefix_set_v6(struct ep_prefix_set *s, const uint8_t addr[16], uint8_t plen)
{
	uint8_t m[16] = {0};

	for (unsigned int i = 0; i < plen; i++)
		m[i / 8] |= (uint8_t)(0x80u >> (i % 8));
	memcpy(s->v6_mask, m, 16);
	memcpy(s->v6_net, addr, 16);
	s->v6_net[0] &= s->v6_mask[0];
	s->v6_net[1] &= s->v6_mask[1];
}
