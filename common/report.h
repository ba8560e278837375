/*
 * The one output sink for sbxsh's own messages, modelled on git's usage.c (die, error and
 * warning all funnel into one writer).
 *
 * sbxsh's messages quote text it does not choose: file names the sandbox made, a command's
 * words, an API server's Status message and reason, a pod's stderr. Written raw, such text
 * drives the person's terminal: `ESC ] 0 ; ... BEL` retitles the window, `ESC ] 52` writes
 * the clipboard, `ESC [ 6n` has the terminal type an answer into the next command line.
 * So every message that quotes such text passes through sbx_sanitize() on its way out:
 *
 *   - a tab shows as `\t`, a newline as `\n`, and every other control byte (C0, DEL) as
 *     `\xNN` (ESC is `\x1b`);
 *   - a C1 control, as a bare byte 0x80..0x9f (an 8-bit CSI 0x9b, OSC 0x9d, DCS 0x90) or
 *     encoded in UTF-8 (U+0080..U+009F, `\xc2\x9b`), shows as `\xNN` per byte;
 *   - a byte that is not part of valid UTF-8 (a stray continuation byte, an overlong form, a
 *     surrogate, a truncated sequence) shows as `\xNN`;
 *   - everything else, printable ASCII and valid UTF-8 (non-ASCII file names), is kept as it
 *     is. A backslash is kept too, so sanitizing twice changes nothing.
 *
 * sbx_errf(), sbx_errno() and sbx_err_prefix() (common/util.c) sanitize the message they
 * format, so an sbx_err never holds a control byte wherever it is printed or logged; the
 * functions below write messages that do not pass through an sbx_err.
 */
#ifndef SBX_COMMON_REPORT_H
#define SBX_COMMON_REPORT_H

#include <stdarg.h>
#include <stddef.h>

#include "common/strbuf.h"
#include "common/util.h"

/* The length of the valid UTF-8 character at s[0..n) (s[0] >= 0x80), by RFC 3629's ranges
 * (no overlong form, surrogate or code point past U+10FFFF), or 0 when it is not one. */
size_t sbx_utf8_len(const unsigned char *s, size_t n);

/* Whether text[0..len) reaches a terminal as the characters it holds: printable ASCII and
 * valid UTF-8 only, so no C0 control (tab and newline included), DEL, C1 control (8-bit,
 * or U+0080..U+009F in UTF-8) or byte that is not UTF-8. What a terminal could read as a
 * control or join to what follows fails: completion offers only such names (readline lists
 * and inserts them as they are), and the pty filter keeps only such OSC text. */
bool sbx_text_shows_plain(const void *text, size_t len);

/* Appends the visible form of text[0..len) to out. */
void sbx_sanitize(strbuf *out, const void *text, size_t len);
/* The visible form of text[0..len) into out[0..outsz), NUL-terminated, cut short (never
 * inside an escape or a UTF-8 character) when it does not fit. Allocates nothing, so it is
 * safe in a child between fork and exec. Returns the length written. */
size_t sbx_sanitize_buf(char *out, size_t outsz, const void *text, size_t len);
/* Sanitizes the NUL-terminated string in buf (of bufsz bytes) in place, cut to fit. */
void sbx_sanitize_inplace(char *buf, size_t bufsz);

/* Appends JSON text (cJSON's or ours: control bytes below 0x20 already escaped) to out in
 * a form that reaches a terminal as plain characters and stays the same JSON: DEL and C1
 * controls (U+0080..U+009F) become \u escapes, and a byte that is not UTF-8 becomes
 * \ufffd. (Raw bytes appear only inside JSON strings, where \u escapes mean them.) For
 * `sbx status --json` and `sbx ls --json`, which quote the sandbox's and the cluster's
 * words. */
void sbx_json_for_terminal(strbuf *out, const char *json, size_t len);

/* Writes "<prefix>: <message><eol>" to stderr, the whole message sanitized (eol is "\n",
 * or "\r\n" while the terminal is raw). prefix names the program: "sbxsh", "sbx",
 * "sbx-kube"; it may be NULL for no prefix. */
void sbx_vreport(const char *prefix, const char *eol, const char *fmt, va_list ap);
void sbx_report(const char *prefix, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Writes text, lines sbxsh formatted that quote someone else's (a syntax error quoting a
 * script's line), to stderr: newlines and tabs kept, everything else sanitized. */
void sbx_report_lines(const char *text);
/* sbx_report("sbxsh", ...) and sbx_report("sbxsh", "warning: " ...). */
void sbx_error(const char *fmt, ...) SBX_PRINTF(1, 2);
void sbx_warning(const char *fmt, ...) SBX_PRINTF(1, 2);

#endif
