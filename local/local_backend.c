/*
 * The local backend: one persistent sandbox per session on this machine,
 * under gVisor's runsc or bubblewrap, running `sbx-agent --listen` on a Unix
 * socket in a directory bind-mounted from the session's state directory.
 *
 * The state directory (cfg->state_root/SESSION, mode 0700) holds:
 *   sandbox.json   what a later holder needs to reattach: runtime, id, pid
 *                  and start time, creation time, code directories, network
 *   code/N/        the sandbox's copy of code directory N (same absolute path inside)
 *   home/          the sandbox's private HOME (same path as the host's $HOME)
 *   agent/         /run/sbxsh inside: the agent's socket and state file
 *   sandbox.log    the runtime's and the agent's own stderr
 *   rootfs/, config.json, runsc/   runsc only: the OCI bundle and runsc's --root
 *
 * Both runtimes show the sandbox the same tree (plan_mounts): system
 * directories read-only, an allowlist of /etc, fresh /proc, /dev and /tmp,
 * the private HOME, the copies read-write, and the agent read-only.
 *
 * Why a socket rather than `runsc exec ... sbx-agent --connect` per holder:
 * connecting costs microseconds where a runsc exec costs about 50 ms, and the
 * same code serves both runtimes (runsc's --host-uds=create lets the agent
 * create a socket a host process can connect to).
 */
#include "local/backend.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "local/fsutil.h"

/* Where things sit inside the sandbox. */
#define SBX_IN_AGENT_BIN "/.sbxsh/sbx-agent"
#define SBX_IN_COMPAT_SO "/.sbxsh/sbx-runsc-compat.so"
#define SBX_AGENT_SOCKET "agent.sock"

/* How long a new sandbox may take to show its agent's socket. */
#define SBX_START_TIMEOUT_MS 30000

typedef enum mount_kind {
    M_RO,       /* read-only bind of src */
    M_RW,       /* read-write bind of src */
    M_TMPFS,
    M_PROC,
    M_DEV,
    M_SYMLINK,  /* a symlink at dst pointing to src */
} mount_kind;

typedef struct mount_ent {
    mount_kind kind;
    char *src;
    char *dst;
    bool is_file;   /* binds: the source is not a directory */
} mount_ent;

typedef struct local_backend {
    sbx_backend base;
    sbx_runtime runtime;
    char *runtime_path;     /* runsc or bwrap */
    char *session;
    char *dir;              /* the session's state directory */
    char *home;
    bool network_host;
    strvec code_dirs;
    char *agent_path;
    char *compat_so;        /* runsc: the statx shim beside the agent, or NULL */
    strvec agent_args;
    strvec agent_env;
    /* The claimed sandbox (valid after claim). */
    char *id;
    pid_t pid;              /* bwrap: the pid namespace's init; runsc: the sandbox process */
    uint64_t starttime;
    int64_t created;
    bool claimed;
} local_backend;

/* /etc entries the sandbox sees. Never: shadow, gshadow, sudoers, ssh host
 * keys, gitconfig (system git config reaches the sandbox only through the
 * sync's key allowlist), npmrc/pip.conf (may hold tokens). */
static const char *const etc_allow[] = {
    "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf",
    "debian_version", "environment", "ethertypes", "gai.conf", "group", "host.conf",
    "hosts", "inputrc", "issue", "ld-musl-x86_64.path", "ld.so.cache", "ld.so.conf",
    "ld.so.conf.d", "locale.alias", "locale.gen", "localtime", "magic", "magic.mime",
    "manpath.config", "mime.types", "mtab", "networks", "nsswitch.conf", "os-release",
    "passwd", "profile", "profile.d", "protocols", "python3", "resolv.conf", "services",
    "shells", "ssl/certs", "terminfo", "timezone", "vim", "xattr.conf",
};

static const char *const sys_dirs[] = {
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
};

/* ---- the mount plan ---------------------------------------------------- */

typedef struct mount_list {
    mount_ent *v;
    size_t n, alloc;
} mount_list;

static void ml_add(mount_list *ml, mount_kind kind, const char *src, const char *dst)
{
    struct stat st;
    XGROW(ml->v, ml->alloc, ml->n + 1);
    mount_ent *m = &ml->v[ml->n++];
    m->kind = kind;
    m->src = src ? xstrdup(src) : NULL;
    m->dst = xstrdup(dst);
    m->is_file = (kind == M_RO || kind == M_RW) && stat(src, &st) == 0 && !S_ISDIR(st.st_mode);
}

static void ml_free(mount_list *ml)
{
    for (size_t i = 0; i < ml->n; i++) {
        free(ml->v[i].src);
        free(ml->v[i].dst);
    }
    free(ml->v);
    memset(ml, 0, sizeof(*ml));
}

static size_t path_depth(const char *p)
{
    size_t d = 0;
    for (; *p; p++)
        d += *p == '/';
    return d;
}

static bool path_under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(p, dir, n) && p[n] == '/';
}

/* A system path as the host has it: symlinks that stay on system
 * directories are recreated, anything else is bound read-only from its real
 * path (e.g. /etc/resolv.conf -> /run/...). */
