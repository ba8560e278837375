/*
 * The session configuration (config.h): session_config_load() resolves once, from
 * AGENT_SANDBOX_*, the command line and the cwd, the code directories, the session name, the
 * limits, the state and runtime paths and the fingerprint a holder checks clients against;
 * each backend's section is made by its class's configure hook and kept opaque here. May call
 * common/ and sync/, and a backend only through backend.h; names none (tests/layers.sh).
 */
#include "session/config.h"
#include "session/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsat.h"
#include "common/strbuf.h"

#ifndef SBX_LIBEXECDIR
#define SBX_LIBEXECDIR "/usr/local/lib/sbxsh"
#endif

void session_split_list(strvec *sv, const char *list, char sep)
{
    if (!list)
        return;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, sep);
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n) {
            char *s = xstrndup(p, n);
            strvec_push(sv, s);
            free(s);
        }
        p += n + (e ? 1 : 0);
    }
}

bool session_strvec_equal(const strvec *a, const strvec *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]))
            return false;
    return true;
}

/* True when a is b or lies below it. */
bool session_path_within(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (n == 1 && b[0] == '/')
        return true;
    return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/');
}

/* Adds one code directory, made real: it must be an absolute path to a
 * directory other than "/", and no two may overlap (a file in both would be
 * synced twice, and a pull into one could rewrite the other). */
static int add_code_dir(strvec *out, const char *path, sbx_err *err)
{
    char real[PATH_MAX];
    struct stat st;

    if (path[0] != '/')
        return sbx_errf(err, "code directory '%s' is not an absolute path "
                        "(AGENT_SANDBOX_CODE_DIRS takes absolute paths separated by ':')", path);
    if (!realpath(path, real))
        return sbx_errno(err, "code directory '%s'", path);
    if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
        return sbx_errf(err, "code directory '%s' is not a directory", path);
    if (!strcmp(real, "/"))
        return sbx_errf(err, "the root directory cannot be a code directory; "
                        "set AGENT_SANDBOX_CODE_DIRS to your project's directory");
    for (size_t i = 0; i < out->n; i++) {
        if (session_path_within(real, out->v[i]) || session_path_within(out->v[i], real))
            return sbx_errf(err, "code directories '%s' and '%s' overlap; list each tree once",
                            out->v[i], real);
    }
    strvec_push(out, real);
    return 0;
}

/* The state directory as session_config_load() resolves it, without checks (NULL when HOME is
 * unset too): a directory holding it is never a project. Malloc'd. */
static char *state_root_default(void)
{
    const char *v;
    if ((v = getenv("AGENT_SANDBOX_STATE_DIR")) && *v)
        return xstrdup(v);
    if ((v = getenv("XDG_STATE_HOME")) && v[0] == '/')
        return xasprintf("%s/sbxsh", v);
    if ((v = getenv("HOME")) && v[0] == '/')
        return xasprintf("%s/.local/state/sbxsh", v);
    return NULL;
}

/* Whether a directory found by discovery (no AGENT_SANDBOX_CODE_DIRS) is somewhere
 * nobody means to sync whole: the root, the home directory or one above it, a shared
 * temporary directory, a top-level system directory, one that holds the state
 * directory (the copies would sync into themselves). Running there gives a session
 * without code directories. Sets *why to a short phrase. */
static bool not_a_project(const char *real, const char **why)
{
    static const char *const system_dirs[] = {
        "/tmp", "/var/tmp", "/dev/shm", "/run", "/var", "/usr", "/etc", "/opt", "/srv",
        "/home", "/root", "/mnt", "/media", "/proc", "/sys", "/dev", "/boot", "/lib",
        "/bin", "/sbin", "/lib64", "/snap", "/nix",
    };
    const char *home = getenv("HOME");
    char homereal[PATH_MAX], *state;
    bool holds_state;

    if (!strcmp(real, "/")) {
        *why = "the root directory";
        return true;
    }
    for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
        if (!strcmp(real, system_dirs[i])) {
            *why = "a system directory";
            return true;
        }
    }
    if (home && home[0] == '/' && realpath(home, homereal) && session_path_within(homereal, real)) {
        *why = strcmp(homereal, real) ? "a directory above the home directory"
                                       : "the home directory";
        return true;
    }
    if ((state = state_root_default())) {
        char sreal[PATH_MAX];
        holds_state = session_path_within(realpath(state, sreal) ? sreal : state, real);
        free(state);
        if (holds_state) {
            *why = "the directory holding sbxsh's state";
            return true;
        }
    }
    return false;
}

