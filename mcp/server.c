/*
 * The MCP server (server.h): the protocol's state machine, the tools, and the threads that
 * run them.
 *
 * The connection's life, as MCP's "Lifecycle" has it:
 *
 *   (start)  --initialize-->  initialized  --end of input, or stop_fd-->  closing  --> (return)
 *
 * initialize picks the protocol version (the client's when this server speaks it, else
 * the newest it speaks, which the client may refuse by closing); requests before it are
 * answered all the same (a client that skips it still gets correct answers), with the
 * newest version's result shapes. At the end of input the calls still running are
 * answered as they end; on stop_fd (a signal) or a dead out_fd they are cancelled, and
 * none is answered (close_calls).
 *
 * Threads: the caller's thread reads the input, answers everything but tools/call itself
 * (those answers need no sandbox), and starts one thread per tools/call. A call's thread
 * takes a libsbxsh handle of its own from a pool (a handle runs one line at a time: calls
 * sharing one would wait for each other), runs the tool, writes its answer, and wakes the
 * reader through wake_fd so that the reader joins it. Every write to out_fd is one whole line
 * under out_mu, so concurrent answers never interleave.
 *
 * Cancellation (notifications/cancelled, params.requestId): the call is marked, and a
 * byte is written to its cancel pipe, whose read end is the run's libsbxsh cancel fd: a
 * run not started yet is cancelled as it starts, one running is stopped (SIGTERM, then
 * after libsbxsh's grace, SIGKILL). A cancelled call is not answered (the protocol's rule:
 * the client has stopped waiting).
 *
 * Progress (a tools/call with params._meta.progressToken): the reader wakes each second a
 * call with a token runs and sends notifications/progress with the seconds it has run, so
 * that a client whose timeout resets on progress does not cancel a long build. The output
 * is not streamed (the answer has it); the notification says the call is alive.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/sbxsh.h"
#include "common/strbuf.h"
#include "common/version.h"
#include "rpc.h"
#include "text.h"

const char *const mcp_protocol_versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07", NULL,
};
/* The first version whose tool results carry structuredContent (and tools outputSchema). */
#define STRUCTURED_SINCE "2025-06-18"

#define POOL_MAX 4              /* idle handles kept */
#define PROGRESS_EVERY_NS 1000000000ull
#define TIMEOUT_MAX_S 604800.0  /* a tool call's timeout: at most a week */

typedef struct server server;

typedef struct call {
    struct call *next;
    server *srv;
    cJSON *id;              /* the request's id (a copy) */
    char *tool;
    cJSON *args;            /* the arguments (a copy), or NULL */
    int cancel_rd, cancel_wr;   /* a pipe: a byte written cancels the run (libsbxsh's
                                 * cancel fd, which no run can miss, started or not) */
    pthread_t thread;
    bool cancelled;         /* notifications/cancelled named it: no answer */
    bool done;              /* answered (or not): the reader joins it */
    /* progress (the request's params._meta.progressToken): a notifications/progress each
     * second while the call runs, sent by the reader */
    cJSON *progress_token;  /* a copy, or NULL */
    uint64_t start_ns, next_progress_ns;
    bool answered;          /* under out_mu: the answer is out, so no progress after it */
} call;

struct server {
    int out_fd, stop_fd, wake_rd, wake_wr;
    pthread_mutex_t out_mu;
    bool out_broken;            /* out_fd refused a write: the client is gone */
    pthread_mutex_t mu;         /* everything below */
    call *calls;
    unsigned ncalls;
    sbxsh **idle;               /* the pool */
    size_t nidle, idle_alloc;
    unsigned gen;               /* bumped by a release: older handles are closed */
    sbxsh_options *opts;
    char *session;              /* the session's name, for messages */
    bool structured;            /* the negotiated version has structuredContent */
    size_t cap;
};

/* ---- output ------------------------------------------------------------------------- */

/* Writes line under out_mu. out_fd is non-blocking: a client that stops reading without
 * closing would otherwise hold a writer (and out_mu, and so every other writer) forever;
 * here a writer waits for room or for stop_fd (a signal), and gives up on the client at
 * the latter. */
