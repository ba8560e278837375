/*
 * RFC 6455 WebSocket framing, without I/O: an encoder that appends frames to a strbuf, an
 * incremental decoder fed whatever bytes arrived, and the HTTP/1.1 upgrade's two halves
 * (the request to send, the 101 answer to check). exec.c uses it in the client role; the
 * tests use it in the server role too.
 *
 *   ws_encoder e = { .role = WS_CLIENT };           // masks with RAND_bytes keys
 *   ws_encode(&e, &out, WS_BINARY, true, "\0hi", 3);
 *
 *   ws_decoder d;
 *   ws_decoder_init(&d, WS_CLIENT, 16 << 20);       // decodes what a server sends
 *   while (len) {
 *       size_t used;
 *       int r = ws_decode(&d, buf, len, &used, &ev, &err);
 *       buf += used, len -= used;
 *       if (r < 0) ... err says which rule the peer broke; ws_decoder_fail_code() the
 *                      Close code to answer with ...
 *       if (r == 1) ... ev: a whole message, a ping, a pong or a close ...
 *   }
 *   ws_decoder_release(&d);
 */
#ifndef SBX_KUBE_WS_H
#define SBX_KUBE_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/strbuf.h"
#include "common/util.h"

/* Whose side we are on: a client masks what it sends and refuses masked frames; a server
 * sends unmasked frames and refuses unmasked ones (RFC 6455 section 5.1). */
typedef enum ws_role { WS_CLIENT, WS_SERVER } ws_role;

enum {
    WS_CONT = 0x0,
    WS_TEXT = 0x1,
    WS_BINARY = 0x2,
    WS_CLOSE = 0x8,
    WS_PING = 0x9,
    WS_PONG = 0xA,
};

#define WS_MAX_CONTROL 125 /* a control frame's payload, at most */

/* Close codes (section 7.4.1). 1005 and 1006 never travel: 1005 is what a Close without a
 * code reports, 1006 names a connection that ended without a Close. */
#define WS_CLOSE_NORMAL 1000
#define WS_CLOSE_GOING_AWAY 1001
#define WS_CLOSE_PROTOCOL 1002
#define WS_CLOSE_UNSUPPORTED 1003
#define WS_CLOSE_NO_STATUS 1005
#define WS_CLOSE_ABNORMAL 1006
#define WS_CLOSE_INVALID_DATA 1007
#define WS_CLOSE_POLICY 1008
#define WS_CLOSE_TOO_BIG 1009
#define WS_CLOSE_INTERNAL 1011

/* "normal closure", "internal error", ... or "unknown" (for messages). */
const char *ws_close_code_name(unsigned code);

/* ---- encoder -------------------------------------------------------------------------- */

/* Fills buf with len random bytes. The default (NULL) is OpenSSL's RAND_bytes; tests set
 * their own so that masked frames are reproducible. */
typedef void ws_random_fn(void *ctx, void *buf, size_t len);

typedef struct ws_encoder {
    ws_role role;           /* WS_CLIENT: every frame masked with a fresh 4-byte key */
    ws_random_fn *random;   /* NULL: RAND_bytes */
    void *random_ctx;
} ws_encoder;

void ws_random(const ws_encoder *e, void *buf, size_t len);

/* Appends one frame (fin false: a fragment; later ones are WS_CONT). The payload is the
 * concatenation of iov[0..iovcnt) (so a channel byte and its data need no copy first). */
void ws_encodev(const ws_encoder *e, strbuf *out, unsigned opcode, bool fin,
                const struct iovec *iov, int iovcnt);
void ws_encode(const ws_encoder *e, strbuf *out, unsigned opcode, bool fin, const void *data,
               size_t len);
/* A Close frame: code 0 sends none (an empty Close); the reason is cut to fit 125 bytes. */
void ws_encode_close(const ws_encoder *e, strbuf *out, unsigned code, const char *reason);

/* ---- decoder -------------------------------------------------------------------------- */

