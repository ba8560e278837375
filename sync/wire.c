/*
 * The wire protocol's frames and messages (wire.h, PROTOCOL.md): the encoders both sides
 * use and the decoders. The host decodes what the agent sends (HELLO, ENTRY, EXIT, HOLE,
 * SYNC_DONE, WARN...) and the agent may be the sandbox's own program, so every decoder here
 * treats its payload as hostile: each field is read through the bounded reader (a read
 * past the end turns it bad, never reads memory), each count is checked against what is
 * left before anything is allocated for it, each enumeration against its known values,
 * and a frame with bytes after its last field is refused. A refused frame ends the
 * stream (the caller marks the connection failed); nothing of it is acted on.
 */
#include "sync/wire.h"

#include <string.h>

const char *wire_type_name(unsigned type)
{
    switch (type) {
    case WIRE_HELLO: return "HELLO";
    case WIRE_DATA: return "DATA";
    case WIRE_EOF: return "EOF";
    case WIRE_CREDIT: return "CREDIT";
    case WIRE_DELTA_BEGIN: return "DELTA_BEGIN";
    case WIRE_ENTRY: return "ENTRY";
    case WIRE_CHUNK: return "CHUNK";
    case WIRE_ENTRY_CANCEL: return "ENTRY_CANCEL";
    case WIRE_DELTA_END: return "DELTA_END";
    case WIRE_HOLE: return "HOLE";
    case WIRE_CONFIG: return "CONFIG";
    case WIRE_RUN: return "RUN";
    case WIRE_SIGNAL: return "SIGNAL";
    case WIRE_WINSIZE: return "WINSIZE";
    case WIRE_CLOSE_OUTPUT: return "CLOSE_OUTPUT";
    case WIRE_SYNC: return "SYNC";
    case WIRE_PUT_FILE: return "PUT_FILE";
    case WIRE_PULL_CANCEL: return "PULL_CANCEL";
    case WIRE_EXIT: return "EXIT";
    case WIRE_SYNC_DONE: return "SYNC_DONE";
    case WIRE_WARN: return "WARN";
    case WIRE_SIGNALED: return "SIGNALED";
    }
    return NULL;
}

/* One frame's header from buf: 0 until the whole frame is there, 1 with f filled, -1 for
 * a header the peer should never send. The type is checked first (a stream out of step
 * shows as an unknown type, not as a huge length), and the length against SYNC_MAX_FRAME
 * before the caller buffers that much: a peer cannot make us hold more than one maximal
 * frame by announcing a larger one. */
int wire_parse(const uint8_t *buf, size_t avail, wire_frame *f, sbx_err *err)
{
    if (avail < WIRE_HEADER)
        return 0;
    f->len = sbx_le32(buf);
    f->type = sbx_le16(buf + 4);
    f->fd = sbx_le16(buf + 6);
    f->chan = sbx_le32(buf + 8);
    if (!wire_type_name(f->type))
        return sbx_errf(err, "unknown frame type %u", f->type);
    if (f->len > SYNC_MAX_FRAME)
        return sbx_errf(err, "%s frame of %u bytes exceeds the %u-byte limit",
                        wire_type_name(f->type), f->len, SYNC_MAX_FRAME);
    if (avail - WIRE_HEADER < f->len)
        return 0;
    f->payload = buf + WIRE_HEADER;
    return 1;
}

/* ---- encoding ---------------------------------------------------------------------------- */

void wire_cstr(strbuf *out, const char *s)
{
    wire_str(out, s ? s : "", s ? strlen(s) : 0);
}

/* A frame's header with its length left 0, filled in by wire_end once the payload is
 * written after it; returns where the header starts. */
size_t wire_begin(strbuf *out, unsigned type, unsigned fd, uint32_t chan)
{
    size_t at = out->len;
    wire_u32(out, 0);
    wire_u16(out, (uint16_t)type);
    wire_u16(out, (uint16_t)fd);
    wire_u32(out, chan);
    return at;
}

void wire_end(strbuf *out, size_t at)
{
    sbx_put_le32(out->buf + at, (uint32_t)(out->len - at - WIRE_HEADER));
}

void wire_frame_raw(strbuf *out, unsigned type, unsigned fd, uint32_t chan,
                    const void *data, size_t len)
{
    size_t at = wire_begin(out, type, fd, chan);
    strbuf_add(out, data, len);
    wire_end(out, at);
}

/* ---- decoding ---------------------------------------------------------------------------- */