static void write_locked(server *s, const char *line)
{
    size_t len = strlen(line), off = 0;
    while (!s->out_broken && off < len) {
        ssize_t n = write(s->out_fd, line + off, len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p[2] = { { .fd = s->out_fd, .events = POLLOUT },
                                   { .fd = s->stop_fd, .events = POLLIN } };
            if (poll(p, 2, -1) < 0 && errno != EINTR)
                s->out_broken = true;
            else if (p[1].revents)
                s->out_broken = true;
            continue;
        }
        s->out_broken = true;       /* EPIPE: the client is gone */
    }
}

/* Writes one protocol line (taken): the only way anything reaches out_fd. answered, when
 * given, is set in the same critical section, so that a progress notification (which
 * checks it there) never follows its call's answer. */
static void send_line_as(server *s, char *line, bool *answered)
{
    pthread_mutex_lock(&s->out_mu);
    write_locked(s, line);
    if (answered)
        *answered = true;
    pthread_mutex_unlock(&s->out_mu);
    free(line);
}

static void send_line(server *s, char *line)
{
    send_line_as(s, line, NULL);
}

static cJSON *text_content(const char *text)
{
    cJSON *content = cJSON_CreateArray(), *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "type", "text");
    cJSON_AddStringToObject(item, "text", text);
    cJSON_AddItemToArray(content, item);
    return content;
}

/* A tool's failure as the model sees it: a result with isError, not a protocol error, so
 * that the model can read why and correct its call (MCP 2025-11-25, "Error Handling"). */
static cJSON *tool_error(const char *fmt, ...) SBX_PRINTF(1, 2);
static cJSON *tool_error(const char *fmt, ...)
{
    va_list ap;
    strbuf raw = STRBUF_INIT, msg = STRBUF_INIT;
    va_start(ap, fmt);
    strbuf_vaddf(&raw, fmt, ap);
    va_end(ap);
    mcp_text_escape(&msg, raw.buf, raw.len);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "content", text_content(msg.buf));
    cJSON_AddBoolToObject(r, "isError", true);
    strbuf_release(&raw);
    strbuf_release(&msg);
    return r;
}

/* A tool's result: obj as JSON text (what every client reads) and, from 2025-06-18 on,
 * as structuredContent too. Takes obj. */
static cJSON *tool_result(server *s, cJSON *obj)
{
    cJSON *r = cJSON_CreateObject();
    char *text = cJSON_PrintUnformatted(obj);
    if (!text)
        xdie_oom();
    cJSON_AddItemToObject(r, "content", text_content(text));
    cJSON_free(text);
    if (s->structured)
        cJSON_AddItemToObject(r, "structuredContent", obj);
    else
        cJSON_Delete(obj);
    cJSON_AddBoolToObject(r, "isError", false);
    return r;
}

/* ---- handles -------------------------------------------------------------------------- */

static int take_handle(server *s, sbxsh **h, unsigned *gen, sbxsh_error *e)
{
    pthread_mutex_lock(&s->mu);
    *gen = s->gen;
    *h = s->nidle ? s->idle[--s->nidle] : NULL;
    pthread_mutex_unlock(&s->mu);
    return *h ? 0 : sbxsh_open(s->opts, h, e);
}

