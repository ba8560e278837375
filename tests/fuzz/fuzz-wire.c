/*
 * libFuzzer driver for what the host decodes from a (hostile) agent: the input is a byte
 * stream of frames, split by wire_parse(); every frame goes through its decoder, and delta
 * frames through the host-side applier on a scratch code directory (so paths, policies,
 * staging, commits and aborts all see fuzzed data). Nothing may crash, leak, or write
 * outside the scratch directory's root.
 *
 *   make fuzz-wire FUZZ_SECONDS=300
 */
#include "sync/delta.h"
#include "sync/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static mf_tree *tree;
static char root[64];

static void quiet(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

static void decode(const wire_frame *f)
{
    sbx_err err;
    switch (f->type) {
    case WIRE_HELLO: {
        wire_hello h;
        wire_get_hello(f, &h, &err);
        break;
    }
    case WIRE_CONFIG: {
        wire_config c;
        if (wire_get_config(f, &c, &err) == 0)
            wire_config_release(&c);
        break;
    }
    case WIRE_RUN: {
        wire_run r;
        if (wire_get_run(f, &r, &err) == 0)
            wire_run_release(&r);
        break;
    }
    case WIRE_EXIT: {
        wire_exit x;
        wire_get_exit(f, &x, &err);
        break;
    }
    case WIRE_PUT_FILE: {
        wire_put_file p;
        wire_get_put_file(f, &p, &err);
        break;
    }
    case WIRE_CREDIT:
    case WIRE_SIGNAL: {
        uint32_t v;
        wire_get_u32_one(f, &v, &err);
        break;
    }
    case WIRE_WINSIZE: {
        uint16_t r, c;
        wire_get_winsize(f, &r, &c, &err);
        break;
    }
    case WIRE_HOLE: {
        uint64_t n;
        wire_get_hole(f, &n, &err);
        break;
    }
    case WIRE_SYNC: {
        uint64_t v;
        wire_get_u64_one(f, &v, &err);
        break;
    }
    case WIRE_SYNC_DONE: {
        uint64_t v;
        uint8_t full;
        wire_get_sync_done(f, &v, &full, &err);
        break;
    }
    case WIRE_WARN: {
        char text[SYNC_MAX_TEXT + 1];
        wire_sanitize(text, sizeof(text), f->payload, f->len);
        break;
    }
    }
}

static void remove_root(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz-wire: could not remove %s\n", root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    wire_root r = { .kind = WIRE_ROOT_CODE };
    (void)argc;
    (void)argv;
    snprintf(root, sizeof(root), "/tmp/sbx-fuzz-wire-XXXXXX");
    if (!mkdtemp(root))
        abort();
    r.base = root;
    r.base_len = strlen(root);
    tree = mf_new(&r, 1, NULL, NULL, 0, NULL);
    atexit(remove_root);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Holes make files of any size cheap to describe: the byte limit (which counts holes)
     * bounds the zeros hashed per input; the quota (32 KiB; it does not) is small enough that
     * fuzzed content reaches it, refusing deltas as a whole. */
    static int64_t disk_used;
    apply_limits lim = { .max_file_size = 1 << 16, .max_bytes = 1 << 24, .max_entries = 256,
                         .max_disk = 1 << 15, .disk_used = &disk_used };
    apply_rx *rx = apply_new(tree, APPLY_HOST, &lim, quiet, NULL);
    size_t off = 0;

    for (;;) {
        wire_frame f;
        sbx_err err;
        int r = wire_parse(data + off, size - off, &f, &err);
        if (r <= 0)
            break;
        off += WIRE_HEADER + f.len;
        decode(&f);
        if (f.type == WIRE_DELTA_BEGIN) {
            uint64_t seq, acked;
            if (wire_get_u64_pair(&f, &seq, &acked, &err) < 0 || apply_active(rx) ||
                apply_begin(rx, seq, acked, &err) < 0)
                break;
        } else if (f.type == WIRE_ENTRY || f.type == WIRE_CHUNK || f.type == WIRE_HOLE ||
                   f.type == WIRE_ENTRY_CANCEL || f.type == WIRE_DELTA_END) {
            if (apply_frame(rx, &f, &err) < 0)
                break;
        }
    }
    if (apply_active(rx))
        apply_abort(rx);
    apply_free(rx);
    disk_used = 0;   /* each input starts a session of its own */
    return 0;
}
