/*
 * Standard base64 (RFC 4648, the '+' '/' alphabet, '=' padding), as Go's
 * base64.StdEncoding writes it: kubeconfig's *-data fields, a proxy's Basic credentials,
 * the WebSocket handshake's keys.
 */
#ifndef SBX_COMMON_BASE64_H
#define SBX_COMMON_BASE64_H

#include <stddef.h>

#include "common/strbuf.h"

/* Appends the base64 of n bytes (padded to whole quads). */
void sbx_base64_encode(const void *data, size_t n, strbuf *out);
/* Appends the bytes that s (n chars) encodes. '\r' and '\n' are skipped (PEM-style line
 * breaks); any other byte outside the alphabet, a '=' anywhere but the end of the last
 * quad, or a last quad cut short is an error: -1, with what was decoded so far appended. */
int sbx_base64_decode(const char *s, size_t n, strbuf *out);

#endif
