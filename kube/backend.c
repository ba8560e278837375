/*
 * The Kubernetes backend: a session's sandbox is a pod claimed from an agent-sandbox
 * SandboxWarmPool (a v1beta1 SandboxClaim), and sbx-agent runs there as a daemon that
 * each holder connection reaches through a pods/exec WebSocket.
 *
 * This class links no libcurl (sbxsh starts in about a millisecond and its holder is a
 * fork of it; loading libcurl alone costs about 5 ms): everything that talks to the API
 * server is sbx-kube (kube/kube_main.c), a program beside sbx-agent that the class runs
 * (kclass.h lists the subcommands). So:
 *
 *   claim()        runs `sbx-kube claim`, which reattaches to the session's claim when its
 *                  pod is still the one recorded and Ready, else deletes what is left and
 *                  makes a new claim, waits for it with a watch, and records it in
 *                  STATE/kube.json; its progress lines reach the waiting user.
 *   open_stream()  a socketpair: a child runs `sbx-kube stream` with its end as stdin and
 *                  stdout (stderr: the holder's log). That child keeps the exec to the pod
 *                  and, when the WebSocket drops, opens a new one and resumes where the
 *                  bytes stopped (sync/resume.h), so the holder sees one unbroken stream.
 *                  It also moves the claim's shutdownTime forward while it lives.
 *   alive()        claimed, and the stream child did not end saying the pod is gone.
 *   exists()       claimed and alive here, or `sbx-kube check` finds the recorded pod.
 *   release()      `sbx-kube release`: the claim is deleted (the pod goes with it).
 *
 * No credential of the host reaches the pod: sbx-kube reads the kubeconfig on the host,
 * and the pod gets only sbx-agent's command line (kube/README.md).
 */
#include "kube/kclass.h"
#include "common/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *kube_find_tool(const char *agent_path, sbx_err *err)
{
    char *p = session_find_libexec(agent_path, "sbx-kube");
    if (p && access(p, X_OK) == 0)
        return p;
    free(p);
    sbx_errf(err, "AGENT_SANDBOX_BACKEND=kube: sbx-kube (the program that talks to the "
             "cluster) is not installed beside sbx-agent; run `make` (or `make install`)");
    return NULL;
}

static void forget_credential(kube_backend *kb)
{
    if (kb->credential)
        explicit_bzero(kb->credential, strlen(kb->credential));
    free(kb->credential);
    kb->credential = NULL;
}

/* The tool's output, cut into lines as it comes (a claim's progress is shown live). */
typedef struct tool_lines {
    strbuf buf;
    void (*on_line)(void *ctx, const char *line);
    void *ctx;
} tool_lines;

static void tool_output(void *ctx, const char *chunk, size_t n)
{
    tool_lines *tl = ctx;
    char *nl;

    if (tl->buf.len < (1 << 20))        /* a line longer than 1 MiB is cut */
        strbuf_add(&tl->buf, chunk, n);
    while ((nl = memchr(tl->buf.buf, '\n', tl->buf.len))) {
        *nl = '\0';
        if (tl->on_line)
            tl->on_line(tl->ctx, tl->buf.buf);
        strbuf_remove(&tl->buf, 0, (size_t)(nl - tl->buf.buf) + 1);
    }
}

int kube_run_tool(char *const argv[], void (*on_line)(void *ctx, const char *line), void *ctx,
                  sbx_err *err)
{
    tool_lines tl = { STRBUF_INIT, on_line, ctx };
    struct sigaction hup;
    sigset_t keep;
    /* common/run.h: stdin /dev/null, stderr ours (the session's log), no fd of ours;
     * SIGHUP stays ignored where we ignore it (the holder), as it always did */
    sigemptyset(&keep);
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler == SIG_IGN)
        sigaddset(&keep, SIGHUP);
    sbx_run run = { .argv = argv, .cwd_fd = -1, .stderr_to = SBX_RUN_ERR_INHERIT,
                    .keep_ignored = &keep, .max = SIZE_MAX, .secret = true,
                    .on_output = tool_output, .ctx = &tl };
    int st, r = sbx_run_capture(&run, NULL, &st, err);

    if (r == 0 && tl.buf.len && on_line)
        on_line(ctx, tl.buf.buf);
    if (tl.buf.alloc)   /* a claim's lines may hold the plugin's credential */
        explicit_bzero(tl.buf.buf, tl.buf.alloc);
    strbuf_release(&tl.buf);
    return r < 0 ? -1 : sbx_run_exit_code(st);
}