/* The code directories: AGENT_SANDBOX_CODE_DIRS's, else the repository around cwd (as git
 * finds it), else cwd itself; none where cwd is no project (the home directory, /, /tmp:
 * not_a_project), so that a command typed there never syncs a whole home into the
 * sandbox. Resolved (realpath): the sync and the router compare them by components. */
int session_resolve_code_dirs(const char *env_value, const char *cwd, strvec *out, sbx_err *err)
{
    char real[PATH_MAX];
    const char *why;

    if (env_value && *env_value) {
        strvec list = {0};
        session_split_list(&list, env_value, ':');
        for (size_t i = 0; i < list.n; i++) {
            if (add_code_dir(out, list.v[i], err) < 0) {
                strvec_clear(&list);
                return -1;
            }
        }
        strvec_clear(&list);
        if (out->n)
            return 0;
    }
    if (!realpath(cwd, real))
        return sbx_errno(err, "current directory '%s'", cwd);
    /* git's own discovery: the nearest ancestor holding .git (a directory
     * or a gitfile). Done here rather than by running git: it is on the
     * path of every command. */
    for (size_t len = strlen(real); len > 0;) {
        struct stat st;
        char probe[PATH_MAX + 8];
        snprintf(probe, sizeof(probe), "%.*s/.git", (int)len, real);
        if (lstat(probe, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
            real[len ? len : 1] = '\0';
            if (len == 1 && real[0] == '/')
                break;
            /* a repository of dotfiles at ~ is still the home directory */
            if (not_a_project(real, &why))
                return 0;
            return add_code_dir(out, real, err);
        }
        while (len > 0 && real[len - 1] != '/')
            len--;
        if (len > 1)
            len--;      /* drop the slash, except the root's */
        else
            break;
    }
    if (!realpath(cwd, real))
        return sbx_errno(err, "current directory '%s'", cwd);
    if (not_a_project(real, &why))
        return 0;
    return add_code_dir(out, real, err);
}

const char *session_no_code_dir_reason(const char *cwd)
{
    char real[PATH_MAX];
    const char *why = NULL;
    if (realpath(cwd, real) && not_a_project(real, &why))
        return why;
    return "no code directory";
}

/* FNV-1a, 64 bits: a name, not a security boundary. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

char *session_name_derive(const strvec *code_dirs, const char *state_root)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    strbuf sb = STRBUF_INIT;
    /* A session with no code directory (a login shell in ~): one per user and state
     * directory. */
    const char *base = code_dirs->n ? "session" : "scratch";

    for (size_t i = 0; i < code_dirs->n; i++)
        h = fnv1a(h, code_dirs->v[i], strlen(code_dirs->v[i]) + 1);
    /* The state directory is part of the key: it follows HOME (or XDG_STATE_HOME, or
     * AGENT_SANDBOX_STATE_DIR), and the holder's socket lives in the run directory, which
     * one uid shares. Without it, two callers of one uid with different HOMEs (harnesses
     * set HOME per task) derived one name and shared one sandbox, whose private home was
     * the first caller's. The code directories are hashed with their NULs, so the NUL
     * before the state directory keeps "a" + "/b" apart from "a/b". */
    if (state_root)
        h = fnv1a(h, state_root, strlen(state_root) + 1);
    if (code_dirs->n) {
        const char *slash = strrchr(code_dirs->v[0], '/');
        if (slash && slash[1])
            base = slash + 1;
    }
    /* Keep the readable part to safe characters and a bounded length. */
    for (const char *p = base; *p && sb.len < 40; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            ((c == '.' || c == '_' || c == '-') && sb.len))
            strbuf_addch(&sb, c);
        else if (sb.len && sb.buf[sb.len - 1] != '_')
            strbuf_addch(&sb, '_');
    }
    if (!sb.len)
        strbuf_addstr(&sb, "session");
    strbuf_addf(&sb, "-%08x", (unsigned)(h ^ (h >> 32)));
    return strbuf_detach(&sb, NULL);
}

/* A session name becomes a file name in the state and run directories and a part of a
 * socket path: letters, digits and '.', '_', '-' only, not starting with a separator, so it
 * can never be "..", hold a '/' or start like an option. */
