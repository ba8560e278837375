/* Unit tests of sync/gitpolicy.c: the .git pull allowlist and the git config filters. */
#include "sync/gitpolicy.h"
#include "sync/wire.h"
#include "tests/lib/tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define H38 "0123456789abcdef0123456789abcdef012345"
#define H40 "0123456789abcdef0123456789abcdef01234567"
#define H62 H40 "0123456789abcdef012345"
#define H64 H40 "0123456789abcdef01234567"

static void allowed(const char *p, int type, bool want)
{
    const char *why = git_pull_refusal(p, strlen(p), type);
    ok((why == NULL) == want, "%s %s%s%s", p, want ? "may be pulled" : "is refused",
       why ? ": " : "", why ? why : "");
}

/* The content rule for path on a file holding len bytes of data. */
static void content(const char *path, const void *data, size_t len, bool want, const char *what)
{
    char tmpl[] = "/tmp/sbx-gitpolicy-XXXXXX";
    int fd = mkstemp(tmpl);
    const char *why;
    if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
        ok(0, "cannot make a scratch file");
        return;
    }
    unlink(tmpl);
    why = git_pull_content_refusal(path, strlen(path), fd);
    close(fd);
    ok((why == NULL) == want, "%s: %s %s%s%s", path, what, want ? "may be pulled" : "is refused",
       why ? ": " : "", why ? why : "");
}

#define CONTENT(path, lit, want, what) content(path, lit, sizeof(lit) - 1, want, what)

