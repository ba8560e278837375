/* sbx-agent's sync rounds: the tree a CONFIG describes, scans and the deltas they send, the
 * finals (EXIT, SYNC_DONE) a round carries, and the state file that survives a restart. */
#include "sync/agent_int.h"

#include <sys/statfs.h>

/* ---- state ------------------------------------------------------------------------------ */

/* Writes the state file (--state: the manifest, the pairing and both sequence numbers) when
 * something changed, at most every SAVE_INTERVAL_NS unless forced; a failure is logged and
 * the agent goes on (a restart then pairs anew). */
void agent_save_state(agent *a, bool force)
{
    sbx_err err;
    int64_t now = mf_now_ns();
    if (!a->o->state_file || !a->tree || !a->dirty)
        return;
    if (!force && now - a->last_save < SAVE_INTERVAL_NS)
        return;
    if (mf_save(a->tree, a->o->state_file, a->pair_id, a->applied_push_seq, a->pull_seq,
                &err) < 0)
        fprintf(stderr, "sbx-agent: %s\n", err.msg);
    a->dirty = false;
    a->last_save = now;
}

/*
 * The journal: the paths of each pull (delta) we sent, by its sequence number, until the
 * host acknowledges it (DELTA_BEGIN carries the last pull the host applied). If the
 * connection drops first, the next CONFIG says which pull the host has; the paths of later
 * ones are marked changed so that the next scan sends them again. Forgets entries up to upto.
 */
void agent_journal_prune(agent *a, uint64_t upto)
{
    size_t k = 0;
    for (size_t i = 0; i < a->njournal; i++) {
        if (a->journal[i].seq <= upto)
            free(a->journal[i].path);
        else
            a->journal[k++] = a->journal[i];
    }
    a->njournal = k;
}

/* ---- the spaces' fill -------------------------------------------------------------------- */

/* A file system with no block left for an unprivileged writer, or no inode where it counts
 * them (gVisor's tmpfs reports no inode count): the next write there gets ENOSPC. */
static bool path_full(const char *path)
{
    struct statfs s;
    if (statfs(path, &s) < 0)
        return false;
    return (s.f_blocks > 0 && s.f_bavail == 0) || (s.f_files > 0 && s.f_ffree == 0);
}

/* Which of the sandbox's spaces are full as a round ends (the "full" byte of EXIT and
 * SYNC_DONE, wire.h's WIRE_FULL_*): a code directory's copy, /tmp, HOME. Each is a tmpfs of
 * AGENT_SANDBOX_DISK_MAX in a local sandbox; the host names that limit. An agent under a
 * --root-prefix (tests, on the host) has no /tmp or HOME of its own to report. A few statfs
 * calls per round. */
uint8_t agent_full(agent *a)
{
    uint8_t full = 0;
    const char *home = getenv("HOME");
    for (size_t i = 0; a->tree && i < mf_nroots(a->tree); i++) {
        mf_root *r = mf_root_at(a->tree, i);
        if (r->kind == WIRE_ROOT_CODE && path_full(r->base))
            full |= WIRE_FULL_CODE;
    }
    if (a->o->root_prefix && *a->o->root_prefix)
        return full;
    if (path_full("/tmp"))
        full |= WIRE_FULL_TMP;
    if (home && home[0] == '/' && home[1] && path_full(home))
        full |= WIRE_FULL_HOME;
    return full;
}

/* ---- sync -------------------------------------------------------------------------------- */

/*
 * CONFIG: the roots, excludes and pairing. The same pairing with the same roots keeps the
 * manifest in memory, or loads it from the state file; anything else starts empty (the
 * next scan sends the whole sandbox, a first pairing's rule). Resuming, the journal's
 * unacknowledged paths are marked to be sent again. Makes the applier for the host's pushes.
 */
