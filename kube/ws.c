/*
 * RFC 6455 framing (see ws.h). Everything the peer sends is untrusted: every length is
 * checked before it is used, nothing is allocated on a length the peer merely declared.
 */
#include "kube/ws.h"
#include "common/base64.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *ws_close_code_name(unsigned code)
{
    switch (code) {
    case 1000: return "normal closure";
    case 1001: return "going away";
    case 1002: return "protocol error";
    case 1003: return "unsupported data";
    case 1005: return "no status code";
    case 1006: return "connection lost";
    case 1007: return "invalid data";
    case 1008: return "policy violation";
    case 1009: return "message too big";
    case 1010: return "extension required";
    case 1011: return "internal error";
    case 1012: return "service restart";
    case 1013: return "try again later";
    case 1014: return "bad gateway";
    default: return "unknown";
    }
}

/* Codes a peer may put in a Close frame (7.4.1, 7.4.2 and IANA's registry): 1004-1006 and
 * 1015 are reserved and never sent, below 1000 and 1016-2999 are unassigned. */
static bool close_code_valid(unsigned code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

/* ---- encoder ---------------------------------------------------------------------------- */

void ws_random(const ws_encoder *e, void *buf, size_t len)
{
    if (e->random) {
        e->random(e->random_ctx, buf, len);
        return;
    }
    if (RAND_bytes(buf, (int)len) != 1) {
        /* OpenSSL's generator failing means no entropy at all: not something to go on
         * without (a predictable mask lets a hostile page poison caches, 10.3). */
        fprintf(stderr, "sbxsh: RAND_bytes failed: no random bytes for WebSocket masks\n");
        abort();
    }
}

void ws_encodev(const ws_encoder *e, strbuf *out, unsigned opcode, bool fin,
                const struct iovec *iov, int iovcnt)
{
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    bool mask = e->role == WS_CLIENT;
    uint8_t head[14];
    size_t n = 0;
    head[n++] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
    uint8_t mbit = mask ? 0x80 : 0;
    if (len < 126) {
        head[n++] = (uint8_t)(mbit | len);
    } else if (len <= 0xffff) {
        head[n++] = mbit | 126;
        head[n++] = (uint8_t)(len >> 8);
        head[n++] = (uint8_t)len;
    } else {
        head[n++] = mbit | 127;
        for (int s = 56; s >= 0; s -= 8)
            head[n++] = (uint8_t)((uint64_t)len >> s);
    }
    uint8_t key[4] = { 0 };
    if (mask) {
        ws_random(e, key, 4);
        memcpy(head + n, key, 4);
        n += 4;
    }
    strbuf_grow(out, n + len);
    strbuf_add(out, head, n);
    size_t at = 0;
    for (int i = 0; i < iovcnt; i++) {
        const uint8_t *p = iov[i].iov_base;
        uint8_t *dst = (uint8_t *)out->buf + out->len;
        if (mask)
            for (size_t j = 0; j < iov[i].iov_len; j++, at++)
                dst[j] = p[j] ^ key[at & 3];
        else if (iov[i].iov_len)
            memcpy(dst, p, iov[i].iov_len);
        strbuf_setlen(out, out->len + iov[i].iov_len);
    }
}

void ws_encode(const ws_encoder *e, strbuf *out, unsigned opcode, bool fin, const void *data,
               size_t len)
{
    struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
    ws_encodev(e, out, opcode, fin, &iov, 1);
}

void ws_encode_close(const ws_encoder *e, strbuf *out, unsigned code, const char *reason)
{
    uint8_t p[WS_MAX_CONTROL];
    size_t n = 0;
    if (code) {
        p[n++] = (uint8_t)(code >> 8);
        p[n++] = (uint8_t)code;
        size_t rl = reason ? strlen(reason) : 0;
        if (rl > WS_MAX_CONTROL - 2)
            rl = WS_MAX_CONTROL - 2;
        /* Do not cut a UTF-8 sequence in two: back up over continuation bytes. */
        while (rl && rl < strlen(reason) && ((uint8_t)reason[rl] & 0xc0) == 0x80)
            rl--;
        if (rl)
            memcpy(p + n, reason, rl);
        n += rl;
    }
    ws_encode(e, out, WS_CLOSE, true, p, n);
}

/* ---- decoder ------------------------------------------------------------------------------
 *
 * The decoder is fed arbitrary slices of the stream (one byte at a time is as good as a
 * megabyte), so every frame is read through explicit states that remember how far it got:
 *
 *   HEAD      the 2 fixed bytes. They decide everything the rest of the frame may be (FIN,
 *             RSV, opcode, mask bit, the 7-bit length), so every rule that needs only
 *             them is checked here, before any more bytes are taken.
 *   HEAD_EXT  the extended length (2 or 8 bytes) and the masking key (4), when the fixed
 *             bytes said there are some. Kept apart from HEAD because their length is known
 *             only after HEAD; the length rules (minimal encoding, the 64-bit high bit, the
 *             message limit) are checked when it is complete, before the payload is taken.
 *   PAYLOAD   the payload, unmasked as it comes, into ctl (a control frame, at most 125
 *             bytes) or msg (a data message's fragments, appended). A control frame may sit
 *             between two fragments of a message: it goes to ctl so msg is left as it was.
 *             A frame that ends here goes back to HEAD; one that ends a message or is a
 *             control frame also returns an event.
 *   CLOSED    a Close was decoded: RFC 6455 1.4 allows nothing after it, so any byte fails.
 *   FAILED    the peer broke a rule: the stream cannot be resynchronised (a frame's length
 *             can no longer be trusted), so every later call fails with the same message.
 */
enum { ST_HEAD, ST_HEAD_EXT, ST_PAYLOAD, ST_CLOSED, ST_FAILED };

void ws_decoder_init(ws_decoder *d, ws_role role, size_t max_message)
{
    memset(d, 0, sizeof(*d));
    d->role = role;
    d->max_message = max_message;
    d->state = ST_HEAD;
    strbuf_init(&d->msg, 0);
}

void ws_decoder_release(ws_decoder *d)
{
    strbuf_release(&d->msg);
    d->state = ST_FAILED;
    snprintf(d->fail_msg, sizeof(d->fail_msg), "WebSocket decoder released");
}

unsigned ws_decoder_fail_code(const ws_decoder *d)
{
    return d->fail_code ? d->fail_code : WS_CLOSE_PROTOCOL;
}

static int fail(ws_decoder *d, unsigned code, sbx_err *err, const char *fmt, ...)
    SBX_PRINTF(4, 5);
static int fail(ws_decoder *d, unsigned code, sbx_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->fail_msg, sizeof(d->fail_msg), fmt, ap);
    va_end(ap);
    d->fail_code = code;
    d->state = ST_FAILED;
    return sbx_errf(err, "WebSocket protocol error: %s", d->fail_msg);
}

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0)
            k = 1, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0)
            k = 2, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0)
            k = 3, cp = c & 0x07, min = 0x10000;
        else
            return false;
        if (n - i <= k)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

