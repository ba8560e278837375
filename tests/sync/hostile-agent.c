/*
 * A hostile sbx-agent, for tests: it speaks the protocol on stdin/stdout, and answers every
 * RUN or SYNC with a crafted delta (the scenario named by argv[1]), then the exit or
 * SYNC_DONE, unless the scenario cuts the stream. $HOSTILE_OUTSIDE names a directory
 * outside the host's roots that attacks aim at.
 *
 * Roots as t-hostile configures them: 0 the code directory, 1 a sync path (base + "cwd-*"),
 * 2 a task file.
 */
#include "common/strbuf.h"
#include "common/util.h"
#include "sync/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define H40 "0123456789abcdef0123456789abcdef01234567"

static const char *outside;
static uint64_t seq;
static uint64_t host_seq;   /* the host's last push: acknowledged, as a real agent does */
static uint32_t chan;

static void begin(strbuf *o)
{
    size_t at = wire_begin(o, WIRE_DELTA_BEGIN, 0, 0);
    wire_u64(o, ++seq);
    wire_u64(o, host_seq);
    wire_end(o, at);
}

static void end(strbuf *o, uint64_t n)
{
    size_t at = wire_begin(o, WIRE_DELTA_END, 0, 0);
    wire_u64(o, seq);
    wire_u64(o, n);
    wire_end(o, at);
}

static void entry(strbuf *o, uint8_t op, uint8_t type, uint16_t root, uint32_t flags,
                  const char *path, size_t path_len, const char *data, size_t len,
                  uint64_t size)
{
    wire_entry e = { .op = op, .ftype = type, .root = root, .flags = flags,
                     .mtime_ns = 1600000000LL * 1000000000, .path = path,
                     .path_len = path_len, .size = size };
    size_t at = wire_put_entry_begin(o, &e);
    strbuf_add(o, data, len);
    wire_end(o, at);
}

/* One file put, in a delta of its own. */
static void put1(strbuf *o, uint16_t root, uint32_t flags, const char *path, const char *data)
{
    begin(o);
    entry(o, WIRE_OP_PUT, WIRE_REG, root, flags, path, strlen(path), data, strlen(data),
          strlen(data));
    end(o, 1);
}

/* A file or (data NULL) a directory, in the code directory, inside a delta. */
static void put(strbuf *o, const char *path, const char *data)
{
    entry(o, WIRE_OP_PUT, data ? WIRE_REG : WIRE_DIR, 0, 0, path, strlen(path),
          data ? data : "", data ? strlen(data) : 0, data ? strlen(data) : 0);
}

/* A config whose fsmonitor leaves a mark outside the roots, if host git ever runs it. */
static char *fsmonitor_config(void)
{
    return xasprintf("[core]\n\tfsmonitor = touch %s/fsmonitor-ran\n", outside);
}

/* A bare repository's shape at dir (HEAD, config, objects/, refs/heads/main), entries in
 * the order a scan sends them; returns how many. */
static int put_shape(strbuf *o, const char *dir)
{
    static const char *const parts[][2] = {
        { "HEAD", "ref: refs/heads/main\n" }, { "config", NULL }, { "objects", "" },
        { "refs", "" }, { "refs/heads", "" },
        { "refs/heads/main", "0123456789abcdef0123456789abcdef01234567\n" },
    };
    char *cfg = fsmonitor_config();
    put(o, dir, NULL);
    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        char *p = xasprintf("%s/%s", dir, parts[i][0]);
        const char *data = parts[i][1] ? parts[i][1] : cfg;
        put(o, p, *data ? data : NULL);
        free(p);
    }
    free(cfg);
    return 1 + (int)ARRAY_SIZE(parts);
}

