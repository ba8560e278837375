/* Unit tests of sync/rcfile.c: the secret filter for the user's startup files (values of
 * secret-named assignments, tokens of known shapes, URL credentials), that what it leaves
 * still parses (bash -n) and keeps its line count, and which sourced files are followed. */
#include "sync/rcfile.h"
#include "tests/lib/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *filt(const char *in, size_t *removed)
{
    strbuf out = STRBUF_INIT;
    size_t n = rc_filter(in, strlen(in), &out);
    if (removed)
        *removed = n;
    return strbuf_detach(&out, NULL);
}

#define NOTE " # sbxsh: value removed (a secret stays on the host)"

static void filters(const char *in, const char *want, size_t want_n)
{
    size_t n;
    char *got = filt(in, &n);
    ok(!strcmp(got, want) && n == want_n, "filter: [%s] -> [%s] (%zu removed)", in, want, want_n);
    if (strcmp(got, want) || n != want_n)
        diag("got [%s], %zu removed", got, n);
    free(got);
}

static void keeps(const char *in)
{
    filters(in, in, 0);
}

static size_t lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* What the filter leaves parses (bash -n) as the input did, with as many lines, and holds
 * none of the secret bytes. */
static void parses(const char *in, const char *secret)
{
    char path[] = "/tmp/t-rcfile-XXXXXX", cmd[128];
    char *got = filt(in, NULL);
    int fd = mkstemp(path), rc;
    ok(fd >= 0 && write(fd, got, strlen(got)) == (ssize_t)strlen(got), "wrote the filtered text");
    if (fd >= 0)
        close(fd);
    snprintf(cmd, sizeof(cmd), "bash -n %s 2>/dev/null", path);
    rc = system(cmd);
    ok(rc == 0, "filtered text parses (bash -n): [%s]", got);
    ok(lines(got) == lines(in), "  and keeps its %zu lines", lines(in));
    ok(!strstr(got, secret), "  and holds no '%s'", secret);
    unlink(path);
    free(got);
}

static void names(const char *name, bool want)
{
    ok(rc_secret_name(name, strlen(name)) == want, "%s %s a secret name", name,
       want ? "is" : "is not");
}

static void sources(const char *in, const char *want)
{
    strvec v = STRVEC_INIT;
    strbuf got = STRBUF_INIT;
    rc_sourced(in, strlen(in), &v);
    for (size_t i = 0; i < v.n; i++)
        strbuf_addf(&got, "%s%s", i ? "," : "", v.v[i]);
    ok(!strcmp(got.buf, want), "sourced: [%s] -> [%s]", in, want);
    if (strcmp(got.buf, want))
        diag("got [%s]", got.buf);
    strbuf_release(&got);
    strvec_clear(&v);
}

static void allowed(const char *rel, bool want)
{
    ok(rc_path_allowed(rel, strlen(rel)) == want, "%s %s read for the sandbox", rel,
       want ? "may be" : "is never");
}