static void plan_system_path(mount_list *ml, const char *path)
{
    struct stat st;
    char target[PATH_MAX], real[PATH_MAX];
    ssize_t n;

    if (lstat(path, &st) < 0)
        return;
    if (!S_ISLNK(st.st_mode)) {
        if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
            ml_add(ml, M_RO, path, path);
        return;
    }
    n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0 || !realpath(path, real))
        return;
    target[n] = '\0';
    if (!strncmp(real, "/usr/", 5) || !strncmp(real, "/proc/", 6) ||
        (!strncmp(real, "/etc/", 5) && strchr(target, '/') == NULL)) {
        ml_add(ml, M_SYMLINK, target, path);
    } else if (!strncmp(real, "/etc/", 5) || !strncmp(real, "/run/", 5) ||
               !strncmp(real, "/var/", 5)) {
        if (stat(real, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
            ml_add(ml, M_RO, real, path);
    }
}

static void plan_mounts(local_backend *lb, mount_list *ml)
{
    char *p;

    for (size_t i = 0; i < ARRAY_SIZE(sys_dirs); i++)
        plan_system_path(ml, sys_dirs[i]);
    for (size_t i = 0; i < ARRAY_SIZE(etc_allow); i++) {
        p = xasprintf("/etc/%s", etc_allow[i]);
        plan_system_path(ml, p);
        free(p);
    }
    ml_add(ml, M_PROC, NULL, "/proc");
    ml_add(ml, M_DEV, NULL, "/dev");
    ml_add(ml, M_TMPFS, NULL, "/tmp");

    p = xasprintf("%s/agent", lb->dir);
    ml_add(ml, M_RW, p, SBX_SANDBOX_AGENT_DIR);
    free(p);
    ml_add(ml, M_RO, lb->agent_path, SBX_IN_AGENT_BIN);
    if (lb->runtime == SBX_RUNTIME_RUNSC && lb->compat_so)
        ml_add(ml, M_RO, lb->compat_so, SBX_IN_COMPAT_SO);

    p = xasprintf("%s/home", lb->dir);
    ml_add(ml, M_RW, p, lb->home);
    free(p);
    for (size_t i = 0; i < lb->code_dirs.n; i++) {
        p = xasprintf("%s/code/%zu", lb->dir, i);
        ml_add(ml, M_RW, p, lb->code_dirs.v[i]);
        free(p);
    }

    /* Parents before children, so that a code directory under HOME or /tmp
     * lands on top of it. Stable: insertion sort by depth. */
    for (size_t i = 1; i < ml->n; i++) {
        mount_ent m = ml->v[i];
        size_t j = i;
        for (; j > 0 && path_depth(ml->v[j - 1].dst) > path_depth(m.dst); j--)
            ml->v[j] = ml->v[j - 1];
        ml->v[j] = m;
    }
}

/* ---- state ------------------------------------------------------------- */

static char *state_path(local_backend *lb, const char *name)
{
    return xasprintf("%s/%s", lb->dir, name);
}

static int save_state(local_backend *lb, sbx_err *err)
{
    cJSON *o = cJSON_CreateObject(), *dirs = cJSON_CreateArray();
    char *text, *path;
    int r;

    cJSON_AddStringToObject(o, "runtime", sbx_runtime_name(lb->runtime));
    cJSON_AddStringToObject(o, "id", lb->id);
    cJSON_AddNumberToObject(o, "pid", lb->pid);
    cJSON_AddNumberToObject(o, "starttime", (double)lb->starttime);
    cJSON_AddNumberToObject(o, "created", (double)lb->created);
    cJSON_AddStringToObject(o, "network", lb->network_host ? "host" : "none");
    for (size_t i = 0; i < lb->code_dirs.n; i++)
        cJSON_AddItemToArray(dirs, cJSON_CreateString(lb->code_dirs.v[i]));
    cJSON_AddItemToObject(o, "code_dirs", dirs);
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text)
        xdie_oom();
    path = state_path(lb, "sandbox.json");
    r = sbx_write_file_atomic(path, text, strlen(text), 0600, err);
    free(path);
    cJSON_free(text);
    return r;
}

typedef struct saved_state {
    char runtime[16];
    char id[128];
    pid_t pid;
    uint64_t starttime;
    int64_t created;
    bool network_host;
    strvec code_dirs;
} saved_state;

