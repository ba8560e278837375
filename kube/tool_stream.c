/*
 * sbx-kube stream: stdin/stdout (the holder's end of a socketpair) relayed to sbx-agent in
 * the pod, over pods/exec WebSockets that may drop.
 *
 * In the pod, each exec runs `sbx-agent --connect SOCKET --start --resume ID ARGS`: the
 * first starts the agent daemon (`--listen SOCKET ARGS`) and a keeper for stream ID; every
 * exec relays its stdio to the keeper (sync/agent_pod.c). Between this process and the
 * keeper the bytes travel as a resumable stream (sync/resume.h): when the WebSocket drops,
 * a new exec resumes where the bytes stopped, and the holder never notices. States:
 *
 *   SETUP    the pod's sbx-agent: the one recorded in kube.json, else one in the image of
 *            this very version, else sbx-agent-static uploaded (head -c SIZE > tmp, sha256
 *            checked, chmod, rename) and recorded;
 *   CONNECT  an exec; it fails: the pod gone (404) ends with SBX_KUBE_EXIT_GONE, anything
 *            else is retried with backoff for RECONNECT_S;
 *   RELAY    until the holder closes (CLOSE to the keeper, exit 0), the keeper says CLOSE
 *            (the agent dropped it: exit 1), or the exec ends (back to CONNECT; an agent
 *            missing from the pod, status 126/127 before a HELLO, goes back to SETUP once).
 *            A connection that goes silent ends too (no byte for STREAM_DEAD_MS though we
 *            ping every STREAM_KEEPALIVE_MS): back to CONNECT, as for a drop.
 *
 * While it lives it also moves the claim's shutdownTime forward, a quarter of the TTL
 * before it would expire; a claim that is gone ends the stream as a pod that is gone.
 */
#include "kube/tool.h"
#include "kube/exec.h"
#include "sync/resume.h"
#include "common/fsutil.h"
#include "common/run.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kube/kclass.h"

#define RECONNECT_S 30
#define EXEC_TIMEOUT_MS 30000
#define POD_LOG_MAX (256u << 10)
/* The stream's liveness: a ping after 5 s of silence (kubectl's period), the connection
 * given up after 20 s without a byte, not even a pong. Shorter than kubectl's 61 s: the API
 * server answers pings itself, and a dropped stream costs only a resume. */
#define STREAM_KEEPALIVE_MS 5000
#define STREAM_DEAD_MS 20000

/* The probe: each candidate agent and its --version, one "PATH<TAB>VERSION" a line; and the
 * host's HOME made (commands may start there). */
static const char probe_script[] =
    "mkdir -p " KT_POD_DIR " 2>/dev/null; [ -n \"$1\" ] && mkdir -p -- \"$1\" 2>/dev/null; "
    "for a in " KT_POD_AGENT " \"$(command -v sbx-agent 2>/dev/null)\"; do "
    "[ -n \"$a\" ] && [ -x \"$a\" ] && printf '%s\\t%s\\n' \"$a\" \"$(\"$a\" --version 2>/dev/null)\"; "
    "done; exit 0";

/* The upload: exactly SIZE bytes from stdin (head -c: no end of stdin needed, which the v4
 * protocol cannot send), its sha256 checked, then made executable and renamed. */
static const char upload_script[] =
    "set -e; mkdir -p " KT_POD_DIR "; t=" KT_POD_DIR "/.sbx-agent.$$; trap 'rm -f \"$t\"' EXIT; "
    "head -c \"$2\" > \"$t\"; "
    "h=$(sha256sum \"$t\" 2>/dev/null || busybox sha256sum \"$t\" 2>/dev/null) || "
    "{ echo 'sha256sum is missing in the pod' >&2; exit 4; }; "
    "h=${h%% *}; [ \"$h\" = \"$1\" ] || { echo \"checksum $h, expected $1\" >&2; exit 3; }; "
    "chmod 755 \"$t\"; mv -f \"$t\" " KT_POD_AGENT "; trap - EXIT; " KT_POD_AGENT " --version";

typedef struct streamer {
    kt *k;
    cJSON *st;
    const char *pod, *container;
    char *agent;            /* in the pod */
    rs_stream rs;
    strbuf to_holder;
    bool holder_eof;
    int64_t renew_at;
    bool renew_told;        /* a refused renewal was put in the notice for the user */
    size_t logged;          /* bytes of the pod's stderr put in the log */
    bool server_silent;     /* pod_gone()'s last question got no answer at all */
    char silent_why[400];   /* ...and why */
} streamer;

