/* Unit tests of sync/wire.c: frames, every message's round trip, and the decoders' refusals. */
#include "sync/wire.h"
#include "tests/lib/tap.h"

#include <string.h>

static int parse_one(const strbuf *sb, wire_frame *f)
{
    sbx_err err;
    return wire_parse((const uint8_t *)sb->buf, sb->len, f, &err);
}

static void test_frames(void)
{
    strbuf sb = STRBUF_INIT;
    wire_frame f;
    sbx_err err;
    uint8_t hdr[WIRE_HEADER] = { 0 };

    wire_frame_raw(&sb, WIRE_DATA, 2, 77, "abc", 3);
    is_int(sb.len, WIRE_HEADER + 3, "a frame is a 12-byte header and its payload");
    is_int(parse_one(&sb, &f), 1, "a complete frame parses");
    is_int(f.type, WIRE_DATA, "type");
    is_int(f.fd, 2, "fd");
    is_int(f.chan, 77, "channel");
    is_int(f.len, 3, "length");
    ok(!memcmp(f.payload, "abc", 3), "payload");
    is_int(wire_parse((const uint8_t *)sb.buf, sb.len - 1, &f, &err), 0,
           "a truncated frame asks for more");
    is_int(wire_parse((const uint8_t *)sb.buf, 5, &f, &err), 0, "so does a partial header");

    hdr[4] = 99;
    is_int(wire_parse(hdr, sizeof(hdr), &f, &err), -1, "an unknown type is refused");
    ok(strstr(err.msg, "unknown frame type") != NULL, "with a message: %s", err.msg);
    hdr[4] = WIRE_CHUNK;
    hdr[0] = 0x01;
    hdr[1] = 0x00;
    hdr[2] = 0x10;   /* 1 MiB + 1 */
    is_int(wire_parse(hdr, sizeof(hdr), &f, &err), -1, "an oversized frame is refused");
    ok(strstr(err.msg, "limit") != NULL, "before its payload arrives: %s", err.msg);
    strbuf_release(&sb);
}

static void test_hello_config(void)
{
    strbuf sb = STRBUF_INIT;
    wire_frame f;
    sbx_err err;
    wire_hello h = { .version = 1, .pair_id = 0x1122334455667788ULL, .applied_push_seq = 9,
                     .pid = 42, .about = "agent", .about_len = 5 }, g;
    wire_root roots[] = { { WIRE_ROOT_CODE, "/a", 2, "", 0 },
                          { WIRE_ROOT_PATH, "/tmp", 4, "x-*", 3 } };
    const char *ex[] = { "*.o" };
    size_t exl[] = { 3 };
    wire_config c = { .pair_id = 5, .reset = true, .push_seq = 7, .pull_seq = 8, .nroots = 2,
                      .roots = roots, .nexcludes = 1, .excludes = ex, .exclude_lens = exl }, d;

    wire_put_hello(&sb, &h);
    parse_one(&sb, &f);
    is_int(wire_get_hello(&f, &g, &err), 0, "HELLO round trip");
    ok(g.pair_id == h.pair_id && g.applied_push_seq == 9 && g.pid == 42 &&
       g.about_len == 5 && !memcmp(g.about, "agent", 5), "with every field");
    ((char *)sb.buf)[WIRE_HEADER] ^= 1;
    is_int(wire_get_hello(&f, &g, &err), -1, "a HELLO without the magic is refused");

    strbuf_reset(&sb);
    wire_put_config(&sb, &c);
    parse_one(&sb, &f);
    is_int(wire_get_config(&f, &d, &err), 0, "CONFIG round trip");
    ok(d.pair_id == 5 && d.reset && d.push_seq == 7 && d.pull_seq == 8 && d.nroots == 2 &&
       d.roots[1].kind == WIRE_ROOT_PATH && d.roots[1].pattern_len == 3 && d.nexcludes == 1 &&
       !memcmp(d.excludes[0], "*.o", 3), "with its roots and excludes");
    wire_config_release(&d);
    f.len -= 1;
    is_int(wire_get_config(&f, &d, &err), -1, "a truncated CONFIG is refused");
    strbuf_release(&sb);
}

