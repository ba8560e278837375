/*
 * kube/ws.c: RFC 6455 framing and the upgrade's two halves, against the RFC's own examples
 * and against every rule a peer can break.
 */
#include "kube/ws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/tap.h"

/* A deterministic random source: the bytes of a counter, so masks are known and differ. */
static void counter_random(void *ctx, void *buf, size_t len)
{
    unsigned *c = ctx;
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(++*c * 37);
}

/* A fixed key, for the RFC's masked example. */
static void rfc_random(void *ctx, void *buf, size_t len)
{
    static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)buf)[i] = key[i % 4];
}

typedef struct evlist {
    int n;
    unsigned op[16];
    size_t len[16];
    unsigned code[16];
    char *data[16];
} evlist;

static void evlist_free(evlist *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->data[i]);
    memset(l, 0, sizeof(*l));
}

/* Feeds buf in slices of step bytes (0: all at once); collects the events. Returns -1 on
 * the first error (err filled), else 0. */
static int feed(ws_decoder *d, const void *buf, size_t len, size_t step, evlist *l,
                sbx_err *err)
{
    const uint8_t *p = buf;
    while (len) {
        size_t n = step && step < len ? step : len;
        while (n) {
            size_t used;
            ws_event ev;
            int r = ws_decode(d, p, n, &used, &ev, err);
            if (r < 0)
                return -1;
            if (used > n)
                return sbx_errf(err, "used %zu of %zu", used, n);
            p += used;
            n -= used;
            len -= used;
            if (r == 1 && l->n < 16) {
                l->op[l->n] = ev.opcode;
                l->len[l->n] = ev.len;
                l->code[l->n] = ev.close_code;
                l->data[l->n] = xmalloc(ev.len + 1);
                if (ev.len)
                    memcpy(l->data[l->n], ev.data, ev.len);
                l->data[l->n][ev.len] = '\0';
                l->n++;
            } else if (r == 0 && used != 0 && n) {
                return sbx_errf(err, "decoder returned 0 with bytes left");
            }
        }
    }
    return 0;
}

static void test_accept(void)
{
    char out[WS_ACCEPT_LEN + 1];
    ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out);
    is_str(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "Sec-WebSocket-Accept of RFC 6455's example key");
    unsigned c = 0;
    ws_encoder e = { .role = WS_CLIENT, .random = counter_random, .random_ctx = &c };
    char k1[WS_KEY_LEN + 1], k2[WS_KEY_LEN + 1];
    ws_make_key(&e, k1);
    ws_make_key(&e, k2);
    ok(strlen(k1) == 24 && k1[22] == '=' && k1[23] == '=', "a key is 16 bytes in base64 (%s)", k1);
    ok(strcmp(k1, k2) != 0, "each key is fresh");
    ws_encoder dflt = { .role = WS_CLIENT };
    ws_make_key(&dflt, k1);
    ws_make_key(&dflt, k2);
    ok(strcmp(k1, k2) != 0, "the default random source (RAND_bytes) gives fresh keys");
}