/* The claim's recorded expiry (kube.json "expires", unix seconds), 0 when unknown. */
static int64_t claim_expires(const streamer *s)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(s->st, "expires");
    return cJSON_IsNumber(e) ? (int64_t)e->valuedouble : 0;
}

/* The pod or claim is gone: when its shutdownTime has passed, the user reads that the
 * claim expired (and when), not only that the pod is gone. */
static void name_gone(const streamer *s, const char *what, sbx_err *err)
{
    int64_t exp = claim_expires(s);
    char when[40];
    if (exp && (int64_t)time(NULL) >= exp - 2) {
        kt_rfc3339(exp, when, sizeof(when));
        sbx_errf(err, "the session's claim %s expired at %s (its shutdownTime%s)",
                 kt_jstr(s->st, "claim") ?: "?", when,
                 s->renew_told ? ", which could not be moved forward" : "");
    } else {
        sbx_errf(err, "%s", what);
    }
}

/* A renewal refused: said once to the user, as the next command starts (the holder takes
 * SBX_KUBE_STREAM_NOTICE), with when the session will end. */
static void tell_renewal_refused(streamer *s, const char *why)
{
    char when[40], *path, *line;
    sbx_err werr;
    if (s->renew_told)
        return;
    s->renew_told = true;
    int64_t exp = claim_expires(s);
    if (exp)
        kt_rfc3339(exp, when, sizeof(when));
    path = xasprintf("%s/%s", s->k->o->state_dir, SBX_KUBE_STREAM_NOTICE);
    line = xasprintf("the claim %s's shutdownTime cannot be moved forward (%s): the session "
                     "ends when it expires%s%s, with its sandbox; allow patch on sandboxclaims "
                     "for sbxsh's user, or `sbx release` and start anew\n",
                     kt_jstr(s->st, "claim") ?: "?", why, exp ? ", at " : "", exp ? when : "");
    if (sbx_write_file_atomic(path, line, strlen(line), 0600, &werr) < 0)
        sbx_report("sbx-kube", "%s", werr.msg);
    free(line);
    free(path);
}

/* Runs argv in the pod with stdin_data (or none); collects stdout and stderr. */
static int exec_collect(streamer *s, const char *const *argv, const void *data, size_t len,
                        strbuf *out, strbuf *errout, int *code, sbx_err *err)
{
    kube_exec *x;
    kube_exec_opts xo = { .stdin_ = data != NULL, .timeout_ms = EXEC_TIMEOUT_MS,
                          .retry_ms = RECONNECT_S * 1000 };
    uint64_t deadline = now_ns() + 120000000000ULL;

    if (kube_exec_open(s->k->c, s->k->ns, s->pod, s->container, argv, &xo, &x, err) < 0)
        return -1;
    for (size_t off = 0; data && off < len;) {
        size_t n = len - off > 65536 ? 65536 : len - off;
        if (kube_exec_send_stdin(x, (const char *)data + off, n, err) < 0) {
            kube_exec_free(x);
            return -1;
        }
        off += n;
    }
    for (;;) {
        int ch;
        const void *d;
        size_t n;
        int r = kube_exec_recv(x, &ch, &d, &n, err);
        if (r < 0) {
            kube_exec_free(x);
            return -1;
        }
        if (r == KUBE_EXEC_DONE)
            break;
        if (r == 1) {
            strbuf *to = ch == 2 ? errout : out;
            if (to->len + n < (4u << 20))   /* the pod's output, bounded */
                strbuf_add(to, d, n);
            continue;
        }
        if (now_ns() > deadline) {
            kube_exec_free(x);
            return sbx_errf(err, "the pod %s did not finish a setup command in 120 s", s->pod);
        }
        struct pollfd p = { .fd = kube_exec_fd(x), .events = POLLIN };
        poll(&p, 1, 200);
    }
    const char *msg = NULL;
    *code = kube_exec_exit_code(x, &msg);
    if (*code < 0)
        sbx_errf(err, "%s", msg ? msg : "the exec failed");
    kube_exec_free(x);
    return *code < 0 ? -1 : 0;
}