static bool is_control(unsigned op)
{
    return op & 0x8;
}

/* The 2 fixed bytes are in: check what they alone decide. Each rule is RFC 6455's and is
 * enforced rather than tolerated because the frame boundaries are what keeps the exec
 * channels apart: reserved bits or an unknown opcode mean the two ends disagree about the
 * stream (an extension we did not agree to, or bytes out of step), a long or fragmented
 * control frame could hide data between a message's fragments, and a frame masked the
 * wrong way for its direction is not from the peer the handshake was made with (or is
 * an intermediary's replay). */
static int head_done(ws_decoder *d, sbx_err *err)
{
    uint8_t b0 = d->head[0], b1 = d->head[1];
    d->fin = b0 & 0x80;
    d->opcode = b0 & 0x0f;
    d->masked = b1 & 0x80;
    unsigned len7 = b1 & 0x7f;
    if (b0 & 0x70)
        return fail(d, WS_CLOSE_PROTOCOL, err,
                    "a frame with reserved bits set (0x%02x), but no extension was agreed",
                    b0 & 0x70);
    switch (d->opcode) {
    case WS_CONT: case WS_TEXT: case WS_BINARY:
    case WS_CLOSE: case WS_PING: case WS_PONG:
        break;
    default:
        return fail(d, WS_CLOSE_PROTOCOL, err, "a frame with the unknown opcode 0x%x",
                    d->opcode);
    }
    if (is_control(d->opcode)) {
        if (!d->fin)
            return fail(d, WS_CLOSE_PROTOCOL, err, "a fragmented control frame (opcode 0x%x)",
                        d->opcode);
        if (len7 > WS_MAX_CONTROL)
            return fail(d, WS_CLOSE_PROTOCOL, err,
                        "a control frame (opcode 0x%x) longer than 125 bytes", d->opcode);
    } else if (d->opcode == WS_CONT && !d->msg_opcode) {
        return fail(d, WS_CLOSE_PROTOCOL, err, "a continuation frame outside of any message");
    } else if (d->opcode != WS_CONT && d->msg_opcode) {
        return fail(d, WS_CLOSE_PROTOCOL, err,
                    "a new data message before the fragmented one under way ended");
    }
    if (d->role == WS_CLIENT && d->masked)
        return fail(d, WS_CLOSE_PROTOCOL, err, "a masked frame from the server");
    if (d->role == WS_SERVER && !d->masked)
        return fail(d, WS_CLOSE_PROTOCOL, err, "an unmasked frame from the client");
    d->head_need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (d->masked ? 4 : 0);
    return 0;
}