static void give_handle(server *s, sbxsh *h, unsigned gen)
{
    pthread_mutex_lock(&s->mu);
    if (gen == s->gen && s->nidle < POOL_MAX) {
        XGROW(s->idle, s->idle_alloc, s->nidle + 1);
        s->idle[s->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    sbxsh_close(h);
}

/* ---- the tools ------------------------------------------------------------------------ */

static void add_output(server *s, cJSON *obj, const sbxsh_result *res, int stream,
                       const char *name, const char *flag)
{
    size_t len = 0;
    const char *data = sbxsh_result_data(res, stream, &len);
    size_t head = sbxsh_result_head_len(res, stream);
    bool cut = sbxsh_result_truncated(res, stream) && head <= len, truncated = false;
    strbuf sb = STRBUF_INIT;
    mcp_text_cap(&sb, data, cut ? head : len, cut ? data + head : NULL, cut ? len - head : 0,
                 cut ? sbxsh_result_total(res, stream) : len, s->cap, &truncated);
    cJSON_AddStringToObject(obj, name, sb.buf);
    cJSON_AddBoolToObject(obj, flag, truncated);
    strbuf_release(&sb);
}

/* Runs c->args.command on a handle of its own; c->cancel_rd cancels it. */
static cJSON *tool_execute(server *s, call *c)
{
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(c->args, "command");
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(c->args, "timeout");
    uint64_t timeout_ms = 0;
    if (!cJSON_IsString(cmd))
        return tool_error("execute_command: \"command\" (a string) is required");
    if (to && !cJSON_IsNull(to)) {
        double v = cJSON_IsNumber(to) ? to->valuedouble : NAN;
        if (!(v > 0 && v <= TIMEOUT_MAX_S))
            return tool_error("execute_command: \"timeout\" must be a number of seconds "
                              "above 0 and at most %.0f", TIMEOUT_MAX_S);
        timeout_ms = (uint64_t)ceil(v * 1000);
    }

    sbxsh_error e = { 0 };
    sbxsh *h;
    unsigned gen;
    if (take_handle(s, &h, &gen, &e) < 0)
        return tool_error("sbx: cannot open the session: %s", e.message);
    sbxsh_run_options *ro = sbxsh_run_options_new();
    if (!ro)
        xdie_oom();
    /* the collector keeps 2 * cap bytes of each end: the half of the cap in characters
     * that mcp_text_cap keeps there, even when every character is 4 bytes of UTF-8 */
    if (sbxsh_run_options_set_capture(ro, 4 * s->cap, &e) < 0 ||
        sbxsh_run_options_set_timeout_ms(ro, timeout_ms, &e) < 0 ||
        sbxsh_run_options_set_cancel_fd(ro, c->cancel_rd, &e) < 0) {
        sbxsh_run_options_free(ro);
        give_handle(s, h, gen);
        return tool_error("sbx: %s", e.message);
    }
    sbxsh_result *res = NULL;
    int rc = sbxsh_run(h, cmd->valuestring, ro, &res, &e);
    sbxsh_run_options_free(ro);
    give_handle(s, h, gen);
    pthread_mutex_lock(&s->mu);
    bool cancelled = c->cancelled;
    pthread_mutex_unlock(&s->mu);
    if (cancelled) {
        sbxsh_result_free(res);
        return NULL;
    }
    if (rc < 0)
        return tool_error("sbx: the command could not be run: %s", e.message);

    cJSON *obj = cJSON_CreateObject();
    cJSON_AddNumberToObject(obj, "exit_code", sbxsh_result_exit_code(res));
    add_output(s, obj, res, SBXSH_STDOUT, "stdout", "stdout_truncated");
    add_output(s, obj, res, SBXSH_STDERR, "stderr", "stderr_truncated");
    cJSON_AddBoolToObject(obj, "timed_out", sbxsh_result_timed_out(res) != 0);
    sbxsh_result_free(res);
    return tool_result(s, obj);
}

static cJSON *tool_status(server *s, call *c)
{
    sbxsh_error e = { 0 };
    sbxsh *h;
    unsigned gen;
    char *json = NULL;
    if (take_handle(s, &h, &gen, &e) < 0)
        return tool_error("sbx: cannot open the session: %s", e.message);
    int rc = sbxsh_status(h, &json, &e);
    give_handle(s, h, gen);
    if (rc < 0)
        return tool_error("sbx: session_status: %s", e.message);
    /* sbx's own JSON, but it quotes names and messages that came from elsewhere: parsed
     * again here, and only valid UTF-8 passed on */
    cJSON *obj = mcp_rpc_utf8_ok(json, strlen(json)) ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        strbuf sb = STRBUF_INIT;
        mcp_text_escape(&sb, json, strlen(json));
        sbxsh_free(json);
        cJSON *r = tool_error("sbx: session_status: sbx's status is not a JSON object: %s",
                              sb.buf);
        strbuf_release(&sb);
        return r;
    }
    sbxsh_free(json);
    return tool_result(s, obj);
}

static cJSON *tool_release(server *s, call *c)
{
    sbxsh_error e = { 0 };
    sbxsh *h;
    unsigned gen;
    if (take_handle(s, &h, &gen, &e) < 0)
        return tool_error("sbx: cannot open the session: %s", e.message);
    int rc = sbxsh_release(h, &e);
    sbxsh_close(h);     /* released: good for nothing else */
    /* the pool's handles were opened for the session before the release: the next call
     * opens a new one, which starts the session again */
    pthread_mutex_lock(&s->mu);
    s->gen++;
    sbxsh **idle = s->idle;
    size_t n = s->nidle;
    s->idle = NULL, s->nidle = s->idle_alloc = 0;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++)
        sbxsh_close(idle[i]);
    free(idle);
    if (rc < 0)
        return tool_error("sbx: release_session: %s", e.message);
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "session", s->session);
    cJSON_AddBoolToObject(obj, "released", true);
    return tool_result(s, obj);
}