/* sbx-kube SUBCOMMAND --state DIR --session S and the settings. */
static void tool_argv(kube_backend *kb, const char *sub, strvec *argv)
{
    strvec_push(argv, kb->tool);
    strvec_push(argv, sub);
    strvec_push(argv, "--state");
    strvec_push(argv, kb->dir);
    strvec_push(argv, "--session");
    strvec_push(argv, kb->session);
    kube_tool_opts(&kb->kc, argv);
}

/* What a claim's output lines say: "progress TEXT" (for the user), "error TEXT" (why it
 * failed), "reattached". */
typedef struct claim_out {
    kube_backend *kb;
    bool reattached;
    bool have_error;
    sbx_err err;
} claim_out;

static void on_claim_line(void *ctx, const char *line)
{
    claim_out *o = ctx;
    if (!strncmp(line, "progress ", 9)) {
        if (o->kb->progress)
            o->kb->progress(o->kb->progress_ctx, line + 9);
    } else if (!strncmp(line, "error ", 6)) {
        o->have_error = true;
        snprintf(o->err.msg, sizeof(o->err.msg), "%s", line + 6);
    } else if (!strcmp(line, "reattached")) {
        o->reattached = true;
    } else if (!strncmp(line, "credential ", 11)) {
        forget_credential(o->kb);
        o->kb->credential = xstrdup(line + 11);
    }
}

/* Ends the stream child (it ends by itself when its socket closes: give it a moment, as
 * it tells the pod the stream is over). */
static void stop_stream(kube_backend *kb, int grace_ms)
{
    if (kb->stream_pid <= 0)
        return;
    for (int i = 0; i < grace_ms / 10; i++) {
        if (waitpid(kb->stream_pid, NULL, WNOHANG) != 0) {
            kb->stream_pid = 0;
            return;
        }
        usleep(10000);
    }
    kill(kb->stream_pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
        if (waitpid(kb->stream_pid, NULL, WNOHANG) != 0) {
            kb->stream_pid = 0;
            return;
        }
        usleep(10000);
    }
    kill(kb->stream_pid, SIGKILL);
    waitpid(kb->stream_pid, NULL, 0);
    kb->stream_pid = 0;
}

static int kube_claim(sbx_backend *b, bool *reattached, sbx_err *err)
{
    kube_backend *kb = (kube_backend *)b;
    strvec argv = { 0 };
    claim_out o = { .kb = kb };
    int r;

    *reattached = false;
    stop_stream(kb, 0);
    if (session_private_dir(kb->dir, err) < 0)
        return -1;
    tool_argv(kb, "claim", &argv);
    for (size_t i = 0; i < kb->code_dirs.n; i++) {
        strvec_push(&argv, "--code-dir");
        strvec_push(&argv, kb->code_dirs.v[i]);
    }
    r = kube_run_tool(argv.v, on_claim_line, &o, err);
    strvec_clear(&argv);
    if (r < 0)
        return -1;
    if (r != 0) {
        if (o.have_error)
            *err = o.err;
        else
            sbx_errf(err, "sbx-kube claim failed (status %d); see the session's log", r);
        return -1;
    }
    kube_state_free(&kb->st);
    if (kube_state_load(kb->dir, &kb->st) < 0)
        return sbx_errf(err, "sbx-kube claim left no readable %s/%s", kb->dir, SBX_KUBE_STATE);
    kb->claimed = true;
    kb->gone = false;
    *reattached = o.reattached;
    return 0;
}

