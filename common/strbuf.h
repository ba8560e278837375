/*
 * strbuf: a growable byte string, after git's strbuf.
 *
 * Invariants (every function keeps them):
 *   - buf is never NULL: an empty strbuf points at a shared empty string, so
 *     it can be printed or compared without a check;
 *   - buf[len] is always '\0', so buf is a C string when the content has no
 *     NUL bytes; embedded NULs are allowed and len is the truth;
 *   - alloc == 0 means buf is not owned (the shared empty string).
 * strbuf_detach() is the only way to take ownership of the bytes.
 */
#ifndef SBX_COMMON_STRBUF_H
#define SBX_COMMON_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
    size_t alloc;
    size_t len;
    char *buf;
} strbuf;

extern char strbuf_slopbuf[];
#define STRBUF_INIT { 0, 0, strbuf_slopbuf }

void strbuf_init(strbuf *sb, size_t hint);
void strbuf_release(strbuf *sb);
/* Returns the bytes (always malloc'd, NUL-terminated) and resets sb. */
char *strbuf_detach(strbuf *sb, size_t *len_out);
/* Makes room for at least extra more bytes beyond len. */
void strbuf_grow(strbuf *sb, size_t extra);
void strbuf_setlen(strbuf *sb, size_t len);
static inline void strbuf_reset(strbuf *sb) { strbuf_setlen(sb, 0); }
/* The bytes that fit after len without growing (the NUL's byte is not counted): a read(2)
 * into buf + len may take this many, then strbuf_setlen(sb, len + n). 0 when not owned. */
static inline size_t strbuf_avail(const strbuf *sb)
{
    return sb->alloc ? sb->alloc - sb->len - 1 : 0;
}
/* Appends what fd gives until end of file (EINTR is retried). Returns 0, or -1 with errno
 * set: a read error, or EFBIG once len exceeds max (the bytes read so far stay in sb). */
int strbuf_read_fd(strbuf *sb, int fd, size_t max);

void strbuf_add(strbuf *sb, const void *data, size_t len);
void strbuf_addstr(strbuf *sb, const char *s);
void strbuf_addch(strbuf *sb, int c);
void strbuf_addf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(strbuf *sb, const char *fmt, va_list ap);
/* Removes n bytes starting at pos. */
void strbuf_remove(strbuf *sb, size_t pos, size_t n);
/* Appends s quoted for bash: single quotes, or $'...' when s has control bytes. */
void strbuf_add_shell_quoted(strbuf *sb, const char *s, size_t len);
/* Appends s with JSON string escaping (no surrounding quotes). JSON must be
 * UTF-8: a byte that is not part of a valid sequence is written as \u00XX. */
void strbuf_add_json_escaped(strbuf *sb, const char *s, size_t len);

#endif