int session_name_check(const char *name, sbx_err *err)
{
    size_t n = strlen(name);
    if (n == 0 || n > SBX_SESSION_NAME_MAX)
        return sbx_errf(err, "session name must be 1 to %d characters", SBX_SESSION_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
            return sbx_errf(err, "invalid session name '%s': use letters, digits, '.', '_' "
                            "and '-', starting with a letter or digit", name);
    }
    return 0;
}

int session_parse_duration(const char *s, unsigned *out, sbx_err *err)
{
    char *end;
    unsigned long long v;
    unsigned mult = 1;

    errno = 0;
    if (!s || !*s || *s == '-' || *s == '+')
        goto bad;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        goto bad;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        mult = 60, end++;
    else if (*end == 'h')
        mult = 3600, end++;
    if (*end || v > UINT_MAX / mult)
        goto bad;
    *out = (unsigned)v * mult;
    return 0;
bad:
    return sbx_errf(err, "invalid duration '%s': give seconds, or a number followed by "
                    "s, m or h (e.g. 30m); 0 means never", s ? s : "");
}

int session_parse_size(const char *s, unsigned long long pct_of, unsigned long long *out,
                   sbx_err *err)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    errno = 0;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        goto bad;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        goto bad;
    if (*end == '%' && pct_of && !end[1]) {
        if (v == 0 || v > 100)
            goto bad;
        *out = pct_of / 100 * v;
        return 0;
    }
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    }
    if (shift && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || (shift && v > (~0ULL >> shift)))
        goto bad;
    *out = v << shift;
    return 0;
bad:
    return sbx_errf(err, "invalid size '%s': give bytes, or a number followed by K, M, G or T "
                    "(e.g. 512M)%s", s ? s : "", pct_of ? ", or a percentage of memory (50%)" : "");
}

void session_format_size(char *buf, size_t n, double v)
{
    static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
    size_t u = 0;
    while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
        v /= 1024;
        u++;
    }
    if (v == (double)(long long)v)
        snprintf(buf, n, "%lld %s", (long long)v, units[u]);
    else
        snprintf(buf, n, "%.1f %s", v, units[u]);
}

int session_parse_cpus(const char *s, unsigned *out, sbx_err *err)
{
    unsigned long long whole = 0, frac = 0, scale = 1000;
    const char *p = s;

    if (!s || !*s)
        goto bad;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (unsigned)(*p - '0');
        if (whole > 4096)
            goto bad;
    }
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            goto bad;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (scale > 1) {
                scale /= 10;
                frac += (unsigned)(*p - '0') * scale;
            }
        }
    }
    if (*p || p == s || (whole == 0 && frac == 0))
        goto bad;
    *out = (unsigned)(whole * 1000 + frac);
    return 0;
bad:
    return sbx_errf(err, "invalid CPU count '%s': give a positive number such as 2 or 0.5",
                    s ? s : "");
}

