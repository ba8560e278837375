/*
 * The client <-> holder protocol, on the session's Unix socket.
 *
 * Private to session/: session.c speaks it as the client, holder.c as the
 * server. Both ends are the same user (the holder checks SO_PEERCRED) and
 * the same build, so there is no version negotiation beyond the hello; all
 * the same, every length is bounded and checked, and a bad frame ends the
 * connection.
 *
 * A frame is: u32 length (little-endian, of what follows), u8 type, payload.
 * Integers are little-endian u32 (u64 where said); a string is a u32 length
 * and its bytes; a string list is a u32 count and that many strings.
 *
 * One connection runs at most one command at a time (a client process that
 * wants two opens two connections); SYNC, STATUS and RELEASE may come while
 * none runs.
 *
 * Flow control: output goes holder -> client in OUTPUT frames; the client
 * returns CREDIT(fd, n) once it has written n bytes on, and the holder
 * passes that to the agent, so a slow reader slows the sandbox writer and
 * memory stays bounded end to end. Input: the client keeps at most
 * SBX_PROTO_INPUT_WINDOW unacknowledged bytes per fd; the holder returns
 * INPUT_ACK(fd, n) when the agent has taken n of them.
 */
#ifndef SBX_SESSION_PROTO_H
#define SBX_SESSION_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/bytes.h"
#include "common/strbuf.h"

#define SBX_PROTO_VERSION 5
#define SBX_PROTO_MAX_FRAME (1u << 20)
#define SBX_PROTO_MAX_STRING (256u * 1024)
#define SBX_PROTO_MAX_LIST 65536
#define SBX_PROTO_INPUT_WINDOW (256u * 1024)
#define SBX_PROTO_CHUNK (64u * 1024)
/* P_RUN's fd directions: read by the child, written by it, written by it on
 * the pipe of the nearest output fd before it (see SBX_FD_RELAY_OUT) */
enum { SBX_PROTO_FD_IN = 0, SBX_PROTO_FD_OUT = 1, SBX_PROTO_FD_SHARED = 2 };

enum sbx_proto_type {
    /* client -> holder */
    P_HELLO = 1,      /* u32 version, u32 flags (P_HELLO_PROGRESS), str fingerprint
                         (session_config_fingerprint; empty: any), list sync paths, list
                         task files, list excludes */
    P_RUN,            /* str exe, list argv, list env, str cwd, u32 nfds, nfds * (u32 fd,
                         u32 dir: SBX_PROTO_FD_*), u32 tty, u32 rows, u32 cols */
    P_INPUT,          /* u32 fd, bytes (the rest of the frame) */
    P_INPUT_EOF,      /* u32 fd */
    P_SIGNAL,         /* u32 signo */
    P_WINSIZE,        /* u32 rows, u32 cols */
    P_CLOSE_OUTPUT,   /* u32 fd */
    P_CREDIT,         /* u32 fd, u32 n */
    P_SYNC,           /* (nothing) -> P_SYNC_DONE */
    P_STATUS,         /* (nothing) -> P_STATUS_REPLY */
    P_RELEASE,        /* (nothing) -> P_RELEASED, then the holder exits */
    P_ABORT_PULL,     /* u32 signo: the client got SIGINT/SIGTERM; if the pull of its
                         command (or sync) is being written on the host, drop it and answer
                         now: P_EXIT killed by signo (for a sync: P_WARNING saying so,
                         then P_SYNC_DONE). Else nothing. */
    P_LABEL,          /* str line: what the client's next P_RUN or P_SYNC belongs to (the
                         undo journal's label for the pull; no reply; version 5) */

    /* holder -> client */
    P_HELLO_OK = 64,  /* u32 version, u32 holder pid */
    P_OUTPUT,         /* u32 fd, bytes */
    P_OUTPUT_EOF,     /* u32 fd */
    P_INPUT_ACK,      /* u32 fd, u32 n */
    P_EXIT,           /* u32 kind (sync_exit_kind), u32 code, u32 core, u32 wait_status,
                         str message */
    P_SYNC_DONE,
    P_STATUS_REPLY,   /* str json */
    P_RELEASED,
    P_WARNING,        /* str message: print it, go on */
    P_PROGRESS,       /* str message: print it when stderr is a terminal */
    P_ERROR,          /* str message: the request failed (sbxsh's own failure: 125) */
    P_SIGNAL_ACK,     /* u32 signo: the agent handled the command's P_SIGNAL (version 4) */
};

#define P_HELLO_PROGRESS 1u

/* Building a frame: start, add fields, finish (fills in the length). */
void proto_begin(strbuf *sb, int type);
static inline void proto_u32(strbuf *sb, uint32_t v) { sbx_add_le32(sb, v); }
static inline void proto_str(strbuf *sb, const char *s, size_t len) { sbx_add_lestr(sb, s, len); }
void proto_strz(strbuf *sb, const char *s);
void proto_list(strbuf *sb, const char *const *v);
void proto_end(strbuf *sb, size_t start);

/* Reading a frame's payload. Getters fail (return -1) past the end or for
 * over-long fields, and the reader stays failed. */
typedef sbx_rd proto_reader;    /* common/bytes.h */

int proto_get_u32(proto_reader *r, uint32_t *v);
/* A string (not NUL-terminated in the buffer): points into the frame. */
int proto_get_str(proto_reader *r, const char **s, size_t *len);
/* A string copied into a malloc'd NUL-terminated buffer; refuses NUL bytes. */
int proto_get_cstr(proto_reader *r, char **out);

/* Finds a complete frame at the start of buf: returns its total size and
 * sets *type and the reader over its payload; 0 when more bytes are needed;
 * -1 for a frame over SBX_PROTO_MAX_FRAME or empty. */
long proto_parse(const char *buf, size_t len, int *type, proto_reader *r);

#endif