/* Reads sandbox.json (written by us, but bounded all the same). */
static int load_state(const char *dir, saved_state *s)
{
    char *path = xasprintf("%s/sandbox.json", dir);
    char *text = NULL;
    size_t len;
    cJSON *o, *it;
    int r = -1;

    memset(s, 0, sizeof(*s));
    if (read_file(path, 1 << 20, &text, &len, NULL) < 0) {
        free(path);
        return -1;
    }
    free(path);
    o = cJSON_ParseWithLength(text, len);
    free(text);
    if (!o)
        return -1;
    it = cJSON_GetObjectItemCaseSensitive(o, "runtime");
    if (cJSON_IsString(it))
        snprintf(s->runtime, sizeof(s->runtime), "%s", it->valuestring);
    it = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (cJSON_IsString(it))
        snprintf(s->id, sizeof(s->id), "%s", it->valuestring);
    it = cJSON_GetObjectItemCaseSensitive(o, "pid");
    if (cJSON_IsNumber(it) && it->valuedouble > 0 && it->valuedouble < 1 << 30)
        s->pid = (pid_t)it->valuedouble;
    it = cJSON_GetObjectItemCaseSensitive(o, "starttime");
    if (cJSON_IsNumber(it) && it->valuedouble >= 0)
        s->starttime = (uint64_t)it->valuedouble;
    it = cJSON_GetObjectItemCaseSensitive(o, "created");
    if (cJSON_IsNumber(it))
        s->created = (int64_t)it->valuedouble;
    it = cJSON_GetObjectItemCaseSensitive(o, "network");
    s->network_host = cJSON_IsString(it) && !strcmp(it->valuestring, "host");
    it = cJSON_GetObjectItemCaseSensitive(o, "code_dirs");
    cJSON *d;
    cJSON_ArrayForEach(d, it) {
        if (cJSON_IsString(d))
            strvec_push(&s->code_dirs, d->valuestring);
    }
    if (s->runtime[0] && s->id[0] && s->pid > 0)
        r = 0;
    cJSON_Delete(o);
    if (r < 0)
        strvec_clear(&s->code_dirs);
    return r;
}

static bool state_alive(pid_t pid, uint64_t starttime)
{
    return pid > 0 && starttime && sbx_proc_starttime(pid) == starttime;
}

/* ---- running things ---------------------------------------------------- */

/* Runs argv as a new session with stdin /dev/null, stdout and stderr
 * appended to log, and none of our fds but pass_fd, which becomes its fd 3
 * (-1: none). With wait: waits for it and gives its status in *status.
 * Without: double-forks, so that the child is nobody's zombie, and returns
 * once the intermediate process is gone. */
