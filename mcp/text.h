/*
 * What a command printed, made fit for a JSON-RPC message and for an agent's context:
 * escaped into valid UTF-8, then capped at a number of characters with its head and tail
 * kept (an agent that loses the end of a log, where the error usually is, reruns the
 * command).
 *
 * Escaping: each byte that is not part of a valid UTF-8 character (RFC 3629: no overlong
 * form, surrogate or code point past U+10FFFF), and each NUL (cJSON's strings end at one),
 * becomes the four characters \xNN, as Python's "backslashreplace" writes it. Everything
 * else stays as it is; JSON's own escaping of quotes and controls is cJSON's.
 *
 * Characters are Unicode code points of the escaped text (\xNN counts four), what a
 * JavaScript or Python client's string length roughly says.
 */
#ifndef SBX_MCP_TEXT_H
#define SBX_MCP_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* The room kept for the line that says what was left out: the head and the tail share
 * cap - MCP_TEXT_MARK_ROOM characters, so that the whole stays within cap. */
#define MCP_TEXT_MARK_ROOM 100
/* The smallest cap accepted (a head and a tail worth reading). */
#define MCP_TEXT_CAP_MIN 200

/* Appends text[0..len) escaped as above. Returns the characters appended. */
size_t mcp_text_escape(strbuf *out, const void *text, size_t len);

/*
 * Appends a stream's output escaped and capped at cap characters (>= MCP_TEXT_CAP_MIN).
 *
 * head[0..hlen) is the output's start. When the collector kept only the head and the tail
 * of a longer output, tail[0..tlen) is its end and total the bytes the command wrote;
 * otherwise tail is NULL and total is hlen. When what is appended is not the whole output,
 * the head and the tail are joined by one line naming the bytes left out
 * ("\n[... 970000 bytes omitted ...]\n"), and *truncated is set.
 */
void mcp_text_cap(strbuf *out, const void *head, size_t hlen, const void *tail, size_t tlen,
                  unsigned long long total, size_t cap, bool *truncated);

#endif