static void test_run(void)
{
    strbuf sb = STRBUF_INIT;
    wire_frame f;
    sbx_err err;
    wire_run r;
    const char *argv[] = { "bash", "-c", "echo hi", NULL };
    const char *env[] = { "A=1", "B=", NULL };
    uint16_t fds[] = { 0, 1, 2, 199 };
    uint8_t outs[] = { 0, 1, 1, 1 };

    wire_put_run(&sb, 3, WIRE_RUN_TTY, 40, 120, "/bin/bash", "/w", argv, env, fds, outs, 4);
    parse_one(&sb, &f);
    is_int(wire_get_run(&f, &r, &err), 0, "RUN round trip");
    is_str(r.exe, "/bin/bash", "exe");
    is_str(r.cwd, "/w", "cwd");
    is_int(r.argc, 3, "argc");
    is_str(r.argv[2], "echo hi", "argv");
    ok(r.argv[3] == NULL, "argv is NULL-terminated");
    is_int(r.envc, 2, "envc");
    is_str(r.env[1], "B=", "env");
    is_int(r.nfds, 4, "fd map");
    ok(r.fd[3] == 199 && r.fd_out[3] == 1, "fd 199 out");
    ok(r.rows == 40 && r.cols == 120 && (r.flags & WIRE_RUN_TTY), "tty and size");
    wire_run_release(&r);

    {
        uint16_t dup[] = { 1, 1 };
        uint8_t o2[] = { 1, 1 };
        strbuf_reset(&sb);
        wire_put_run(&sb, 3, 0, 0, 0, "x", "/", argv, env, dup, o2, 2);
        parse_one(&sb, &f);
        is_int(wire_get_run(&f, &r, &err), -1, "a fd twice in the map is refused");
    }
    {
        uint16_t two[] = { 2, 1 };
        uint8_t shared_first[] = { WIRE_FD_OUT_SHARED, WIRE_FD_OUT };
        uint8_t shared_second[] = { WIRE_FD_OUT, WIRE_FD_OUT_SHARED };
        uint8_t bad_dir[] = { WIRE_FD_OUT, 3 };
        strbuf_reset(&sb);
        wire_put_run(&sb, 3, 0, 0, 0, "x", "/", argv, env, two, shared_first, 2);
        parse_one(&sb, &f);
        is_int(wire_get_run(&f, &r, &err), -1, "a shared fd with no output fd before it is refused");
        strbuf_reset(&sb);
        wire_put_run(&sb, 3, 0, 0, 0, "x", "/", argv, env, two, shared_second, 2);
        parse_one(&sb, &f);
        is_int(wire_get_run(&f, &r, &err), 0, "a shared fd after an output fd is accepted");
        ok(r.fd_out[1] == WIRE_FD_OUT_SHARED, "and decoded as shared");
        wire_run_release(&r);
        strbuf_reset(&sb);
        wire_put_run(&sb, 3, 0, 0, 0, "x", "/", argv, env, two, bad_dir, 2);
        parse_one(&sb, &f);
        is_int(wire_get_run(&f, &r, &err), -1, "an unknown fd direction is refused");
    }
    {
        uint16_t big[] = { 1024 };
        uint8_t o1[] = { 1 };
        strbuf_reset(&sb);
        wire_put_run(&sb, 3, 0, 0, 0, "x", "/", argv, env, big, o1, 1);
        parse_one(&sb, &f);
        is_int(wire_get_run(&f, &r, &err), -1, "fd 1024 is refused");
    }
    {
        const char *none[] = { NULL };
        strbuf_reset(&sb);
        wire_put_run(&sb, 3, 0, 0, 0, "x", "/", none, env, NULL, NULL, 0);
        parse_one(&sb, &f);
        is_int(wire_get_run(&f, &r, &err), -1, "an empty argv is refused");
    }
    {
        /* A huge argc claim with a short payload must not allocate or read past the end. */
        size_t at;
        strbuf_reset(&sb);
        at = wire_begin(&sb, WIRE_RUN, 0, 1);
        wire_u32(&sb, 0);
        wire_u16(&sb, 0);
        wire_u16(&sb, 0);
        wire_cstr(&sb, "x");
        wire_cstr(&sb, "/");
        wire_u32(&sb, 0x7fffffff);
        wire_end(&sb, at);
        parse_one(&sb, &f);
        is_int(wire_get_run(&f, &r, &err), -1, "an argc larger than the payload is refused");
    }
    strbuf_release(&sb);
}

static int entry_of(strbuf *sb, const wire_entry *e, const char *data, size_t len,
                    wire_entry *out)
{
    wire_frame f;
    sbx_err err;
    size_t at;
    strbuf_reset(sb);
    at = wire_put_entry_begin(sb, e);
    strbuf_add(sb, data, len);
    wire_end(sb, at);
    parse_one(sb, &f);
    return wire_get_entry(&f, out, &err);
}