/* The error of a payload too short for its fields (or a field over its limit). */
static int short_payload(const wire_frame *f, sbx_err *err)
{
    return sbx_errf(err, "malformed %s frame: a field is longer than its %u-byte payload or "
                    "over its limit", wire_type_name(f->type), f->len);
}

/* A decoder's last check: every field was there and nothing follows them (a frame with
 * extra bytes is malformed, not extensible). */
static int trailing(const wire_frame *f, const wire_rd *r, sbx_err *err)
{
    if (r->bad)
        return short_payload(f, err);
    if (r->left)
        return sbx_errf(err, "malformed %s frame: %zu unexpected trailing bytes",
                        wire_type_name(f->type), r->left);
    return 0;
}

/* ---- messages ---------------------------------------------------------------------------- */

void wire_put_hello(strbuf *out, const wire_hello *h)
{
    size_t at = wire_begin(out, WIRE_HELLO, 0, 0);
    wire_u32(out, WIRE_MAGIC);
    wire_u16(out, h->version);
    wire_u16(out, 0);
    wire_u64(out, h->pair_id);
    wire_u64(out, h->applied_push_seq);
    wire_u32(out, h->pid);
    wire_str(out, h->about ? h->about : "", h->about ? h->about_len : 0);
    wire_end(out, at);
}

int wire_get_hello(const wire_frame *f, wire_hello *h, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    memset(h, 0, sizeof(*h));
    h->magic = wire_get_u32(&r);
    if (h->magic != WIRE_MAGIC)
        return sbx_errf(err, "bad HELLO: not the sbx-agent protocol");
    h->version = wire_get_u16(&r);
    wire_get_u16(&r);
    h->pair_id = wire_get_u64(&r);
    h->applied_push_seq = wire_get_u64(&r);
    h->pid = wire_get_u32(&r);
    wire_get_str(&r, SYNC_MAX_TEXT, &h->about, &h->about_len);
    /* Later versions may append fields: a HELLO's tail is ignored, so that the version
     * check below can give a clear message. */
    if (r.bad)
        return short_payload(f, err);
    return 0;
}

void wire_put_config(strbuf *out, const wire_config *c)
{
    size_t at = wire_begin(out, WIRE_CONFIG, 0, 0);
    wire_u64(out, c->pair_id);
    wire_u8(out, c->reset);
    wire_u64(out, c->push_seq);
    wire_u64(out, c->pull_seq);
    wire_u32(out, c->nroots);
    for (uint32_t i = 0; i < c->nroots; i++) {
        wire_u8(out, c->roots[i].kind);
        wire_str(out, c->roots[i].base, c->roots[i].base_len);
        wire_str(out, c->roots[i].pattern, c->roots[i].pattern_len);
    }
    wire_u32(out, c->nexcludes);
    for (uint32_t i = 0; i < c->nexcludes; i++)
        wire_str(out, c->excludes[i], c->exclude_lens[i]);
    wire_end(out, at);
}

int wire_get_config(const wire_frame *f, wire_config *c, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    memset(c, 0, sizeof(*c));
    c->pair_id = wire_get_u64(&r);
    c->reset = wire_get_u8(&r) != 0;
    c->push_seq = wire_get_u64(&r);
    c->pull_seq = wire_get_u64(&r);
    c->nroots = wire_get_u32(&r);
    /* a count is believed only as far as the bytes left could hold it (a root is at least
     * 9 bytes): a 4-billion count in a short frame must not become a huge allocation */
    if (r.bad || c->nroots > SYNC_MAX_ROOTS || c->nroots > r.left / 9)
        return short_payload(f, err);
    c->roots = xcalloc(c->nroots ? c->nroots : 1, sizeof(*c->roots));
    for (uint32_t i = 0; i < c->nroots; i++) {
        wire_root *rt = &c->roots[i];
        rt->kind = wire_get_u8(&r);
        wire_get_str(&r, SYNC_MAX_PATH, &rt->base, &rt->base_len);
        wire_get_str(&r, SYNC_MAX_PATH, &rt->pattern, &rt->pattern_len);
        if (rt->kind < WIRE_ROOT_CODE || rt->kind > WIRE_ROOT_CREATE) {
            unsigned kind = rt->kind;
            wire_config_release(c);
            return sbx_errf(err, "malformed CONFIG frame: unknown root kind %u", kind);
        }
    }
    c->nexcludes = wire_get_u32(&r);
    if (r.bad || c->nexcludes > SYNC_MAX_EXCLUDES || c->nexcludes > r.left / 4) {
        wire_config_release(c);
        return short_payload(f, err);
    }
    c->excludes = xcalloc(c->nexcludes ? c->nexcludes : 1, sizeof(*c->excludes));
    c->exclude_lens = xcalloc(c->nexcludes ? c->nexcludes : 1, sizeof(*c->exclude_lens));
    for (uint32_t i = 0; i < c->nexcludes; i++)
        wire_get_str(&r, SYNC_MAX_PATH, &c->excludes[i], &c->exclude_lens[i]);
    if (trailing(f, &r, err) < 0) {
        wire_config_release(c);
        return -1;
    }
    return 0;
}