static int spawn(char *const argv[], char *const envp[], const char *log, int pass_fd,
                 bool wait, int *status, sbx_err *err)
{
    pid_t pid = fork();
    if (pid < 0)
        return sbx_errno(err, "fork");
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        setsid();
        if (!wait && fork() != 0)
            _exit(0);
        if (null < 0 || out < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
        if (pass_fd >= 0 && dup2(pass_fd, 3) < 0)
            _exit(127);
        for (int fd = pass_fd >= 0 ? 4 : 3; fd < 1024; fd++)
            close(fd);
        signal(SIGPIPE, SIG_DFL);
        execve(argv[0], argv, envp);
        dprintf(2, "sbxsh: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return sbx_errno(err, "waitpid");
    }
    if (status)
        *status = st;
    return 0;
}

static void build_agent_argv(local_backend *lb, strvec *argv)
{
    strvec_push(argv, SBX_IN_AGENT_BIN);
    strvec_push(argv, "--listen");
    strvec_push(argv, SBX_SANDBOX_AGENT_DIR "/" SBX_AGENT_SOCKET);
    for (size_t i = 0; i < lb->agent_args.n; i++)
        strvec_push(argv, lb->agent_args.v[i]);
}

static int start_bwrap(local_backend *lb, sbx_err *err)
{
    strvec argv = {0};
    mount_list ml = {0};
    int info[2];
    char *log = state_path(lb, "sandbox.log");
    char buf[4096];
    size_t len = 0;
    int r = -1;

    if (pipe2(info, O_CLOEXEC) < 0) {
        free(log);
        return sbx_errno(err, "pipe");
    }
    plan_mounts(lb, &ml);
    strvec_push(&argv, lb->runtime_path);
    strvec_push(&argv, "--unshare-user");
    strvec_push(&argv, "--uid");
    strvec_pushf(&argv, "%u", (unsigned)getuid());
    strvec_push(&argv, "--gid");
    strvec_pushf(&argv, "%u", (unsigned)getgid());
    strvec_push(&argv, "--unshare-pid");
    strvec_push(&argv, "--unshare-ipc");
    strvec_push(&argv, "--unshare-uts");
    strvec_push(&argv, "--unshare-cgroup-try");
    if (!lb->network_host)
        strvec_push(&argv, "--unshare-net");
    strvec_push(&argv, "--hostname");
    strvec_push(&argv, "sbx");
    /* Root inside is the caller's uid without capabilities: when that uid is
     * 0 on the host, it still reaches nothing the mounts do not show, cannot
     * remount them, and cannot make a new user namespace to regain caps. */
    strvec_push(&argv, "--disable-userns");
    strvec_push(&argv, "--cap-drop");
    strvec_push(&argv, "ALL");
    strvec_push(&argv, "--new-session");
    strvec_push(&argv, "--clearenv");
    for (size_t i = 0; i < lb->agent_env.n; i++) {
        const char *eq = strchr(lb->agent_env.v[i], '=');
        if (!eq)
            continue;
        strvec_push(&argv, "--setenv");
        strvec_pushf(&argv, "%.*s", (int)(eq - lb->agent_env.v[i]), lb->agent_env.v[i]);
        strvec_push(&argv, eq + 1);
    }
    strvec_push(&argv, "--info-fd");
    strvec_pushf(&argv, "%d", 3);
    /* Directories bwrap would otherwise make with mode 0700. */
    static const char *const dirs[] = { "/etc", "/etc/ssl", "/run", "/.sbxsh" };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        strvec_push(&argv, "--perms");
        strvec_push(&argv, "0755");
        strvec_push(&argv, "--dir");
        strvec_push(&argv, dirs[i]);
    }
    for (size_t i = 0; i < ml.n; i++) {
        mount_ent *m = &ml.v[i];
        switch (m->kind) {
        case M_RO: strvec_push(&argv, "--ro-bind"); break;
        case M_RW: strvec_push(&argv, "--bind"); break;
        case M_TMPFS: strvec_push(&argv, "--tmpfs"); break;
        case M_PROC: strvec_push(&argv, "--proc"); break;
        case M_DEV: strvec_push(&argv, "--dev"); break;
        case M_SYMLINK: strvec_push(&argv, "--symlink"); break;
        }
        if (m->src)
            strvec_push(&argv, m->src);
        strvec_push(&argv, m->dst);
    }
    strvec_push(&argv, "--remount-ro");
    strvec_push(&argv, "/");
    strvec_push(&argv, "--chdir");
    strvec_push(&argv, "/");
    strvec_push(&argv, "--");
    build_agent_argv(lb, &argv);

    {
        char *path_env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        int sr = spawn(argv.v, path_env, log, info[1], false, NULL, err);
        close(info[1]);
        if (sr < 0)
            goto out;
    }
    /* bwrap writes {"child-pid": N, ...} once the namespaces are set up,
     * then keeps the fd; read until we have a complete JSON object. */
    for (;;) {
        struct pollfd pfd = { info[0], POLLIN, 0 };
        int pr = poll(&pfd, 1, SBX_START_TIMEOUT_MS);
        if (pr <= 0)
            break;
        ssize_t n = read(info[0], buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (strchr(buf, '}') || len == sizeof(buf) - 1)
            break;
    }
    buf[len] = '\0';
    {
        cJSON *o = cJSON_Parse(buf);
        cJSON *pid = o ? cJSON_GetObjectItemCaseSensitive(o, "child-pid") : NULL;
        if (cJSON_IsNumber(pid) && pid->valuedouble > 1)
            lb->pid = (pid_t)pid->valuedouble;
        cJSON_Delete(o);
    }
    if (lb->pid <= 0) {
        char *tail = sbx_file_tail(log, 600);
        sbx_errf(err, "bubblewrap failed to start the sandbox%s%s%s", *tail ? " (" : "", tail,
                 *tail ? ")" : "; see its log");
        free(tail);
        goto out;
    }
    lb->starttime = sbx_proc_starttime(lb->pid);
    r = 0;
out:
    close(info[0]);
    strvec_clear(&argv);
    ml_free(&ml);
    free(log);
    return r;
}

/* Makes the mount point for m in the runsc bundle: in rootfs/ when no
 * earlier mount covers it, in the covering bind's source when one does; a
 * tmpfs makes its own. */
static int runsc_mountpoint(local_backend *lb, mount_list *ml, size_t idx, sbx_err *err)
{
    mount_ent *m = &ml->v[idx], *cover = NULL;
    char *path;
    int r = 0;

    for (size_t i = 0; i < idx; i++)
        if (path_under(m->dst, ml->v[i].dst) &&
            (!cover || strlen(ml->v[i].dst) > strlen(cover->dst)))
            cover = &ml->v[i];
    if (cover && cover->kind != M_RW)
        return 0;
    if (cover)
        path = xasprintf("%s%s", cover->src, m->dst + strlen(cover->dst));
    else
        path = xasprintf("%s/rootfs%s", lb->dir, m->dst);
    if (m->kind == M_SYMLINK) {
        char *parent = xstrdup(path);
        *strrchr(parent, '/') = '\0';
        r = sbx_mkdir_p(parent, 0755, err);
        if (r == 0 && symlink(m->src, path) < 0 && errno != EEXIST)
            r = sbx_errno(err, "cannot create %s", path);
        free(parent);
    } else if (m->is_file) {
        char *parent = xstrdup(path);
        *strrchr(parent, '/') = '\0';
        r = sbx_mkdir_p(parent, 0755, err);
        int fd = r == 0 ? open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644) : -1;
        if (r == 0 && fd < 0)
            r = sbx_errno(err, "cannot create %s", path);
        if (fd >= 0)
            close(fd);
        free(parent);
    } else {
        r = sbx_mkdir_p(path, 0755, err);
    }
    free(path);
    return r;
}

static cJSON *json_strv(const char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *oci_mount(const char *dst, const char *type, const char *src,
                        const char *const *opts, size_t nopts)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "destination", dst);
    cJSON_AddStringToObject(m, "type", type);
    cJSON_AddStringToObject(m, "source", src);
    if (nopts)
        cJSON_AddItemToObject(m, "options", json_strv(opts, nopts));
    return m;
}

/* Writes the OCI bundle: rootfs/ (an empty, read-only skeleton holding only
 * mount points and the system symlinks) and config.json. */