int main(void)
{
    /* Names. */
    names("GITHUB_TOKEN", true);
    names("github_token", true);
    names("NPM_AUTH", true);
    names("OAUTH", true);
    names("AUTHKEY", true);
    names("OPENAI_API_KEY", true);
    names("AWS_SECRET_ACCESS_KEY", true);
    names("PGPASSWORD", true);
    names("SSHPASS", true);
    names("MY_PAT", true);
    names("DB_CREDS", true);
    names("GPG_PASSPHRASE", true);
    names("PRIVATE_THING", true);
    names("GIT_AUTHOR_NAME", false);
    names("PATH", false);
    names("EDITOR", false);
    names("PS1", false);
    names("HISTCONTROL", false);
    names("PATHS", false);
    names("KEYMAP", false);

    /* Assignments: the value goes, the shape stays. */
    filters("export GITHUB_TOKEN=abc123\n", "export GITHUB_TOKEN=" NOTE "\n", 1);
    filters("export GITHUB_TOKEN=\"a b c\"\n", "export GITHUB_TOKEN=" NOTE "\n", 1);
    filters("GITHUB_TOKEN='x y'; export GITHUB_TOKEN\n", "GITHUB_TOKEN=; export GITHUB_TOKEN" NOTE "\n", 1);
    filters("declare -x API_KEY=$(pass show api) # mine\n", "declare -x API_KEY= # mine" NOTE "\n", 1);
    filters("[ -n \"$x\" ] && export NPM_TOKEN=abc || true\n", "[ -n \"$x\" ] && export NPM_TOKEN= || true" NOTE "\n", 1);
    filters("X=1 SECRET=2 cmd\n", "X=1 SECRET= cmd" NOTE "\n", 1);
    filters("typeset -a KEYS=(a b\nc)\nnext\n", "typeset -a KEYS='\n'" NOTE "\nnext\n", 1);
    filters("export TOKEN=\"line1\nline2\"; echo hi\nok\n", "export TOKEN='\n'; echo hi" NOTE "\nok\n", 1);
    filters("TOKEN+=more\n", "TOKEN+=" NOTE "\n", 1);
    filters("no newline TOKEN=x", "no newline TOKEN=" NOTE, 1);
    filters("  if true; then\n    export MY_SECRET=${OTHER:-x}\n  fi\n",
            "  if true; then\n    export MY_SECRET=" NOTE "\n  fi\n", 1);
    /* Not assignments, or not secret. */
    keeps("export PATH=$HOME/bin:$PATH\nalias ll='ls -l'\n");
    keeps("echo \"TOKEN=abc\"\n");
    keeps("# export GITHUB_TOKEN=is a comment\n");
    keeps("greet() { echo \"hello\"; }\n");
    keeps("export GIT_AUTHOR_NAME='A. U. Thor'\n");
    keeps("case $x in a) y=1;; esac\n");
    /* A here-document: an apostrophe in it opens no quote, its assignments are filtered. */
    filters("cat <<EOF\ndon't\nTOKEN=abc\nEOF\nexport SECRET=s\n",
            "cat <<EOF\ndon't\nTOKEN=" NOTE "\nEOF\nexport SECRET=" NOTE "\n", 2);
    filters("cat <<-'E'\n\tit's\n\tE\nA_TOKEN=1\n", "cat <<-'E'\n\tit's\n\tE\nA_TOKEN=" NOTE "\n", 1);
    /* A continued line gets its note where it ends. */
    filters("export TOKEN=a \\\n  OTHER=b\n", "export TOKEN= \\\n  OTHER=b" NOTE "\n", 1);

    /* Tokens of known shapes, anywhere. */
    filters("alias gh='GH=ghp_abcdefghijklmnopqrstuvwxyz0123 gh'\n", "alias gh='GH= gh'\n", 1);
    filters("x github_pat_11ABCDEFG0123456789_abcdefghijkl y\n", "x  y\n", 1);
    filters("curl -H 'PRIVATE: glpat-abcdefghij0123456789'\n", "curl -H 'PRIVATE: '\n", 1);
    filters("key sk-ant-api03-abcdefghijklmnopqrstuv\n", "key \n", 1);
    filters("s=xoxb-1234567890-abcdef\n", "s=\n", 1);
    filters("id AKIAIOSFODNN7EXAMPLE end\n", "id  end\n", 1);
    keeps("task-management-system-for-everyone\n");
    keeps("ghp_short\n");
    keeps("AKIAIOSFODNN7EXAMPLEX\n");
    /* URL credentials. */
    filters("export REPO=https://user:pw@git.example.com/r\n", "export REPO=https://git.example.com/r\n", 1);

    /* What is left parses, line for line. */
    parses("export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123\nalias ll='ls -l'\n", "ghp_");
    parses("export TOKEN=\"multi\nline secret\"; echo hi\nok() { :; }\n", "line secret");
    parses("declare -A SECRETS=([a]=\"x y\"\n[b]=hidden)\necho after\n", "hidden");
    parses("if true; then\n  export API_KEY=$(cat ~/k | tr -d '\\n')\nfi\n", "cat ~/k");
    parses("cat <<'EOF' >/dev/null\nit's TOKEN=abc\nEOF\nX_TOKEN=`cmd`\n", "abc");
    parses("f() {\n  local PASSWORD=\"$1\"\n  echo done\n}\n", "$1");
    parses("export TOKEN=a \\\n  B=c\n", "TOKEN=a");

    /* Sourced files. */
    sources(". ~/.bash_aliases\n", ".bash_aliases");
    sources("if [ -f ~/.bash_aliases ]; then\n    . ~/.bash_aliases\nfi\n", ".bash_aliases");
    sources("[ -r \"$HOME/.aliases\" ] && source \"$HOME/.aliases\"\n", ".aliases");
    sources("source ${HOME}/dot/x.sh; . \"${HOME}\"/dot/y.sh\n", "dot/x.sh,dot/y.sh");
    sources("test -r ~/a && . ~/a && . ~/a\n", "a");
    sources("source ~//dir///f\n", "dir/f");
    sources("echo source ~/no\n# . ~/neither\n", "");
    sources(". /etc/bash_completion\n. ~/$X/f\n. ~/*.sh\n. \"~/q\"\n. $HOME\n", "");
    sources("source ~/.ssh/agent.env\n. ~/../other\n. ~/.aws/env\n", "");
    sources("source $HOMEX/f\n", "");
    /* A redirection is a token of its own (a lone '<' once made the scan stand still). */
    sources("cat < ~/x >/dev/null; . ~/y <&0\n", "y");

    allowed(".bashrc", true);
    allowed("dotfiles/bash/aliases", true);
    allowed(".ssh/config", false);
    allowed(".ssh", false);
    allowed(".config/gh/hosts.yml", false);
    allowed(".docker/config.json", false);
    allowed(".kube/config", false);
    allowed(".gnupg/x", false);
    allowed(".sshrc", true);
    allowed("a/../b", false);
    allowed("./a", false);
    allowed("/etc/passwd", false);
    allowed("", false);
    return done_testing();
}