/* `PROGRAM --version`'s first line, run here. */
static char *host_version(const char *prog)
{
    char *argv[] = { (char *)prog, "--version", NULL };
    strbuf out = STRBUF_INIT;
    sbx_run r = { .argv = argv, .cwd_fd = -1, .stderr_to = SBX_RUN_ERR_INHERIT, .max = 255 };
    sbx_err err;
    char *v = NULL;

    /* its first line, whatever its status (common/run.h) */
    if (sbx_run_capture(&r, &out, NULL, &err) == 0) {
        strbuf_setlen(&out, strcspn(out.buf, "\n"));
        v = out.len ? xstrdup(out.buf) : NULL;
    }
    strbuf_release(&out);
    return v;
}

/* The static agent to upload: the host's agent when it is the static build, else the static
 * build beside it. */
static char *static_agent(const char *agent)
{
    const char *base = strrchr(agent, '/');
    base = base ? base + 1 : agent;
    if (!strcmp(base, "sbx-agent-static"))
        return xstrdup(agent);
    char *p = xasprintf("%.*ssbx-agent-static", (int)(base - agent), agent);
    if (access(p, X_OK) == 0)
        return p;
    free(p);
    return NULL;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* SETUP: finds or uploads the pod's sbx-agent, records it in kube.json. */
static int setup_agent(streamer *s, sbx_err *err)
{
    const char *probe_argv[] = { "/bin/sh", "-c", probe_script, "sh", s->k->o->home, NULL };
    strbuf out = STRBUF_INIT, eout = STRBUF_INIT;
    char *want = host_version(s->k->o->agent), *found = NULL;
    int code, r = -1;

    if (!want)
        return sbx_errf(err, "cannot run %s --version", s->k->o->agent);
    if (exec_collect(s, probe_argv, NULL, 0, &out, &eout, &code, err) < 0) {
        sbx_err_prefix(err, "cannot look for sbx-agent in the pod %s", s->pod);
        goto out;
    }
    for (char *line = out.buf; line && *line;) {
        char *nl = strchr(line, '\n'), *tab = strchr(line, '\t');
        if (nl)
            *nl = '\0';
        if (tab && !strcmp(tab + 1, want) && !found)
            found = xstrndup(line, (size_t)(tab - line));
        line = nl ? nl + 1 : NULL;
    }
    if (!found) {
        char *bin = static_agent(s->k->o->agent), *data = NULL, hash[65], size[32];
        size_t len = 0;
        if (!bin) {
            sbx_errf(err, "the pod %s has no sbx-agent of this version (%s), and "
                     "sbx-agent-static (the build to upload) is not beside %s; run `make`",
                     s->pod, want, s->k->o->agent);
            goto out;
        }
        if (read_file(bin, 64u << 20, &data, &len, err) < 0) {
            free(bin);
            goto out;
        }
        sha256_hex(data, len, hash);
        snprintf(size, sizeof(size), "%zu", len);
        const char *up_argv[] = { "/bin/sh", "-c", upload_script, "sh", hash, size, NULL };
        strbuf_reset(&out);
        strbuf_reset(&eout);
        int ur = exec_collect(s, up_argv, data, len, &out, &eout, &code, err);
        free(data);
        if (ur < 0 || code != 0) {
            if (ur == 0)
                sbx_errf(err, "uploading %s into the pod %s failed (status %d): %.300s", bin,
                         s->pod, code, eout.len ? eout.buf : "no message");
            else
                sbx_err_prefix(err, "uploading %s into the pod %s", bin, s->pod);
            free(bin);
            goto out;
        }
        fprintf(stderr, "sbx-kube: uploaded %s (%zu bytes, sha256 %.12s) to %s\n", bin, len,
                hash, KT_POD_AGENT);
        free(bin);
        found = xstrdup(KT_POD_AGENT);
    }
    free(s->agent);
    s->agent = found;
    found = NULL;
    cJSON_DeleteItemFromObject(s->st, "agent");
    cJSON_AddStringToObject(s->st, "agent", s->agent);
    r = kt_state_save(s->k->o->state_dir, s->st, err);
out:
    free(found);
    free(want);
    strbuf_release(&out);
    strbuf_release(&eout);
    return r;
}

/* Whether the pod is still there: 404, another pod under the name (a new uid), or a
 * pod being deleted (a deletionTimestamp: the kubelet keeps it readable, and exec into it
 * working, for its grace period, then kills it) or that ended (Succeeded, Failed) all say
 * it is gone. */
static bool pod_gone(streamer *s)
{
    kube_response r = { 0 };
    sbx_err err;
    char *path = kt_pod_path(s->k, s->pod);
    bool gone = false;
    s->server_silent = false;
    if (kube_request(s->k->c, "GET", path, NULL, NULL, &r, &err) < 0) {
        gone = r.status == 404;
        /* no answer at all (not even a 5xx): the API server is down or cut off */
        if (!r.status) {
            s->server_silent = true;
            snprintf(s->silent_why, sizeof(s->silent_why), "%.380s", err.msg);
        }
    } else
        gone = strcmp(kt_jstr(r.json, "metadata.uid") ?: "", kt_jstr(s->st, "pod_uid") ?: "") != 0 ||
               kt_pod_going(r.json);
    kube_response_free(&r);
    free(path);
    return gone;
}

typedef enum { T_DROPPED, T_AGENT_MISSING, T_HOLDER_DONE, T_PEER_CLOSED, T_FATAL } t_end;

/* RELAY on one exec, until it ends one way or another. */
static t_end relay(streamer *s, kube_exec *x, sbx_err *err)
{
    strbuf out = STRBUF_INIT, deliver = STRBUF_INIT;
    char buf[65536];
    t_end end = T_DROPPED;
    bool idle = false;      /* the last poll timed out: a lone ACK may go */

    rs_new_transport(&s->rs, &out);
    for (;;) {
        /* whatever arrived: take all of it before polling */
        for (;;) {
            int ch;
            const void *d;
            size_t n;
            int r = kube_exec_recv(x, &ch, &d, &n, err);
            if (r == 0)
                break;
            if (r < 0) {
                sbx_report("sbx-kube", "the exec stream to %s broke: %s", s->pod, err->msg);
                end = T_DROPPED;
                goto done;
            }
            if (r == KUBE_EXEC_DONE) {
                const char *msg = NULL;
                int code = kube_exec_exit_code(x, &msg);
                /* the Status message is the API server's text: sanitized */
                sbx_report("sbx-kube", "the exec in %s ended (status %d%s%s)", s->pod, code,
                           msg ? ": " : "", msg ? msg : "");
                end = (code == 126 || code == 127) && !s->rs.peer_hello ? T_AGENT_MISSING
                                                                        : T_DROPPED;
                goto done;
            }
            if (ch == 2) {
                /* the pod's side of the exec (the bridge's own complaints): to the log,
                 * boundedly, as a hostile pod could write without end */
                if (s->logged < POD_LOG_MAX) {
                    s->logged += n;
                    /* the pod's text, line by line, sanitized: it is the sandbox's */
                    const char *p = d, *stop = p + n;
                    while (p < stop) {
                        const char *nl = memchr(p, '\n', (size_t)(stop - p));
                        size_t ln = nl ? (size_t)(nl - p) : (size_t)(stop - p);
                        sbx_report("sbx-kube", "pod: %.*s", (int)ln, p);
                        p += ln + (nl != NULL);
                    }
                    if (s->logged >= POD_LOG_MAX)
                        sbx_report("sbx-kube", "(the pod's further stderr is dropped)");
                }
                continue;
            }
            const char *why = NULL;
            if (rs_input(&s->rs, d, n, &deliver, &why) < 0) {
                sbx_errf(err, "the stream from the pod %s is broken: %s", s->pod, why);
                end = T_FATAL;
                goto done;
            }
            if (deliver.len) {
                if (write_full(1, deliver.buf, deliver.len) < 0) {
                    s->holder_eof = true;
                }
                strbuf_reset(&deliver);
            }
        }
        if (s->rs.peer_closed) {
            end = T_PEER_CLOSED;
            goto done;
        }
        rs_frame_out(&s->rs, &out, RS_MAX_DATA * 4, idle);
        if (s->holder_eof && s->rs.peer_hello && s->rs.sent == s->rs.base + s->rs.unacked.len) {
            rs_close(&out);
            kube_exec_queue_stdin(x, out.buf, out.len, err);
            strbuf_reset(&out);
            /* give the last bytes and the CLOSE their way */
            for (int i = 0; i < 50 && kube_exec_flush(x, err) == 1; i++)
                usleep(10000);
            end = T_HOLDER_DONE;
            goto done;
        }
        if (out.len) {
            if (kube_exec_queue_stdin(x, out.buf, out.len, err) < 0) {
                end = T_DROPPED;
                goto done;
            }
            strbuf_reset(&out);
        }
        if (kube_exec_flush(x, err) < 0) {
            sbx_report("sbx-kube", "sending to %s failed: %s", s->pod, err->msg);
            end = T_DROPPED;
            goto done;
        }
        /* A path that went silent (a node, a load balancer or a VPN gone: no RST ever
         * comes) is found by the WebSocket's own pings, and dropped: a new exec resumes. */
        int wait_ms;
        if (kube_exec_keepalive(x, &wait_ms, err) < 0) {
            sbx_report("sbx-kube", "the exec stream to %s: %s", s->pod, err->msg);
            end = T_DROPPED;
            goto done;
        }
        /* the claim's expiry, well before it comes */
        if ((int64_t)time(NULL) >= s->renew_at) {
            sbx_err rerr;
            kube_response r = { 0 };
            if (kt_renew(s->k, kt_jstr(s->st, "claim"), s->st, &rerr) == 0) {
                kt_state_save(s->k->o->state_dir, s->st, &rerr);
                s->renew_at = (int64_t)time(NULL) + s->k->o->ttl / 4;
            } else {
                sbx_report("sbx-kube", "cannot move the claim's shutdownTime: %s", rerr.msg);
                tell_renewal_refused(s, rerr.msg);
                s->renew_at = (int64_t)time(NULL) + 30;
                char *path = kt_claim_path(s->k, kt_jstr(s->st, "claim"));
                if (kube_request(s->k->c, "GET", path, NULL, NULL, &r, &rerr) < 0 &&
                    r.status == 404) {
                    char what[320];
                    snprintf(what, sizeof(what), "the claim %s is gone",
                             kt_jstr(s->st, "claim") ?: "?");
                    name_gone(s, what, err);
                    free(path);
                    kube_response_free(&r);
                    end = T_FATAL;
                    s->holder_eof = true;   /* nothing to go back to */
                    goto done;
                }
                free(path);
                kube_response_free(&r);
            }
        }
        struct pollfd p[2] = {
            { .fd = s->holder_eof || !rs_can_queue(&s->rs) ? -1 : 0, .events = POLLIN },
            { .fd = kube_exec_fd(x),
              .events = (short)(POLLIN | (kube_exec_want_write(x) ? POLLOUT : 0)) },
        };
        int np = poll(p, 2, wait_ms < 200 ? wait_ms : 200);
        if (np < 0 && errno != EINTR) {
            end = T_FATAL;
            sbx_errno(err, "poll");
            goto done;
        }
        idle = np == 0;
        if (p[0].revents) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n > 0)
                rs_queue(&s->rs, buf, (size_t)n);
            else if (n == 0 || (errno != EINTR && errno != EAGAIN))
                s->holder_eof = true;
        }
    }
