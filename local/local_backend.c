/*
 * The local backend: one persistent sandbox per session on this machine,
 * under gVisor's runsc or bubblewrap, running `sbx-agent --listen` on a Unix
 * socket in a directory bind-mounted from the session's state directory.
 *
 * The state directory (cfg->state_root/SESSION, mode 0700) holds:
 *   sandbox.json   what a later holder needs to reattach: runtime, id, pid
 *                  and start time, creation time, code directories, network
 *   agent/         /run/sbxsh inside: the agent's socket (no state file: local_new)
 *   sandbox.log    the runtime's and the agent's own stderr
 *   rootfs/, config.json, runsc/   runsc only: the OCI bundle and runsc's --root
 *
 * Both runtimes show the sandbox the same tree (local_plan_mounts): system
 * directories read-only, an allowlist of /etc, fresh /proc, /dev and /tmp,
 * and the agent read-only. The private HOME and each code directory's copy
 * are tmpfs mounts inside the sandbox (of AGENT_SANDBOX_DISK_MAX bytes), not
 * host directories: no host process can be steered into them, nothing the
 * sandbox makes there (setuid files, fifos) is a host file, and they cannot
 * fill the host's disk. The sync fills the copies on the first push.
 *
 * Every sandbox runs under limits (sandbox_limits, limits.c): a cgroup made per
 * sandbox where one is writable (ours under bwrap, runsc's own under runsc),
 * else rlimits; sandbox.json records which, and release removes the cgroup.
 *
 * Why a socket rather than `runsc exec ... sbx-agent --connect` per holder:
 * connecting costs microseconds where a runsc exec costs about 50 ms, and the
 * same code serves both runtimes (runsc's --host-uds=create lets the agent
 * create a socket a host process can connect to).
 */
#include "local/local.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"

/* Stops whatever sandbox the state describes. bwrap: pid is the pid
 * namespace's init, whose death ends every process in the sandbox. runsc:
 * the sandbox process (its gofer follows it); killing it is what `runsc
 * delete --force` does, minus a second of waiting, and runsc's --root is
 * ours alone, removed with the rest of the state. */
static void stop_sandbox(pid_t pid, uint64_t starttime, const strvec *cgroups)
{
    if (local_state_alive(pid, starttime))
        kill(pid, SIGKILL);
    for (int i = 0; i < 400 && local_state_alive(pid, starttime); i++)
        usleep(5000);
    /* and whatever else is left in its cgroup (runsc's gofer, a process
     * that left bwrap's pid namespace cannot exist, but costs nothing) */
    if (cgroups)
        local_cg_remove(cgroups);
}

/* Empties what a sandbox had. */
static int wipe_state(local_backend *lb, sbx_err *err)
{
    /* "code" held the copies, and "home" the private HOME, before they moved
     * into the sandbox's tmpfs: a state directory of an older sbxsh still has
     * them (an old HOME may hold what a sandbox left there: setuid files,
     * fifos), and a new sandbox does not use them. */
    static const char *const parts[] = { "code", "home", "agent", "rootfs", "runsc",
                                         "config.json", "runsc.pid", "sandbox.json", "egress",
                                         "resolv.conf" };
    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        char *p = local_state_path(lb, parts[i]);
        int r = sbx_rm_rf(p, err);
        free(p);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* The state directory's parts a new sandbox binds: the agent's directory,
 * runsc's --root, the egress proxy's; private (0700), inside a state directory that
 * is 0700 and ours (session_private_dir), which keeps the host's other users out of all
 * of them. Except the egress proxy's under rootless runsc: 0711, since the agent there
 * runs as the caller's uid but sees the caller's host files as uid 0's (runsc.c,
 * write_bundle), and connects to the proxy's socket (mode 0777) in it. */