void agent_setup_tree(agent *a, const wire_config *cfg)
{
    const char *prefix = a->o->root_prefix;
    mf_tree *t = mf_new(cfg->roots, cfg->nroots, cfg->excludes, cfg->exclude_lens,
                        cfg->nexcludes, prefix);
    bool resume = !cfg->reset && cfg->pair_id == a->pair_id;
    bool loaded = false;

    for (size_t i = 0; i < mf_nroots(t); i++) {
        mf_root *r = mf_root_at(t, i);
        r->scanned = r->kind != WIRE_ROOT_TASK;
        if (r->kind == WIRE_ROOT_CODE)
            mf_root_fd(t, i, true);
    }
    if (resume && a->tree && mf_config_id(a->tree) == mf_config_id(t)) {
        /* Same session, same roots: keep the manifest we have. */
        mf_free(t);
        t = a->tree;
        a->tree = NULL;
        loaded = true;
    } else if (resume && a->tree) {
        /* Same session, roots added or dropped (a call named task files): what the roots
         * both have knew stays, else every file here would look changed by the sandbox */
        mf_adopt_roots(t, a->tree);
        loaded = true;
    } else if (resume && a->o->state_file) {
        uint64_t p, x, y;
        sbx_err err;
        mf_load(t, a->o->state_file, &p, &x, &y, &loaded, &err);
        loaded = loaded && p == cfg->pair_id;
        if (!loaded)
            mf_clear(t);
    }
    if (a->tree) {
        apply_free(a->rx);
        a->rx = NULL;
        mf_free(a->tree);
    }
    a->tree = t;
    if (!a->o->no_watch)
        mf_watch(t, true);
    if (a->fsm_fd >= 0)
        mf_set_fsmonitor(t, &a->fsm);   /* a new tree: the next scan watches everything */
    if (!resume || !loaded) {
        mf_clear(t);
        agent_journal_prune(a, UINT64_MAX);
        a->applied_push_seq = cfg->push_seq;
        a->pull_seq = cfg->pull_seq;
    } else {
        /* Deltas we sent that the host never applied: their paths are sent again. */
        for (size_t i = 0; i < a->njournal; i++)
            if (a->journal[i].seq > cfg->pull_seq)
                mf_invalidate_path(t, a->journal[i].root, a->journal[i].path,
                                   a->journal[i].len, a->journal[i].type);
        agent_journal_prune(a, UINT64_MAX);
        if (cfg->pull_seq > a->pull_seq)
            a->pull_seq = cfg->pull_seq;
    }
    a->pair_id = cfg->pair_id;
    a->dirty = true;
    if (!a->rx)
        a->rx = apply_new(a->tree, APPLY_AGENT, NULL, agent_warn, a);
}

/* Keeps only the operations the host accepts (the pull allowlists): the others stay in the
 * sandbox. */
static void filter_pull(agent *a, mf_delta *d)
{
    size_t k = 0;
    d->bytes = 0;
    for (size_t i = 0; i < d->n; i++) {
        mf_op *op = &d->ops[i];
        const mf_root *r = mf_root_at(a->tree, op->root);
        const char *why = r->kind == WIRE_ROOT_CODE
                              ? git_pull_refusal(op->path, op->path_len, op->type)
                              : git_pull_refusal_syncpath(op->path, op->path_len);
        if (why) {
            free(op->path);
            continue;
        }
        if (op->op == WIRE_OP_PUT && op->type == MF_REG)
            d->bytes += op->size;
        d->ops[k++] = *op;
    }
    d->n = k;
}

