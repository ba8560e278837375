/* sync_host: the code directories as manifest roots, the host manifest kept warm across
 * connections, and its state file; see conn.h. */
#include "sync/conn_int.h"
#include "common/fsat.h"

/* An absolute path, normalized: no empty, "." or ".." component, no trailing '/'. ".." is
 * refused rather than resolved: every overlap and containment check below compares paths
 * by their components (inside()), and "/a/b/../c" would pass as inside /a/b while it names
 * /a/c; resolving it here by text would be wrong across a symlink. */
int conn_path_normalize(const char *in, const char *what, strbuf *out, sbx_err *err)
{
    const char *p = in;
    strbuf_reset(out);
    if (!in || in[0] != '/')
        return sbx_errf(err, "%s '%s' is not an absolute path", what, in ? in : "");
    while (*p) {
        const char *e;
        size_t n;
        while (*p == '/')
            p++;
        e = strchr(p, '/');
        n = e ? (size_t)(e - p) : strlen(p);
        if (!n)
            break;
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return sbx_errf(err, "%s '%s' has a '.' or '..' component: give it resolved", what,
                            in);
        strbuf_addch(out, '/');
        strbuf_add(out, p, n);
        p += n;
    }
    if (!out->len)
        strbuf_addch(out, '/');
    if (out->len > SYNC_MAX_PATH)
        return sbx_errf(err, "%s '%s' is too long", what, in);
    return 0;
}