static void *call_main(void *arg)
{
    call *c = arg;
    server *s = c->srv;
    cJSON *result;
    if (!strcmp(c->tool, "execute_command"))
        result = tool_execute(s, c);
    else if (!strcmp(c->tool, "session_status"))
        result = tool_status(s, c);
    else
        result = tool_release(s, c);

    pthread_mutex_lock(&s->mu);
    bool cancelled = c->cancelled;
    pthread_mutex_unlock(&s->mu);
    if (result && !cancelled)
        send_line_as(s, mcp_rpc_result(c->id, result), &c->answered);
    else
        cJSON_Delete(result);

    pthread_mutex_lock(&s->mu);
    c->done = true;
    pthread_mutex_unlock(&s->mu);
    char b = 0;
    if (write(s->wake_wr, &b, 1) < 0) {
        /* the pipe is full: the reader has wakes enough pending to reap this call */
    }
    return NULL;
}

/* ---- the tools' descriptions ---------------------------------------------------------- */

static cJSON *schema_object(void)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "object");
    cJSON_AddItemToObject(o, "properties", cJSON_CreateObject());
    return o;
}

static void schema_prop(cJSON *schema, const char *name, const char *type, const char *desc)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", type);
    if (desc)
        cJSON_AddStringToObject(p, "description", desc);
    cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(schema, "properties"), name, p);
}

static void schema_required(cJSON *schema, const char *const *names)
{
    cJSON *r = cJSON_CreateArray();
    for (; *names; names++)
        cJSON_AddItemToArray(r, cJSON_CreateString(*names));
    cJSON_AddItemToObject(schema, "required", r);
}

static cJSON *tool_desc(const char *name, const char *title, const char *desc, cJSON *input,
                        cJSON *output, bool read_only, bool destructive)
{
    cJSON *t = cJSON_CreateObject(), *ann = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", name);
    cJSON_AddStringToObject(t, "title", title);
    cJSON_AddStringToObject(t, "description", desc);
    cJSON_AddItemToObject(t, "inputSchema", input);
    if (output)
        cJSON_AddItemToObject(t, "outputSchema", output);
    cJSON_AddStringToObject(ann, "title", title);
    cJSON_AddBoolToObject(ann, "readOnlyHint", read_only);
    cJSON_AddBoolToObject(ann, "destructiveHint", destructive);
    cJSON_AddItemToObject(t, "annotations", ann);
    return t;
}

static cJSON *tools_list(server *s)
{
    cJSON *tools = cJSON_CreateArray();
    char cap[32];
    snprintf(cap, sizeof(cap), "%zu", s->cap);

    cJSON *in = schema_object();
    schema_prop(in, "command", "string",
                "A bash command line, run as `sbxsh -c` runs it: each part on the host or in "
                "the session's sandbox, the code directories synced both ways.");
    schema_prop(in, "timeout", "number",
                "Seconds after which the command is stopped (optional; default: none).");
    schema_required(in, (const char *const[]){ "command", NULL });
    cJSON *out = NULL;
    if (s->structured) {
        out = schema_object();
        schema_prop(out, "exit_code", "integer", "bash's $? for the line");
        schema_prop(out, "stdout", "string", NULL);
        schema_prop(out, "stderr", "string", NULL);
        schema_prop(out, "stdout_truncated", "boolean", NULL);
        schema_prop(out, "stderr_truncated", "boolean", NULL);
        schema_prop(out, "timed_out", "boolean", NULL);
        schema_required(out, (const char *const[]){ "exit_code", "stdout", "stderr",
                                                    "stdout_truncated", "stderr_truncated",
                                                    NULL });
    }
    strbuf d = STRBUF_INIT;
    strbuf_addf(&d, "Run a shell command line in the sbxsh session %s, as `sbxsh -c` runs it, "
                "and return its exit_code, stdout and stderr. Each stream keeps at most %s "
                "characters: when longer, its head and its tail with a line saying how many "
                "bytes were left out between them, and stdout_truncated or stderr_truncated "
                "set. Bytes that are not UTF-8 come back as \\xNN.", s->session, cap);
    cJSON_AddItemToArray(tools, tool_desc("execute_command", "Run a command", d.buf, in, out,
                                          false, true));
    strbuf_release(&d);

    cJSON_AddItemToArray(tools, tool_desc(
        "session_status", "Session status",
        "The sbxsh session's status, as `sbx status --json` prints it: its holder, its "
        "sandbox and the sync's counters.", schema_object(), NULL, true, false));
    cJSON_AddItemToArray(tools, tool_desc(
        "release_session", "Release the session",
        "End the sbxsh session: the sandbox's last changes are synced back, then the sandbox "
        "is stopped. The next command starts a new one.", schema_object(), NULL, false, true));
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "tools", tools);
    return r;
}