static void shapes(void)
{
    /* objects/: loose objects, packs, their indexes, commit-graphs, info/packs, the MIDX. */
    allowed(".git/objects", WIRE_DIR, true);
    allowed(".git/objects", WIRE_REG, false);
    allowed(".git/refs", WIRE_REG, false);
    allowed(".git/objects/ab", WIRE_DIR, true);
    allowed(".git/objects/ab/" H62, WIRE_REG, true);
    allowed(".git/objects/pack", WIRE_DIR, true);
    allowed(".git/objects/info", WIRE_DIR, true);
    {
        const char *ext[] = { "pack", "idx", "rev", "bitmap", "keep", "mtimes" };
        for (size_t i = 0; i < ARRAY_SIZE(ext); i++) {
            char p[200];
            snprintf(p, sizeof(p), ".git/objects/pack/pack-%s.%s", i % 2 ? H64 : H40, ext[i]);
            allowed(p, WIRE_REG, true);
        }
    }
    allowed(".git/objects/pack/multi-pack-index", WIRE_REG, true);
    allowed(".git/objects/pack/multi-pack-index-" H40 ".bitmap", WIRE_REG, true);
    allowed(".git/objects/pack/multi-pack-index-" H40 ".rev", WIRE_REG, true);
    allowed(".git/objects/pack/multi-pack-index-" H40 ".pack", WIRE_REG, false);
    allowed(".git/objects/info/packs", WIRE_REG, true);
    allowed(".git/objects/info/commit-graph", WIRE_REG, true);
    allowed(".git/objects/info/commit-graphs", WIRE_DIR, true);
    allowed(".git/objects/info/commit-graphs/commit-graph-chain", WIRE_REG, true);
    allowed(".git/objects/info/commit-graphs/graph-" H40 ".graph", WIRE_REG, true);
    allowed(".git/objects/info/http-alternates", WIRE_REG, false);
    allowed(".git/objects/ab/cdef", WIRE_REG, false);
    allowed(".git/objects/AB/" H38, WIRE_REG, false);
    allowed(".git/objects/ab/" H38, WIRE_DIR, false);
    allowed(".git/objects/abc", WIRE_DIR, false);
    allowed(".git/objects/evil", WIRE_REG, false);
    allowed(".git/objects/ab/" H38 "/x", WIRE_REG, false);
    allowed(".git/objects/pack/pack-1.pack", WIRE_REG, false);
    allowed(".git/objects/pack/pack-" H40 ".sh", WIRE_REG, false);
    allowed(".git/objects/pack/tmp_pack_x", WIRE_REG, false);
    allowed(".git/objects/pack/x", WIRE_DIR, false);
    allowed(".git/objects/info/config", WIRE_REG, false);
    allowed(".git/objects/info/commit-graphs/evil", WIRE_REG, false);
    allowed(".git/objects/fake/HEAD", WIRE_REG, false);

    /* refs/: ref files under ordinary names; nothing that makes a repository. */
    allowed(".git/refs", WIRE_DIR, true);
    allowed(".git/refs/heads", WIRE_DIR, true);
    allowed(".git/refs/heads/feature/a/b/c/d/e/f/g", WIRE_REG, true);
    allowed(".git/refs/stash", WIRE_REG, true);
    allowed(".git/refs/tags/v1.0", WIRE_REG, true);
    allowed(".git/refs/remotes/origin/HEAD", WIRE_REG, true);
    allowed(".git/refs/fake", WIRE_DIR, true);
    allowed(".git/refs/fake/HEAD", WIRE_REG, false);
    allowed(".git/refs/fake/config", WIRE_REG, false);
    allowed(".git/refs/fake/hooks", WIRE_DIR, false);
    allowed(".git/refs/fake/hooks/pre-push", WIRE_REG, false);
    allowed(".git/refs/fake/objects", WIRE_DIR, false);
    allowed(".git/refs/fake/info", WIRE_DIR, false);
    allowed(".git/refs/fake/commondir", WIRE_REG, false);
    allowed(".git/refs/fake/gitdir", WIRE_REG, false);
    allowed(".git/refs/fake/Config", WIRE_REG, false);
    allowed(".git/refs/heads/.hidden", WIRE_REG, false);
    allowed(".git/refs/HEAD", WIRE_REG, false);
    allowed(".git/refs/remotes/HEAD", WIRE_REG, false);
    allowed(".git/refs/remotes/origin/HEAD/x", WIRE_REG, false);
    allowed(".git/refs/remotes/origin/x/HEAD", WIRE_REG, false);
    allowed(".git/refs/a/b/c/d/e/f/g/h/i/config", WIRE_REG, false);
    allowed(".git/refs/a/b/c/d/e/f/g/h/i/.x", WIRE_REG, false);

    /* logs/: logs/HEAD and reflogs of refs. */
    allowed(".git/logs/HEAD", WIRE_REG, true);
    allowed(".git/logs/refs/heads/main", WIRE_REG, true);
    allowed(".git/logs/refs/remotes/origin/HEAD", WIRE_REG, true);
    allowed(".git/refs/replace", WIRE_DIR, false);
    allowed(".git/refs/replace/0123456789abcdef0123456789abcdef01234567", WIRE_REG, false);
    allowed(".git/logs/refs/replace/0123456789abcdef0123456789abcdef01234567", WIRE_REG, false);
    allowed(".git/refs/heads/replace", WIRE_REG, true);
    allowed(".git/logs/HEAD", WIRE_DIR, false);
    allowed(".git/logs/evil", WIRE_REG, false);
    allowed(".git/logs/refs/fake/HEAD", WIRE_REG, false);
    allowed(".git/logs/refs/fake/objects/x", WIRE_REG, false);

    /* Elsewhere below the top. */
    allowed(".git/rebase-merge/config", WIRE_REG, false);
    allowed(".git/sequencer/hooks/x", WIRE_REG, false);
    allowed(".git/rebase-apply/HEAD", WIRE_REG, false);
    allowed(".git/rebase-apply/info", WIRE_REG, true);

    /* No executable anywhere under .git; elsewhere it is a mode like any other. */
    ok(git_pull_exec_refusal(".git/logs/HEAD", 14) != NULL, "an executable under .git is refused");
    ok(git_pull_exec_refusal(".git", 4) != NULL, "the exec bit on .git itself too");
    ok(git_pull_exec_refusal("bin/run", 7) == NULL, "an executable elsewhere is fine");
    ok(git_pull_exec_refusal(".gitx/run", 9) == NULL, "so is one under .gitx");

    /* Contents, checked on the staged file. */
    CONTENT(".git/refs/heads/main", H40 "\n", true, "an object id");
    CONTENT(".git/refs/heads/main", H64 "\n", true, "a SHA-256 id");
    CONTENT(".git/refs/remotes/origin/HEAD", "ref: refs/remotes/origin/main\n", true, "a symref");
    CONTENT(".git/HEAD", "ref: refs/heads/main\n", true, "HEAD as a symref");
    CONTENT(".git/HEAD", H40 "\n", true, "a detached HEAD");
    CONTENT(".git/refs/heads/main", H40, false, "an id without its newline");
    CONTENT(".git/refs/heads/main", "#!/bin/sh\ntouch /tmp/pwned\n", false, "a script");
    CONTENT(".git/refs/heads/main", "ref: ../../config\n", false, "a symref outside refs/");
    CONTENT(".git/refs/heads/main", "ref: refs/a b\n", false, "a symref with a space");
    CONTENT(".git/refs/heads/main", H38 "\n", false, "a short id");
    CONTENT(".git/refs/heads/main", H40 "\n" H40 "\n", false, "two ids");
    CONTENT(".git/refs/heads/main", "0123456789ABCDEF0123456789abcdef01234567\n", false,
            "upper-case hex");
    CONTENT(".git/HEAD", "gitdir: /x\n", false, "HEAD as a gitfile");
    CONTENT(".git/objects/ab/" H38, "\x78\x01rest", true, "zlib data");
    CONTENT(".git/objects/ab/" H38, "\x78\x9crest", true, "zlib data (default level)");
    CONTENT(".git/objects/ab/" H38, "#!/bin/sh\n", false, "a script");
    CONTENT(".git/objects/ab/" H38, "", false, "an empty file");
    CONTENT(".git/objects/pack/pack-" H40 ".pack", "PACK\0\0\0\2", true, "a pack");
    CONTENT(".git/objects/pack/pack-" H40 ".pack", "[core]\n", false, "not a pack");
    CONTENT(".git/objects/pack/pack-" H40 ".idx", "\377tOc\0\0\0\2", true, "a pack index");
    CONTENT(".git/objects/pack/pack-" H40 ".idx", "PACK", false, "a pack as an index");
    CONTENT(".git/objects/pack/pack-" H40 ".rev", "RIDX\0\0\0\1", true, "a reverse index");
    CONTENT(".git/objects/pack/pack-" H40 ".bitmap", "BITM\0\1", true, "a bitmap");
    CONTENT(".git/objects/pack/pack-" H40 ".mtimes", "MTME\0\0\0\1", true, "mtimes");
    CONTENT(".git/objects/pack/pack-" H40 ".keep", "receive-pack 1 on host\n", true, "a .keep");
    CONTENT(".git/objects/pack/pack-" H40 ".keep", "a\0b", false, "a binary .keep");
    CONTENT(".git/objects/pack/multi-pack-index", "MIDX\1\1", true, "a MIDX");
    CONTENT(".git/objects/info/commit-graph", "CGPH\1\1", true, "a commit-graph");
    CONTENT(".git/objects/info/commit-graph", "CGP", false, "a truncated commit-graph");
    CONTENT(".git/objects/info/commit-graphs/graph-" H40 ".graph", "CGPH\1", true, "a split graph");
    CONTENT(".git/objects/info/commit-graphs/commit-graph-chain", H40 "\n" H40 "\n", true,
            "a graph chain");
    CONTENT(".git/objects/info/commit-graphs/commit-graph-chain", "x\n", false, "a bad chain");
    CONTENT(".git/objects/info/packs", "P pack-" H40 ".pack\n\n", true, "info/packs");
    CONTENT(".git/logs/HEAD", H40 " " H40 " A <a@b> 1700000000 +0000\tcommit: x\n", true,
            "a reflog line");
    CONTENT(".git/logs/HEAD", "", true, "an empty reflog");
    CONTENT(".git/logs/refs/heads/main", H40 " " H40 " A <a@b> 1 +0000\tx\nnot a line\n", false,
            "a reflog with a stray line");
    CONTENT(".git/logs/refs/heads/main", H40 " " H40 " A <a@b> 1 +0000\tx", false,
            "a reflog without its last newline");
    CONTENT(".git/logs/refs/heads/main", H40 " " H64 " A\n", false, "mixed hash lengths");
    CONTENT(".git/logs/refs/heads/main", H40 " " H40 " A\0\n", false, "a NUL");
    CONTENT(".git/packed-refs", "# pack-refs with: peeled fully-peeled sorted \n" H40
            " refs/heads/main\n" H40 " refs/tags/v1\n^" H40 "\n", true, "packed-refs");
    CONTENT(".git/packed-refs", H40 " ../../config\n", false, "a packed ref outside refs/");
    CONTENT(".git/packed-refs", "[core]\n", false, "a config as packed-refs");
    CONTENT(".git/index", "DIRC\0\0\0\2", true, "an index");
    CONTENT(".git/index", "[core]\n", false, "a config as the index");
    CONTENT("src/x", "anything", true, "a file outside .git");
    {
        /* Bounded sizes. */
        size_t n = GIT_REF_MAX + 1;
        char *big = malloc(n);
        memset(big, 'a', n);
        memcpy(big, "ref: refs/", 10);
        big[n - 1] = '\n';
        content(".git/refs/heads/big", big, n, false, "a ref over 4 KiB");
        free(big);
    }

    /* Parsing what git writes. */
    {
        const char *v, *oid;
        size_t vl, ol;
        bool sym;
        const char pk[] = "# pack-refs with: peeled\n" H40 " refs/heads/a\n^" H40 "\n"
                          H64 " refs/heads/b\n";
        ok(git_ref_parse("ref: refs/heads/x\n", 18, &v, &vl, &sym) && sym && vl == 12 &&
           !memcmp(v, "refs/heads/x", 12), "a symref's target");
        ok(git_packed_find(pk, sizeof(pk) - 1, "refs/heads/b", 12, &oid, &ol) && ol == 64,
           "a packed ref's id");
        ok(!git_packed_find(pk, sizeof(pk) - 1, "refs/heads/c", 12, &oid, &ol),
           "a ref that is not packed");
    }
}

