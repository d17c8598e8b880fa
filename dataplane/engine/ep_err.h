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
#include <string.h>

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

/** Put "<fmt>" in front of the message already in @p err ("prefix: " +
 *  what the inner call said).  Returns -1. */
static inline int __attribute__((format(printf, 2, 3)))
ep_err_prefix(struct ep_err *err, const char *fmt, ...)
{
	char head[256], inner[sizeof(err->msg)];
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	size_t h, i;

	memcpy(inner, err->msg, sizeof(inner));
	inner[sizeof(inner) - 1] = '\0';
	h = strnlen(head, sizeof(head) - 1);
	i = strnlen(inner, sizeof(err->msg) - 1 - h);
	memcpy(err->msg, head, h);
	memcpy(err->msg + h, inner, i);
	err->msg[h + i] = '\0';
	return -1;
}

#endif
