/* SPDX-License-Identifier: BSD-3-Clause */
/* Address parsing shared by the config file and the control socket. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_engine.h"

int
ep_parse_prefix(const char *s, void *addr, uint8_t *plen, struct ep_err *err)
{
	char buf[64];
	const char *slash;
	int family, max;
	size_t n;

	if (s == NULL)
		return ep_err_set(err, "missing prefix");
	slash = strchr(s, '/');
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return ep_err_set(err, "'%s' is not an address or prefix", s);
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, addr) == 1) {
		family = 4;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, addr) == 1) {
		family = 6;
		max = 128;
	} else {
		return ep_err_set(err, "'%s' is not an IPv4 or IPv6 address", buf);
	}
	if (slash == NULL) {
		*plen = (uint8_t)max;
	} else {
		uint64_t v;

		if (ep_parse_u64(slash + 1, 0, (uint64_t)max, &v, NULL) < 0)
			return ep_err_set(err, "'%s': prefix length must be 0..%d", s, max);
		*plen = (uint8_t)v;
	}
	return family;
}

int
ep_parse_mac(const char *s, struct rte_ether_addr *mac)
{
	unsigned int b[6];

	/* Exactly xx:xx:xx:xx:xx:xx: sscanf's %x alone also takes a sign or a
	 * blank ("-1:..." would wrap to ff). */
	if (s == NULL || strlen(s) != 17)
		return -1;
	for (int i = 0; i < 17; i++)
		if (i % 3 == 2 ? s[i] != ':' : !isxdigit((unsigned char)s[i]))
			return -1;
	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac->addr_bytes[i] = (uint8_t)b[i];
	return 0;
}
