/*
 * libFuzzer driver for what exec.c takes from the API server (untrusted bytes): the answer
 * to the WebSocket upgrade (kube/ws.c's ws_parse_upgrade_response) and the frames after it
 * (the decoder in the client role), fed in slices of a size the input picks. Nothing may
 * crash, leak, or hand out an event that breaks the decoder's promises.
 *
 *   make fuzz-ws FUZZ_SECONDS=300
 *
 * Input: byte 0 is the mode (bit 0: the bytes start with an upgrade answer; bit 1: the
 * stream ended after them), byte 1 the slice size - 1, then the stream.
 */
#include "kube/ws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RFC 6455's example key: a seed with its Accept gets past the 101 check. */
#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define MAX_MESSAGE 4096

static const char *const protocols[] = { "v5.channel.k8s.io", "v4.channel.k8s.io", NULL };

static void decode(const uint8_t *p, size_t len, size_t slice)
{
    ws_decoder d;
    ws_decoder_init(&d, WS_CLIENT, MAX_MESSAGE);
    sbx_err err;
    bool closed = false;
    while (len) {
        size_t n = slice < len ? slice : len;
        const uint8_t *q = p;
        size_t left = n;
        while (left) {
            size_t used;
            ws_event ev;
            int r = ws_decode(&d, q, left, &used, &ev, &err);
            if (used > left)
                abort();
            q += used;
            left -= used;
            if (r < 0) {
                if (!err.msg[0] || ws_decoder_fail_code(&d) < 1000)
                    abort();
                goto out;
            }
            if (r == 0) {
                if (left)
                    abort(); /* "need more" consumes everything it was given */
                break;
            }
            if (closed)
                abort(); /* nothing after a Close */
            switch (ev.opcode) {
            case WS_TEXT: case WS_BINARY:
                if (ev.len > MAX_MESSAGE)
                    abort();
                break;
            case WS_PING: case WS_PONG:
                if (ev.len > WS_MAX_CONTROL)
                    abort();
                break;
            case WS_CLOSE:
                if (ev.len > WS_MAX_CONTROL - 2 || ev.close_code < 1000 || ev.close_code > 4999)
                    abort();
                closed = true;
                break;
            default:
                abort();
            }
            /* Touch every byte handed out (ASan checks they are ours). */
            volatile uint8_t sum = 0;
            for (size_t i = 0; i < ev.len; i++)
                sum ^= ev.data[i];
            (void)sum;
        }
        p += n;
        len -= n;
    }
out:
    ws_decoder_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned mode = data[0];
    size_t slice = (size_t)data[1] + 1;
    data += 2;
    size -= 2;
    if (mode & 1) {
        ws_upgrade_result res;
        sbx_err err;
        int r = ws_parse_upgrade_response(data, size, mode & 2, KEY, protocols, &res, &err);
        if (r < 0 && !err.msg[0])
            abort();
        if (r != 1)
            return 0;
        if (res.head_len > size || res.status != 101 ||
            (strcmp(res.protocol, protocols[0]) && strcmp(res.protocol, protocols[1])))
            abort();
        data += res.head_len;
        size -= res.head_len;
    }
    decode(data, size, slice);
    return 0;
}