/* Reaps the stream child when it ended; its status says whether the pod is gone. */
static void reap_stream(kube_backend *kb)
{
    int st;
    if (kb->stream_pid <= 0 || waitpid(kb->stream_pid, &st, WNOHANG) != kb->stream_pid)
        return;
    kb->stream_pid = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == SBX_KUBE_EXIT_GONE)
        kb->gone = true;
}

/* The stream child's own reason for a stream that failed (tool_stream.c writes it to
 * SBX_KUBE_STREAM_ERROR as it exits): waited for a moment, as the holder may see the
 * socket close before the child has written it. Mid-session (!at_setup) a child still
 * running has nothing to say: err stays. */
static void kube_explain(sbx_backend *b, bool at_setup, sbx_err *err)
{
    kube_backend *kb = (kube_backend *)b;
    char *path = xasprintf("%s/%s", kb->dir, SBX_KUBE_STREAM_ERROR), *text = NULL;
    size_t len = 0;
    sbx_err rerr;

    for (int i = 0; i < (at_setup ? 40 : 20) && kb->stream_pid > 0; i++) {   /* 2 s, 1 s */
        reap_stream(kb);
        if (kb->stream_pid > 0)
            usleep(50000);
    }
    if (kb->stream_pid > 0) {
        if (at_setup)
            sbx_err_prefix(err, "the stream to the pod is still being set up (the session's "
                           "log says how)");
    } else if (read_file(path, 4096, &text, &len, &rerr) == 0 && len) {
        while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
            text[--len] = '\0';
        /* sbx-kube's words, quoting the API server's: sanitized by sbx_errf */
        sbx_errf(err, "%s", text);
        unlink(path);
    }
    free(text);
    free(path);
}

static void kube_take_notice(sbx_backend *b, strbuf *out)
{
    kube_backend *kb = (kube_backend *)b;
    char *path = xasprintf("%s/%s", kb->dir, SBX_KUBE_STREAM_NOTICE), *text = NULL;
    size_t len = 0;
    sbx_err rerr;
    if (read_file(path, 4096, &text, &len, &rerr) == 0 && len) {
        unlink(path);
        while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
            text[--len] = '\0';
        sbx_sanitize(out, text, len);  /* quotes the API server's words */
    }
    free(text);
    free(path);
}

static bool kube_alive(sbx_backend *b)
{
    kube_backend *kb = (kube_backend *)b;
    reap_stream(kb);
    return kb->claimed && !kb->gone;
}

static int kube_open_stream(sbx_backend *b, int *rfd, int *wfd, sbx_err *err)
{
    kube_backend *kb = (kube_backend *)b;
    int sv[2];
    strvec argv = { 0 };
    pid_t pid;

    if (!kb->claimed)
        return sbx_errf(err, "no sandbox claimed");
    /* a stream the holder dropped: it goes when its socket closes */
    stop_stream(kb, 2000);
    if (kb->gone)
        return sbx_errf(err, "the pod %s is gone; the next command claims a new one",
                        kb->st.pod ? kb->st.pod : "?");
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return sbx_errno(err, "socketpair");
    /* The claim's plugin credential, on a pipe (never a file, an argument or the
     * environment): written whole before the fork (a few KiB, within the pipe's buffer). */
    int cred[2] = { -1, -1 };
    if (kb->credential && pipe2(cred, O_CLOEXEC) == 0) {
        size_t len = strlen(kb->credential);
        if (len > 60000 || write_full(cred[1], kb->credential, len) < 0) {
            close(cred[0]);
            cred[0] = -1;
        }
        close(cred[1]);
    }
    tool_argv(kb, "stream", &argv);
    if (cred[0] >= 0) {
        strvec_push(&argv, "--credential-fd");
        strvec_push(&argv, "3");
    }
    strvec_push(&argv, "--agent");
    strvec_push(&argv, kb->agent_path);
    strvec_push(&argv, "--home");
    strvec_push(&argv, kb->home);
    strvec_push(&argv, "--");
    for (size_t i = 0; i < kb->agent_args.n; i++)
        strvec_push(&argv, kb->agent_args.v[i]);
    /* the stream on its stdin and stdout, the credential at 3, stderr ours (the holder's
     * log); our signals but SIGPIPE: the holder ignores SIGINT and SIGHUP, so does this
     * child */
    sigset_t dfl;
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sbx_run run = { .argv = argv.v, .cwd_fd = -1, .stderr_to = SBX_RUN_ERR_INHERIT,
                    .sig_inherit = true, .sig_default = &dfl,
                    .fds = { { sv[1], 0 }, { sv[1], 1 }, { cred[0], 3 } },
                    .nfds = cred[0] >= 0 ? 3 : 2 };
    if (sbx_run_start(&run, &pid, NULL, err) < 0) {
        strvec_clear(&argv);
        close(sv[0]);
        close(sv[1]);
        if (cred[0] >= 0)
            close(cred[0]);
        return -1;
    }
    strvec_clear(&argv);
    close(sv[1]);
    if (cred[0] >= 0)
        close(cred[0]);
    kb->stream_pid = pid;
    *rfd = *wfd = sv[0];
    return 0;
}

