/*
 * framebuf: the two buffers of a framed byte stream over a non-blocking fd.
 *
 * Both of sbxsh's streams are frames behind a length header: the agent protocol
 * (sync/wire.h, a 12-byte header) and the client/holder protocol (a 4-byte length and a
 * type). Their readers and writers buffer the same way, so the buffering lives here once,
 * and knows nothing of either header: the caller's parser (wire_parse, proto_parse) says
 * how long the next frame is.
 *
 * Input (framebuf_in): framebuf_fill() appends what one read(2) gives; the unconsumed bytes
 * start at framebuf_data(); the caller parses a frame there and framebuf_consume()s it;
 * framebuf_compact() once the frames are handled. Consuming never moves bytes, so a parsed
 * frame's payload stays valid until the next framebuf_compact() or framebuf_fill().
 *
 *     while (framebuf_fill(&in, fd, 65536) > 0) {
 *         while ((r = parse(framebuf_data(&in), framebuf_len(&in), &f)) == 1) {
 *             framebuf_consume(&in, frame_bytes(&f));
 *             handle(&f);
 *         }
 *         framebuf_compact(&in);
 *     }
 *
 * Output (framebuf_out): encoders append frames to `q` (any strbuf function); bytes before
 * `off` are already written. framebuf_write()/framebuf_send() write from off until the fd
 * would block and compact.
 *
 * Compaction is lazy: the consumed prefix is dropped at once when nothing follows it (the
 * usual case, no copy), else only once it exceeds FRAMEBUF_COMPACT_AT, so a stream of small
 * frames does not move the buffer's tail on every read or write.
 */
#ifndef SBX_COMMON_FRAMEBUF_H
#define SBX_COMMON_FRAMEBUF_H

#include "common/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FRAMEBUF_COMPACT_AT (1u << 20)

typedef struct framebuf_in {
    strbuf buf;
    size_t off;     /* bytes of buf before off are consumed */
} framebuf_in;

typedef struct framebuf_out {
    strbuf q;       /* the queue: append frames here */
    size_t off;     /* bytes of q before off are written */
} framebuf_out;

void framebuf_in_init(framebuf_in *in);
void framebuf_in_release(framebuf_in *in);
/* Forgets every byte, consumed or not (a dropped connection). */
void framebuf_in_reset(framebuf_in *in);
/* One read(2) of at least `room` bytes of space (EINTR retried). Returns the bytes read,
 * 0 at end of file, or -1 with errno (EAGAIN when nothing is there yet). */
ssize_t framebuf_fill(framebuf_in *in, int fd, size_t room);
/* The unconsumed bytes: the next frame starts at framebuf_data(). */
static inline const char *framebuf_data(const framebuf_in *in) { return in->buf.buf + in->off; }
static inline size_t framebuf_len(const framebuf_in *in) { return in->buf.len - in->off; }
/* Marks the next n unconsumed bytes (a frame) consumed; n <= framebuf_len(). */
void framebuf_consume(framebuf_in *in, size_t n);
/* Drops the consumed prefix when that is cheap or worth it (see above). */
void framebuf_in_compact(framebuf_in *in);

void framebuf_out_init(framebuf_out *o);
void framebuf_out_release(framebuf_out *o);
void framebuf_out_reset(framebuf_out *o);
/* Bytes queued and not yet written. */
static inline size_t framebuf_pending(const framebuf_out *o) { return o->q.len - o->off; }
/* Writes queued bytes with write(2) until all are written or fd would block (EINTR
 * retried), then compacts. Returns 0, or -1 with errno on any other error (the unwritten
 * bytes stay queued). */
int framebuf_write(framebuf_out *o, int fd);
/* The same with send(2) and its flags, for a socket (MSG_NOSIGNAL: a gone peer is EPIPE,
 * not a signal; MSG_DONTWAIT on a blocking socket). */
int framebuf_send(framebuf_out *o, int fd, int flags);

#endif
