/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Error text carried up the control path: configuration, control socket,
 * table operations.  Functions fill it and return -1; the top prints it.
 */
#ifndef EP_ERR_H
#define EP_ERR_H

#include <stdarg.h>
#include <stdio.h>

struct ep_err {
	char msg[512];
};

static inline int __attribute__((format(printf, 2, 3)))
ep_err_set(struct ep_err *err, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

#endif