static bool kube_exists(sbx_backend *b)
{
    kube_backend *kb = (kube_backend *)b;
    strvec argv = { 0 };
    sbx_err err;
    char *path;
    bool recorded;
    int r;

    if (kube_alive(b))
        return true;
    path = xasprintf("%s/%s", kb->dir, SBX_KUBE_STATE);
    recorded = access(path, F_OK) == 0;
    free(path);
    if (!recorded)
        return false;
    tool_argv(kb, "check", &argv);
    r = kube_run_tool(argv.v, NULL, NULL, &err);
    strvec_clear(&argv);
    return r == 0;
}

static void on_release_line(void *ctx, const char *line)
{
    sbx_err *err = ctx;
    if (!strncmp(line, "error ", 6))
        snprintf(err->msg, sizeof(err->msg), "%s", line + 6);
}

static int kube_release(sbx_backend *b, sbx_err *err)
{
    kube_backend *kb = (kube_backend *)b;
    strvec argv = { 0 };
    char *path;
    int r;

    stop_stream(kb, 2000);
    path = xasprintf("%s/%s", kb->dir, SBX_KUBE_STATE);
    if (access(path, F_OK) < 0) {
        /* no claim recorded (none was made, or the claim failed and deleted its own) */
        free(path);
        kb->claimed = false;
        if (rmdir(kb->dir) < 0 && errno != ENOENT && errno != ENOTEMPTY)
            return sbx_errno(err, "cannot remove %s", kb->dir);
        return 0;
    }
    free(path);
    err->msg[0] = '\0';
    tool_argv(kb, "release", &argv);
    r = kube_run_tool(argv.v, on_release_line, err, err);
    strvec_clear(&argv);
    if (r != 0) {
        if (r > 0 && !err->msg[0])
            sbx_errf(err, "sbx-kube release failed (status %d); see the session's log", r);
        /* kube.json stays: `sbx release` again deletes the claim once the cluster answers
         * (and its shutdownTime ends it in any case) */
        return -1;
    }
    kb->claimed = false;
    path = xasprintf("%s/%s", kb->dir, SBX_KUBE_STATE);
    unlink(path);
    free(path);
    if (rmdir(kb->dir) < 0 && errno != ENOENT && errno != ENOTEMPTY)
        return sbx_errno(err, "cannot remove %s", kb->dir);
    return 0;
}

static void kube_free(sbx_backend *b)
{
    kube_backend *kb = (kube_backend *)b;
    stop_stream(kb, 2000);
    forget_credential(kb);
    free(kb->session);
    free(kb->dir);
    free(kb->tool);
    free(kb->agent_path);
    free(kb->home);
    kube_settings_clear(&kb->kc);
    strvec_clear(&kb->code_dirs);
    strvec_clear(&kb->agent_args);
    kube_state_free(&kb->st);
    free(kb);
}