/* ---- requests ------------------------------------------------------------------------- */

static char *initialize(server *s, const mcp_msg *m)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->params, "protocolVersion");
    if (!cJSON_IsString(v))
        return mcp_rpc_error(m->id, MCP_ERR_PARAMS,
                             "initialize: params.protocolVersion (a string) is required");
    const char *version = mcp_protocol_versions[0];
    for (size_t i = 0; mcp_protocol_versions[i]; i++)
        if (!strcmp(v->valuestring, mcp_protocol_versions[i]))
            version = mcp_protocol_versions[i];
    /* the versions are dates: a string compare orders them */
    s->structured = strcmp(version, STRUCTURED_SINCE) >= 0;

    cJSON *r = cJSON_CreateObject(), *caps = cJSON_CreateObject(),
          *tools = cJSON_CreateObject(), *info = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "protocolVersion", version);
    cJSON_AddBoolToObject(tools, "listChanged", false);
    cJSON_AddItemToObject(caps, "tools", tools);
    cJSON_AddItemToObject(r, "capabilities", caps);
    cJSON_AddStringToObject(info, "name", "sbx");
    cJSON_AddStringToObject(info, "title", "sbxsh");
    cJSON_AddStringToObject(info, "version", SBXSH_VERSION);
    cJSON_AddItemToObject(r, "serverInfo", info);
    strbuf d = STRBUF_INIT;
    strbuf_addf(&d, "execute_command runs bash command lines in the sbxsh session %s: what is "
                "harmless runs on the host, everything else in the session's sandbox, with the "
                "code directories synced both ways. The session's files, processes and "
                "environment persist between calls.", s->session);
    cJSON_AddStringToObject(r, "instructions", d.buf);
    strbuf_release(&d);
    return mcp_rpc_result(m->id, r);
}

static char *tools_call(server *s, const mcp_msg *m)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(m->params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(m->params, "arguments");
    if (!cJSON_IsString(name))
        return mcp_rpc_error(m->id, MCP_ERR_PARAMS, "tools/call: params.name (a string) is required");
    if (strcmp(name->valuestring, "execute_command") && strcmp(name->valuestring, "session_status") &&
        strcmp(name->valuestring, "release_session")) {
        strbuf sb = STRBUF_INIT;
        strbuf_addf(&sb, "Unknown tool: %s", name->valuestring);
        char *line = mcp_rpc_error(m->id, MCP_ERR_PARAMS, sb.buf);
        strbuf_release(&sb);
        return line;
    }
    if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args))
        return mcp_rpc_error(m->id, MCP_ERR_PARAMS, "tools/call: params.arguments must be an object");

    pthread_mutex_lock(&s->mu);
    bool full = s->ncalls >= MCP_CALLS_MAX;
    pthread_mutex_unlock(&s->mu);
    if (full)
        return mcp_rpc_error(m->id, MCP_ERR_INTERNAL,
                             "sbx: too many tool calls running at once (16): wait for one to end");

    int cp[2];
    if (pipe2(cp, O_CLOEXEC | O_NONBLOCK) < 0)
        return mcp_rpc_error(m->id, MCP_ERR_INTERNAL, "sbx: cannot make a pipe for the call");
    call *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->cancel_rd = cp[0], c->cancel_wr = cp[1];
    c->id = cJSON_Duplicate(m->id, true);
    c->tool = xstrdup(name->valuestring);
    c->args = cJSON_IsObject(args) ? cJSON_Duplicate(args, true) : cJSON_CreateObject();
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m->params, "_meta");
    const cJSON *token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
    if (cJSON_IsString(token) || cJSON_IsNumber(token)) {
        c->progress_token = cJSON_Duplicate(token, true);
        c->start_ns = now_ns();
        c->next_progress_ns = c->start_ns + PROGRESS_EVERY_NS;
    }
    pthread_mutex_lock(&s->mu);
    c->next = s->calls;
    s->calls = c;
    s->ncalls++;
    pthread_mutex_unlock(&s->mu);
    int err = pthread_create(&c->thread, NULL, call_main, c);
    if (err) {
        pthread_mutex_lock(&s->mu);
        s->calls = c->next;
        s->ncalls--;
        pthread_mutex_unlock(&s->mu);
        cJSON_Delete(c->id);
        cJSON_Delete(c->args);
        cJSON_Delete(c->progress_token);
        close(c->cancel_rd);
        close(c->cancel_wr);
        free(c->tool);
        free(c);
        return mcp_rpc_error(m->id, MCP_ERR_INTERNAL, "sbx: cannot start a thread for the call");
    }
    return NULL;
}