static int write_bundle(local_backend *lb, sbx_err *err)
{
    static const char *const ro[] = { "rbind", "ro", "nosuid", "nodev" };
    static const char *const rw[] = { "rbind", "rw", "nosuid", "nodev" };
    static const char *const tmp[] = { "nosuid", "nodev", "mode=1777" };
    mount_list ml = {0};
    strvec argv = {0};
    cJSON *spec = cJSON_CreateObject(), *proc, *mounts, *linux_, *ns, *user;
    char *rootfs = state_path(lb, "rootfs"), *text = NULL, *path = NULL;
    int r = -1;

    plan_mounts(lb, &ml);
    if (sbx_rm_rf(rootfs, err) < 0 || sbx_mkdir_p(rootfs, 0755, err) < 0)
        goto out;
    mounts = cJSON_CreateArray();
    for (size_t i = 0; i < ml.n; i++) {
        mount_ent *m = &ml.v[i];
        if (runsc_mountpoint(lb, &ml, i, err) < 0)
            goto out_mounts;
        switch (m->kind) {
        case M_RO: cJSON_AddItemToArray(mounts, oci_mount(m->dst, "bind", m->src, ro, 4)); break;
        case M_RW: cJSON_AddItemToArray(mounts, oci_mount(m->dst, "bind", m->src, rw, 4)); break;
        case M_TMPFS: cJSON_AddItemToArray(mounts, oci_mount(m->dst, "tmpfs", "tmpfs", tmp, 3)); break;
        case M_PROC: cJSON_AddItemToArray(mounts, oci_mount(m->dst, "proc", "proc", NULL, 0)); break;
        case M_DEV:
            cJSON_AddItemToArray(mounts, oci_mount(m->dst, "tmpfs", "tmpfs", NULL, 0));
            cJSON_AddItemToArray(mounts, oci_mount("/dev/pts", "devpts", "devpts", NULL, 0));
            cJSON_AddItemToArray(mounts, oci_mount("/dev/shm", "tmpfs", "shm", tmp, 3));
            break;
        case M_SYMLINK: break;  /* made in rootfs by runsc_mountpoint */
        }
    }
    /* gVisor of Debian 12 refuses statx(AT_NO_AUTOMOUNT), which coreutils
     * (ls, stat) use; the shim retries without the flag (meaningless in a
     * sandbox with no automounts). */
    if (lb->compat_so) {
        char *preload = state_path(lb, "rootfs/etc/ld.so.preload");
        char *etc = state_path(lb, "rootfs/etc");
        const char *line = SBX_IN_COMPAT_SO "\n";
        r = sbx_mkdir_p(etc, 0755, err) < 0 ? -1
            : sbx_write_file_atomic(preload, line, strlen(line), 0644, err);
        free(preload);
        free(etc);
        if (r < 0)
            goto out_mounts;
        r = -1;
    }

    cJSON_AddStringToObject(spec, "ociVersion", "1.0.2");
    proc = cJSON_AddObjectToObject(spec, "process");
    cJSON_AddBoolToObject(proc, "terminal", false);
    user = cJSON_AddObjectToObject(proc, "user");
    cJSON_AddNumberToObject(user, "uid", getuid());
    cJSON_AddNumberToObject(user, "gid", getgid());
    build_agent_argv(lb, &argv);
    cJSON_AddItemToObject(proc, "args", json_strv((const char *const *)argv.v, argv.n));
    cJSON_AddItemToObject(proc, "env",
                          json_strv((const char *const *)lb->agent_env.v, lb->agent_env.n));
    cJSON_AddStringToObject(proc, "cwd", "/");
    cJSON_AddObjectToObject(proc, "capabilities");  /* none */
    cJSON_AddBoolToObject(proc, "noNewPrivileges", true);
    {
        cJSON *root = cJSON_AddObjectToObject(spec, "root");
        cJSON_AddStringToObject(root, "path", rootfs);
        cJSON_AddBoolToObject(root, "readonly", true);
    }
    cJSON_AddStringToObject(spec, "hostname", "sbx");
    cJSON_AddItemToObject(spec, "mounts", mounts);
    linux_ = cJSON_AddObjectToObject(spec, "linux");
    ns = cJSON_AddArrayToObject(linux_, "namespaces");
    static const char *const nss[] = { "pid", "ipc", "uts", "mount", "network" };
    for (size_t i = 0; i < ARRAY_SIZE(nss); i++) {
        if (!strcmp(nss[i], "network") && lb->network_host)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", nss[i]);
        cJSON_AddItemToArray(ns, o);
    }
    text = cJSON_Print(spec);
    path = state_path(lb, "config.json");
    r = sbx_write_file_atomic(path, text, strlen(text), 0600, err);
    goto out;
out_mounts:
    ;
out:
    cJSON_Delete(spec);
    cJSON_free(text);
    free(path);
    free(rootfs);
    strvec_clear(&argv);
    ml_free(&ml);
    return r;
}

static void runsc_base_argv(local_backend *lb, strvec *argv)
{
    strvec_push(argv, lb->runtime_path);
    strvec_pushf(argv, "--root=%s/runsc", lb->dir);
    strvec_push(argv, lb->network_host ? "--network=host" : "--network=none");
    /* The agent creates its socket in a bind mount; host processes may
     * connect to it. Nothing lets the sandbox open host sockets. */
    strvec_push(argv, "--host-uds=create");
    strvec_push(argv, "--ignore-cgroups");
    if (getuid() != 0)
        strvec_push(argv, "--rootless");
}