void wire_config_release(wire_config *c)
{
    free(c->roots);
    free(c->excludes);
    free(c->exclude_lens);
    c->roots = NULL;
    c->excludes = NULL;
    c->exclude_lens = NULL;
    c->nroots = c->nexcludes = 0;
}

/* A NULL-terminated string vector as a u32 count and its strings (argv, env). */
static void put_strv(strbuf *out, const char *const *v)
{
    uint32_t n = 0;
    while (v && v[n])
        n++;
    wire_u32(out, n);
    for (uint32_t i = 0; i < n; i++)
        wire_cstr(out, v[i]);
}

void wire_put_run(strbuf *out, uint32_t chan, uint32_t flags, uint16_t rows, uint16_t cols,
                  const char *exe, const char *cwd, const char *const *argv,
                  const char *const *env, const uint16_t *fds, const uint8_t *fd_out,
                  size_t nfds)
{
    size_t at = wire_begin(out, WIRE_RUN, 0, chan);
    wire_u32(out, flags);
    wire_u16(out, rows);
    wire_u16(out, cols);
    wire_cstr(out, exe);
    wire_cstr(out, cwd);
    put_strv(out, argv);
    put_strv(out, env);
    wire_u16(out, (uint16_t)nfds);
    for (size_t i = 0; i < nfds; i++) {
        wire_u16(out, fds[i]);
        wire_u8(out, fd_out[i]);
    }
    wire_end(out, at);
}

/* Reads a string list into NUL-terminated strings packed in mem (advancing *mem). A string
 * with a NUL inside is refused: the command would run with an argument (or a variable)
 * cut short of the one the host sent. */
static bool get_strv(wire_rd *r, size_t *count, char ***vec, char **mem)
{
    uint32_t n = wire_get_u32(r);
    if (r->bad || n > SYNC_MAX_ARGS || n > r->left / 4)
        return false;
    *count = n;
    *vec = xcalloc(n + 1, sizeof(char *));
    for (uint32_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if (!wire_get_str(r, SYNC_MAX_FRAME, &s, &len) || memchr(s, 0, len))
            return false;
        memcpy(*mem, s, len);
        (*mem)[len] = '\0';
        (*vec)[i] = *mem;
        *mem += len + 1;
    }
    return true;
}

int wire_get_run(const wire_frame *f, wire_run *run, sbx_err *err)
{
    wire_rd r;
    const char *s;
    size_t len;
    char *mem;

    memset(run, 0, sizeof(*run));
    /* Every string is shorter than the payload, and each needs a 4-byte length: so the
     * copies with their NULs fit in twice the payload. */
    run->mem = mem = xmalloc(2 * (size_t)f->len + 2);
    wire_rd_init(&r, f->payload, f->len);
    run->flags = wire_get_u32(&r);
    run->rows = wire_get_u16(&r);
    run->cols = wire_get_u16(&r);
    if (!wire_get_str(&r, SYNC_MAX_PATH, &s, &len) || !len || memchr(s, 0, len))
        goto bad;
    memcpy(mem, s, len);
    mem[len] = '\0';
    run->exe = mem;
    mem += len + 1;
    if (!wire_get_str(&r, SYNC_MAX_PATH, &s, &len) || !len || memchr(s, 0, len))
        goto bad;
    memcpy(mem, s, len);
    mem[len] = '\0';
    run->cwd = mem;
    mem += len + 1;
    if (!get_strv(&r, &run->argc, &run->argv, &mem) || !run->argc)
        goto bad;
    if (!get_strv(&r, &run->envc, &run->env, &mem))
        goto bad;
    /* the command's fds: each below 1024, each once, and a shared output only after the
     * output it shares (the agent would otherwise index a channel that does not exist) */
    run->nfds = wire_get_u16(&r);
    if (run->nfds > WIRE_MAX_FDS)
        goto bad;
    for (size_t i = 0; i < run->nfds; i++) {
        run->fd[i] = wire_get_u16(&r);
        run->fd_out[i] = wire_get_u8(&r);
        bool out_before = false;
        if (run->fd[i] > 1023 || run->fd_out[i] > WIRE_FD_OUT_SHARED)
            goto bad;
        for (size_t j = 0; j < i; j++) {
            if (run->fd[j] == run->fd[i])
                goto bad;
            out_before |= run->fd_out[j] == WIRE_FD_OUT;
        }
        if (run->fd_out[i] == WIRE_FD_OUT_SHARED && !out_before)
            goto bad;
    }
    if (trailing(f, &r, err) < 0) {
        wire_run_release(run);
        return -1;
    }
    return 0;
bad:
    wire_run_release(run);
    return short_payload(f, err);
}