typedef struct ws_event {
    unsigned opcode;        /* WS_TEXT or WS_BINARY (a whole message, reassembled),
                               WS_PING, WS_PONG, WS_CLOSE */
    const uint8_t *data;    /* the payload (for WS_CLOSE: the reason, not NUL-terminated);
                               valid until the next ws_decode() */
    size_t len;
    unsigned close_code;    /* WS_CLOSE: the code, WS_CLOSE_NO_STATUS when it had none */
} ws_event;

typedef struct ws_decoder {
    ws_role role;           /* our role: WS_CLIENT decodes a server's (unmasked) frames */
    size_t max_message;     /* a data message's limit, fragments added up */
    int state;
    uint8_t head[14];       /* the frame header as it arrives (2 to 14 bytes) */
    unsigned head_have, head_need;
    unsigned opcode;
    bool fin, masked;
    uint8_t mask[4];
    uint64_t remaining;     /* payload bytes of this frame still to come */
    uint64_t frame_off;     /* payload bytes of this frame seen (the mask's phase) */
    strbuf msg;             /* the data message being assembled */
    unsigned msg_opcode;    /* its opcode; 0 when no message is under way */
    bool msg_delivered;     /* msg was handed out: empty it on the next call */
    uint8_t ctl[WS_MAX_CONTROL];
    unsigned ctl_len;
    unsigned fail_code;     /* the Close code the last failure calls for */
    char fail_msg[160];
} ws_decoder;

void ws_decoder_init(ws_decoder *d, ws_role role, size_t max_message);
void ws_decoder_release(ws_decoder *d);

/* Consumes bytes of buf up to the end of the next event. Returns 1 with *ev (*used bytes
 * consumed, maybe fewer than len: call again with the rest), 0 when all len bytes were
 * consumed and no event is complete yet, -1 when the peer broke the protocol (err says
 * which rule; every later call fails the same way). After a Close event, any further
 * byte is an error. */
int ws_decode(ws_decoder *d, const void *buf, size_t len, size_t *used, ws_event *ev,
              sbx_err *err);
/* After a failure: the Close code to answer with (1002, 1007 or 1009). */
unsigned ws_decoder_fail_code(const ws_decoder *d);

/* ---- the HTTP/1.1 upgrade ------------------------------------------------------------- */

#define WS_KEY_LEN 24    /* base64 of 16 random bytes */
#define WS_ACCEPT_LEN 28 /* base64 of a SHA-1 */

/* A fresh Sec-WebSocket-Key (from e's random source). */
void ws_make_key(const ws_encoder *e, char key[WS_KEY_LEN + 1]);
/* Sec-WebSocket-Accept for key: base64(SHA-1(key "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")). */
void ws_accept_key(const char *key, char out[WS_ACCEPT_LEN + 1]);

/* Appends "GET path HTTP/1.1" and its headers: Host, Upgrade, Connection,
 * Sec-WebSocket-Version 13, the key, one Sec-WebSocket-Protocol listing protocols (in
 * order of preference), then headers[] ("Name: value", NULL-terminated, may be NULL).
 * Fails when a header or the path holds CR, LF or NUL (they would split the request). */
int ws_upgrade_request(strbuf *out, const char *host, const char *path, const char *key,
                       const char *const *protocols, const char *const *headers,
                       sbx_err *err);

#define WS_MAX_RESPONSE_HEAD (64 * 1024)
#define WS_MAX_RESPONSE_BODY (64 * 1024)

typedef struct ws_upgrade_result {
    int status;             /* the HTTP status (101 on success) */
    size_t head_len;        /* the header block's length: frames start there */
    char protocol[64];      /* the subprotocol the server chose, one of protocols */
} ws_upgrade_result;

/* Parses the server's answer so far (buf, len; eof: the connection ended there).
 * Returns 1 for a valid 101 (Upgrade, Connection, the Accept matching key, a chosen
 * protocol among those offered, no extension), 0 when more bytes are needed, -1
 * otherwise: a non-101 answer (once its body is complete) says the status and the
 * message of its Status JSON body, a malformed or mismatching 101 says what is wrong. */
int ws_parse_upgrade_response(const void *buf, size_t len, bool eof, const char *key,
                              const char *const *protocols, ws_upgrade_result *res,
                              sbx_err *err);

#endif