static int make_dirs(local_backend *lb, sbx_err *err)
{
    static const char *const dirs[] = { "agent", "runsc", "egress" };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        char *p = local_state_path(lb, dirs[i]);
        int r = 0;
        if (!strcmp(dirs[i], "egress") && lb->network_allowlist) {
            r = sbx_mkdir_p(p, 0700, err);
            /* mkdir's mode passes through the umask; chmod says it exactly */
            if (r == 0 && lb->runtime == LOCAL_RUNTIME_RUNSC && getuid() != 0 && chmod(p, 0711) < 0)
                r = sbx_errno(err, "cannot chmod %s", p);
        } else if (strcmp(dirs[i], "egress")) {
            r = sbx_mkdir_p(p, 0700, err);
        }
        free(p);
        if (r < 0)
            return -1;
    }
    if (!lb->network_host) {
        /* runsc binds it from here; bwrap gets it as data (local_start_bwrap) */
        char *p = local_state_path(lb, "resolv.conf");
        int r = sbx_write_file_atomic(p, SBX_RESOLV_CONF, strlen(SBX_RESOLV_CONF), 0644, err);
        free(p);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* claim(): reattaches to the sandbox sandbox.json records when it is alive and
 * of the same shape (runtime, network, code directories), keeping the limits it
 * was made with; else stops what is left of it, wipes its state
 * and starts a new one under a fresh random id, recorded before returning. */
static int local_claim(sbx_backend *b, bool *reattached, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;
    saved_state s;
    unsigned char rnd[4];

    *reattached = false;
    if (session_private_dir(lb->dir, err) < 0)
        return -1;
    if (local_load_state(lb->dir, &s) == 0) {
        bool same = !strcmp(s.runtime, local_runtime_name(lb->runtime)) &&
                    s.network_host == lb->network_host &&
                    s.network_allowlist == lb->network_allowlist &&
                    session_strvec_equal(&s.egress, &lb->egress) &&
                    session_strvec_equal(&s.code_dirs, &lb->code_dirs);
        if (same && local_state_alive(s.pid, s.starttime)) {
            /* a holder that died while its sandbox was frozen (freeze.c) left it stopped */
            if (!strcmp(s.runtime, "runsc"))
                local_thaw_tree(s.pid, s.starttime);
            free(lb->id);
            lb->id = xstrdup(s.id);
            lb->pid = s.pid;
            lb->starttime = s.starttime;
            lb->created = s.created;
            lb->claimed = true;
            *reattached = true;
            /* The limits in force are the ones it was made with. */
            strvec_clear(&lb->lim.cgroups);
            lb->lim = s.lim;
            lb->egress_pid = s.egress_pid;
            lb->egress_start = s.egress_start;
            strvec_clear(&s.code_dirs);
            strvec_clear(&s.egress);
            /* a proxy that died (killed, crashed) comes back for the same sandbox */
            if (lb->network_allowlist && !local_egress_alive(lb->egress_pid, lb->egress_start) &&
                (local_start_egress(lb, err) < 0 || local_save_state(lb, err) < 0))
                return -1;
            return 0;
        }
        /* Dead, or made for other code directories or another runtime:
         * nothing of it can be reused. */
        stop_sandbox(s.pid, s.starttime, &s.lim.cgroups);
        local_stop_egress(s.egress_pid, s.egress_start);
        local_saved_state_free(&s);
    }
    strvec_clear(&lb->lim.cgroups);
    lb->lim.mechanism[0] = '\0';
    if (wipe_state(lb, err) < 0 || make_dirs(lb, err) < 0)
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
    if ((lb->runtime == LOCAL_RUNTIME_RUNSC ? local_start_runsc(lb, err)
                                            : local_start_bwrap(lb, err)) < 0)
        return -1;
    lb->claimed = true;
    if ((lb->network_allowlist && local_start_egress(lb, err) < 0) || local_save_state(lb, err) < 0) {
        stop_sandbox(lb->pid, lb->starttime, &lb->lim.cgroups);
        local_stop_egress(lb->egress_pid, lb->egress_start);
        lb->claimed = false;
        return -1;
    }
    return 0;
}

bool local_alive(sbx_backend *b)
{
    local_backend *lb = (local_backend *)b;
    return lb->claimed && local_state_alive(lb->pid, lb->starttime);
}

/* exists(): a live sandbox is recorded for the session (sbx uses it to decide
 * between reattaching and starting, without claiming). */
static bool local_exists(sbx_backend *b)
{
    local_backend *lb = (local_backend *)b;
    saved_state s;
    bool alive;
    if (local_load_state(lb->dir, &s) < 0)
        return false;
    alive = local_state_alive(s.pid, s.starttime);
    local_saved_state_free(&s);
    return alive;
}

/* Connects to the agent's socket in the sandbox-writable agent directory
 * so that what was checked is what is connected to: the directory and the
 * socket are opened without following links (O_PATH), the socket's inode is
 * checked (a socket, owned by us), and connect() goes through that very fd
 * (/proc/self/fd/N of an O_PATH fd names the inode, not a path to resolve
 * again), so a symlink swapped in after the check leads nowhere. */
static int connect_agent(int dfd, int *out, bool *retry, sbx_err *err)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    int pfd, fd, e;

    *retry = false;
    pfd = openat(dfd, SBX_AGENT_SOCKET, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) {
        *retry = errno == ENOENT;
        return *retry ? -1 : sbx_errno(err, "cannot open the sandbox's agent socket");
    }
    if (fstat(pfd, &st) < 0) {
        e = errno;
        close(pfd);
        errno = e;
        return sbx_errno(err, "cannot check the sandbox's agent socket");
    }
    if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
        close(pfd);
        return sbx_errf(err, "the sandbox's agent socket is not a socket of ours (%s); "
                        "releasing the sandbox (sbx release) starts a clean one",
                        S_ISLNK(st.st_mode) ? "a symlink" : !S_ISSOCK(st.st_mode)
                        ? "another kind of file" : "another owner");
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pfd);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        e = errno;
        close(pfd);
        errno = e;
        return sbx_errno(err, "socket");
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        close(pfd);
        *out = fd;
        return 0;
    }
    /* errno before close() can change it */
    e = errno;
    close(fd);
    close(pfd);
    if (e == ECONNREFUSED || e == EAGAIN) {
        *retry = true;
        return -1;
    }
    errno = e;
    return sbx_errno(err, "cannot connect to the sandbox's agent");
}