/* The whole header is in: the length rules, then get ready for the payload. A length in a
 * longer form than it needs is refused (two encodings of one frame are how a filter and a
 * receiver are made to disagree), and a message's length is checked against max_message
 * before any byte of it is stored: the peer declares, we allocate only as bytes arrive. */
static int ext_done(ws_decoder *d, sbx_err *err)
{
    unsigned len7 = d->head[1] & 0x7f;
    uint64_t len = len7;
    unsigned at = 2;
    if (len7 == 126) {
        len = (uint64_t)d->head[2] << 8 | d->head[3];
        at = 4;
        if (len < 126)
            return fail(d, WS_CLOSE_PROTOCOL, err,
                        "a 16-bit frame length (%llu) that fits in 7 bits",
                        (unsigned long long)len);
    } else if (len7 == 127) {
        len = 0;
        for (int i = 0; i < 8; i++)
            len = len << 8 | d->head[2 + i];
        at = 10;
        if (len >> 63)
            return fail(d, WS_CLOSE_PROTOCOL, err,
                        "a 64-bit frame length with its most significant bit set");
        if (len <= 0xffff)
            return fail(d, WS_CLOSE_PROTOCOL, err,
                        "a 64-bit frame length (%llu) that fits in 16 bits",
                        (unsigned long long)len);
    }
    if (d->masked)
        memcpy(d->mask, d->head + at, 4);
    if (!is_control(d->opcode) &&
        (len > d->max_message || d->msg.len > d->max_message - len))
        return fail(d, WS_CLOSE_TOO_BIG, err,
                    "a message longer than the limit of %zu bytes", d->max_message);
    d->remaining = len;
    d->frame_off = 0;
    if (is_control(d->opcode))
        d->ctl_len = 0;
    else if (d->opcode != WS_CONT)
        d->msg_opcode = d->opcode;
    d->state = ST_PAYLOAD;
    return 0;
}

/* The frame's payload is complete. Returns 1 with an event, 0 for a fragment, -1. */
static int frame_done(ws_decoder *d, ws_event *ev, sbx_err *err)
{
    d->state = ST_HEAD;
    d->head_have = 0;
    if (is_control(d->opcode)) {
        memset(ev, 0, sizeof(*ev));
        ev->opcode = d->opcode;
        ev->data = d->ctl;
        ev->len = d->ctl_len;
        if (d->opcode == WS_CLOSE) {
            if (d->ctl_len == 1)
                return fail(d, WS_CLOSE_PROTOCOL, err, "a Close frame with a 1-byte payload");
            ev->close_code = WS_CLOSE_NO_STATUS;
            if (d->ctl_len >= 2) {
                ev->close_code = (unsigned)d->ctl[0] << 8 | d->ctl[1];
                if (!close_code_valid(ev->close_code))
                    return fail(d, WS_CLOSE_PROTOCOL, err, "a Close frame with the code %u",
                                ev->close_code);
                ev->data = d->ctl + 2;
                ev->len = d->ctl_len - 2;
                if (!utf8_valid(ev->data, ev->len))
                    return fail(d, WS_CLOSE_INVALID_DATA, err,
                                "a Close frame whose reason is not UTF-8");
            }
            d->state = ST_CLOSED;
        }
        return 1;
    }
    if (!d->fin)
        return 0;
    memset(ev, 0, sizeof(*ev));
    ev->opcode = d->msg_opcode;
    ev->data = (const uint8_t *)d->msg.buf;
    ev->len = d->msg.len;
    d->msg_opcode = 0;
    d->msg_delivered = true;
    if (ev->opcode == WS_TEXT && !utf8_valid(ev->data, ev->len))
        return fail(d, WS_CLOSE_INVALID_DATA, err, "a text message that is not UTF-8");
    return 1;
}