done:
    strbuf_release(&out);
    strbuf_release(&deliver);
    return end;
}

int kt_stream(kt *k, sbx_err *err)
{
    streamer s = { .k = k };
    unsigned char rnd[8] = { 0 };
    char id[17];
    bool setup_done = false;
    int fd;

    signal(SIGPIPE, SIG_IGN);
    if (!(s.st = kt_state_load(k->o->state_dir)) || !kt_jstr(s.st, "pod")) {
        sbx_errf(err, "no claim recorded in %s", k->o->state_dir);
        cJSON_Delete(s.st);
        return 1;
    }
    s.pod = kt_jstr(s.st, "pod");
    s.container = kt_jstr(s.st, "container");
    if (kt_jstr(s.st, "agent"))
        s.agent = xstrdup(kt_jstr(s.st, "agent"));
    if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) >= 0) {
        if (read_full(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
            memset(rnd, 0, sizeof(rnd));
        close(fd);
    }
    uint64_t sid = 0;
    for (int i = 0; i < 8; i++)
        sid = sid << 8 | rnd[i];
    sid |= 1;
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)sid);
    rs_init(&s.rs, sid);
    s.renew_at = (int64_t)time(NULL) + k->o->ttl / 4;
    {
        cJSON *e = cJSON_GetObjectItemCaseSensitive(s.st, "expires");
        if (cJSON_IsNumber(e) && (int64_t)e->valuedouble - (int64_t)(k->o->ttl * 3 / 4) < s.renew_at)
            s.renew_at = (int64_t)e->valuedouble - (int64_t)(k->o->ttl * 3 / 4);
    }

    char *errfile = xasprintf("%s/%s", k->o->state_dir, SBX_KUBE_STREAM_ERROR);
    unlink(errfile);
    int status = 1;
    uint64_t down_since = 0;
    unsigned delay_ms = 50;
    for (;;) {
        if (!s.agent) {
            if (setup_done || setup_agent(&s, err) < 0) {
                if (setup_done)
                    sbx_errf(err, "sbx-agent does not start in the pod %s", s.pod);
                status = pod_gone(&s) ? SBX_KUBE_EXIT_GONE : 1;
                break;
            }
            setup_done = true;
        }
        strvec argv = { 0 };
        strvec_push(&argv, s.agent);
        strvec_push(&argv, "--connect");
        strvec_push(&argv, KT_POD_SOCKET);
        strvec_push(&argv, "--start");
        strvec_push(&argv, "--resume");
        strvec_push(&argv, id);
        strvec_pushv(&argv, k->o->agent_args);
        kube_exec *x = NULL;
        kube_exec_opts xo = { .stdin_ = true, .timeout_ms = EXEC_TIMEOUT_MS,
                              .keepalive_ms = STREAM_KEEPALIVE_MS, .dead_ms = STREAM_DEAD_MS };
        int r = kube_exec_open(k->c, k->ns, s.pod, s.container, (const char *const *)argv.v,
                               &xo, &x, err);
        strvec_clear(&argv);
        if (r == 0) {
            down_since = 0;
            delay_ms = 50;
            t_end e = relay(&s, x, err);
            kube_exec_free(x);
            if (e == T_HOLDER_DONE) {
                status = 0;
                break;
            }
            if (e == T_PEER_CLOSED) {
                sbx_errf(err, "the agent in the pod %s closed the stream (another holder took "
                         "over, or it stopped)", s.pod);
                status = 1;
                break;
            }
            if (e == T_FATAL) {
                status = s.holder_eof ? SBX_KUBE_EXIT_GONE : 1;
                break;
            }
            if (e == T_AGENT_MISSING) {
                /* the container restarted (its /run is new) or the image changed */
                free(s.agent);
                s.agent = NULL;
                continue;
            }
            if (s.holder_eof) {
                status = 0;
                break;
            }
        } else {
            sbx_report("sbx-kube", "exec into %s failed: %s", s.pod, err->msg);
        }
        /* dropped: the pod gone, or a new exec resumes the stream */
        if (pod_gone(&s)) {
            char what[320];
            snprintf(what, sizeof(what), "the pod %s is gone", s.pod);
            name_gone(&s, what, err);
            status = SBX_KUBE_EXIT_GONE;
            break;
        }
        if (!down_since)
            down_since = now_ns();
        if (now_ns() - down_since > (uint64_t)RECONNECT_S * 1000000000ULL) {
            /* The API server itself not answering is not the pod's end: the user reads that
             * it is the server (the pod may well still run the command), not that the
             * sandbox stopped. */
            if (s.server_silent)
                sbx_errf(err, "the API server at %s has not answered for %d s (%s); the pod "
                         "%s may still be running the command",
                         k->target.server ? k->target.server : "?", RECONNECT_S, s.silent_why,
                         s.pod);
            else
                sbx_err_prefix(err, "the pod %s could not be reached again within %d s", s.pod,
                               RECONNECT_S);
            status = 1;
            break;
        }
        usleep(delay_ms * 1000);
        if (delay_ms < 2000)
            delay_ms *= 2;
    }
    if (status) {
        if (!s.rs.peer_hello)   /* never through: the setup (probe, upload, first exec) */
            sbx_err_prefix(err, "cannot reach sbx-agent in the pod %s", s.pod);
        sbx_report("sbx-kube", "stream ends: %s", err->msg);
        /* for the user (the holder sees only the socket close): the reason, one line */
        char line[sizeof(err->msg) + 1];
        int n = snprintf(line, sizeof(line), "%s\n", err->msg);
        sbx_err werr;
        if (sbx_write_file_atomic(errfile, line, (size_t)n, 0600, &werr) < 0)
            sbx_report("sbx-kube", "%s", werr.msg);
    }
    free(errfile);
    rs_free(&s.rs);
    free(s.agent);
    cJSON_Delete(s.st);
    return status;
}