static char *const *runsc_env(void)
{
    static char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
    return env;
}

static int run_runsc(local_backend *lb, const char *const *args, size_t nargs, int *status,
                     sbx_err *err)
{
    strvec argv = {0};
    char *log = state_path(lb, "sandbox.log");
    int r;
    runsc_base_argv(lb, &argv);
    for (size_t i = 0; i < nargs; i++)
        strvec_push(&argv, args[i]);
    r = spawn(argv.v, runsc_env(), log, -1, true, status, err);
    strvec_clear(&argv);
    free(log);
    return r;
}

static int start_runsc(local_backend *lb, sbx_err *err)
{
    char *bundle = xstrdup(lb->dir), *pidfile = state_path(lb, "runsc.pid");
    char *text = NULL;
    size_t len;
    int st = 0;
    int r = -1;

    if (write_bundle(lb, err) < 0)
        goto out;
    unlink(pidfile);
    {
        const char *args[] = { "run", "--detach", "--bundle", bundle, "--pid-file", pidfile,
                               lb->id };
        if (run_runsc(lb, args, ARRAY_SIZE(args), &st, err) < 0)
            goto out;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
        read_file(pidfile, 64, &text, &len, NULL) < 0 || atoi(text) <= 1) {
        char *log = state_path(lb, "sandbox.log");
        char *tail = sbx_file_tail(log, 600);
        sbx_errf(err, "runsc failed to start the sandbox%s%s%s", *tail ? " (" : "", tail,
                 *tail ? ")" : "");
        free(tail);
        free(log);
        goto out;
    }
    lb->pid = atoi(text);
    lb->starttime = sbx_proc_starttime(lb->pid);
    r = 0;
out:
    free(text);
    free(bundle);
    free(pidfile);
    return r;
}

/* Stops whatever sandbox the state describes. bwrap: pid is the pid
 * namespace's init, whose death ends every process in the sandbox. runsc:
 * the sandbox process (its gofer follows it); killing it is what `runsc
 * delete --force` does, minus a second of waiting, and runsc's --root is
 * ours alone, removed with the rest of the state. */
static void stop_sandbox(pid_t pid, uint64_t starttime)
{
    if (state_alive(pid, starttime))
        kill(pid, SIGKILL);
    for (int i = 0; i < 400 && state_alive(pid, starttime); i++)
        usleep(5000);
}

/* Empties what a sandbox had, except the private HOME when keep_home. */
static int wipe_state(local_backend *lb, bool keep_home, sbx_err *err)
{
    static const char *const parts[] = { "code", "agent", "rootfs", "runsc", "config.json",
                                         "runsc.pid", "sandbox.json" };
    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        char *p = state_path(lb, parts[i]);
        int r = sbx_rm_rf(p, err);
        free(p);
        if (r < 0)
            return -1;
    }
    if (!keep_home) {
        char *p = state_path(lb, "home");
        int r = sbx_rm_rf(p, err);
        free(p);
        if (r < 0)
            return -1;
    }
    return 0;
}

static int make_dirs(local_backend *lb, sbx_err *err)
{
    static const char *const dirs[] = { "agent", "home", "runsc" };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        char *p = state_path(lb, dirs[i]);
        int r = sbx_mkdir_p(p, 0700, err);
        free(p);
        if (r < 0)
            return -1;
    }
    for (size_t i = 0; i < lb->code_dirs.n; i++) {
        struct stat st;
        char *p = xasprintf("%s/code/%zu", lb->dir, i);
        int r = sbx_mkdir_p(p, 0700, err);
        /* The copy's root carries the original's permissions. */
        if (r == 0 && stat(lb->code_dirs.v[i], &st) == 0)
            chmod(p, st.st_mode & 07777 & ~(mode_t)07000);
        free(p);
        if (r < 0)
            return -1;
    }
    return 0;
}

