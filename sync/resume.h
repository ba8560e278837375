/*
 * A resumable byte stream: one logical stream between two processes that outlives the
 * transports it travels on. The Kubernetes backend's transport is a pods/exec WebSocket,
 * which a proxy, a load balancer or an API server restart may drop in the middle of a
 * command; the agent protocol (PROTOCOL.md) does not resume a running command's channels
 * on a new connection, so the stream under it must not lose a byte.
 *
 * Each end keeps what it sent until the other end acknowledges it. On a new transport both
 * ends send HELLO with the stream's id and how many bytes they have received; each then
 * resends from the other's count. Frames (little-endian):
 *
 *   u32 len, u8 type, u8 0, u8 0, u8 0, then len payload bytes
 *   HELLO (1)  u64 id, u64 received          first on every transport, both ways
 *   DATA  (2)  bytes (at most RS_MAX_DATA)    the stream's next bytes
 *   ACK   (3)  u64 received                   everything below it arrived: drop it
 *   CLOSE (4)                                 the stream ends (the sender is done)
 *
 * The two ends are sbx-kube stream on the host and the keeper in the pod
 * (sync/agent_pod.c). Neither trusts the other beyond the stream's bytes: a frame longer
 * than RS_MAX_DATA, an unknown type, or a count beyond what was sent ends the stream.
 */
#ifndef SBX_SYNC_RESUME_H
#define SBX_SYNC_RESUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define RS_HDR 8
#define RS_MAX_DATA (64u * 1024)
/* What one end holds unacknowledged before it stops reading its source. */
#define RS_MAX_UNACKED (4u << 20)
/* The peer is told of what arrived at least this often (bytes). */
#define RS_ACK_EVERY (64u * 1024)

enum { RS_HELLO = 1, RS_DATA = 2, RS_ACK = 3, RS_CLOSE = 4 };

typedef struct rs_stream {
    uint64_t id;
    /* sending: unacked holds the stream's bytes [base, base + unacked.len); those below
     * sent were framed onto the current transport */
    strbuf unacked;
    uint64_t base, sent;
    /* receiving */
    uint64_t received, acked;   /* acked: the count last told to the peer */
    bool peer_hello;            /* the peer's HELLO arrived on this transport */
    bool peer_closed;           /* CLOSE arrived */
    strbuf in;                  /* a partial frame from the transport */
} rs_stream;

void rs_init(rs_stream *s, uint64_t id);
void rs_free(rs_stream *s);

/* A new transport: HELLO goes into out; no DATA until the peer's HELLO came. */
void rs_new_transport(rs_stream *s, strbuf *out);
/* Bytes from the source for the peer. */
void rs_queue(rs_stream *s, const void *buf, size_t len);
bool rs_can_queue(const rs_stream *s);
/* Appends to out the DATA not yet framed on this transport (up to about max bytes) and an
 * ACK when one is due: RS_ACK_EVERY bytes arrived since the last, or anything did and data
 * goes out anyway or force_ack (the caller is idle: its poll timed out). */
void rs_frame_out(rs_stream *s, strbuf *out, size_t max, bool force_ack);
/* Appends a CLOSE frame. */
void rs_close(strbuf *out);

/* Bytes from the transport: complete frames are handled, DATA payloads appended to
 * deliver (for the sink). Returns 0, or -1 with why in *why (a protocol violation: the
 * stream cannot go on). */
int rs_input(rs_stream *s, const void *buf, size_t len, strbuf *deliver, const char **why);

#endif