static unsigned long long host_ram(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (unsigned long long)pages * (unsigned long long)psz
                                : 4ULL << 30;
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Paths a variable lists (sync paths, task files): absolute, without "/../" (a prefix
 * check on them would be fooled) and shorter than PATH_MAX. */
static int check_abs_list(const strvec *sv, const char *var, sbx_err *err)
{
    for (size_t i = 0; i < sv->n; i++)
        if (sv->v[i][0] != '/' || strstr(sv->v[i], "/../") || strlen(sv->v[i]) >= PATH_MAX)
            return sbx_errf(err, "%s: '%s' is not a clean absolute path", var, sv->v[i]);
    return 0;
}

/* Well-known places of credentials in a home directory. When a code directory holds the
 * home directory (AGENT_SANDBOX_CODE_DIRS=~, or a directory above it), these are excluded
 * from the sync, so they never reach the sandbox unless named (a sync path naming one,
 * or a code directory inside one, is the user's explicit choice). */
static const char *const home_secrets[] = {
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub",
    ".kube", ".docker", ".netrc", ".git-credentials", ".config/git/credentials", ".npmrc",
    ".yarnrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
    ".password-store", ".local/share/keyrings", ".vault-token", ".terraform.d", ".m2/settings.xml",
    ".config/sbxsh", ".local/state/sbxsh",
};

/* A code directory holding the home directory (a session started in ~ with
 * AGENT_SANDBOX_CODE_DIRS=~) would push the credentials there into the
 * sandbox: the well-known ones (home_secrets) are excluded from the sync. */
static void add_secret_excludes(sbx_config *cfg)
{
    char home[PATH_MAX];

    if (!realpath(cfg->home, home))
        return;
    for (size_t i = 0; i < cfg->code_dirs.n; i++) {
        const char *d = cfg->code_dirs.v[i];
        size_t n = strlen(d);
        if (!session_path_within(home, d))
            continue;
        /* the home directory relative to the code directory: "" or "x/y/" */
        const char *rel = home[n] == '/' ? home + n + 1 : "";
        for (size_t k = 0; k < sizeof(home_secrets) / sizeof(home_secrets[0]); k++)
            strvec_pushf(&cfg->excludes, "/%s%s%s", rel, *rel ? "/" : "", home_secrets[k]);
    }
}

int session_config_load(sbx_config *cfg, const sbx_config_opts *opts, sbx_err *err)
{
    static const sbx_config_opts none;
    char cwdbuf[PATH_MAX];
    const char *cwd, *v;

    memset(cfg, 0, sizeof(*cfg));
    if (!opts)
        opts = &none;
    cwd = opts->cwd;
    if (!cwd) {
        if (!getcwd(cwdbuf, sizeof(cwdbuf)))
            return sbx_errno(err, "cannot read the current directory");
        cwd = cwdbuf;
    }

    if (session_resolve_code_dirs(getenv("AGENT_SANDBOX_CODE_DIRS"), cwd, &cfg->code_dirs, err) < 0)
        goto fail;

    if ((v = opts->session) || (v = env_nonempty("AGENT_SANDBOX_SESSION"))) {
        if (session_name_check(v, err) < 0)
            goto fail;
        cfg->session = xstrdup(v);
    }

    session_split_list(&cfg->sync_paths, getenv("AGENT_SANDBOX_SYNC_PATHS"), ':');
    session_split_list(&cfg->task_files, getenv("AGENT_SANDBOX_TASK_FILES"), ':');
    session_split_list(&cfg->create_paths, getenv("AGENT_SANDBOX_CREATE_PATHS"), ':');
    session_split_list(&cfg->excludes, getenv("AGENT_SANDBOX_SYNC_EXCLUDE"), ':');
    session_split_list(&cfg->forward_env, getenv("AGENT_SANDBOX_FORWARD_ENV"), ',');
    /* git's fsmonitor in the sandbox: on unless turned off (issue 27; docs/performance.md).
     * A backend that cannot place the hook leaves it off there (the class's fsmonitor_hook). */
    cfg->git_fsmonitor = true;
    if ((v = env_nonempty("AGENT_SANDBOX_GIT_FSMONITOR"))) {
        if (!strcmp(v, "0") || !strcmp(v, "off"))
            cfg->git_fsmonitor = false;
        else if (strcmp(v, "1") && strcmp(v, "on")) {
            sbx_errf(err, "AGENT_SANDBOX_GIT_FSMONITOR wants 1 (on) or 0 (off), not '%s'", v);
            goto fail;
        }
    }
    /* Names or shell patterns (npm_*), one separator: a colon or a space here is a list
     * written for another separator, which would silently forward nothing. */
    for (size_t i = 0; i < cfg->forward_env.n; i++) {
        const char *n = cfg->forward_env.v[i];
        if (strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_*?") !=
                strlen(n) || (n[0] >= '0' && n[0] <= '9')) {
            sbx_errf(err, "AGENT_SANDBOX_FORWARD_ENV: '%s' is not a variable name or pattern "
                     "(letters, digits, '_', '*', '?'); separate names with commas, e.g. "
                     "NODE_ENV,npm_*", n);
            goto fail;
        }
    }
    if (check_abs_list(&cfg->sync_paths, "AGENT_SANDBOX_SYNC_PATHS", err) < 0 ||
        check_abs_list(&cfg->task_files, "AGENT_SANDBOX_TASK_FILES", err) < 0 ||
        check_abs_list(&cfg->create_paths, "AGENT_SANDBOX_CREATE_PATHS", err) < 0)
        goto fail;

    /* Each backend built in reads and checks its own settings into its own section,
     * whichever backend the session uses: a bad value of any backend's variable is refused
     * either way. The sections are the backends' (opaque here); configure may leave one
     * NULL. */
    size_t nclasses = 0;
    while (session_backend_classes[nclasses])
        nclasses++;
    cfg->backend_settings = xcalloc(nclasses + 1, sizeof(*cfg->backend_settings));
    for (size_t i = 0; i < nclasses; i++)
        if (session_backend_classes[i]->configure &&
            session_backend_classes[i]->configure(cfg, &cfg->backend_settings[i], err) < 0)
            goto fail;

    cfg->idle_timeout = SBX_IDLE_TIMEOUT_DEFAULT;
    if ((v = env_nonempty("AGENT_SANDBOX_IDLE_TIMEOUT")) &&
        session_parse_duration(v, &cfg->idle_timeout, err) < 0) {
        sbx_err_prefix(err, "AGENT_SANDBOX_IDLE_TIMEOUT");
        goto fail;
    }

    /* Limits: every sandbox has them, so a fork bomb or a memory hog inside cannot take
     * the host down. "0" turns one off, on purpose only. */
    cfg->pids_max = SBX_PIDS_MAX_DEFAULT;
    if ((v = env_nonempty("AGENT_SANDBOX_PIDS_MAX"))) {
        unsigned long long n;
        if (session_parse_size(v, 0, &n, err) < 0 || n > 4194304 || strpbrk(v, "kKmMgGtTbB")) {
            sbx_errf(err, "AGENT_SANDBOX_PIDS_MAX='%s': give a number of processes "
                     "(e.g. 4096), or 0 for no limit", v);
            goto fail;
        }
        cfg->pids_max = (unsigned)n;
    }
    cfg->memory_max = host_ram() / 2;
    if ((v = env_nonempty("AGENT_SANDBOX_MEMORY_MAX")) &&
        session_parse_size(v, host_ram(), &cfg->memory_max, err) < 0) {
        sbx_err_prefix(err, "AGENT_SANDBOX_MEMORY_MAX");
        goto fail;
    }
    if ((v = env_nonempty("AGENT_SANDBOX_CPUS")) && strcmp(v, "0") &&
        session_parse_cpus(v, &cfg->cpus_milli, err) < 0) {
        sbx_err_prefix(err, "AGENT_SANDBOX_CPUS");
        goto fail;
    }
    cfg->disk_max = SBX_DISK_MAX_DEFAULT;
    if ((v = env_nonempty("AGENT_SANDBOX_DISK_MAX")) &&
        session_parse_size(v, 0, &cfg->disk_max, err) < 0) {
        sbx_err_prefix(err, "AGENT_SANDBOX_DISK_MAX");
        goto fail;
    }
    /* Entries (files, directories, symlinks) the session's pulls may make on the host: an
     * empty file costs an inode whatever the disk quota says. */
    cfg->files_max = SBX_FILES_MAX_DEFAULT;
    if ((v = env_nonempty("AGENT_SANDBOX_FILES_MAX")) &&
        (session_parse_size(v, 0, &cfg->files_max, err) < 0 || strpbrk(v, "kKmMgGtTbB"))) {
        sbx_errf(err, "AGENT_SANDBOX_FILES_MAX='%s': give a number of files (e.g. 1000000), "
                 "or 0 for no limit", v);
        goto fail;
    }

    /* The undo journal's bound (docs/undo.md): a quarter of what pulls may write. */
    cfg->undo_max = cfg->disk_max ? cfg->disk_max / 4 : 2ULL << 30;
    if ((v = env_nonempty("AGENT_SANDBOX_UNDO_MAX")) &&
        session_parse_size(v, 0, &cfg->undo_max, err) < 0) {
        sbx_err_prefix(err, "AGENT_SANDBOX_UNDO_MAX");
        goto fail;
    }
    cfg->audit_max = 16ULL << 20;
    if ((v = env_nonempty("AGENT_SANDBOX_AUDIT_MAX")) &&
        session_parse_size(v, 0, &cfg->audit_max, err) < 0) {
        sbx_err_prefix(err, "AGENT_SANDBOX_AUDIT_MAX");
        goto fail;
    }

    /* The default backend is the first one built: the Makefile includes local.mk's
     * fragment before any other backend's. */
    v = env_nonempty("AGENT_SANDBOX_BACKEND");
    if (!v)
        v = session_backend_classes[0] ? session_backend_classes[0]->name : "";
    cfg->backend = xstrdup(v);

    v = env_nonempty("HOME");
    if (!v || v[0] != '/') {
        sbx_errf(err, "HOME is not set to an absolute path; the sandbox's private home "
                 "lives at the same path");
        goto fail;
    }
    cfg->home = xstrdup(v);
    if (strlen(cfg->home) > 1 && cfg->home[strlen(cfg->home) - 1] == '/')
        cfg->home[strlen(cfg->home) - 1] = '\0';

    if ((v = env_nonempty("XDG_RUNTIME_DIR")) && v[0] == '/')
        cfg->run_dir = xasprintf("%s/sbxsh", v);
    else
        cfg->run_dir = xasprintf("/tmp/sbxsh-%u", (unsigned)getuid());

    if ((v = env_nonempty("AGENT_SANDBOX_STATE_DIR")))
        cfg->state_root = xstrdup(v);
    else if ((v = env_nonempty("XDG_STATE_HOME")) && v[0] == '/')
        cfg->state_root = xasprintf("%s/sbxsh", v);
    else
        cfg->state_root = xasprintf("%s/.local/state/sbxsh", cfg->home);
    if (cfg->state_root[0] != '/') {
        sbx_errf(err, "AGENT_SANDBOX_STATE_DIR='%s' is not an absolute path", cfg->state_root);
        goto fail;
    }
    /* A derived name needs the state directory (session_name_derive says why). */
    if (!cfg->session) {
        cfg->session = session_name_derive(&cfg->code_dirs, cfg->state_root);
        cfg->session_derived = true;
    }
    add_secret_excludes(cfg);
    /* The sandbox's copies live in the state directory; a code directory
     * holding it would sync the copies into themselves. */
    for (size_t i = 0; i < cfg->code_dirs.n; i++) {
        if (session_path_within(cfg->state_root, cfg->code_dirs.v[i])) {
            sbx_errf(err, "the state directory %s lies inside the code directory %s; "
                     "set AGENT_SANDBOX_STATE_DIR (or XDG_STATE_HOME) elsewhere, or "
                     "AGENT_SANDBOX_CODE_DIRS to the project only",
                     cfg->state_root, cfg->code_dirs.v[i]);
            goto fail;
        }
    }
    return 0;
fail:
    session_config_free(cfg);
    return -1;
}

void session_config_free(sbx_config *cfg)
{
    /* each section by its own backend (cfg may be half loaded: a NULL section is none) */
    for (size_t i = 0; cfg->backend_settings && session_backend_classes[i]; i++)
        if (cfg->backend_settings[i] && session_backend_classes[i]->settings_free)
            session_backend_classes[i]->settings_free(cfg->backend_settings[i]);
    free(cfg->backend_settings);
    free(cfg->session);
    strvec_clear(&cfg->code_dirs);
    strvec_clear(&cfg->sync_paths);
    strvec_clear(&cfg->task_files);
    strvec_clear(&cfg->create_paths);
    strvec_clear(&cfg->excludes);
    strvec_clear(&cfg->forward_env);
    free(cfg->backend);
    free(cfg->run_dir);
    free(cfg->state_root);
    free(cfg->home);
    free(cfg->agent_path);
    memset(cfg, 0, sizeof(*cfg));
}

static bool is_exec_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The sbx-agent to put in the sandbox: AGENT_SANDBOX_AGENT (an absolute path only: a
 * relative one would resolve against whatever directory sbxsh runs in, a code directory
 * the sandbox writes), else beside this program, else the installed one. */
char *session_find_agent(sbx_err *err)
{
    static const char *const names[] = { "sbx-agent-static", "sbx-agent" };
    const char *v = env_nonempty("AGENT_SANDBOX_AGENT");
    char self[PATH_MAX];
    ssize_t n;

    if (v) {
        if (v[0] == '/' && is_exec_file(v))
            return xstrdup(v);
        sbx_errf(err, "AGENT_SANDBOX_AGENT='%s' is not an absolute path to an executable", v);
        return NULL;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                char *p = xasprintf("%s/%s", self, names[i]);
                if (is_exec_file(p))
                    return p;
                free(p);
            }
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        char *p = xasprintf("%s/%s", SBX_LIBEXECDIR, names[i]);
        if (is_exec_file(p))
            return p;
        free(p);
    }
    sbx_errf(err, "sbx-agent not found beside this program nor in %s; run `make` "
             "(or `make install`), or set AGENT_SANDBOX_AGENT", SBX_LIBEXECDIR);
    return NULL;
}

