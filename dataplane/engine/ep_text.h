/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Text that arrives from outside: the one integer parser, the one name
 * grammar and the one line reader for side files.  The configuration file,
 * the files it names (route_file, acl_file, subscriber_file, ...) and the
 * control socket all use these, so a value means the same everywhere and is
 * refused with the same words everywhere.
 *
 *   ep_parse_u64("4294967297", 0, UINT32_MAX, &v, err)
 *       -> -1, "4294967297 is outside [0, 4294967295]"   (never truncated)
 *   ep_name_check("a\nb", err)
 *       -> -1, "'a\x0ab' is not a name (1 to 31 letters, digits, '_', '-', '.')"
 *
 * No DPDK here: --check, the fuzzers and the CLI use it too.
 */
#ifndef EP_TEXT_H
#define EP_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "ep_err.h"

/** Longest name (ports, workers, sections, policers, pipes...), in bytes. */
#define EP_NAME_MAX 31

/**
 * A decimal integer in [min, max]: digits only (no sign, no spaces, no 0x,
 * no octal: leading zeros are decimal).  Overflow and out-of-range values
 * are refused, never wrapped or clamped.  0, or -1 with err set
 * ("'x' is not a non-negative integer", "N is outside [min, max]").
 */
int ep_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out,
		 struct ep_err *err);
/** The same, also taking 0x and hex digits: only for values the field
 *  writes in hex (PPPoE session ids, as tshark shows them: 0x0012). */
int ep_parse_u64_hex(const char *s, uint64_t min, uint64_t max, uint64_t *out,
		     struct ep_err *err);

/**
 * The name grammar: 1 to EP_NAME_MAX of [A-Za-z0-9_.-].  What the
 * configuration file can write as [port NAME] is what the control socket
 * accepts as a name, and the reverse.  0, or -1 with err set.
 */
int ep_name_check(const char *s, struct ep_err *err);

/**
 * @p s for an error message: printable ASCII as is, anything else as \xNN,
 * cut to fit @p n with "..." (hostile input must not reach a terminal or a
 * log raw).  Returns @p buf.
 */
const char *ep_text_quote(const char *s, char *buf, size_t n);

/** Bytes in one line of a side file, newline excluded. */
#define EP_SIDE_MAX_LINE 4095
/** Size of one side file: routes, rules or subscribers by the million. */
#define EP_SIDE_MAX_FILE (1ull << 30)

/**
 * Call @p fn for each line of the side file @p path that holds something
 * after '#' comments and blanks are stripped; @p fn gets the trimmed text,
 * which it may modify, and its 1-based line number.  The file must be a regular file of at most
 * EP_SIDE_MAX_FILE bytes (a FIFO, a device, a directory are refused
 * without reading, so /dev/zero cannot hang a start); a line over
 * EP_SIDE_MAX_LINE bytes or with a NUL byte is refused, never split.
 * Errors, including fn's, read "PATH:LINE: what"; returns 0, fn's non-zero
 * return, or -1.
 */
int ep_side_file_each(const char *path, int (*fn)(void *arg, char *line, int lineno, struct ep_err *err),
		      void *arg, struct ep_err *err);

/**
 * Open @p path for reading if it is a regular file of at most @p max bytes;
 * never blocks (a FIFO with no writer).  Returns the fd and its size, or -1
 * with err set to "PATH: why".
 */
int ep_open_regular(const char *path, uint64_t max, uint64_t *size, struct ep_err *err);

#endif