void wire_run_release(wire_run *r)
{
    free(r->argv);
    free(r->env);
    free(r->mem);
    memset(r, 0, sizeof(*r));
}

size_t wire_put_entry_begin(strbuf *out, const wire_entry *e)
{
    size_t at = wire_begin(out, WIRE_ENTRY, 0, 0);
    wire_u8(out, e->op);
    wire_u8(out, e->ftype);
    wire_u16(out, e->root);
    wire_u32(out, e->flags);
    wire_u64(out, (uint64_t)e->mtime_ns);
    wire_u64(out, e->size);
    wire_str(out, e->path, e->path_len);
    return at;
}

int wire_get_entry(const wire_frame *f, wire_entry *e, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    memset(e, 0, sizeof(*e));
    e->op = wire_get_u8(&r);
    e->ftype = wire_get_u8(&r);
    e->root = wire_get_u16(&r);
    e->flags = wire_get_u32(&r);
    e->mtime_ns = (int64_t)wire_get_u64(&r);
    e->size = wire_get_u64(&r);
    /* The path is bounded by the frame here, not by SYNC_MAX_PATH: a path over the limit in
     * a well-formed frame is one bad entry, which the receiver refuses alone
     * (sf_check_relpath()), so the rest of the delta still applies. Refusing the frame made
     * one over-long path made in the sandbox drop the whole round, and every later one. */
    if (!wire_get_str(&r, SYNC_MAX_FRAME, &e->path, &e->path_len))
        return short_payload(f, err);
    /* What the appliers switch on must be a value they know: an unknown operation or file
     * type would fall into a default branch that was never meant for sandbox input. */
    if (e->op != WIRE_OP_PUT && e->op != WIRE_OP_DELETE)
        return sbx_errf(err, "malformed ENTRY frame: unknown operation %u", e->op);
    if (e->ftype < WIRE_REG || e->ftype > WIRE_LNK)
        return sbx_errf(err, "malformed ENTRY frame: unknown file type %u", e->ftype);
    /* The content announced (size) and the content inline (data_len) must agree with the
     * kind: a deletion or a directory carries none, a symlink's target comes whole and
     * NUL-free (a NUL would make the link point somewhere other than what was checked), a
     * file's first chunk no larger than the file or a chunk. The applier then never writes
     * more than an entry announced (sync/apply.c counts the rest). */
    e->data = r.p;
    e->data_len = r.left;
    if (e->op == WIRE_OP_DELETE || e->ftype == WIRE_DIR) {
        if (e->size || e->data_len)
            return sbx_errf(err, "malformed ENTRY frame: a %s carries %llu bytes of content",
                            e->op == WIRE_OP_DELETE ? "deletion" : "directory",
                            (unsigned long long)(e->size ? e->size : e->data_len));
    } else if (e->ftype == WIRE_LNK) {
        if (e->size > SYNC_MAX_LINK || e->data_len != e->size || !e->size)
            return sbx_errf(err, "malformed ENTRY frame: symlink target of %llu bytes "
                            "(%zu sent; limit %u)", (unsigned long long)e->size,
                            e->data_len, SYNC_MAX_LINK);
        if (memchr(e->data, 0, e->data_len))
            return sbx_errf(err, "malformed ENTRY frame: symlink target contains a NUL byte");
    } else if (e->data_len > e->size || e->data_len > SYNC_CHUNK) {
        return sbx_errf(err, "malformed ENTRY frame: %zu inline bytes for a file of %llu",
                        e->data_len, (unsigned long long)e->size);
    }
    return 0;
}

void wire_put_exit(strbuf *out, uint32_t chan, const wire_exit *x)
{
    size_t at = wire_begin(out, WIRE_EXIT, 0, chan);
    wire_u8(out, x->kind);
    wire_u8(out, x->core);
    wire_u32(out, (uint32_t)x->code);
    wire_str(out, x->message ? x->message : "", x->message ? x->message_len : 0);
    wire_u8(out, x->full);
    wire_end(out, at);
}