/* Whether normalized path is dir or below it (by components: /a/bc is not inside /a/b). */
static bool inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1)
        return true;   /* "/" holds everything */
    return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* Appends a root (a code directory, a sync path's base and glob, a task file) whose strings
 * h->strings owns. */
static void add_root(sync_host *h, uint8_t kind, const char *base, size_t base_len,
                     const char *pattern, size_t pattern_len)
{
    wire_root *r;
    h->roots = xrealloc(h->roots, (h->nroots + 1) * sizeof(*h->roots));
    r = &h->roots[h->nroots++];
    strvec_pushn(&h->strings, base, base_len);
    r->base = h->strings.v[h->strings.n - 1];
    r->base_len = base_len;
    strvec_pushn(&h->strings, pattern, pattern_len);
    r->pattern = h->strings.v[h->strings.n - 1];
    r->pattern_len = pattern_len;
    r->kind = kind;
}

/* Removes staging directories that a holder which died mid-sync left at a root (half a
 * pull that was never committed). Only a stage whose pid is gone: a live holder's (this
 * one's, or another session's on the same code directory) is in use. The sandbox cannot
 * have made one (sf_is_internal_name refuses the prefix in a pull), and the removal never
 * follows a link (sbx_rm_beneath). */
static void remove_stale_stages(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d))) {
        long pid;
        if (strncmp(de->d_name, SF_STAGE_PREFIX, sizeof(SF_STAGE_PREFIX) - 1))
            continue;
        pid = strtol(de->d_name + sizeof(SF_STAGE_PREFIX) - 1, NULL, 10);
        if (pid > 0 && (pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        sbx_rm_beneath(dirfd(d), de->d_name);
    }
    closedir(d);
}

/* The host side's sync state for a configuration: its roots (code directories, then sync
 * paths, task files and create paths), the limits a pull is held to, and the manifest,
 * loaded from the state file when it matches. Overlapping code directories are refused
 * (one file would be two manifest entries, applied twice); a sync path inside a code
 * directory is dropped (already synced); a create path overlapping one is refused (it
 * would be synced both ways there). */
int sync_host_new(const sync_config *cfg, sync_host **out, sbx_err *err)
{
    sync_host *h = xcalloc(1, sizeof(*h));
    strbuf p = STRBUF_INIT;
    strvec codes = STRVEC_INIT;
    bool loaded = false;

    strvec_init(&h->strings);
    strvec_init(&h->excludes);
    for (size_t i = 0; cfg->code_dirs && cfg->code_dirs[i]; i++) {
        struct stat st;
        bool dup = false;
        if (conn_path_normalize(cfg->code_dirs[i], "code directory", &p, err) < 0)
            goto fail;
        if (stat(p.buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
            sbx_errf(err, "code directory %s does not exist or is not a directory", p.buf);
            goto fail;
        }
        for (size_t k = 0; k < codes.n; k++)
            if (inside(p.buf, codes.v[k]) || inside(codes.v[k], p.buf))
                dup = true;
        if (dup) {
            sbx_errf(err, "code directories %s and another one overlap: give only the outer "
                     "one", p.buf);
            goto fail;
        }
        strvec_push(&codes, p.buf);
        add_root(h, WIRE_ROOT_CODE, p.buf, p.len, "", 0);
    }
    /* No code directory is a session of its own kind (a login shell in ~): only the sync
     * paths and task files, if any, move. */
    for (size_t i = 0; cfg->sync_paths && cfg->sync_paths[i]; i++) {
        size_t cut = 0, last = 0;
        bool covered = false;
        if (conn_path_normalize(cfg->sync_paths[i], "sync path", &p, err) < 0)
            goto fail;
        for (size_t k = 0; k < codes.n; k++)
            covered |= inside(p.buf, codes.v[k]);
        if (covered || p.len == 1)
            continue;   /* already synced as part of a code directory */
        /* The base is everything before the first component with a glob character. */
        for (size_t j = 1; j <= p.len; j++) {
            if (j < p.len && p.buf[j] != '/')
                continue;
            if (has_glob(p.buf + last + 1, j - last - 1))
                break;
            cut = last;
            last = j;
        }
        if (last == p.len)
            cut = (size_t)(strrchr(p.buf, '/') - p.buf);
        else
            cut = last;
        add_root(h, WIRE_ROOT_PATH, p.buf, cut ? cut : 1, p.buf + cut + 1, p.len - cut - 1);
    }
    for (size_t i = 0; cfg->task_files && cfg->task_files[i]; i++) {
        size_t cut;
        if (conn_path_normalize(cfg->task_files[i], "task file", &p, err) < 0)
            goto fail;
        if (p.len == 1)
            continue;
        cut = (size_t)(strrchr(p.buf, '/') - p.buf);
        add_root(h, WIRE_ROOT_TASK, p.buf, cut ? cut : 1, p.buf + cut + 1, p.len - cut - 1);
    }
    /* Create-only directories: split as task files are (the directory is the pattern's one
     * literal name, so that the directory itself is pushed and made in the sandbox). */
    for (size_t i = 0; cfg->create_paths && cfg->create_paths[i]; i++) {
        size_t cut;
        bool covered = false;
        if (conn_path_normalize(cfg->create_paths[i], "create path", &p, err) < 0)
            goto fail;
        for (size_t k = 0; k < codes.n; k++)
            covered |= inside(p.buf, codes.v[k]) || inside(codes.v[k], p.buf);
        if (covered) {
            sbx_errf(err, "create path %s overlaps a code directory: it would be synced both "
                     "ways there", p.buf);
            goto fail;
        }
        if (p.len == 1)
            continue;
        cut = (size_t)(strrchr(p.buf, '/') - p.buf);
        add_root(h, WIRE_ROOT_CREATE, p.buf, cut ? cut : 1, p.buf + cut + 1, p.len - cut - 1);
    }
    if (h->nroots > SYNC_MAX_ROOTS) {
        sbx_errf(err, "too many sync roots (%zu, at most %d)", h->nroots, SYNC_MAX_ROOTS);
        goto fail;
    }
    for (size_t i = 0; cfg->excludes && cfg->excludes[i]; i++)
        strvec_push(&h->excludes, cfg->excludes[i]);
    if (h->excludes.n > SYNC_MAX_EXCLUDES) {
        sbx_errf(err, "too many exclude patterns (%zu, at most %d)", h->excludes.n,
                 SYNC_MAX_EXCLUDES);
        goto fail;
    }
    h->exclude_lens = xcalloc(h->excludes.n + 1, sizeof(size_t));
    for (size_t i = 0; i < h->excludes.n; i++)
        h->exclude_lens[i] = strlen(h->excludes.v[i]);

    h->tree = mf_new(h->roots, h->nroots, (const char *const *)h->excludes.v, h->exclude_lens,
                     h->excludes.n, NULL);
    h->limits.max_file_size = cfg->max_file_size ? cfg->max_file_size
                                                 : SYNC_DEFAULT_MAX_FILE_SIZE;
    h->limits.max_bytes = cfg->max_pull_bytes ? cfg->max_pull_bytes
                                              : SYNC_DEFAULT_MAX_PULL_BYTES;
    h->limits.max_entries = cfg->max_pull_entries ? cfg->max_pull_entries
                                                  : SYNC_DEFAULT_MAX_PULL_ENTRIES;
    h->limits.max_disk = cfg->disk_max;
    h->limits.disk_used = &h->disk_used;
    h->limits.max_files = cfg->files_max;
    h->limits.files_used = &h->files_used;
    h->no_watch = cfg->no_watch;
    if (cfg->state_file) {
        h->state_file = xstrdup(cfg->state_file);
        if (mf_load(h->tree, h->state_file, &h->pair_id, &h->push_seq, &h->pull_seq, &loaded,
                    err) < 0)
            goto fail;
        if (!loaded)
            h->pair_id = h->push_seq = h->pull_seq = 0;
    }
    if (cfg->user_gitconfig && cfg->sandbox_gitconfig) {
        h->user_gitconfig = xstrdup(cfg->user_gitconfig);
        h->sandbox_gitconfig = xstrdup(cfg->sandbox_gitconfig);
        if (cfg->git_fsmonitor)
            h->git_fsmonitor = xstrdup(cfg->git_fsmonitor);
    }
    strvec_init(&h->rc_put);
    strvec_init(&h->rc_seen);
    if (cfg->user_home && cfg->sandbox_home) {
        h->user_home = xstrdup(cfg->user_home);
        h->sandbox_home = xstrdup(cfg->sandbox_home);
    }
    for (size_t i = 0; i < h->nroots; i++)
        remove_stale_stages(h->roots[i].base);
    if (!h->no_watch)
        mf_watch(h->tree, true);
    strbuf_release(&p);
    strvec_clear(&codes);
    *out = h;
    return 0;
fail:
    strbuf_release(&p);
    strvec_clear(&codes);
    sync_host_free(h);
    *out = NULL;
    return -1;
}

/* Whether an absolute (normalized) path is synced by some root: under its base by
 * components and within its pattern. */
bool conn_path_synced(const sync_host *h, const char *path)
{
    for (size_t i = 0; i < h->nroots; i++) {
        const wire_root *r = &h->roots[i];
        size_t n = r->base_len;
        bool partial;
        if (strncmp(path, r->base, n) || (n > 1 && path[n] != '/'))
            continue;
        if (n == 1)
            n = 0;   /* the root "/" */
        if (!path[n])
            continue;   /* the base itself is not synced */
        if (mf_in_pattern(h->tree, i, path + n + 1, strlen(path + n + 1), &partial) && !partial)
            return true;
    }
    return false;
}

/* State made for more roots (a client named more sync paths) takes over the old one's
 * records, pairing and quota counts, so that nothing already synced looks changed (and is
 * sent again) on either side. */
void sync_host_adopt(sync_host *h, sync_host *old)
{
    mf_adopt_roots(h->tree, old->tree);
    h->pair_id = old->pair_id;
    h->push_seq = old->push_seq;
    h->pull_seq = old->pull_seq;
    h->disk_used = old->disk_used;
    h->files_used = old->files_used;
    /* h's tree is watched already (sync_host_new); the adopted nodes' watches went with
     * old's, and mf_adopt_roots made the next scan a full walk, which watches them again */
}

void sync_host_set_journal(sync_host *h, struct jnl *j)
{
    h->journal = j;
}

void sync_host_free(sync_host *h)
{
    if (!h)
        return;
    mf_free(h->tree);
    free(h->roots);
    strvec_clear(&h->strings);
    strvec_clear(&h->excludes);
    free(h->exclude_lens);
    free(h->state_file);
    free(h->user_gitconfig);
    free(h->sandbox_gitconfig);
    free(h->git_fsmonitor);
    free(h->user_home);
    free(h->sandbox_home);
    strvec_clear(&h->rc_put);
    strvec_clear(&h->rc_seen);
    free(h->rc_seen_st);
    free(h);
}

/* Writes the manifest when a round changed it (atomically: mf_save). */
int sync_host_save(sync_host *h, sbx_err *err)
{
    if (!h->state_file || !h->dirty)
        return 0;
    if (mf_save(h->tree, h->state_file, h->pair_id, h->push_seq, h->pull_seq, err) < 0)
        return -1;
    h->dirty = false;
    return 0;
}