/* Returns false when the scenario ends the stream (no final frame). */
static bool scenario(const char *name, int round, strbuf *o)
{
    if (!strcmp(name, "dotdot")) {
        put1(o, 0, 0, "../escape", "x");
    } else if (!strcmp(name, "dotdot-inner")) {
        put1(o, 0, 0, "a/../../escape", "x");
    } else if (!strcmp(name, "absolute")) {
        char *p = xasprintf("%s/abs", outside);
        put1(o, 0, 0, p, "x");
        free(p);
    } else if (!strcmp(name, "nul")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "a\0b", 3, "x", 1, 1);
        end(o, 1);
    } else if (!strcmp(name, "hook")) {
        put1(o, 0, WIRE_ENTRY_EXEC, ".git/hooks/pre-push", "#!/bin/sh\ntouch /tmp/pwned\n");
    } else if (!strcmp(name, "gitconfig")) {
        put1(o, 0, 0, ".git/config", "[core]\n\tsshCommand = touch /tmp/pwned\n");
    } else if (!strcmp(name, "nested-gitconfig")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_DIR, 0, 0, "sub/.git", 8, "", 0, 0);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "sub/.git/config", 15,
              "[core]\n\tsshCommand = evil\n", 26, 26);
        end(o, 2);
    } else if (!strcmp(name, "gitfile")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "sub/.git", 8, "gitdir: /x\n", 11, 11);
        end(o, 1);
    } else if (!strcmp(name, "git-case")) {
        put1(o, 0, 0, ".GIT/hooks/post-checkout", "evil");
    } else if (!strcmp(name, "alternates")) {
        char *alt = xasprintf("%s\n", outside);
        put1(o, 0, 0, ".git/objects/info/alternates", alt);
        free(alt);
    } else if (!strcmp(name, "refs-fake")) {
        /* A whole repository planted under refs/: HEAD, a config with a receivepack, an
         * executable hook, objects/, commondir. */
        static const char *const files[][2] = {
            { ".git/refs/fake/HEAD", "ref: refs/heads/main\n" },
            { ".git/refs/fake/config", "[remote \"o\"]\n\treceivepack = touch /tmp/pwned\n" },
            { ".git/refs/fake/commondir", "../..\n" },
            { ".git/refs/fake/gitdir", "/tmp\n" },
            { ".git/refs/fake/Config", "[core]\n" },
        };
        begin(o);
        for (size_t i = 0; i < ARRAY_SIZE(files); i++)
            entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, files[i][0], strlen(files[i][0]), files[i][1],
                  strlen(files[i][1]), strlen(files[i][1]));
        entry(o, WIRE_OP_PUT, WIRE_DIR, 0, 0, ".git/refs/fake/hooks", 20, "", 0, 0);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, WIRE_ENTRY_EXEC, ".git/refs/fake/hooks/pre-push", 29,
              "#!/bin/sh\n", 10, 10);
        entry(o, WIRE_OP_PUT, WIRE_DIR, 0, 0, ".git/refs/fake/objects", 22, "", 0, 0);
        entry(o, WIRE_OP_PUT, WIRE_DIR, 0, 0, ".git/refs/fake/info", 19, "", 0, 0);
        entry(o, WIRE_OP_PUT, WIRE_DIR, 0, 0, ".git/refs/fake/.hidden", 22, "", 0, 0);
        end(o, ARRAY_SIZE(files) + 5);
    } else if (!strcmp(name, "objects-fake")) {
        /* The same under objects/ and logs/. */
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, ".git/objects/fake/HEAD", 22, "ref: refs/x\n", 12,
              12);
        entry(o, WIRE_OP_PUT, WIRE_DIR, 0, 0, ".git/objects/fake", 17, "", 0, 0);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, ".git/logs/config", 16, "[core]\n", 7, 7);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, ".git/logs/refs/x/hooks/pre-push", 31, "x\n", 2, 2);
        end(o, 4);
    } else if (!strcmp(name, "ref-not-ref")) {
        put1(o, 0, 0, ".git/refs/heads/evil", "#!/bin/sh\ntouch /tmp/pwned\n");
    } else if (!strcmp(name, "ref-outside")) {
        put1(o, 0, 0, ".git/HEAD", "ref: ../../../outside\n");
    } else if (!strcmp(name, "object-not-object")) {
        put1(o, 0, 0, ".git/objects/ab/0123456789abcdef0123456789abcdef012345", "#!/bin/sh\n");
    } else if (!strcmp(name, "object-bad-name")) {
        put1(o, 0, 0, ".git/objects/evil", "x\170\001");
    } else if (!strcmp(name, "pack-not-pack")) {
        put1(o, 0, 0, ".git/objects/pack/pack-0123456789abcdef0123456789abcdef01234567.pack",
             "[core]\n\tsshCommand = evil\n");
    } else if (!strcmp(name, "logs-exec")) {
        put1(o, 0, WIRE_ENTRY_EXEC, ".git/logs/HEAD",
             "0123456789abcdef0123456789abcdef01234567 0123456789abcdef0123456789abcdef01234567 "
             "A <a@b> 1 +0000\tx\n");
    } else if (!strcmp(name, "logs-not-reflog")) {
        put1(o, 0, 0, ".git/logs/refs/heads/main", "#!/bin/sh\ntouch /tmp/pwned\n");
    } else if (!strcmp(name, "refs-symlink")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_LNK, 0, 0, ".git/refs/heads/l", 17, outside, strlen(outside),
              strlen(outside));
        entry(o, WIRE_OP_PUT, WIRE_LNK, 0, 0, ".git/refs/fake", 14, outside, strlen(outside),
              strlen(outside));
        end(o, 2);
    } else if (!strcmp(name, "history-wipe")) {
        /* rm -rf .git, as the agent sends it: contents first, the directories last. */
        static const char *const paths[][2] = {
            { ".git/HEAD", "f" }, { ".git/description", "f" }, { ".git/refs/heads", "d" },
            { ".git/refs/tags", "d" }, { ".git/refs", "d" }, { ".git/objects/info", "d" },
            { ".git/objects/pack", "d" }, { ".git/objects", "d" }, { ".git", "d" },
        };
        begin(o);
        for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
            entry(o, WIRE_OP_DELETE, paths[i][1][0] == 'd' ? WIRE_DIR : WIRE_REG, 0, 0,
                  paths[i][0], strlen(paths[i][0]), "", 0, 0);
        end(o, ARRAY_SIZE(paths));
    } else if (!strcmp(name, "setuid")) {
        /* The protocol carries only the exec bit: any other mode flag is refused. */
        put1(o, 0, WIRE_ENTRY_EXEC | 04000, "suid", "#!/bin/sh\n");
    } else if (!strcmp(name, "symlink-parent")) {
        /* "link" is a symlink to the outside on the host: write through it. */
        put1(o, 0, 0, "link/evil", "x");
    } else if (!strcmp(name, "dir-then-symlink")) {
        if (round == 1) {
            /* Replace directory d by a symlink to the outside (legitimate by itself). */
            begin(o);
            entry(o, WIRE_OP_DELETE, WIRE_REG, 0, 0, "d/f", 3, "", 0, 0);
            entry(o, WIRE_OP_DELETE, WIRE_DIR, 0, 0, "d", 1, "", 0, 0);
            entry(o, WIRE_OP_PUT, WIRE_LNK, 0, 0, "d", 1, outside, strlen(outside),
                  strlen(outside));
            end(o, 3);
        } else {
            /* ... then write into "d", as if it were still the directory. */
            put1(o, 0, 0, "d/evil", "x");
        }
    } else if (!strcmp(name, "delete-outside")) {
        begin(o);
        entry(o, WIRE_OP_DELETE, WIRE_REG, 0, 0, "link/victim", 11, "", 0, 0);
        entry(o, WIRE_OP_DELETE, WIRE_REG, 0, 0, "../victim", 9, "", 0, 0);
        end(o, 2);
    } else if (!strcmp(name, "delete-gitconfig")) {
        begin(o);
        entry(o, WIRE_OP_DELETE, WIRE_REG, 0, 0, ".git/config", 11, "", 0, 0);
        entry(o, WIRE_OP_DELETE, WIRE_DIR, 0, 0, ".git/hooks", 10, "", 0, 0);
        end(o, 2);
    } else if (!strcmp(name, "stage-name")) {
        put1(o, 0, 0, ".sbx-stage-1/x", "x");
    } else if (!strcmp(name, "deep")) {
        strbuf p = STRBUF_INIT;
        for (int i = 0; i < 300; i++)
            strbuf_addstr(&p, i ? "/d" : "d");
        put1(o, 0, 0, p.buf, "x");
        strbuf_release(&p);
    } else if (!strcmp(name, "long-name")) {
        char name300[301];
        memset(name300, 'n', 300);
        name300[300] = '\0';
        put1(o, 0, 0, name300, "x");
    } else if (!strcmp(name, "shape-one-round")) {
        /* A bare repository made in the sandbox, in one round, among a good file. */
        begin(o);
        put(o, "good", "fine\n");
        end(o, 1 + (uint64_t)put_shape(o, "x"));
    } else if (!strcmp(name, "shape-rounds")) {
        /* The same assembled over three rounds: HEAD and config, then objects/, then refs/. */
        char *cfg = fsmonitor_config();
        begin(o);
        if (round == 1) {
            put(o, "x", NULL);
            put(o, "x/HEAD", "ref: refs/heads/main\n");
            put(o, "x/config", cfg);
            end(o, 3);
        } else if (round == 2) {
            put(o, "x/objects", NULL);
            end(o, 1);
        } else {
            put(o, "good", "fine\n");
            put(o, "x/refs", NULL);
            put(o, "x/refs/heads", NULL);
            end(o, 3);
        }
        free(cfg);
    } else if (!strcmp(name, "shape-deep")) {
        /* Nested twenty directories down. */
        strbuf p = STRBUF_INIT;
        int n = 1;
        begin(o);
        put(o, "good", "fine\n");
        for (int i = 0; i < 20; i++) {
            strbuf_addf(&p, "%sd%d", i ? "/" : "", i);
            put(o, p.buf, NULL);
            n++;
        }
        strbuf_addstr(&p, "/y");
        n += put_shape(o, p.buf);
        end(o, (uint64_t)n);
        strbuf_release(&p);
    } else if (!strcmp(name, "shape-commondir")) {
        /* HEAD and a commondir naming the host's own repository: git takes y for a
         * worktree's git directory. */
        begin(o);
        put(o, "good", "fine\n");
        put(o, "y", NULL);
        put(o, "y/HEAD", "ref: refs/heads/main\n");
        put(o, "y/commondir", "../.git\n");
        end(o, 4);
    } else if (!strcmp(name, "shape-host-part")) {
        /* The host already has pre/HEAD (t-hostile's setup): refs/ completes the shape. */
        begin(o);
        put(o, "good", "fine\n");
        put(o, "pre/refs", NULL);
        put(o, "pre/refs/heads", NULL);
        end(o, 3);
    } else if (!strcmp(name, "shape-host-repo")) {
        /* The host has a bare repository of its own (fixture.git): nothing goes into it. */
        char *cfg = fsmonitor_config();
        begin(o);
        put(o, "good", "fine\n");
        put(o, "fixture.git/config", cfg);
        put(o, "fixture.git/hooks/post-index-change", "#!/bin/sh\n");
        end(o, 3);
        free(cfg);
    } else if (!strcmp(name, "git-logs")) {
        /* The host's own .git/logs holds HEAD beside refs/: reflogs still come back. */
        static const char line[] = H40 " " H40 " A <a@b> 1 +0000\tcommit: x\n";
        begin(o);
        put(o, ".git/logs", NULL);
        put(o, ".git/logs/HEAD", line);
        put(o, ".git/logs/refs", NULL);
        put(o, ".git/logs/refs/heads", NULL);
        put(o, ".git/logs/refs/heads/main", line);
        put(o, "good", "fine\n");
        end(o, 6);
    } else if (!strcmp(name, "dotgit-depth")) {
        /* A gitfile and a .git directory deep below the top, among good files. */
        begin(o);
        put(o, "deep/er/.git", "gitdir: /tmp\n");
        put(o, "deep/er/f", "fine\n");
        put(o, "deep/er/sub/.git", NULL);
        put(o, "deep/er/sub/.git/config", "[core]\n\tbare = true\n");
        put(o, "good", "fine\n");
        end(o, 5);
    } else if (!strcmp(name, "long-path")) {
        /* A 5.5 KB path and a 300-byte name among good files; then a round of its own. */
        if (round == 1) {
            strbuf p = STRBUF_INIT;
            char name300[301];
            for (int i = 0; i < 22; i++) {
                if (i)
                    strbuf_addch(&p, '/');
                for (int k = 0; k < 250; k++)
                    strbuf_addch(&p, 'p');
            }
            memset(name300, 'n', 300);
            name300[300] = '\0';
            begin(o);
            put(o, "good1", "fine\n");
            put(o, p.buf, "deep\n");
            put(o, name300, "long\n");
            put(o, "good2", "fine\n");
            end(o, 4);
            strbuf_release(&p);
        } else {
            put1(o, 0, 0, "good3", "fine\n");
        }
    } else if (!strcmp(name, "outside-pattern")) {
        put1(o, 1, 0, "not-matching", "x");
    } else if (!strcmp(name, "task-file")) {
        put1(o, 2, 0, "task.md", "overwritten");
    } else if (!strcmp(name, "unknown-root")) {
        put1(o, 9, 0, "x", "x");
    } else if (!strcmp(name, "absurd-size")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "big", 3, "", 0, 1ULL << 62);
        end(o, 1);
    } else if (!strcmp(name, "too-many")) {
        begin(o);
        for (int i = 0; i < 200; i++)
            entry(o, WIRE_OP_PUT, WIRE_DIR, 0, 0, "many", 4, "", 0, 0);
        end(o, 200);
    } else if (!strcmp(name, "truncated")) {
        /* A first good entry, then half a file, then the stream ends. */
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "good", 4, "ok\n", 3, 3);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "half", 4, "abc", 3, 100);
        return false;
    } else if (!strcmp(name, "truncated-frame")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "good", 4, "ok\n", 3, 3);
        strbuf_setlen(o, o->len - 2);
        return false;
    } else if (!strcmp(name, "exit-mid-delta")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "good", 4, "ok\n", 3, 3);
    } else if (!strcmp(name, "huge-frame")) {
        uint8_t h[WIRE_HEADER] = { 0xff, 0xff, 0xff, 0x7f, WIRE_CHUNK };
        strbuf_add(o, h, sizeof(h));
        return false;
    } else if (!strcmp(name, "garbage")) {
        strbuf_addstr(o, "this is not a frame at all, just text\n");
        return false;
    } else if (!strcmp(name, "wrong-count")) {
        begin(o);
        entry(o, WIRE_OP_PUT, WIRE_REG, 0, 0, "good", 4, "ok\n", 3, 3);
        end(o, 5);
    } else if (!strcmp(name, "output-flood")) {
        /* One output frame larger than the window the host granted. */
        size_t n = SYNC_OUTPUT_WINDOW + 4096;
        char *big = xmalloc(n);
        memset(big, 'x', n);
        wire_frame_raw(o, WIRE_DATA, 1, chan, big, n);
        free(big);
    } else if (!strcmp(name, "warn-escapes")) {
        wire_frame_raw(o, WIRE_WARN, 0, 0, "\033]0;pwned\007\033[2J text", 20);
        begin(o);
        end(o, 0);
    } else if (!strcmp(name, "replay-seq")) {
        begin(o);
        end(o, 0);
        seq--;
        begin(o);
        end(o, 0);
    } else {
        fprintf(stderr, "hostile-agent: unknown scenario %s\n", name);
        exit(2);
    }
    return true;
}