/* open_stream(): connects to the agent's socket in the agent directory,
 * retrying (bounded, with backoff) while a new sandbox's agent starts, and
 * failing early with the sandbox's log when the sandbox died meanwhile. */
static int local_open_stream(sbx_backend *b, int *rfd, int *wfd, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;
    char *dir = local_state_path(lb, "agent");
    int dfd = -1, fd = -1;
    uint64_t deadline = now_ns() + (uint64_t)SBX_START_TIMEOUT_MS * 1000000;
    unsigned delay_us = 500;

    if (!lb->claimed) {
        free(dir);
        return sbx_errf(err, "no sandbox claimed");
    }
    /* The agent directory is writable from inside: never follow a link
     * there (connect_agent says how the socket is reached). */
    dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    free(dir);
    if (dfd < 0)
        return sbx_errno(err, "cannot open the sandbox's agent directory");
    for (;;) {
        bool retry;
        if (connect_agent(dfd, &fd, &retry, err) == 0) {
            close(dfd);
            *rfd = *wfd = fd;
            return 0;
        }
        if (!retry)
            break;
        if (!local_alive(b)) {
            char *log = local_state_path(lb, "sandbox.log");
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

/* release(): stops the recorded sandbox (or the claimed one) and deletes
 * everything of the session's state. */
static int local_release(sbx_backend *b, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;
    saved_state s;

    local_thaw(b);  /* nothing of it is used again, but stopped processes are not left */
    if (local_load_state(lb->dir, &s) == 0) {
        stop_sandbox(s.pid, s.starttime, &s.lim.cgroups);
        local_stop_egress(s.egress_pid, s.egress_start);
        local_saved_state_free(&s);
    } else if (lb->claimed) {
        stop_sandbox(lb->pid, lb->starttime, &lb->lim.cgroups);
        local_stop_egress(lb->egress_pid, lb->egress_start);
    }
    lb->claimed = false;
    if (wipe_state(lb, err) < 0)
        return -1;
    {
        char *log = local_state_path(lb, "sandbox.log");
        unlink(log);
        free(log);
    }
    if (rmdir(lb->dir) < 0 && errno != ENOENT && errno != ENOTEMPTY)
        return sbx_errno(err, "cannot remove %s", lb->dir);
    return 0;
}

/* free(): the instance only; a claimed sandbox keeps running for the next
 * holder. */
static void local_free(sbx_backend *b)
{
    local_backend *lb = (local_backend *)b;
    free(lb->runtime_path);
    free(lb->session);
    free(lb->dir);
    free(lb->home);
    free(lb->agent_path);
    free(lb->compat_so);
    free(lb->bash_so);
    free(lb->id);
    strvec_clear(&lb->code_dirs);
    strvec_clear(&lb->egress);
    strvec_clear(&lb->agent_args);
    strvec_clear(&lb->agent_env);
    strvec_clear(&lb->lim.cgroups);
    free(lb);
}

static const sbx_backend_ops local_ops = {
    .name = "local",
    .claim = local_claim,
    .open_stream = local_open_stream,
    .alive = local_alive,
    .exists = local_exists,
    .release = local_release,
    .freeze = local_freeze,
    .thaw = local_thaw,
    .status = local_status,
    .free = local_free,
    .disk_max_bounds = true,    /* local/mounts.c: every one a tmpfs of that size */
};

sbx_backend *local_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err)
{
    local_backend *lb = xcalloc(1, sizeof(*lb));

    lb->base.ops = &local_ops;
    if (local_runtime_resolve(local_settings_of(cfg)->runtime, &lb->runtime, &lb->runtime_path,
                              err) < 0) {
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
    lb->dir = session_state_dir(cfg);
    lb->home = xstrdup(cfg->home);
    lb->network_host = local_settings_of(cfg)->network_host;
    lb->network_allowlist = local_settings_of(cfg)->network_allowlist;
    for (size_t i = 0; i < local_settings_of(cfg)->egress.n; i++)
        strvec_push(&lb->egress, local_settings_of(cfg)->egress.v[i]);
    for (size_t i = 0; i < cfg->code_dirs.n; i++)
        strvec_push(&lb->code_dirs, cfg->code_dirs.v[i]);
    lb->agent_path = xstrdup(spec->agent_path);
    /* Without the agent's --state FILE: the agent is the sandbox's first process, so a
     * new agent is a new sandbox, whose agent directory wipe_state() emptied; the file was
     * written and never read. And under rootless runsc the agent, once it runs as the
     * caller's uid, cannot create a file in a host directory at all (runsc.c). */
    if (spec->agent_args)
        for (size_t i = 0; i < spec->agent_args->n; i++) {
            if (!strcmp(spec->agent_args->v[i], "--state") && i + 1 < spec->agent_args->n) {
                i++;
                continue;
            }
            strvec_push(&lb->agent_args, spec->agent_args->v[i]);
        }
    if (spec->agent_env)
        for (size_t i = 0; i < spec->agent_env->n; i++)
            strvec_push(&lb->agent_env, spec->agent_env->v[i]);
    if (lb->runtime == LOCAL_RUNTIME_RUNSC)
        lb->compat_so = session_find_libexec(lb->agent_path, "sbx-runsc-compat.so");
    lb->bash_so = session_find_libexec(lb->agent_path, "sbx-bash-interactive.so");
    lb->lim.pids_max = cfg->pids_max;
    lb->lim.memory_max = cfg->memory_max;
    lb->lim.cpus_milli = cfg->cpus_milli;
    lb->lim.disk_max = cfg->disk_max;
    return &lb->base;
}

/* What the registry lists (BACKENDS += local in local/local.mk). */
const sbx_backend_class local_backend_class = {
    .name = "local",
    .configure = local_configure,
    .settings_free = local_settings_free,
    .fingerprint = local_fingerprint,
    .fingerprint_also = local_fingerprint_also,
    .sandbox_env = local_sandbox_env,
    .create = local_new,
    .peek = local_peek,
    .adopt = local_adopt,
    .doctor = local_doctor,
    .describe = local_describe,
    .fsmonitor_hook = SBX_IN_FSMONITOR_HOOK,
    .help_env =
    "  AGENT_SANDBOX_LOCAL_RUNTIME    runsc | bwrap (default: runsc when installed)\n"
    "  AGENT_SANDBOX_LOCAL_NETWORK    none (default) | host | allowlist\n"
    "  AGENT_SANDBOX_EGRESS           with allowlist: hosts the sandbox may reach over\n"
    "                                 HTTP(S), comma-separated (host, *.domain, host:port,\n"
    "                                 CIDR for private ranges)\n",
};