/* The decoder's loop over the states above, as many bytes as are there: it returns at
 * the first complete event (1, with *used the bytes taken; the caller calls again with
 * the rest), when the bytes run out (0), or at a violation (-1, and FAILED for good). A
 * control frame is delivered between a message's fragments, as RFC 6455 allows. */
int ws_decode(ws_decoder *d, const void *buf, size_t len, size_t *used, ws_event *ev,
              sbx_err *err)
{
    const uint8_t *p = buf;
    size_t i = 0;
    *used = 0;
    if (d->msg_delivered) {
        /* The last message was handed out and is no longer needed; a big one's memory
         * goes back rather than staying for the life of the stream. */
        if (d->msg.alloc > (1u << 20))
            strbuf_release(&d->msg);
        else
            strbuf_reset(&d->msg);
        d->msg_delivered = false;
    }
    for (;;) {
        switch (d->state) {
        case ST_FAILED:
            return sbx_errf(err, "WebSocket protocol error: %s", d->fail_msg);
        case ST_CLOSED:
            if (i < len) {
                *used = i;
                return fail(d, WS_CLOSE_PROTOCOL, err, "bytes after the Close frame");
            }
            *used = i;
            return 0;
        case ST_HEAD:
            while (d->head_have < 2 && i < len)
                d->head[d->head_have++] = p[i++];
            if (d->head_have < 2) {
                *used = i;
                return 0;
            }
            if (head_done(d, err) < 0) {
                *used = i;
                return -1;
            }
            d->state = ST_HEAD_EXT;
            break;
        case ST_HEAD_EXT:
            while (d->head_have < d->head_need && i < len)
                d->head[d->head_have++] = p[i++];
            if (d->head_have < d->head_need) {
                *used = i;
                return 0;
            }
            if (ext_done(d, err) < 0) {
                *used = i;
                return -1;
            }
            break;
        case ST_PAYLOAD: {
            size_t n = len - i;
            if (n > d->remaining)
                n = (size_t)d->remaining;
            uint8_t *dst;
            if (is_control(d->opcode)) {
                dst = d->ctl + d->ctl_len;
                d->ctl_len += (unsigned)n;
            } else {
                strbuf_grow(&d->msg, n);
                dst = (uint8_t *)d->msg.buf + d->msg.len;
                strbuf_setlen(&d->msg, d->msg.len + n);
            }
            if (d->masked)
                for (size_t j = 0; j < n; j++)
                    dst[j] = p[i + j] ^ d->mask[(d->frame_off + j) & 3];
            else if (n)
                memcpy(dst, p + i, n);
            i += n;
            d->frame_off += n;
            d->remaining -= n;
            if (d->remaining) {
                *used = i;
                return 0;
            }
            int r = frame_done(d, ev, err);
            if (r != 0) {
                *used = i;
                return r;
            }
            break;
        }
        }
    }
}

/* ---- the upgrade -------------------------------------------------------------------------- */

/* base64 into a fixed buffer of at least 4 * ceil(n / 3) + 1 bytes (common/base64.h) */
static void base64(const uint8_t *in, size_t n, char *out)
{
    strbuf sb = STRBUF_INIT;
    sbx_base64_encode(in, n, &sb);
    memcpy(out, sb.buf, sb.len + 1);
    strbuf_release(&sb);
}

void ws_make_key(const ws_encoder *e, char key[WS_KEY_LEN + 1])
{
    uint8_t raw[16];
    ws_random(e, raw, sizeof(raw));
    base64(raw, sizeof(raw), key);
}