/* Marks c cancelled and stops its run (or the run it is about to start). Under s->mu. */
static void cancel_one(call *c)
{
    if (c->cancelled)
        return;
    c->cancelled = true;
    char b = 'x';
    if (write(c->cancel_wr, &b, 1) < 0) { /* a full pipe holds a cancel already */ }
}

/* Cancels the running call whose id is requestId (an unknown or finished one is ignored,
 * as the protocol says: the cancel and the answer crossed). Under s->mu. */
static void cancel_call(server *s, const cJSON *request_id)
{
    for (call *c = s->calls; c; c = c->next)
        if (!c->done && cJSON_Compare(c->id, request_id, true))
            cancel_one(c);
}

/* Joins the calls that ended. Under s->mu (a call's thread takes it only briefly). */
static void reap(server *s)
{
    for (call **p = &s->calls; *p;) {
        call *c = *p;
        if (!c->done) {
            p = &c->next;
            continue;
        }
        *p = c->next;
        s->ncalls--;
        pthread_mutex_unlock(&s->mu);
        pthread_join(c->thread, NULL);
        pthread_mutex_lock(&s->mu);
        cJSON_Delete(c->id);
        cJSON_Delete(c->args);
        cJSON_Delete(c->progress_token);
        close(c->cancel_rd);
        close(c->cancel_wr);
        free(c->tool);
        free(c);
        p = &s->calls;      /* the list may have changed while unlocked */
    }
}

static void handle_line(server *s, const char *line, size_t len)
{
    mcp_msg m;
    char *reply = NULL;
    mcp_rpc_parse(line, len, &m);
    switch (m.kind) {
    case MCP_MSG_ERROR:
        reply = mcp_rpc_error(m.id, m.error_code, m.error_msg);
        break;
    case MCP_MSG_RESPONSE:     /* we ask nothing of the client: nothing to match it to */
        break;
    case MCP_MSG_NOTIFICATION:
        if (!strcmp(m.method, "notifications/cancelled")) {
            const cJSON *rid = cJSON_GetObjectItemCaseSensitive(m.params, "requestId");
            if (rid) {
                pthread_mutex_lock(&s->mu);
                cancel_call(s, rid);
                pthread_mutex_unlock(&s->mu);
            }
        }
        /* notifications/initialized and any other: nothing to do, and never an answer */
        break;
    case MCP_MSG_REQUEST:
        if (m.params && !cJSON_IsObject(m.params))
            reply = mcp_rpc_error(m.id, MCP_ERR_PARAMS, "params must be an object");
        else if (!strcmp(m.method, "initialize"))
            reply = initialize(s, &m);
        else if (!strcmp(m.method, "ping"))
            reply = mcp_rpc_result(m.id, NULL);
        else if (!strcmp(m.method, "tools/list"))
            reply = mcp_rpc_result(m.id, tools_list(s));
        else if (!strcmp(m.method, "tools/call"))
            reply = tools_call(s, &m);
        else {
            strbuf sb = STRBUF_INIT;
            strbuf_addf(&sb, "Method not found: %s", m.method);
            reply = mcp_rpc_error(m.id, MCP_ERR_NO_METHOD, sb.buf);
            strbuf_release(&sb);
        }
        break;
    }
    if (reply)
        send_line(s, reply);
    mcp_msg_free(&m);
}