static const sbx_backend_ops kube_ops = {
    .name = "kube",
    .claim = kube_claim,
    /* the stream's setup: the probe, the upload and the first exec, each retried for up
     * to 30 s while the API server is busy (tool_stream.c) */
    .hello_timeout_ms = 100000,
    .open_stream = kube_open_stream,
    .explain = kube_explain,
    .take_notice = kube_take_notice,
    .alive = kube_alive,
    .exists = kube_exists,
    .release = kube_release,
    .status = kube_status,
    .free = kube_free,
};

static sbx_backend *kube_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err)
{
    const kube_settings *k = kube_settings_of(cfg);
    kube_backend *kb;
    char *tool;

    if (!k->pool) {
        sbx_errf(err, "AGENT_SANDBOX_BACKEND=kube needs AGENT_SANDBOX_POOL: the name of the "
                 "SandboxWarmPool to claim pods from (`sbx doctor` checks it)");
        return NULL;
    }
    if (!(tool = kube_find_tool(spec->agent_path, err)))
        return NULL;
    kb = xcalloc(1, sizeof(*kb));
    kb->base.ops = &kube_ops;
    kb->tool = tool;
    kb->session = xstrdup(cfg->session);
    kb->dir = session_state_dir(cfg);
    kb->home = xstrdup(cfg->home);
    kb->agent_path = xstrdup(spec->agent_path);
    kb->kc = *k;        /* the numbers; the strings are the backend's own copies */
    kb->kc.kubeconfig = k->kubeconfig ? xstrdup(k->kubeconfig) : NULL;
    kb->kc.context = k->context ? xstrdup(k->context) : NULL;
    kb->kc.namespace_ = k->namespace_ ? xstrdup(k->namespace_) : NULL;
    kb->kc.pool = xstrdup(k->pool);
    strvec_pushv(&kb->code_dirs, cfg->code_dirs.v);
    if (spec->agent_args)
        strvec_pushv(&kb->agent_args, spec->agent_args->v);
    kb->progress = spec->progress;
    kb->progress_ctx = spec->progress_ctx;
    return &kb->base;
}

/* sbx's commands of the kube backend's own. */
static const sbx_backend_command kube_commands[] = {
    { "render-pool",
    "  render-pool --tenant T --image IMG [...]\n"
    "                   print a tenant's Kubernetes namespace, its agent-host\n"
    "                   identity (ServiceAccount, Role, RoleBinding) and warm pool\n"
    "                   (SandboxTemplate, SandboxWarmPool) with secure defaults\n",
      kube_render_pool },
    { NULL, NULL, NULL },
};

/* What the registry lists (BACKENDS += kube in kube/kube.mk). */
const sbx_backend_class kube_backend_class = {
    .name = "kube",
    .configure = kube_configure,
    .settings_free = kube_settings_free,
    .fingerprint = kube_fingerprint,
    .create = kube_new,
    .peek = kube_peek,
    .adopt = kube_adopt,
    .doctor = kube_doctor,
    .describe = kube_describe,
    .help_env =
    "  AGENT_SANDBOX_POOL, AGENT_SANDBOX_KUBECONFIG, AGENT_SANDBOX_KUBE_CONTEXT,\n"
    "  AGENT_SANDBOX_NAMESPACE, AGENT_SANDBOX_TTL, AGENT_SANDBOX_CLAIM_TIMEOUT\n"
    "                                 kube: the pool, cluster, claim lifetime and wait\n",
    .commands = kube_commands,
    /* The pod's sbx-agent is found or uploaded by sbx-kube (kube/tool_stream.c), at a path
     * only the pod knows: it links itself there under the hook's name. */
    .fsmonitor_hook = "/run/sbxsh/sbx-fsmonitor-hook",   /* KT_POD_DIR; FSM_HOOK_NAME */
    .fsmonitor_hook_by_agent = true,
};