static void test_rfc_examples(void)
{
    strbuf out = STRBUF_INIT;
    ws_encoder srv = { .role = WS_SERVER };
    ws_encode(&srv, &out, WS_TEXT, true, "Hello", 5);
    ok(out.len == 7 && memcmp(out.buf, "\x81\x05Hello", 7) == 0,
       "an unmasked text frame is RFC 6455 5.7's example");
    strbuf_reset(&out);
    ws_encoder cli = { .role = WS_CLIENT, .random = rfc_random };
    ws_encode(&cli, &out, WS_TEXT, true, "Hello", 5);
    ok(out.len == 11 &&
           memcmp(out.buf, "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11) == 0,
       "a masked text frame is RFC 6455 5.7's example");

    ws_decoder d;
    ws_decoder_init(&d, WS_SERVER, 1 << 20);
    evlist l = { 0 };
    sbx_err err;
    ok(feed(&d, out.buf, out.len, 0, &l, &err) == 0 && l.n == 1 && l.op[0] == WS_TEXT &&
           strcmp(l.data[0], "Hello") == 0,
       "the server role unmasks it");
    ws_decoder_release(&d);
    evlist_free(&l);

    /* Fragmented "Hel" + "lo" with a ping between (5.4 allows control frames there). */
    static const uint8_t frag[] = { 0x01, 0x03, 'H', 'e', 'l', 0x89, 0x02, 'h', 'i',
                                    0x80, 0x02, 'l', 'o' };
    for (size_t step = 0; step <= 1; step++) {
        ws_decoder_init(&d, WS_CLIENT, 1 << 20);
        int r = feed(&d, frag, sizeof(frag), step, &l, &err);
        ok(r == 0 && l.n == 2 && l.op[0] == WS_PING && strcmp(l.data[0], "hi") == 0 &&
               l.op[1] == WS_TEXT && strcmp(l.data[1], "Hello") == 0,
           "a fragmented message with a ping between its fragments (%s): ping, then 'Hello'",
           step ? "byte at a time" : "at once");
        ws_decoder_release(&d);
        evlist_free(&l);
    }
    strbuf_release(&out);
}

/* Encode in one role, decode in the other, at the sizes where the length encoding changes. */
static void test_round_trips(void)
{
    static const size_t sizes[] = { 0, 1, 125, 126, 65535, 65536, 1 << 20 };
    static const size_t head[] = { 2, 2, 2, 4, 4, 10, 10 };
    unsigned c = 0;
    uint8_t *payload = xmalloc(1 << 20);
    for (size_t i = 0; i < (1 << 20); i++)
        payload[i] = (uint8_t)(i * 7 + (i >> 8));
    for (int role = 0; role < 2; role++) {
        ws_encoder e = { .role = role ? WS_SERVER : WS_CLIENT, .random = counter_random,
                         .random_ctx = &c };
        for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
            strbuf out = STRBUF_INIT;
            ws_encode(&e, &out, WS_BINARY, true, payload, sizes[s]);
            size_t want = head[s] + (role ? 0 : 4) + sizes[s];
            bool masked = (uint8_t)out.buf[1] & 0x80;
            bool same = sizes[s] == 0 ||
                        memcmp(out.buf + want - sizes[s], payload, sizes[s]) == 0;
            ok(out.len == want && masked == !role && (role ? same : (sizes[s] < 4 || !same)),
               "%s frame of %zu bytes: %zu bytes on the wire, %s", role ? "server" : "client",
               sizes[s], want, role ? "unmasked" : "masked");
            ws_decoder d;
            ws_decoder_init(&d, role ? WS_CLIENT : WS_SERVER, 1 << 20);
            evlist l = { 0 };
            sbx_err err;
            int r = feed(&d, out.buf, out.len, 0, &l, &err);
            ok(r == 0 && l.n == 1 && l.op[0] == WS_BINARY && l.len[0] == sizes[s] &&
                   (sizes[s] == 0 || memcmp(l.data[0], payload, sizes[s]) == 0),
               "... decodes back to the same %zu bytes%s%s", sizes[s], r ? ": " : "",
               r ? err.msg : "");
            evlist_free(&l);
            if (sizes[s] == 65536) {
                /* Byte at a time, and split as two fragments of a message. */
                r = feed(&d, out.buf, out.len, 1, &l, &err);
                ok(r == 0 && l.n == 1 && l.len[0] == 65536 &&
                       memcmp(l.data[0], payload, 65536) == 0,
                   "... and fed one byte at a time");
                evlist_free(&l);
                strbuf_reset(&out);
                ws_encode(&e, &out, WS_BINARY, false, payload, 30000);
                ws_encode(&e, &out, WS_PING, true, "p", 1);
                ws_encode(&e, &out, WS_CONT, false, payload + 30000, 30000);
                ws_encode(&e, &out, WS_CONT, true, payload + 60000, 5536);
                r = feed(&d, out.buf, out.len, 777, &l, &err);
                ok(r == 0 && l.n == 2 && l.op[0] == WS_PING && l.op[1] == WS_BINARY &&
                       l.len[1] == 65536 && memcmp(l.data[1], payload, 65536) == 0,
                   "... and as three fragments with a ping between, in 777-byte slices");
                evlist_free(&l);
            }
            ws_decoder_release(&d);
            strbuf_release(&out);
        }
    }
    /* Masks are fresh per frame. */
    ws_encoder e = { .role = WS_CLIENT, .random = counter_random, .random_ctx = &c };
    strbuf a = STRBUF_INIT, b = STRBUF_INIT;
    ws_encode(&e, &a, WS_BINARY, true, "same", 4);
    ws_encode(&e, &b, WS_BINARY, true, "same", 4);
    ok(a.len == b.len && memcmp(a.buf + 2, b.buf + 2, 4) != 0 && memcmp(a.buf, b.buf, a.len),
       "two client frames of the same payload have different masking keys");
    strbuf_release(&a);
    strbuf_release(&b);
    free(payload);
}

