/*
 * The sbx-agent wire protocol: frame layout, limits, and the encoders and decoders of every
 * message. sync/PROTOCOL.md is the prose version of this header; keep them in step.
 *
 * A frame is a 12-byte header and a payload, all integers little-endian:
 *
 *     u32 len    payload bytes, at most SYNC_MAX_FRAME
 *     u16 type   WIRE_*
 *     u16 fd     the child's fd for DATA, EOF, CREDIT and CLOSE_OUTPUT; 0 otherwise
 *     u32 chan   the command's channel for channel frames; 0 otherwise
 *
 * Payload fields are fixed-width integers and strings (u32 length + bytes, no NUL). Every
 * decoder checks every length against the payload and the limits below and fails with a
 * message; nothing is trusted on the host side. The encoders are used by both ends.
 */
#ifndef SBX_SYNC_WIRE_H
#define SBX_SYNC_WIRE_H

#include "common/bytes.h"
#include "common/strbuf.h"
#include "common/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYNC_PROTOCOL_VERSION 6
#define WIRE_MAGIC 0x31584253u         /* "SBX1" little-endian */
#define WIRE_HEADER 12

/* Limits. A frame or field over a limit is a protocol error. */
#define SYNC_MAX_FRAME (1u << 20)      /* payload bytes */
#define SYNC_CHUNK (256u * 1024)       /* file content per CHUNK frame (and inline) */
#define SYNC_MAX_PATH 4096             /* relative path bytes */
#define SYNC_MAX_NAME 255              /* one path component */
#define SYNC_MAX_DEPTH 256             /* path components */
#define SYNC_MAX_LINK 4095             /* symlink target bytes */
#define SYNC_MAX_ARGS 65536            /* argv and env entries (the frame bounds their bytes) */
#define SYNC_MAX_ROOTS 1024
#define SYNC_MAX_EXCLUDES 4096
#define SYNC_MAX_TEXT 1024             /* warning and error messages */
#define SYNC_INPUT_WINDOW (256u * 1024) /* unconsumed input bytes per (channel, fd) */
/* Unconsumed output bytes per (channel, fd); the same definition as in conn.h. */
#define SYNC_OUTPUT_WINDOW (256u * 1024)
#define WIRE_MAX_FDS 16                /* fd map entries (SYNC_MAX_FDS) */
/* The longest HOLE a sender sends in one frame (the receiver takes any length within the
 * entry): receiving one means hashing its zeros, so pieces keep a receiver's turns short. */
#define SYNC_HOLE_PIECE (256u << 20)

enum wire_type {
    /* both ways */
    WIRE_HELLO = 1,
    WIRE_DATA = 2,          /* chan, fd; bytes */
    WIRE_EOF = 3,           /* chan, fd */
    WIRE_CREDIT = 4,        /* chan, fd; u32 bytes consumed */
    WIRE_DELTA_BEGIN = 5,   /* u64 seq, u64 acked push seq (agent) */
    WIRE_ENTRY = 6,         /* one path of a delta (+ inline content) */
    WIRE_CHUNK = 7,         /* more content of the current entry */
    WIRE_ENTRY_CANCEL = 8,  /* the sender could not read the rest: drop the entry */
    WIRE_DELTA_END = 9,     /* u64 seq, u64 entries */
    WIRE_HOLE = 10,         /* u64 n: the current entry's next n content bytes are zeros */
    /* host -> agent */
    WIRE_CONFIG = 20,
    WIRE_RUN = 21,          /* chan */
    WIRE_SIGNAL = 22,       /* chan; u32 signo */
    WIRE_WINSIZE = 23,      /* chan; u16 rows, u16 cols */
    WIRE_CLOSE_OUTPUT = 24, /* chan, fd */
    WIRE_SYNC = 25,         /* u64 id */
    WIRE_PUT_FILE = 26,     /* u32 mode, str path, content */
    WIRE_PULL_CANCEL = 27,  /* u64 seq: the host dropped that pull delta; end it now */
    /* agent -> host */
    WIRE_EXIT = 40,         /* chan; u8 kind, u8 core, i32 code, str message, u8 full */
    WIRE_SYNC_DONE = 41,    /* u64 id, u8 full */
    WIRE_WARN = 42,         /* text */
    WIRE_SIGNALED = 43,     /* chan; u32 signo: a SIGNAL was handled (version 6) */
};

const char *wire_type_name(unsigned type);

typedef struct wire_frame {
    uint16_t type;
    uint16_t fd;
    uint32_t chan;
    uint32_t len;
    const uint8_t *payload;
} wire_frame;

/* Looks for one complete frame at the start of buf. Returns 1 and fills *f (payload points
 * into buf; the frame is WIRE_HEADER + f->len bytes), 0 when more bytes are needed, or -1
 * when the header is invalid (oversized, unknown type). */