static strbuf in = STRBUF_INIT, out = STRBUF_INIT;

static int finish(int code)
{
    strbuf_release(&in);
    strbuf_release(&out);
    return code;
}

int main(int argc, char **argv)
{
    size_t off = 0;
    int round = 0;
    wire_hello h = { .version = SYNC_PROTOCOL_VERSION, .pid = (uint32_t)getpid(),
                     .about = "hostile", .about_len = 7 };

    if (argc < 2) {
        fprintf(stderr, "usage: hostile-agent SCENARIO\n");
        return 2;
    }
    outside = getenv("HOSTILE_OUTSIDE") ? getenv("HOSTILE_OUTSIDE") : "/nonexistent";
    wire_put_hello(&out, &h);
    write_full(1, out.buf, out.len);
    strbuf_reset(&out);
    for (;;) {
        wire_frame f;
        sbx_err err;
        ssize_t n;
        int r = wire_parse((const uint8_t *)in.buf + off, in.len - off, &f, &err);
        if (r < 0)
            return finish(1);
        if (r == 0) {
            strbuf_grow(&in, 65536);
            n = read(0, in.buf + in.len, 65536);
            if (n <= 0)
                return finish(0);
            strbuf_setlen(&in, in.len + (size_t)n);
            continue;
        }
        off += WIRE_HEADER + f.len;
        if (f.type == WIRE_DELTA_BEGIN) {
            uint64_t acked;
            wire_get_u64_pair(&f, &host_seq, &acked, &err);
        }
        if (f.type != WIRE_RUN && f.type != WIRE_SYNC)
            continue;   /* the host's push, credits, ...: ignored */
        chan = f.chan;
        round++;
        if (!scenario(argv[1], round, &out)) {
            write_full(1, out.buf, out.len);
            return finish(0);
        }
        if (f.type == WIRE_RUN) {
            wire_exit x = { .kind = 0, .code = 0 };
            wire_put_exit(&out, f.chan, &x);
        } else {
            uint64_t id;
            wire_get_u64_one(&f, &id, &err);
            wire_put_sync_done(&out, id, 0);
        }
        write_full(1, out.buf, out.len);
        strbuf_reset(&out);
    }
}