/* Starts the next sync round when finals wait and nothing is being sent. */
static void start_round(agent *a)
{
    bool need_scan = false;
    mf_delta d = { 0 };
    if (a->tx_active || !a->nfinals || a->out_fd < 0)
        return;
    if (a->rx && apply_active(a->rx))
        return;   /* the host's delta first: its changes are not the sandbox's */
    for (size_t i = 0; i < a->nfinals; i++)
        need_scan |= a->finals[i].scan;
    /* The finals of this round go after its delta. */
    XGROW(a->sending, a->asending, a->nfinals);
    memcpy(a->sending, a->finals, a->nfinals * sizeof(*a->finals));
    a->nsending = a->nfinals;
    a->nfinals = 0;
    if (!need_scan || !a->tree)
        return;
    {
        bool full;
        sbx_err err;
        if (mf_scan(a->tree, &d, &full, agent_warn, a, &err) < 0) {
            agent_warnf(a, "cannot scan the sandbox: %s", err.msg);
            mf_delta_release(&d);
        }
    }
    filter_pull(a, &d);
    a->pull_seq++;
    for (size_t i = 0; i < d.n; i++) {
        journal_ent *j;
        XGROW(a->journal, a->ajournal, a->njournal + 1);
        j = &a->journal[a->njournal++];
        j->seq = a->pull_seq;
        j->root = d.ops[i].root;
        j->type = d.ops[i].type;
        j->path = xstrndup(d.ops[i].path, d.ops[i].path_len);
        j->len = d.ops[i].path_len;
    }
    if (d.n)
        a->dirty = true;
    delta_tx_init(&a->tx, a->tree, &d, a->pull_seq, a->applied_push_seq, false, agent_warn, a);
    a->tx_active = true;
}

/* The finals of the round whose delta was just sent: each EXIT (its channel retires) and
 * SYNC_DONE, in the order they were queued. */
static void send_finals(agent *a)
{
    for (size_t i = 0; i < a->nsending; i++) {
        final *f = &a->sending[i];
        if (f->is_exit) {
            achan *ch = agent_find_chan(a, f->chan);
            if (ch)
                agent_send_exit(a, ch);
        } else {
            wire_put_sync_done(&a->out.q, f->id, agent_full(a));
        }
    }
    a->nsending = 0;
}

/*
 * The writer to the host, as a state machine. agent_pump() turns work (a delta being sent,
 * finals due after it, finals waiting for a round) into bytes in a->out, up to OUT_HIGH;
 * write_host() moves bytes from a->out into the stream until it would block. Before poll()
 * the writer is in one of two states, and each has its wake-up:
 *   - work left (bytes buffered, or agent_host_wants_write(): a delta or finals still to encode):
 *     poll() waits for POLLOUT on the stream, and the top of the loop pumps and writes;
 *   - idle: nothing to encode until an event we poll for anyway (a command's output, its
 *     exit, a frame from the host, inotify).
 * POLLOUT used to be armed only while bytes were buffered. When write_host() emptied the
 * buffer in one go (the host reading on the other core as we wrote, or a socket buffer
 * that takes 1 MiB) with a delta still in progress, nothing was buffered, nothing was polled
 * for, and the agent slept: until the 5 s state-save timeout when dirty (a 1-2 MB file took
 * 5.1 s), or for good once the state was saved (an 8 MB pull stopped at a few MiB until an
 * unrelated command's frame woke the loop). "Work left" now includes the encoder's.
 */
bool agent_host_wants_write(const agent *a)
{
    if (a->out_fd < 0)
        return false;
    /* Finals waiting for a round need no POLLOUT: start_round() is blocked on an event
     * (the host's delta to finish, the current delta to be sent) that wakes us itself. */
    return framebuf_pending(&a->out) || a->tx_active || a->nsending;
}

/* Fills the buffer to the host (see above): the delta in progress, then its round's
 * finals, then a new round if finals wait. */
void agent_pump(agent *a)
{
    while (a->out_fd >= 0 && framebuf_pending(&a->out) < OUT_LOW) {
        if (a->tx_active) {
            if (!delta_tx_fill(&a->tx, &a->out.q, a->out.off + OUT_HIGH))
                continue;
            delta_tx_release(&a->tx);
            a->tx_active = false;
        }
        if (a->nsending) {
            send_finals(a);
            continue;
        }
        if (!a->nfinals)
            break;
        start_round(a);
        if (!a->tx_active && !a->nsending)
            break;
    }
}