int wire_parse(const uint8_t *buf, size_t avail, wire_frame *f, sbx_err *err);

/* ---- encoding: append to a strbuf ----------------------------------------------------------
 * size_t at = wire_begin(out, WIRE_RUN, 0, chan); wire_u32(out, ...); ...; wire_end(out, at);
 */
size_t wire_begin(strbuf *out, unsigned type, unsigned fd, uint32_t chan);
void wire_end(strbuf *out, size_t at);
/* common/bytes.h's writer under the protocol's names */
static inline void wire_u8(strbuf *out, uint8_t v) { strbuf_addch(out, v); }
static inline void wire_u16(strbuf *out, uint16_t v) { sbx_add_le16(out, v); }
static inline void wire_u32(strbuf *out, uint32_t v) { sbx_add_le32(out, v); }
static inline void wire_u64(strbuf *out, uint64_t v) { sbx_add_le64(out, v); }
static inline void wire_str(strbuf *out, const char *s, size_t len) { sbx_add_lestr(out, s, len); }
void wire_cstr(strbuf *out, const char *s);
/* A frame with no payload, or with raw bytes as its payload. */
void wire_frame_raw(strbuf *out, unsigned type, unsigned fd, uint32_t chan,
                    const void *data, size_t len);

/* ---- decoding: a bounded reader over one payload (common/bytes.h's) --------------------- */
typedef sbx_rd wire_rd;

static inline void wire_rd_init(wire_rd *r, const void *p, size_t len)
{
    sbx_rd_init(r, p, len);
}
static inline uint8_t wire_get_u8(wire_rd *r) { return sbx_rd_u8(r); }
static inline uint16_t wire_get_u16(wire_rd *r) { return sbx_rd_u16(r); }
static inline uint32_t wire_get_u32(wire_rd *r) { return sbx_rd_u32(r); }
static inline uint64_t wire_get_u64(wire_rd *r) { return sbx_rd_u64(r); }
/* A string of at most max bytes: *s points into the payload (not NUL-terminated). */
static inline bool wire_get_str(wire_rd *r, size_t max, const char **s, size_t *len)
{
    return sbx_rd_str(r, max, s, len);
}

/* ---- messages ------------------------------------------------------------------------------- */

typedef struct wire_hello {
    uint32_t magic;
    uint16_t version;
    uint64_t pair_id;           /* agent: the host manifest its state pairs with (0: none) */
    uint64_t applied_push_seq;  /* agent: the last host delta it applied */
    uint32_t pid;
    const char *about;
    size_t about_len;
} wire_hello;
void wire_put_hello(strbuf *out, const wire_hello *h);
int wire_get_hello(const wire_frame *f, wire_hello *h, sbx_err *err);

enum wire_root_kind {
    WIRE_ROOT_CODE = 1,   /* a code directory: both ways, .git allowlists */
    WIRE_ROOT_PATH = 2,   /* a sync path: base directory + glob pattern, both ways */
    WIRE_ROOT_TASK = 3,   /* a task file: base directory + its name, pushed only */
    WIRE_ROOT_CREATE = 4, /* a create-only directory: base + its name, pushed; new files
                           * the sandbox adds come back, nothing the host has changes */
};

typedef struct wire_root {
    uint8_t kind;
    const char *base;     /* absolute directory */
    size_t base_len;
    const char *pattern;  /* relative glob (PATH, TASK), empty for CODE */
    size_t pattern_len;
} wire_root;

typedef struct wire_config {
    uint64_t pair_id;
    bool reset;           /* forget the agent's manifest: this is a first sync */
    uint64_t push_seq;    /* the host's last push seq before this connection */
    uint64_t pull_seq;    /* the last agent delta the host applied (older ones are resent) */
    uint32_t nroots;
    wire_root *roots;     /* decoded: malloc'd array, free with wire_config_release() */
    uint32_t nexcludes;
    const char **excludes;
    size_t *exclude_lens;
} wire_config;
void wire_put_config(strbuf *out, const wire_config *c);
int wire_get_config(const wire_frame *f, wire_config *c, sbx_err *err);
void wire_config_release(wire_config *c);

enum { WIRE_RUN_TTY = 1, WIRE_RUN_PULL = 2 };

enum { WIRE_FD_IN = 0, WIRE_FD_OUT = 1, WIRE_FD_OUT_SHARED = 2 };