static void test_entry(void)
{
    strbuf sb = STRBUF_INIT;
    wire_entry e = { .op = WIRE_OP_PUT, .ftype = WIRE_REG, .root = 2, .flags = WIRE_ENTRY_EXEC,
                     .mtime_ns = -5, .size = 10, .path = "a/b", .path_len = 3 }, g;

    is_int(entry_of(&sb, &e, "0123", 4, &g), 0, "ENTRY round trip with inline content");
    ok(g.root == 2 && g.mtime_ns == -5 && g.size == 10 && g.data_len == 4 &&
       g.path_len == 3 && (g.flags & WIRE_ENTRY_EXEC), "every field");
    is_int(entry_of(&sb, &e, "0123456789X", 11, &g), -1, "more inline bytes than the size");
    e.ftype = WIRE_LNK;
    e.size = 3;
    is_int(entry_of(&sb, &e, "t/x", 3, &g), 0, "a symlink with its target");
    is_int(entry_of(&sb, &e, "t", 1, &g), -1, "a symlink whose target length disagrees");
    is_int(entry_of(&sb, &e, "t\0x", 3, &g), -1, "a symlink target with a NUL");
    e.size = SYNC_MAX_LINK + 1;
    is_int(entry_of(&sb, &e, "", 0, &g), -1, "a symlink target over the limit");
    e.ftype = WIRE_DIR;
    e.size = 0;
    is_int(entry_of(&sb, &e, "x", 1, &g), -1, "a directory with content");
    e.ftype = 7;
    is_int(entry_of(&sb, &e, "", 0, &g), -1, "an unknown file type");
    e.ftype = WIRE_REG;
    e.op = 9;
    is_int(entry_of(&sb, &e, "", 0, &g), -1, "an unknown operation");
    e.op = WIRE_OP_DELETE;
    e.size = 4;
    is_int(entry_of(&sb, &e, "", 0, &g), -1, "a deletion with a size");
    strbuf_release(&sb);
}

static void test_exit_and_misc(void)
{
    strbuf sb = STRBUF_INIT;
    wire_frame f;
    sbx_err err;
    wire_exit x = { .kind = 1, .core = 1, .code = 11 }, y;
    char buf[16];

    wire_put_exit(&sb, 4, &x);
    parse_one(&sb, &f);
    is_int(wire_get_exit(&f, &y, &err), 0, "EXIT round trip");
    ok(y.kind == 1 && y.core == 1 && y.code == 11 && f.chan == 4, "every field");
    x.kind = 0;
    x.code = 300;
    x.core = 0;
    strbuf_reset(&sb);
    wire_put_exit(&sb, 4, &x);
    parse_one(&sb, &f);
    is_int(wire_get_exit(&f, &y, &err), -1, "an exit status over 255 is refused");
    x.kind = 1;
    x.code = 0;
    strbuf_reset(&sb);
    wire_put_exit(&sb, 4, &x);
    parse_one(&sb, &f);
    is_int(wire_get_exit(&f, &y, &err), -1, "signal 0 is refused");
    x.kind = 5;
    strbuf_reset(&sb);
    wire_put_exit(&sb, 4, &x);
    parse_one(&sb, &f);
    is_int(wire_get_exit(&f, &y, &err), -1, "an unknown exit kind is refused");
    x.kind = 0;
    x.full = WIRE_FULL_CODE | WIRE_FULL_HOME;
    strbuf_reset(&sb);
    wire_put_exit(&sb, 4, &x);
    parse_one(&sb, &f);
    is_int(wire_get_exit(&f, &y, &err), 0, "EXIT with spaces full");
    is_int(y.full, WIRE_FULL_CODE | WIRE_FULL_HOME, "...carries which ones");
    x.full = 8;
    strbuf_reset(&sb);
    wire_put_exit(&sb, 4, &x);
    parse_one(&sb, &f);
    is_int(wire_get_exit(&f, &y, &err), -1, "a full bit past HOME's is refused");
    {
        uint64_t id;
        uint8_t full;
        strbuf_reset(&sb);
        wire_put_sync_done(&sb, 77, WIRE_FULL_TMP);
        parse_one(&sb, &f);
        is_int(wire_get_sync_done(&f, &id, &full, &err), 0, "SYNC_DONE round trip");
        ok(id == 77 && full == WIRE_FULL_TMP, "...its id and full bits");
        strbuf_reset(&sb);
        wire_put_sync_done(&sb, 77, 0x80);
        parse_one(&sb, &f);
        is_int(wire_get_sync_done(&f, &id, &full, &err), -1, "SYNC_DONE: an unknown full bit is refused");
        strbuf_reset(&sb);
        size_t at = wire_begin(&sb, WIRE_SYNC_DONE, 0, 0);
        wire_u64(&sb, 77);
        wire_end(&sb, at);
        parse_one(&sb, &f);
        is_int(wire_get_sync_done(&f, &id, &full, &err), -1, "SYNC_DONE of version 4 (no full byte) is refused");
    }

    wire_sanitize(buf, sizeof(buf), "a\033[2Jb\nc", 8);
    is_str(buf, "a\\x1b[2Jb\\nc", "sanitized text shows controls escaped");
    wire_sanitize(buf, sizeof(buf), "\xc3\xa9\x9b", 3);
    is_str(buf, "\xc3\xa9\\x9b", "and keeps UTF-8, escaping a bare C1 byte");
    wire_sanitize(buf, 4, "abcdef", 6);
    is_str(buf, "abc", "and fits its buffer");
    strbuf_release(&sb);
}

int main(void)
{
    test_frames();
    test_hello_config();
    test_run();
    test_entry();
    test_exit_and_misc();
    return done_testing();
}