static void test_close(void)
{
    ws_encoder e = { .role = WS_SERVER };
    strbuf out = STRBUF_INIT;
    ws_encode_close(&e, &out, 1000, "bye");
    ws_decoder d;
    ws_decoder_init(&d, WS_CLIENT, 1 << 20);
    evlist l = { 0 };
    sbx_err err;
    ok(feed(&d, out.buf, out.len, 0, &l, &err) == 0 && l.n == 1 && l.op[0] == WS_CLOSE &&
           l.code[0] == 1000 && strcmp(l.data[0], "bye") == 0,
       "a Close reports its code (1000) and reason");
    evlist_free(&l);
    int r = feed(&d, "\x82\x00", 2, 0, &l, &err);
    ok(r < 0 && strstr(err.msg, "after the Close"), "a frame after the Close is refused: %s",
       err.msg);
    ws_decoder_release(&d);
    strbuf_reset(&out);
    ws_encode_close(&e, &out, 0, NULL);
    ok(out.len == 2 && memcmp(out.buf, "\x88\x00", 2) == 0, "code 0 gives an empty Close");
    ws_decoder_init(&d, WS_CLIENT, 1 << 20);
    ok(feed(&d, out.buf, out.len, 0, &l, &err) == 0 && l.n == 1 && l.code[0] == 1005,
       "an empty Close reports 1005 (no status)");
    evlist_free(&l);
    ws_decoder_release(&d);
    strbuf_reset(&out);
    char longr[300];
    memset(longr, 'x', sizeof(longr) - 1);
    longr[sizeof(longr) - 1] = '\0';
    ws_encode_close(&e, &out, 1011, longr);
    ok(out.len == 2 + 125 && (uint8_t)out.buf[1] == 125, "a long reason is cut to 125 bytes");
    ws_decoder_init(&d, WS_CLIENT, 1 << 20);
    ok(feed(&d, out.buf, out.len, 0, &l, &err) == 0 && l.code[0] == 1011 && l.len[0] == 123,
       "... and decodes (code 1011)");
    is_str(ws_close_code_name(1011), "internal error", "1011 is named");
    evlist_free(&l);
    ws_decoder_release(&d);
    strbuf_release(&out);
}

typedef struct bad {
    ws_role role;
    const char *bytes;
    size_t len;
    const char *why;
    unsigned code;
} bad;