/* Sends the progress notifications due, and returns the milliseconds until the next one
 * (-1: none). The reader's alone: it is the one that frees calls, so a call found here
 * lives until the notification is written; each is written under out_mu only while its
 * answer is not out (call.answered). Progress is the seconds the call has run, which only
 * grows, as the protocol asks. */
static int progress_tick(server *s)
{
    uint64_t now = now_ns(), next = 0;
    call *due[MCP_CALLS_MAX];
    char *lines[MCP_CALLS_MAX];
    size_t n = 0;

    pthread_mutex_lock(&s->mu);
    for (call *c = s->calls; c; c = c->next) {
        if (!c->progress_token || c->done || c->cancelled)
            continue;
        if (now >= c->next_progress_ns && n < MCP_CALLS_MAX) {
            unsigned long long secs = (now - c->start_ns) / 1000000000ull;
            cJSON *params = cJSON_CreateObject(), *msg = cJSON_CreateObject();
            char text[64];
            snprintf(text, sizeof(text), "running for %llu s", secs);
            cJSON_AddItemToObject(params, "progressToken", cJSON_Duplicate(c->progress_token, true));
            cJSON_AddNumberToObject(params, "progress", (double)secs);
            cJSON_AddStringToObject(params, "message", text);
            cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
            cJSON_AddStringToObject(msg, "method", "notifications/progress");
            cJSON_AddItemToObject(msg, "params", params);
            char *body = cJSON_PrintUnformatted(msg);
            cJSON_Delete(msg);
            if (!body)
                xdie_oom();
            lines[n] = xasprintf("%s\n", body);
            cJSON_free(body);
            due[n++] = c;
            while (c->next_progress_ns <= now)
                c->next_progress_ns += PROGRESS_EVERY_NS;
        }
        if (!next || c->next_progress_ns < next)
            next = c->next_progress_ns;
    }
    pthread_mutex_unlock(&s->mu);

    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&s->out_mu);
        if (!due[i]->answered)
            write_locked(s, lines[i]);
        pthread_mutex_unlock(&s->out_mu);
        free(lines[i]);
    }
    if (!next)
        return -1;
    return next > now ? (int)((next - now) / 1000000 + 1) : 0;
}

/* ---- the loop ------------------------------------------------------------------------- */

/* Ends the connection's calls. At the end of input (the client closed it after its last
 * request, as a script's pipe does) each call runs to its end and is answered; when asked
 * to stop (stop_fd: SIGTERM, the protocol's next step of a shutdown, or SIGINT), or once
 * out_fd is gone, each is cancelled and joined unanswered (libsbxsh ends a cancelled run
 * within its grace of a few seconds). */
static void close_calls(server *s, int stop_fd, bool cancel)
{
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (cancel)
            for (call *c = s->calls; c; c = c->next)
                cancel_one(c);
        reap(s);
        if (!s->calls)
            break;
        pthread_mutex_unlock(&s->mu);
        struct pollfd p[2] = { { .fd = s->wake_rd, .events = POLLIN },
                               { .fd = stop_fd, .events = POLLIN } };
        /* stop_fd stays readable once signalled: watched only until it has been */
        if (poll(p, cancel ? 1 : 2, -1) > 0) {
            char b[64];
            if (p[0].revents && read(s->wake_rd, b, sizeof(b)) < 0) { /* drained */ }
            if (!cancel && p[1].revents)
                cancel = true;
        }
        pthread_mutex_lock(&s->out_mu);
        if (s->out_broken)
            cancel = true;
        pthread_mutex_unlock(&s->out_mu);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
}