/* name in the directory of path, when it is readable there; malloc'd or NULL. */
static char *beside(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    char *p = xasprintf("%.*s/%s", (int)(slash - path), path, name);
    if (access(p, R_OK) == 0)
        return p;
    free(p);
    return NULL;
}

char *session_find_libexec(const char *agent_path, const char *name)
{
    char self[PATH_MAX], *p;
    ssize_t n;

    if (agent_path && (p = beside(agent_path, name)))
        return p;
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        if ((p = beside(self, name)))
            return p;
    }
    p = xasprintf("%s/%s", SBX_LIBEXECDIR, name);
    if (access(p, R_OK) == 0)
        return p;
    free(p);
    return NULL;
}

/* Makes path a directory of ours alone: created 0700, then checked with lstat (a
 * symlink someone planted there, or a directory of another uid in a shared /tmp, would
 * give them our sockets and state) and made 0700 if it was wider. */
int session_private_dir(const char *path, sbx_err *err)
{
    struct stat st;

    if (mkdir(path, 0700) < 0 && errno != EEXIST) {
        if (errno != ENOENT)
            return sbx_errno(err, "cannot create %s", path);
        if (sbx_mkdir_p(path, 0700, err) < 0)       /* the parents too */
            return -1;
    }
    if (lstat(path, &st) < 0)
        return sbx_errno(err, "%s", path);
    if (!S_ISDIR(st.st_mode))
        return sbx_errf(err, "%s is not a directory (a symlink?); remove it", path);
    if (st.st_uid != geteuid())
        return sbx_errf(err, "%s belongs to uid %u, not to us (uid %u); remove it or set "
                        "XDG_RUNTIME_DIR / AGENT_SANDBOX_STATE_DIR", path, (unsigned)st.st_uid,
                        (unsigned)geteuid());
    if ((st.st_mode & 077) && chmod(path, 0700) < 0)
        return sbx_errno(err, "cannot make %s private (chmod 700)", path);
    return 0;
}