static void test_violations(void)
{
    static const bad cases[] = {
        { WS_CLIENT, "\xc2\x00", 2, "reserved bits", 1002 },
        { WS_CLIENT, "\xa2\x00", 2, "reserved bits", 1002 },
        { WS_CLIENT, "\x92\x00", 2, "reserved bits", 1002 },
        { WS_CLIENT, "\x83\x00", 2, "unknown opcode 0x3", 1002 },
        { WS_CLIENT, "\x87\x00", 2, "unknown opcode 0x7", 1002 },
        { WS_CLIENT, "\x8b\x00", 2, "unknown opcode 0xb", 1002 },
        { WS_CLIENT, "\x8f\x00", 2, "unknown opcode 0xf", 1002 },
        { WS_CLIENT, "\x09\x00", 2, "fragmented control frame", 1002 },
        { WS_CLIENT, "\x08\x00", 2, "fragmented control frame", 1002 },
        { WS_CLIENT, "\x89\x7e\x00\x7e", 4, "longer than 125", 1002 },
        { WS_CLIENT, "\x8a\x7f", 2, "longer than 125", 1002 },
        { WS_CLIENT, "\x82\x80\x01\x02\x03\x04", 6, "masked frame from the server", 1002 },
        { WS_SERVER, "\x82\x00", 2, "unmasked frame from the client", 1002 },
        { WS_CLIENT, "\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x00", 10, "most significant bit",
          1002 },
        { WS_CLIENT, "\x82\x7e\x00\x05", 4, "fits in 7 bits", 1002 },
        { WS_CLIENT, "\x82\x7f\x00\x00\x00\x00\x00\x00\x01\x00", 10, "fits in 16 bits", 1002 },
        { WS_CLIENT, "\x82\x7f\x00\x00\x00\x00\x00\x10\x00\x01", 10, "limit", 1009 },
        { WS_CLIENT, "\x02\x7e\x08\x00", 4, "limit", 1009 }, /* 2048 > the 1024 limit */
        { WS_CLIENT, "\x80\x01x", 3, "continuation frame outside", 1002 },
        { WS_CLIENT, "\x02\x01x\x82\x01y", 6, "new data message", 1002 },
        { WS_CLIENT, "\x02\x01x\x01\x01y", 6, "new data message", 1002 },
        { WS_CLIENT, "\x88\x01\x03", 3, "1-byte payload", 1002 },
        { WS_CLIENT, "\x88\x02\x03\xe7", 4, "code 999", 1002 },
        { WS_CLIENT, "\x88\x02\x03\xed", 4, "code 1005", 1002 },
        { WS_CLIENT, "\x88\x02\x03\xee", 4, "code 1006", 1002 },
        { WS_CLIENT, "\x88\x02\x03\xf7", 4, "code 1015", 1002 },
        { WS_CLIENT, "\x88\x02\x13\x88", 4, "code 5000", 1002 },
        { WS_CLIENT, "\x88\x04\x03\xe8\xc0\xaf", 6, "reason is not UTF-8", 1007 },
        { WS_CLIENT, "\x81\x02\xc0\xaf", 4, "not UTF-8", 1007 },
        { WS_CLIENT, "\x81\x03\xed\xa0\x80", 5, "not UTF-8", 1007 },  /* a surrogate */
        { WS_CLIENT, "\x81\x01\xe2\x80\x01\x01\x82", 7, "not UTF-8", 1007 }, /* split, bad */
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        const bad *c = &cases[i];
        if (!c->why)
            continue;
        for (size_t step = 0; step <= 1; step++) {
            ws_decoder d;
            ws_decoder_init(&d, c->role, 1024);
            evlist l = { 0 };
            sbx_err err = { "" };
            int r = feed(&d, c->bytes, c->len, step, &l, &err);
            bool named = strstr(err.msg, c->why) != NULL;
            ok(r < 0 && named && ws_decoder_fail_code(&d) == c->code,
               "refused (%s, %s): %s", step ? "byte at a time" : "at once", c->why, err.msg);
            if (!named)
                diag("expected '%s' in the message", c->why);
            sbx_err again = { "" };
            r = feed(&d, "\x82\x00", 2, 0, &l, &again);
            if (step == 0)
                ok(r < 0 && strcmp(again.msg, err.msg) == 0,
                   "... and every later call fails the same way");
            evlist_free(&l);
            ws_decoder_release(&d);
        }
    }
    /* The limit counts the fragments together. */
    ws_decoder d;
    ws_decoder_init(&d, WS_CLIENT, 1000);
    ws_encoder e = { .role = WS_SERVER };
    strbuf out = STRBUF_INIT;
    char big[600] = { 0 };
    ws_encode(&e, &out, WS_BINARY, false, big, 600);
    ws_encode(&e, &out, WS_CONT, true, big, 600);
    evlist l = { 0 };
    sbx_err err;
    ok(feed(&d, out.buf, out.len, 0, &l, &err) < 0 && strstr(err.msg, "limit of 1000") &&
           l.n == 0,
       "two fragments over the limit together are refused: %s", err.msg);
    ws_decoder_release(&d);
    /* A message exactly at the limit passes; the next one still can. */
    ws_decoder_init(&d, WS_CLIENT, 1200);
    ok(feed(&d, out.buf, out.len, 0, &l, &err) == 0 && l.n == 1 && l.len[0] == 1200,
       "fragments adding up to exactly the limit pass");
    evlist_free(&l);
    ok(feed(&d, out.buf, out.len, 0, &l, &err) == 0 && l.n == 1 && l.len[0] == 1200,
       "... and so does the next message");
    evlist_free(&l);
    ws_decoder_release(&d);
    strbuf_release(&out);
    /* Valid UTF-8 of every length passes in text. */
    ws_decoder_init(&d, WS_CLIENT, 1000);
    static const char utf[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    out = (strbuf)STRBUF_INIT;
    ws_encode(&e, &out, WS_TEXT, true, utf, sizeof(utf) - 1);
    ok(feed(&d, out.buf, out.len, 1, &l, &err) == 0 && l.n == 1 && strcmp(l.data[0], utf) == 0,
       "text with 1- to 4-byte UTF-8 sequences passes");
    evlist_free(&l);
    ws_decoder_release(&d);
    strbuf_release(&out);
}

static const char *const protos[] = { "v5.channel.k8s.io", "v4.channel.k8s.io", NULL };

static void test_request(void)
{
    strbuf r = STRBUF_INIT;
    sbx_err err;
    const char *hdrs[] = { "Authorization: Bearer abc", NULL };
    ok(ws_upgrade_request(&r, "k:6443", "/api/v1/x?y=1", "dGhlIHNhbXBsZSBub25jZQ==", protos,
                          hdrs, &err) == 0,
       "an upgrade request is built");
    is_str(r.buf,
           "GET /api/v1/x?y=1 HTTP/1.1\r\nHost: k:6443\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           "Sec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n"
           "Authorization: Bearer abc\r\n\r\n",
           "... with one Sec-WebSocket-Protocol offering v5 then v4");
    strbuf_reset(&r);
    const char *evil[] = { "Authorization: Bearer abc\r\nX-Evil: 1", NULL };
    ok(ws_upgrade_request(&r, "k", "/p", "k", protos, evil, &err) < 0 &&
           strstr(err.msg, "CR or LF"),
       "a header with CR LF in it is refused: %s", err.msg);
    strbuf_reset(&r);
    ok(ws_upgrade_request(&r, "k", "/p HTTP/1.0\r\n", "k", protos, NULL, &err) < 0,
       "a path with a space or CR LF is refused");
    strbuf_release(&r);
}

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define GOOD101 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" \
                "Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"

static int parse(const char *s, bool eof, ws_upgrade_result *res, sbx_err *err)
{
    return ws_parse_upgrade_response(s, strlen(s), eof, KEY, protos, res, err);
}

static void test_response(void)
{
    ws_upgrade_result res;
    sbx_err err;
    const char *good = GOOD101 "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n\x82\x02\x01x";
    ok(parse(good, false, &res, &err) == 1 && res.status == 101 &&
           strcmp(res.protocol, "v4.channel.k8s.io") == 0 && res.head_len == strlen(good) - 4,
       "a good 101: the protocol chosen, and where the frames start");
    /* Every prefix of the header block needs more; the whole passes. */
    size_t hl = strlen(good) - 4;
    int bad_prefix = 0;
    for (size_t i = 0; i < hl; i++)
        if (ws_parse_upgrade_response(good, i, false, KEY, protos, &res, &err) != 0)
            bad_prefix++;
    is_int(bad_prefix, 0, "every cut of the header block asks for more bytes");
    ok(ws_parse_upgrade_response(good, 40, true, KEY, protos, &res, &err) < 0 &&
           strstr(err.msg, "in the middle"),
       "an end in the middle of the answer: %s", err.msg);
    ok(ws_parse_upgrade_response(good, 0, true, KEY, protos, &res, &err) < 0 &&
           strstr(err.msg, "without answering"),
       "an end before any answer: %s", err.msg);
    ok(parse("HTTP/1.1 101 OK\r\nupgrade: WebSocket\r\nconnection: keep-alive, upgrade\r\n"
             "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
             "sec-websocket-protocol: v5.channel.k8s.io\r\n\r\n", false, &res, &err) == 1 &&
           strcmp(res.protocol, "v5.channel.k8s.io") == 0,
       "header names and the tokens' case do not matter; Connection may list more");

    static const struct { const char *resp; const char *why; } fails[] = {
        { "HTTP/1.1 101 OK\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
          "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
          "Upgrade: websocket" },
        { "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: "
          "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
          "Connection: Upgrade" },
        { "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n", "without Sec-WebSocket-Accept" },
        { "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
          "AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
          "does not match" },
        { GOOD101 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
          "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n", "does not match" },
        { GOOD101 "\r\n", "chose no WebSocket subprotocol" },
        { GOOD101 "Sec-WebSocket-Protocol: channel.k8s.io\r\n\r\n", "not offered" },
        { GOOD101 "Sec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n\r\n",
          "not offered" },
        { GOOD101 "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
          "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n", "extension" },
        { "HTTP/2 101\r\n\r\n", "not HTTP/1.1" },
        { "HTTP/1.1 1x1 OK\r\n\r\n", "not HTTP/1.1" },
        { "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: 140\r\n\r\n"
          "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"pods \\\"p\\\" "
          "is forbidden: User \\\"u\\\" cannot create pods/exec\",\"code\":403}   ",
          "(HTTP 403): pods \"p\" is forbidden: User \"u\" cannot create pods/exec" },
        { "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
          "10\r\n{\"message\":\"pods\r\n"
          "d\r\n not found\"}\r\n0\r\n\r\n", "(HTTP 404): pods not found" },
        { "HTTP/1.1 500 Internal Server Error\r\n\r\nno json here", "(HTTP 500): no json here" },
        { "HTTP/1.1 400 Bad Request\r\nContent-Length: x\r\n\r\n", "malformed Content-Length" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(fails); i++) {
        err.msg[0] = '\0';
        int r = parse(fails[i].resp, true, &res, &err);
        ok(r < 0 && strstr(err.msg, fails[i].why), "refused (%s): %s", fails[i].why, err.msg);
    }
    /* A non-101 waits for its body before saying why. */
    const char *partial = "HTTP/1.1 403 Forbidden\r\nContent-Length: 30\r\n\r\n{\"message\":";
    ok(parse(partial, false, &res, &err) == 0, "a non-101 answer waits for its whole body");
    ok(parse("HTTP/1.1 500 x\r\n\r\nsome", false, &res, &err) == 0,
       "... until the end when it has no length");
    /* A header block that never ends. */
    char *huge = xmalloc(WS_MAX_RESPONSE_HEAD + 100);
    memset(huge, 'a', WS_MAX_RESPONSE_HEAD + 99);
    huge[WS_MAX_RESPONSE_HEAD + 99] = '\0';
    ok(parse(huge, false, &res, &err) < 0 && strstr(err.msg, "longer than"),
       "a header block over 64 KiB is refused: %s", err.msg);
    free(huge);
}

int main(void)
{
    test_accept();
    test_rfc_examples();
    test_round_trips();
    test_close();
    test_violations();
    test_request();
    test_response();
    return done_testing();
}