int mcp_server_run(int in_fd, int out_fd, int stop_fd, const mcp_server_opts *o, sbx_err *err)
{
    server s = { .out_fd = out_fd, .stop_fd = stop_fd, .cap = o->output_cap ? o->output_cap : MCP_OUTPUT_CAP_DEFAULT,
                 .structured = true };
    sbxsh_error e = { 0 };
    int pfd[2], rc = 0;
    sbxsh *h;

    if (s.cap < MCP_TEXT_CAP_MIN)
        return sbx_errf(err, "the output cap must be at least %d characters", MCP_TEXT_CAP_MIN);
    if (!(s.opts = sbxsh_options_new()))
        xdie_oom();
    if ((o->session && sbxsh_options_set_session(s.opts, o->session, &e) < 0) ||
        (o->cwd && sbxsh_options_set_cwd(s.opts, o->cwd, &e) < 0) ||
        (o->program && sbxsh_options_set_program(s.opts, o->program, &e) < 0) ||
        sbxsh_open(s.opts, &h, &e) < 0) {
        sbxsh_options_free(s.opts);
        return sbx_errf(err, "%s", e.message);
    }
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
        sbxsh_close(h);
        sbxsh_options_free(s.opts);
        return sbx_errno(err, "pipe");
    }
    s.wake_rd = pfd[0], s.wake_wr = pfd[1];
    set_nonblock(out_fd, true);
    s.session = xstrdup(sbxsh_session(h));
    s.idle = xmalloc(sizeof(*s.idle) * (s.idle_alloc = POOL_MAX));
    s.idle[s.nidle++] = h;
    pthread_mutex_init(&s.mu, NULL);
    pthread_mutex_init(&s.out_mu, NULL);

    strbuf in = STRBUF_INIT;
    bool skipping = false, cancel = true;      /* inside a line longer than MCP_LINE_MAX */
    for (;;) {
        pthread_mutex_lock(&s.mu);
        reap(&s);
        pthread_mutex_unlock(&s.mu);
        pthread_mutex_lock(&s.out_mu);
        bool broken = s.out_broken;
        pthread_mutex_unlock(&s.out_mu);
        if (broken) {       /* a signal (stop_fd) gave up on a full stdout: no failure */
            struct pollfd st = { .fd = stop_fd, .events = POLLIN };
            if (poll(&st, 1, 0) <= 0) {
                sbx_errf(err, "the client stopped reading the answers (stdout)");
                rc = -1;
            }
            break;
        }
        struct pollfd p[3] = { { .fd = in_fd, .events = POLLIN },
                               { .fd = s.wake_rd, .events = POLLIN },
                               { .fd = stop_fd, .events = POLLIN } };
        int n = poll(p, 3, progress_tick(&s));
        if (n < 0 && errno != EINTR) {
            rc = sbx_errno(err, "poll");
            break;
        }
        if (n <= 0)
            continue;
        if (p[1].revents) {
            char b[64];
            if (read(s.wake_rd, b, sizeof(b)) < 0) { /* a wake already drained */ }
        }
        if (p[2].revents)
            break;
        if (!p[0].revents)
            continue;
        strbuf_grow(&in, 65536);
        ssize_t got = read(in_fd, in.buf + in.len, strbuf_avail(&in));
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0) {
            rc = sbx_errno(err, "reading the client's messages (stdin)");
            break;
        }
        if (got == 0) {     /* the client's last request is in: answer what runs */
            cancel = false;
            break;
        }
        size_t scanned = in.len;
        strbuf_setlen(&in, in.len + (size_t)got);
        /* each whole line is one message; what follows the last newline waits for more */
        size_t start = 0;
        for (size_t i = scanned; i < in.len; i++) {
            if (in.buf[i] != '\n')
                continue;
            size_t len = i - start;
            if (len && in.buf[start + len - 1] == '\r')
                len--;
            if (skipping)
                skipping = false;
            else if (len)
                handle_line(&s, in.buf + start, len);
            start = i + 1;
        }
        strbuf_remove(&in, 0, start);
        if (in.len > MCP_LINE_MAX) {
            if (!skipping)
                send_line(&s, mcp_rpc_error(NULL, MCP_ERR_PARSE,
                                            "Parse error: the message is longer than 8 MiB"));
            skipping = true;
            strbuf_reset(&in);
        }
    }
    strbuf_release(&in);
    close_calls(&s, stop_fd, cancel);
    for (size_t i = 0; i < s.nidle; i++)
        sbxsh_close(s.idle[i]);
    free(s.idle);
    free(s.session);
    sbxsh_options_free(s.opts);
    close(s.wake_rd);
    close(s.wake_wr);
    pthread_mutex_destroy(&s.mu);
    pthread_mutex_destroy(&s.out_mu);
    return rc;
}