typedef struct wire_run {
    uint32_t flags;
    uint16_t rows, cols;
    const char *exe;
    const char *cwd;
    size_t argc, envc, nfds;
    /* decoded: NUL-terminated copies in one allocation; free with wire_run_release() */
    char **argv, **env;
    uint16_t fd[WIRE_MAX_FDS];
    /* WIRE_FD_IN, WIRE_FD_OUT, or WIRE_FD_OUT_SHARED: the child writes it on the
     * pipe of the nearest WIRE_FD_OUT before it in the map (2 on 1's pipe, as in
     * `>file 2>&1`, so the two streams keep their order) */
    uint8_t fd_out[WIRE_MAX_FDS];
    void *mem;
} wire_run;
/* Encodes from the public request type's parts. */
void wire_put_run(strbuf *out, uint32_t chan, uint32_t flags, uint16_t rows, uint16_t cols,
                  const char *exe, const char *cwd, const char *const *argv,
                  const char *const *env, const uint16_t *fds, const uint8_t *fd_out,
                  size_t nfds);
int wire_get_run(const wire_frame *f, wire_run *r, sbx_err *err);
void wire_run_release(wire_run *r);

enum wire_op { WIRE_OP_PUT = 1, WIRE_OP_DELETE = 2 };
enum wire_ftype { WIRE_REG = 1, WIRE_DIR = 2, WIRE_LNK = 3 };
enum { WIRE_ENTRY_EXEC = 1 };

typedef struct wire_entry {
    uint8_t op;
    uint8_t ftype;
    uint16_t root;
    uint32_t flags;
    int64_t mtime_ns;
    uint64_t size;          /* REG: content bytes; LNK: target bytes; DIR: 0 */
    const char *path;       /* relative to the root; validated by the receiver (its
                             * length too: the decoder bounds it only by the frame) */
    size_t path_len;
    const uint8_t *data;    /* LNK: the target; REG: the first inline_len content bytes */
    size_t data_len;
} wire_entry;
/* Encodes the entry header; the caller appends up to size inline content bytes (REG) or the
 * target (LNK) and calls wire_end(). */
size_t wire_put_entry_begin(strbuf *out, const wire_entry *e);
int wire_get_entry(const wire_frame *f, wire_entry *e, sbx_err *err);

/* The "full" byte of EXIT and SYNC_DONE (version 5): which of the sandbox's spaces the
 * agent found full as the round ended (statfs: no block left, or no inode where the file
 * system counts them), so that the host can name the limit behind a bare ENOSPC. Only
 * these bits: the host reads it as a number, never as text. */
enum { WIRE_FULL_CODE = 1, WIRE_FULL_TMP = 2, WIRE_FULL_HOME = 4, WIRE_FULL_ALL = 7 };

typedef struct wire_exit {
    uint8_t kind;       /* sync_exit_kind */
    uint8_t core;
    int32_t code;
    const char *message;
    size_t message_len;
    uint8_t full;       /* WIRE_FULL_* bits */
} wire_exit;
void wire_put_exit(strbuf *out, uint32_t chan, const wire_exit *x);
int wire_get_exit(const wire_frame *f, wire_exit *x, sbx_err *err);
void wire_put_sync_done(strbuf *out, uint64_t id, uint8_t full);
int wire_get_sync_done(const wire_frame *f, uint64_t *id, uint8_t *full, sbx_err *err);

typedef struct wire_put_file {
    uint32_t mode;
    const char *path;
    size_t path_len;
    const uint8_t *data;
    size_t len;
} wire_put_file;
int wire_get_put_file(const wire_frame *f, wire_put_file *p, sbx_err *err);

/* HOLE: n zero bytes of the current file's content that the sender's file does not store (a
 * hole found with SEEK_HOLE), so that a sparse file costs the receiver what it costs the
 * sender. n is at least 1; the receiver checks it against what the entry has left. */
void wire_put_hole(strbuf *out, uint64_t n);
int wire_get_hole(const wire_frame *f, uint64_t *n, sbx_err *err);

/* u64 payloads (DELTA_BEGIN's two, DELTA_END's two, SYNC, SYNC_DONE). */
int wire_get_u64_pair(const wire_frame *f, uint64_t *a, uint64_t *b, sbx_err *err);
int wire_get_u64_one(const wire_frame *f, uint64_t *a, sbx_err *err);
/* u32 payloads (CREDIT, SIGNAL) and WINSIZE. */
int wire_get_u32_one(const wire_frame *f, uint32_t *a, sbx_err *err);
int wire_get_winsize(const wire_frame *f, uint16_t *rows, uint16_t *cols, sbx_err *err);

/* Copies untrusted text (at most SYNC_MAX_TEXT bytes of it) for display, NUL-terminated into
 * out (size outsz): the sanitizer of every sbxsh message (common/report.h), which shows
 * controls and invalid UTF-8 as \xNN and keeps printable text, non-ASCII names included. */
void wire_sanitize(char *out, size_t outsz, const void *text, size_t len);

#endif