char *session_state_dir(const sbx_config *cfg)
{
    return xasprintf("%s/%s", cfg->state_root, cfg->session);
}

char *session_socket_path(const sbx_config *cfg)
{
    return xasprintf("%s/%s.sock", cfg->run_dir, cfg->session);
}

char *session_lock_path(const sbx_config *cfg)
{
    return xasprintf("%s/%s.lock", cfg->run_dir, cfg->session);
}

char *session_log_path(const sbx_config *cfg)
{
    return xasprintf("%s/%s.log", cfg->run_dir, cfg->session);
}

/* The fingerprint, with backend number `swap`'s section replaced by `section` (swap < 0:
 * none replaced). */
static char *fingerprint_with(const sbx_config *cfg, long swap, const char *section)
{
    strbuf sb = STRBUF_INIT;
    for (size_t i = 0; session_backend_classes[i]; i++) {
        if ((long)i == swap)
            strbuf_addstr(&sb, section);
        else if (session_backend_classes[i]->fingerprint)
            session_backend_classes[i]->fingerprint(cfg, &sb);
    }
    strbuf_addstr(&sb, "code_dirs=");
    for (size_t i = 0; i < cfg->code_dirs.n; i++)
        strbuf_addf(&sb, "%s%s", i ? ":" : "", cfg->code_dirs.v[i]);
    return strbuf_detach(&sb, NULL);
}

char *session_config_fingerprint(const sbx_config *cfg)
{
    return fingerprint_with(cfg, -1, NULL);
}

void session_config_fingerprints_also(const sbx_config *cfg, strvec *out)
{
    for (size_t i = 0; session_backend_classes[i]; i++) {
        strvec sections = STRVEC_INIT;
        if (!session_backend_classes[i]->fingerprint_also)
            continue;
        session_backend_classes[i]->fingerprint_also(cfg, &sections);
        for (size_t k = 0; k < sections.n; k++) {
            char *fp = fingerprint_with(cfg, (long)i, sections.v[k]);
            strvec_push(out, fp);
            free(fp);
        }
        strvec_clear(&sections);
    }
}