int wire_get_exit(const wire_frame *f, wire_exit *x, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    memset(x, 0, sizeof(*x));
    x->kind = wire_get_u8(&r);
    x->core = wire_get_u8(&r);
    x->code = (int32_t)wire_get_u32(&r);
    wire_get_str(&r, SYNC_MAX_TEXT, &x->message, &x->message_len);
    x->full = wire_get_u8(&r);
    if (trailing(f, &r, err) < 0)
        return -1;
    if (x->full & ~WIRE_FULL_ALL)
        return sbx_errf(err, "malformed EXIT frame: full %u", x->full);
    /* The kinds are sync_exit_kind's values: exited 0, signaled 1, spawn failed 2. Each
     * code is checked against what a real process can report, because it becomes sbxsh's
     * own exit status ($?): a sandbox must not make the host see a status no command
     * could have (a negative one, a signal 0, a status over 255). */
    if (x->kind > 2 || x->core > 1)
        return sbx_errf(err, "malformed EXIT frame: kind %u", x->kind);
    if (x->kind == 0 && (x->code < 0 || x->code > 255))
        return sbx_errf(err, "malformed EXIT frame: exit status %d", x->code);
    if (x->kind == 1 && (x->code < 1 || x->code > 127))
        return sbx_errf(err, "malformed EXIT frame: signal %d", x->code);
    if (x->kind == 2 && (x->code < 0 || x->code > 4095))
        return sbx_errf(err, "malformed EXIT frame: errno %d", x->code);
    return 0;
}

/* PUT_FILE (host to agent): a file the agent writes inside the sandbox; the rest of the
 * payload is its content. */
int wire_get_put_file(const wire_frame *f, wire_put_file *p, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    memset(p, 0, sizeof(*p));
    p->mode = wire_get_u32(&r);
    if (!wire_get_str(&r, SYNC_MAX_PATH, &p->path, &p->path_len) || !p->path_len)
        return short_payload(f, err);
    p->data = r.p;
    p->len = r.left;
    return 0;
}

int wire_get_u64_pair(const wire_frame *f, uint64_t *a, uint64_t *b, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    *a = wire_get_u64(&r);
    *b = wire_get_u64(&r);
    return trailing(f, &r, err);
}

void wire_put_hole(strbuf *out, uint64_t n)
{
    size_t at = wire_begin(out, WIRE_HOLE, 0, 0);
    wire_u64(out, n);
    wire_end(out, at);
}

/* HOLE: n bytes of zeros in a sparse file; an empty one would be a frame that moves the
 * entry nowhere, so a peer could send them forever without progress. */
int wire_get_hole(const wire_frame *f, uint64_t *n, sbx_err *err)
{
    if (wire_get_u64_one(f, n, err) < 0)
        return -1;
    if (!*n)
        return sbx_errf(err, "malformed HOLE frame: an empty hole");
    return 0;
}

void wire_put_sync_done(strbuf *out, uint64_t id, uint8_t full)
{
    size_t at = wire_begin(out, WIRE_SYNC_DONE, 0, 0);
    wire_u64(out, id);
    wire_u8(out, full);
    wire_end(out, at);
}

int wire_get_sync_done(const wire_frame *f, uint64_t *id, uint8_t *full, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    *id = wire_get_u64(&r);
    *full = wire_get_u8(&r);
    if (trailing(f, &r, err) < 0)
        return -1;
    if (*full & ~WIRE_FULL_ALL)
        return sbx_errf(err, "malformed SYNC_DONE frame: full %u", *full);
    return 0;
}

int wire_get_u64_one(const wire_frame *f, uint64_t *a, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    *a = wire_get_u64(&r);
    return trailing(f, &r, err);
}

int wire_get_u32_one(const wire_frame *f, uint32_t *a, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    *a = wire_get_u32(&r);
    return trailing(f, &r, err);
}

int wire_get_winsize(const wire_frame *f, uint16_t *rows, uint16_t *cols, sbx_err *err)
{
    wire_rd r;
    wire_rd_init(&r, f->payload, f->len);
    *rows = wire_get_u16(&r);
    *cols = wire_get_u16(&r);
    return trailing(f, &r, err);
}

/* Text the agent sent (a WARN, an EXIT's message), made safe to print: cut at
 * SYNC_MAX_TEXT and its control bytes escaped (common/report.h), so that the sandbox
 * cannot reach the terminal with an escape sequence through sbxsh's own messages. */
void wire_sanitize(char *out, size_t outsz, const void *text, size_t len)
{
    if (len > SYNC_MAX_TEXT)
        len = SYNC_MAX_TEXT;
    sbx_sanitize_buf(out, outsz, text, len);
}
