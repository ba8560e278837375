/* Unit tests of sync/gitpolicy.c: the .git pull allowlist and the git config filters. */
#include "sync/gitpolicy.h"
#include "sync/wire.h"
#include "tests/lib/tap.h"

#include <string.h>

static void allowed(const char *p, int type, bool want)
{
    const char *why = git_pull_refusal(p, strlen(p), type);
    ok((why == NULL) == want, "%s %s%s%s", p, want ? "may be pulled" : "is refused",
       why ? ": " : "", why ? why : "");
}

static char *filt(int (*f)(const char *, size_t, strbuf *), const char *text, int *kept)
{
    strbuf out = STRBUF_INIT;
    *kept = f(text, strlen(text), &out);
    return strbuf_detach(&out, NULL);
}

int main(void)
{
    char *out;
    int kept;

    allowed("src/a.c", WIRE_REG, true);
    allowed(".git", WIRE_DIR, true);
    allowed(".git", WIRE_REG, false);
    allowed(".git", WIRE_LNK, false);
    allowed(".git/HEAD", WIRE_REG, true);
    allowed(".git/index", WIRE_REG, true);
    allowed(".git/packed-refs", WIRE_REG, true);
    allowed(".git/MERGE_HEAD", WIRE_REG, true);
    allowed(".git/objects/ab/cdef", WIRE_REG, true);
    allowed(".git/objects/pack/pack-1.pack", WIRE_REG, true);
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