static char *filt(int (*f)(const char *, size_t, strbuf *), const char *text, int *kept)
{
    strbuf out = STRBUF_INIT;
    *kept = f(text, strlen(text), &out);
    return strbuf_detach(&out, NULL);
}

/* The repository shape a pull never completes (git's is_git_directory()): HEAD beside refs
 * or commondir, in a real directory, with the name being added counted. */
static void repo_shapes(void)
{
    char dir[512];
    int dfd;
    snprintf(dir, sizeof(dir), "%s/sbx-gp-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir) || (dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        ok(0, "a scratch directory");
        return;
    }
    ok(git_repo_shape_name("HEAD", 4) && git_repo_shape_name("refs", 4) &&
       git_repo_shape_name("commondir", 9) && git_repo_shape_name("head", 4) &&
       git_repo_shape_name("REFS", 4), "HEAD, refs and commondir are the shape's names, any case");
    ok(!git_repo_shape_name("objects", 7) && !git_repo_shape_name("config", 6) &&
       !git_repo_shape_name("HEADS", 5), "objects, config and the like are not");
    ok(!git_dir_is_repo_shape(dfd, NULL, 0), "an empty directory is no repository");
    ok(!git_dir_is_repo_shape(dfd, "HEAD", 4), "nor with HEAD alone");
    mkdirat(dfd, "refs", 0755);
    ok(!git_dir_is_repo_shape(dfd, NULL, 0), "nor with refs/ alone");
    ok(git_dir_is_repo_shape(dfd, "HEAD", 4), "HEAD arriving beside refs/ makes one");
    ok(git_dir_is_repo_shape(dfd, "head", 4), "in any letter case");
    ok(!git_dir_is_repo_shape(dfd, "objects", 7), "objects/ arriving beside refs/ does not");
    close(openat(dfd, "HEAD", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ok(git_dir_is_repo_shape(dfd, NULL, 0), "HEAD and refs/ are one");
    unlinkat(dfd, "refs", AT_REMOVEDIR);
    ok(!git_dir_is_repo_shape(dfd, NULL, 0), "HEAD alone again is not");
    ok(git_dir_is_repo_shape(dfd, "commondir", 9), "HEAD with a commondir is one");
    symlinkat("/nonexistent", dfd, "refs");
    ok(git_dir_is_repo_shape(dfd, NULL, 0), "a refs symlink (even dangling) counts");
    unlinkat(dfd, "refs", 0);
    unlinkat(dfd, "HEAD", 0);
    close(dfd);
    rmdir(dir);
}

int main(void)
{
    char *out;
    int kept;

    repo_shapes();

    allowed("src/a.c", WIRE_REG, true);
    allowed(".git", WIRE_DIR, true);
    allowed(".git", WIRE_REG, false);
    allowed(".git", WIRE_LNK, false);
    allowed(".git/HEAD", WIRE_REG, true);
    allowed(".git/index", WIRE_REG, true);
    allowed(".git/packed-refs", WIRE_REG, true);
    allowed(".git/MERGE_HEAD", WIRE_REG, true);
    allowed(".git/objects/ab/" H38, WIRE_REG, true);
    allowed(".git/objects/pack/pack-" H40 ".pack", WIRE_REG, true);
    allowed(".git/refs/heads/main", WIRE_REG, true);
    allowed(".git/logs/HEAD", WIRE_REG, true);
    allowed(".git/rebase-merge/git-rebase-todo", WIRE_REG, true);
    allowed(".git/sequencer/todo", WIRE_REG, true);
    allowed(".git/config", WIRE_REG, false);
    allowed(".git/hooks/pre-push", WIRE_REG, false);
    allowed(".git/hooks", WIRE_DIR, false);
    allowed(".git/info/exclude", WIRE_REG, false);
    allowed(".git/info/attributes", WIRE_REG, false);
    allowed(".git/modules/x/config", WIRE_REG, false);
    allowed(".git/objects/info/alternates", WIRE_REG, false);
    allowed(".git/index.lock", WIRE_REG, false);
    allowed(".git/refs/heads/x", WIRE_LNK, false);
    allowed(".git/HEAD/x", WIRE_REG, false);
    allowed("sub/.git/config", WIRE_REG, false);
    allowed("sub/.git", WIRE_DIR, false);
    allowed("sub/.git", WIRE_REG, false);
    allowed("a/b/.GIT/hooks/x", WIRE_REG, false);
    allowed(".Git/config", WIRE_REG, false);
    shapes();
    ok(git_pull_refusal_syncpath("x/.git/config", 13) != NULL, "a .git in a sync path");
    ok(git_pull_refusal_syncpath("x/git/config", 12) == NULL, "git without the dot is fine");

    ok(git_is_repo_config(".git/config", 11), ".git/config is filtered on push");
    ok(git_is_repo_config("sub/.git/config", 15), "so is a nested one");
    ok(git_is_repo_config(".git/modules/m/config", 21), "and a submodule's");
    ok(git_is_repo_config(".git/worktrees/w/config.worktree", 32), "and config.worktree");
    ok(!git_is_repo_config("config", 6), "a plain file named config is not");
    ok(!git_is_repo_config(".git/configx", 12), "nor .git/configx");

    ok(git_url_has_credentials("https://u:p@h/r", 15), "user:password@ is a credential");
    ok(git_url_has_credentials("https://tok@h/r", 15), "a bare user on https is a token");
    ok(!git_url_has_credentials("ssh://git@h/r", 13), "ssh://git@ is not");
    ok(!git_url_has_credentials("git@github.com:o/r.git", 22), "scp-like git@ is not");
    ok(!git_url_has_credentials("https://h/r", 11), "a plain URL is not");

    out = filt(gitconfig_filter_repo,
               "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
               "\tsshCommand = ssh -i key\n\thooksPath = /tmp/h\n\tfsmonitor = x\n"
               "[alias]\n\tpwn = !rm -rf ~\n"
               "[include]\n\tpath = /etc/x\n"
               "[includeIf \"gitdir:/x\"]\n\tpath = y\n"
               "[remote \"origin\"]\n\turl = https://me:secret@github.com/o/r.git\n"
               "\tfetch = +refs/heads/*:refs/remotes/origin/*\n\tuploadpack = evil\n"
               "[remote \"up\"]\n\turl = git@github.com:o/r.git\n"
               "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
               "[credential]\n\thelper = store\n"
               "[http]\n\textraHeader = Authorization: x\n"
               "[url \"ssh://evil/\"]\n\tinsteadOf = https://github.com/\n"
               "[filter \"lfs\"]\n\tclean = evil %f\n"
               "[diff \"x\"]\n\ttextconv = evil\n"
               "[extensions]\n\tobjectFormat = sha256\n"
               "[user]\n\tname = \"A \\\"B\\\"\"\n", &kept);
    ok(kept > 0, "a repository config is filtered (%d kept)", kept);
    ok(strstr(out, "repositoryformatversion = \"0\"") != NULL, "core settings git needs stay");
    ok(strstr(out, "objectformat") != NULL, "extensions stay");
    ok(strstr(out, "git@github.com:o/r.git") != NULL, "a remote URL stays");
    ok(strstr(out, "+refs/heads/*:refs/remotes/origin/*") != NULL, "a refspec stays");
    ok(strstr(out, "[branch \"main\"]") != NULL, "branch settings stay");
    ok(strstr(out, "name = \"A \\\"B\\\"\"") != NULL, "quoting survives");
    {
        const char *never[] = { "sshcommand", "hookspath", "fsmonitor", "alias", "pwn", "include",
                                "secret", "uploadpack", "credential", "helper", "http",
                                "extraheader", "insteadof", "filter", "clean", "textconv" };
        for (size_t i = 0; i < ARRAY_SIZE(never); i++)
            ok(!strstr(out, never[i]), "no '%s' in the filtered config", never[i]);
    }
    free(out);

    out = filt(gitconfig_filter_repo, "[core\n\tbare = false\n", &kept);
    is_int(kept, -1, "an unparsable config is refused");
    is_str(out, "", "and gives an empty config");
    free(out);
    out = filt(gitconfig_filter_repo, "[core]\n\tbare = \"unterminated\n", &kept);
    is_int(kept, -1, "an unterminated quote is unparsable");
    free(out);
    out = filt(gitconfig_filter_repo, "[core] bare = true ; comment\n\tlogallrefupdates\n", &kept);
    is_int(kept, 2, "a key on the header line and an implicit boolean parse");
    ok(strstr(out, "\tlogallrefupdates\n") != NULL, "an implicit boolean stays implicit");
    free(out);
    out = filt(gitconfig_filter_repo, "[core]\n\tbare = a\\\n  b\n", &kept);
    is_int(kept, 1, "a continuation line parses");
    free(out);

    out = filt(gitconfig_filter_user,
               "[user]\n\tname = Ann\n\temail = a@b.c\n\tsigningkey = K\n"
               "[alias]\n\tco = checkout\n[core]\n\teditor = vim\n\tpager = less\n"
               "[color]\n\tui = auto\n[color \"diff\"]\n\tmeta = yellow\n"
               "[pull]\n\trebase = true\n[credential \"https://x\"]\n\thelper = store\n"
               "[init]\n\tdefaultBranch = main\n", &kept);
    ok(strstr(out, "name = \"Ann\"") && strstr(out, "email = \"a@b.c\""), "identity stays");
    ok(strstr(out, "defaultbranch") != NULL, "init.defaultBranch stays");
    ok(strstr(out, "rebase = \"true\"") != NULL, "pull.rebase stays");
    ok(strstr(out, "[color \"diff\"]") != NULL, "colours stay");
    ok(!strstr(out, "alias") && !strstr(out, "editor") && !strstr(out, "pager") &&
       !strstr(out, "helper") && !strstr(out, "signingkey"),
       "aliases, programs, credential helpers and signing keys do not");
    free(out);
    return done_testing();
}