static int local_claim(sbx_backend *b, bool *reattached, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;
    saved_state s;
    unsigned char rnd[4];

    *reattached = false;
    if (sbx_private_dir(lb->dir, err) < 0)
        return -1;
    if (load_state(lb->dir, &s) == 0) {
        bool same = !strcmp(s.runtime, sbx_runtime_name(lb->runtime)) &&
                    s.network_host == lb->network_host && sbx_strvec_equal(&s.code_dirs, &lb->code_dirs);
        if (same && state_alive(s.pid, s.starttime)) {
            free(lb->id);
            lb->id = xstrdup(s.id);
            lb->pid = s.pid;
            lb->starttime = s.starttime;
            lb->created = s.created;
            lb->claimed = true;
            *reattached = true;
            strvec_clear(&s.code_dirs);
            return 0;
        }
        /* Dead, or made for other code directories or another runtime:
         * nothing of it can be reused but the private HOME. */
        stop_sandbox(s.pid, s.starttime);
        strvec_clear(&s.code_dirs);
    }
    if (wipe_state(lb, true, err) < 0 || make_dirs(lb, err) < 0)
        return -1;

    int ur = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (ur < 0 || read_full(ur, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
        memset(rnd, 0, sizeof(rnd));
    if (ur >= 0)
        close(ur);
    free(lb->id);
    lb->id = xasprintf("sbx-%s-%02x%02x%02x%02x", lb->session, rnd[0], rnd[1], rnd[2], rnd[3]);
    lb->created = (int64_t)time(NULL);
    lb->pid = 0;
    lb->starttime = 0;
    if ((lb->runtime == SBX_RUNTIME_RUNSC ? start_runsc(lb, err) : start_bwrap(lb, err)) < 0)
        return -1;
    lb->claimed = true;
    if (save_state(lb, err) < 0) {
        stop_sandbox(lb->pid, lb->starttime);
        lb->claimed = false;
        return -1;
    }
    return 0;
}

static bool local_alive(sbx_backend *b)
{
    local_backend *lb = (local_backend *)b;
    return lb->claimed && state_alive(lb->pid, lb->starttime);
}

static bool local_exists(sbx_backend *b)
{
    local_backend *lb = (local_backend *)b;
    saved_state s;
    bool alive;
    if (load_state(lb->dir, &s) < 0)
        return false;
    alive = state_alive(s.pid, s.starttime);
    strvec_clear(&s.code_dirs);
    return alive;
}

static int local_open_stream(sbx_backend *b, int *rfd, int *wfd, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;
    char *dir = state_path(lb, "agent");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int dfd = -1, fd = -1;
    uint64_t deadline = now_ns() + (uint64_t)SBX_START_TIMEOUT_MS * 1000000;
    unsigned delay_us = 500;

    if (!lb->claimed) {
        free(dir);
        return sbx_errf(err, "no sandbox claimed");
    }
    /* The agent directory is writable from inside: never follow a link
     * there, and check that what we connect to is a socket. The path goes
     * through /proc/self/fd so its length does not depend on the state
     * directory's. */
    dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    free(dir);
    if (dfd < 0)
        return sbx_errno(err, "cannot open the sandbox's agent directory");
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" SBX_AGENT_SOCKET, dfd);
    for (;;) {
        struct stat st;
        if (fstatat(dfd, SBX_AGENT_SOCKET, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (!S_ISSOCK(st.st_mode)) {
                sbx_errf(err, "the sandbox's agent socket is not a socket; releasing the "
                         "sandbox (sbx release) starts a clean one");
                break;
            }
            fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                sbx_errno(err, "socket");
                break;
            }
            if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
                close(dfd);
                *rfd = *wfd = fd;
                return 0;
            }
            close(fd);
            fd = -1;
            if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN) {
                sbx_errno(err, "cannot connect to the sandbox's agent");
                break;
            }
        }
        if (!local_alive(b)) {
            char *log = state_path(lb, "sandbox.log");
            char *tail = sbx_file_tail(log, 600);
            sbx_errf(err, "the sandbox exited%s%s%s", *tail ? ": " : "", tail,
                     *tail ? "" : " without a message");
            free(tail);
            free(log);
            break;
        }
        if (now_ns() > deadline) {
            sbx_errf(err, "the sandbox's agent did not start within %d s; see %s/sandbox.log",
                     SBX_START_TIMEOUT_MS / 1000, lb->dir);
            break;
        }
        usleep(delay_us);
        if (delay_us < 20000)
            delay_us *= 2;
    }
    close(dfd);
    return -1;
}

static int local_release(sbx_backend *b, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;
    saved_state s;

    if (load_state(lb->dir, &s) == 0) {
        stop_sandbox(s.pid, s.starttime);
        strvec_clear(&s.code_dirs);
    } else if (lb->claimed) {
        stop_sandbox(lb->pid, lb->starttime);
    }
    lb->claimed = false;
    if (wipe_state(lb, false, err) < 0)
        return -1;
    {
        char *log = state_path(lb, "sandbox.log");
        unlink(log);
        free(log);
    }
    if (rmdir(lb->dir) < 0 && errno != ENOENT && errno != ENOTEMPTY)
        return sbx_errno(err, "cannot remove %s", lb->dir);
    return 0;
}

static void status_json(strbuf *json, const char *runtime, const char *id, int64_t created,
                        bool alive, pid_t pid, bool network_host, const char *dir)
{
    strbuf_addstr(json, "{\"backend\":\"local\",\"runtime\":\"");
    strbuf_add_json_escaped(json, runtime, strlen(runtime));
    strbuf_addstr(json, "\",\"id\":\"");
    strbuf_add_json_escaped(json, id, strlen(id));
    strbuf_addf(json, "\",\"created\":%lld,\"alive\":%s,\"pid\":%d,\"network\":\"%s\",",
                (long long)created, alive ? "true" : "false", (int)pid,
                network_host ? "host" : "none");
    strbuf_addstr(json, "\"state_dir\":\"");
    strbuf_add_json_escaped(json, dir, strlen(dir));
    strbuf_addstr(json, "\"}");
}

static void local_status(sbx_backend *b, strbuf *json)
{
    local_backend *lb = (local_backend *)b;
    status_json(json, sbx_runtime_name(lb->runtime), lb->id ? lb->id : "", lb->created,
                local_alive(b), lb->pid, lb->network_host, lb->dir);
}