void ws_accept_key(const char *key, char out[WS_ACCEPT_LEN + 1])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c)
        xdie_oom();
    if (EVP_DigestInit_ex(c, EVP_sha1(), NULL) != 1 ||
        EVP_DigestUpdate(c, key, strlen(key)) != 1 ||
        EVP_DigestUpdate(c, guid, sizeof(guid) - 1) != 1 ||
        EVP_DigestFinal_ex(c, md, &mdlen) != 1 || mdlen != 20) {
        /* Only a broken libcrypto fails here; an empty answer then mismatches any real
         * Accept, so the upgrade fails rather than passing unchecked. */
        out[0] = '\0';
    } else {
        base64(md, 20, out);
    }
    EVP_MD_CTX_free(c);
}

static bool has_crlf(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* The HTTP/1.1 upgrade request. A CR or LF in any field (a host, a path, a header from a
 * kubeconfig) is refused: it would end the header and let whatever follows be read as
 * another header or request (header injection, request splitting). */
int ws_upgrade_request(strbuf *out, const char *host, const char *path, const char *key,
                       const char *const *protocols, const char *const *headers,
                       sbx_err *err)
{
    if (has_crlf(host) || has_crlf(path) || strchr(path, ' '))
        return sbx_errf(err, "the WebSocket request's host or path holds a space, CR or LF");
    strbuf_addf(out, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Key: %s\r\n", path, host, key);
    if (protocols && protocols[0]) {
        strbuf_addstr(out, "Sec-WebSocket-Protocol: ");
        for (size_t i = 0; protocols[i]; i++) {
            if (has_crlf(protocols[i]))
                return sbx_errf(err, "a WebSocket subprotocol name holds CR or LF");
            strbuf_addf(out, "%s%s", i ? ", " : "", protocols[i]);
        }
        strbuf_addstr(out, "\r\n");
    }
    for (size_t i = 0; headers && headers[i]; i++) {
        if (has_crlf(headers[i]) || !strchr(headers[i], ':'))
            return sbx_errf(err, "a request header (%.*s...) holds CR or LF, or no colon",
                            (int)strcspn(headers[i], ":\r\n"), headers[i]);
        strbuf_addf(out, "%s\r\n", headers[i]);
    }
    strbuf_addstr(out, "\r\n");
    return 0;
}

/* A header's value (trimmed), its name matched case-insensitively; the first one, and in
 * *count how many there are (a duplicated Sec-WebSocket-Accept is refused: two values are
 * two answers, one of which was not checked). */
static bool header_get(const char *head, size_t n, const char *name, const char **v,
                       size_t *vlen, int *count)
{
    size_t nl = strlen(name);
    bool found = false;
    *count = 0;
    const char *p = memchr(head, '\n', n);
    const char *end = head + n;
    while (p && p + 1 < end) {
        const char *line = p + 1;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            break;
        size_t ll = (size_t)(eol - line);
        if (ll && line[ll - 1] == '\r')
            ll--;
        if (ll > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *s = line + nl + 1, *e = line + ll;
            while (s < e && (*s == ' ' || *s == '\t'))
                s++;
            while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            if (!found) {
                *v = s;
                *vlen = (size_t)(e - s);
                found = true;
            }
            ++*count;
        }
        p = eol;
    }
    return found;
}

/* Whether the comma-separated list (v, n) holds token, case-insensitively. */
static bool list_has(const char *v, size_t n, const char *token)
{
    size_t tl = strlen(token);
    const char *end = v + n;
    while (v < end) {
        const char *c = memchr(v, ',', (size_t)(end - v));
        const char *e = c ? c : end;
        const char *s = v;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        const char *t = e;
        while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if ((size_t)(t - s) == tl && strncasecmp(s, token, tl) == 0)
            return true;
        v = c ? c + 1 : end;
    }
    return false;
}

/* A printable copy of at most max bytes, for messages quoting what the server said. */
static void quote(char *dst, size_t cap, const char *s, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < cap; i++)
        dst[j++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    dst[j] = '\0';
}

/* Decodes a chunked body; returns 1 complete (into out), 0 more needed, -1 malformed. Only
 * for a refusal's Status object, and bounded by WS_MAX_RESPONSE_BODY in total and per chunk
 * (a chunk size line over 32 bytes is malformed): a server cannot make us buffer more. */
static int dechunk(const char *p, size_t n, strbuf *out)
{
    size_t i = 0;
    for (;;) {
        const char *eol = memchr(p + i, '\n', n - i);
        if (!eol)
            return n - i > 32 ? -1 : 0;
        char *e;
        errno = 0;
        unsigned long sz = strtoul(p + i, &e, 16);
        if (e == p + i || errno || sz > WS_MAX_RESPONSE_BODY)
            return -1;
        i = (size_t)(eol - p) + 1;
        if (sz == 0)
            return 1; /* trailers ignored: the body is all there is to say */
        if (n - i < sz + 2)
            return 0;
        if (out->len + sz > WS_MAX_RESPONSE_BODY)
            return -1;
        strbuf_add(out, p + i, sz);
        i += sz;
        if (p[i] == '\r')
            i++;
        if (p[i] != '\n')
            return -1;
        i++;
    }
}

/* The error for a non-101 answer: the status and what its Status object says. */
static int refused(int status, const char *reason, size_t reason_len, const char *body,
                   size_t blen, sbx_err *err)
{
    char what[160] = "";
    cJSON *j = cJSON_ParseWithLength(body, blen);
    const cJSON *m = j ? cJSON_GetObjectItemCaseSensitive(j, "message") : NULL;
    if (cJSON_IsString(m) && m->valuestring[0])
        quote(what, sizeof(what), m->valuestring, strlen(m->valuestring));
    else if (blen)
        quote(what, sizeof(what), body, blen);
    else
        quote(what, sizeof(what), reason, reason_len);
    cJSON_Delete(j);
    return sbx_errf(err, "the API server refused the WebSocket upgrade (HTTP %d)%s%s", status,
                    what[0] ? ": " : "", what);
}

/* The server's answer to the upgrade: 0 while the head (or a refusal's body) is still
 * coming, within WS_MAX_RESPONSE_HEAD; -1 with the refusal's reason (a non-101 status,
 * quoted printable-only from its Status object), or with what a 101 lacked; 1 with res
 * filled. A 101 counts only with Upgrade, Connection and a single Sec-WebSocket-Accept
 * that matches our key: anything else is not a WebSocket server that read our request
 * (a proxy's cached or canned answer), and frames from it must not be trusted. */
int ws_parse_upgrade_response(const void *buf, size_t len, bool eof, const char *key,
                              const char *const *protocols, ws_upgrade_result *res,
                              sbx_err *err)
{
    const char *p = buf;
    memset(res, 0, sizeof(*res));
    const char *end = memmem(p, len, "\r\n\r\n", 4);
    if (!end) {
        if (len > WS_MAX_RESPONSE_HEAD)
            return sbx_errf(err, "the API server's answer to the WebSocket upgrade has a "
                            "header block longer than %d bytes", WS_MAX_RESPONSE_HEAD);
        if (eof)
            return sbx_errf(err, "the API server closed the connection %s",
                            len ? "in the middle of its answer to the WebSocket upgrade"
                                : "without answering the WebSocket upgrade");
        return 0;
    }
    size_t hl = (size_t)(end - p) + 4;
    if (hl > WS_MAX_RESPONSE_HEAD)
        return sbx_errf(err, "the API server's answer to the WebSocket upgrade has a header "
                        "block longer than %d bytes", WS_MAX_RESPONSE_HEAD);
    res->head_len = hl;
    /* Status line: HTTP/1.x NNN reason */
    const char *eol = memchr(p, '\n', hl);
    size_t sl = (size_t)(eol - p);
    if (sl && p[sl - 1] == '\r')
        sl--;
    char line[96];
    quote(line, sizeof(line), p, sl);
    if (sl < 12 || (strncmp(p, "HTTP/1.1 ", 9) != 0 && strncmp(p, "HTTP/1.0 ", 9) != 0) ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]) || (sl > 12 && p[12] != ' '))
        return sbx_errf(err, "the API server's answer to the WebSocket upgrade is not "
                        "HTTP/1.1: '%s'", line);
    res->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    const char *reason = p + (sl > 13 ? 13 : sl);
    size_t reason_len = sl > 13 ? sl - 13 : 0;
    const char *v;
    size_t vl;
    int cnt;

    if (res->status != 101) {
        /* The body is the Status object that says why: wait for all of it. */
        const char *body = p + hl;
        size_t have = len - hl;
        strbuf dec = STRBUF_INIT;
        int r;
        if (header_get(p, hl, "Transfer-Encoding", &v, &vl, &cnt) && list_has(v, vl, "chunked")) {
            int d = dechunk(body, have, &dec);
            if (d < 0) {
                strbuf_release(&dec);
                return refused(res->status, reason, reason_len, "", 0, err);
            }
            if (d == 0 && !eof) {
                strbuf_release(&dec);
                return 0;
            }
            r = refused(res->status, reason, reason_len, dec.buf, dec.len, err);
        } else if (header_get(p, hl, "Content-Length", &v, &vl, &cnt)) {
            char num[24];
            quote(num, sizeof(num), v, vl);
            char *e;
            errno = 0;
            unsigned long long cl = strtoull(num, &e, 10);
            if (e == num || *e || errno || !isdigit((unsigned char)num[0]))
                return sbx_errf(err, "the API server refused the WebSocket upgrade (HTTP %d) "
                                "with a malformed Content-Length", res->status);
            if (cl > WS_MAX_RESPONSE_BODY)
                cl = WS_MAX_RESPONSE_BODY; /* the first 64 KiB say enough */
            if (have < cl && !eof)
                return 0;
            r = refused(res->status, reason, reason_len, body, have < cl ? have : (size_t)cl,
                        err);
        } else {
            /* No length: the body ends with the connection (or at our limit). */
            if (!eof && have < WS_MAX_RESPONSE_BODY)
                return 0;
            r = refused(res->status, reason, reason_len, body,
                        have < WS_MAX_RESPONSE_BODY ? have : WS_MAX_RESPONSE_BODY, err);
        }
        strbuf_release(&dec);
        return r;
    }

    if (!header_get(p, hl, "Upgrade", &v, &vl, &cnt) || !list_has(v, vl, "websocket"))
        return sbx_errf(err, "the API server answered 101 without 'Upgrade: websocket'");
    if (!header_get(p, hl, "Connection", &v, &vl, &cnt) || !list_has(v, vl, "upgrade"))
        return sbx_errf(err, "the API server answered 101 without 'Connection: Upgrade'");
    char want[WS_ACCEPT_LEN + 1];
    ws_accept_key(key, want);
    if (!header_get(p, hl, "Sec-WebSocket-Accept", &v, &vl, &cnt))
        return sbx_errf(err, "the API server answered 101 without Sec-WebSocket-Accept");
    if (cnt != 1 || vl != WS_ACCEPT_LEN || memcmp(v, want, WS_ACCEPT_LEN) != 0) {
        char got[40];
        quote(got, sizeof(got), v, vl);
        return sbx_errf(err, "the API server's Sec-WebSocket-Accept '%s' does not match the "
                        "key sent (expected '%s')", got, want);
    }
    if (header_get(p, hl, "Sec-WebSocket-Extensions", &v, &vl, &cnt))
        return sbx_errf(err, "the API server chose a WebSocket extension, but none was offered");
    if (protocols && protocols[0]) {
        if (!header_get(p, hl, "Sec-WebSocket-Protocol", &v, &vl, &cnt))
            return sbx_errf(err, "the API server chose no WebSocket subprotocol (offered %s%s%s)",
                            protocols[0], protocols[1] ? ", " : "",
                            protocols[1] ? protocols[1] : "");
        char got[64];
        quote(got, sizeof(got), v, vl);
        for (size_t i = 0; cnt == 1 && protocols[i]; i++)
            if (strlen(protocols[i]) == vl && memcmp(protocols[i], v, vl) == 0 &&
                vl < sizeof(res->protocol)) {
                memcpy(res->protocol, v, vl);
                res->protocol[vl] = '\0';
                return 1;
            }
        return sbx_errf(err, "the API server chose the WebSocket subprotocol '%s', which was "
                        "not offered", got);
    }
    return 1;
}