int sbx_local_backend_peek(const char *state_dir, strbuf *json)
{
    saved_state s;
    if (load_state(state_dir, &s) < 0)
        return -1;
    status_json(json, s.runtime, s.id, s.created, state_alive(s.pid, s.starttime), s.pid,
                s.network_host, state_dir);
    strvec_clear(&s.code_dirs);
    return 0;
}

int sbx_local_backend_adopt(const char *state_dir, sbx_config *cfg)
{
    saved_state s;
    if (load_state(state_dir, &s) < 0 || !s.code_dirs.n)
        return -1;
    cfg->runtime = !strcmp(s.runtime, "runsc") ? SBX_RUNTIME_RUNSC : SBX_RUNTIME_BWRAP;
    cfg->network_host = s.network_host;
    strvec_clear(&cfg->code_dirs);
    cfg->code_dirs = s.code_dirs;
    return 0;
}

static void local_free(sbx_backend *b)
{
    local_backend *lb = (local_backend *)b;
    free(lb->runtime_path);
    free(lb->session);
    free(lb->dir);
    free(lb->home);
    free(lb->agent_path);
    free(lb->compat_so);
    free(lb->id);
    strvec_clear(&lb->code_dirs);
    strvec_clear(&lb->agent_args);
    strvec_clear(&lb->agent_env);
    free(lb);
}

static const sbx_backend_ops local_ops = {
    .name = "local",
    .claim = local_claim,
    .open_stream = local_open_stream,
    .alive = local_alive,
    .exists = local_exists,
    .release = local_release,
    .status = local_status,
    .free = local_free,
};

int sbx_local_runtime_resolve(sbx_runtime want, sbx_runtime *out, char **path, sbx_err *err)
{
    char *p = NULL;
    if (want == SBX_RUNTIME_AUTO || want == SBX_RUNTIME_RUNSC) {
        p = sbx_which("runsc");
        if (p) {
            *out = SBX_RUNTIME_RUNSC;
        } else if (want == SBX_RUNTIME_RUNSC) {
            return sbx_errf(err, "runsc (gVisor) is not installed: apt-get install runsc "
                            "(or make deps), or set AGENT_SANDBOX_LOCAL_RUNTIME=bwrap");
        }
    }
    if (!p) {
        p = sbx_which("bwrap");
        if (!p)
            return sbx_errf(err, want == SBX_RUNTIME_BWRAP
                            ? "bubblewrap is not installed: apt-get install bubblewrap "
                              "(or make deps), or set AGENT_SANDBOX_LOCAL_RUNTIME=runsc"
                            : "no sandbox runtime: install gVisor or bubblewrap with "
                              "apt-get install runsc bubblewrap (or make deps)");
        *out = SBX_RUNTIME_BWRAP;
    }
    if (path)
        *path = p;
    else
        free(p);
    return 0;
}

sbx_backend *sbx_local_backend_new(const sbx_config *cfg, const sbx_sandbox_spec *spec,
                                   sbx_err *err)
{
    local_backend *lb = xcalloc(1, sizeof(*lb));

    lb->base.ops = &local_ops;
    if (sbx_local_runtime_resolve(cfg->runtime, &lb->runtime, &lb->runtime_path, err) < 0) {
        free(lb);
        return NULL;
    }
    if (!strcmp(cfg->home, "/")) {
        sbx_errf(err, "HOME=/ cannot hold a private home; set HOME to a directory");
        free(lb->runtime_path);
        free(lb);
        return NULL;
    }
    lb->session = xstrdup(cfg->session);
    lb->dir = sbx_session_state_dir(cfg);
    lb->home = xstrdup(cfg->home);
    lb->network_host = cfg->network_host;
    for (size_t i = 0; i < cfg->code_dirs.n; i++)
        strvec_push(&lb->code_dirs, cfg->code_dirs.v[i]);
    lb->agent_path = xstrdup(spec->agent_path);
    if (spec->agent_args)
        for (size_t i = 0; i < spec->agent_args->n; i++)
            strvec_push(&lb->agent_args, spec->agent_args->v[i]);
    if (spec->agent_env)
        for (size_t i = 0; i < spec->agent_env->n; i++)
            strvec_push(&lb->agent_env, spec->agent_env->v[i]);
    if (lb->runtime == SBX_RUNTIME_RUNSC)
        lb->compat_so = sbx_find_libexec(lb->agent_path, "sbx-runsc-compat.so");
    return &lb->base;
}

sbx_backend *sbx_backend_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err)
{
    if (!strcmp(cfg->backend, "local"))
        return sbx_local_backend_new(cfg, spec, err);
    if (!strcmp(cfg->backend, "kube"))
        sbx_errf(err, "AGENT_SANDBOX_BACKEND=kube: the Kubernetes backend is not built yet; "
                 "unset AGENT_SANDBOX_BACKEND to use the local one");
    else
        sbx_errf(err, "AGENT_SANDBOX_BACKEND='%s': use local (or kube)", cfg->backend);
    return NULL;
}

void sbx_backend_free(sbx_backend *b)
{
    if (b)
        b->ops->free(b);
}
