/*
 * The gVisor runtime: `runsc run --detach` of a generated OCI bundle (a
 * read-only rootfs/ skeleton holding only mount points and the system
 * symlinks, and config.json), the agent as the container's process.
 */
#include "local/local.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"

/* Makes rel (a relative path) beneath the directory base without following
 * any link on the way: base may be a directory the sandbox writes (a bind
 * such as the agent's directory), where a symlink planted by an earlier
 * sandbox must not steer a host mkdir or create elsewhere. The last component becomes a
 * directory, an empty file, or a symlink to target. */
static int mkpath_beneath(const char *base, const char *rel, mount_kind kind, bool is_file,
                          const char *target, sbx_err *err)
{
    int bfd = open(base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), dfd = -1, r = 0;
    const char *last;
    size_t dlen;

    if (bfd < 0)
        return sbx_errno(err, "cannot open %s", base);
    /* the parents with common/fsat.h's walk (no symlink followed, nothing outside base);
     * the last component here, with *at() calls that do not follow it either */
    dlen = strlen(rel);
    while (dlen && rel[dlen - 1] == '/')
        dlen--;
    last = rel + dlen;
    while (last > rel && last[-1] != '/')
        last--;
    char *name = xstrndup(last, (size_t)(rel + dlen - last));
    if (!*name) {
        close(bfd);
        free(name);
        return 0;
    }
    dfd = sbx_mkdir_beneath(bfd, rel, (size_t)(last - rel), O_PATH, 0755);
    close(bfd);
    if (dfd < 0) {
        r = sbx_errno(err, "cannot create %s/%s", base, rel);
    } else if (kind == M_SYMLINK) {
        if (symlinkat(target, dfd, name) < 0 && errno != EEXIST)
            r = sbx_errno(err, "cannot create %s/%s", base, rel);
    } else if (is_file) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
            r = sbx_errno(err, "cannot create %s/%s", base, rel);
        else
            close(fd);
    } else if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST) {
        r = sbx_errno(err, "cannot create %s/%s", base, rel);
    } else {
        int nfd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0)
            r = sbx_errno(err, "cannot create %s/%s (not a directory)", base, rel);
        else
            close(nfd);
    }
    if (dfd >= 0)
        close(dfd);
    free(name);
    return r;
}

/* Makes the mount point for m in the runsc bundle: in rootfs/ when no
 * earlier mount covers it, in the covering bind's source when one does
 * (without following links there: see mkpath_beneath); a tmpfs makes its
 * own. */
static int runsc_mountpoint(local_backend *lb, mount_list *ml, size_t idx, sbx_err *err)
{
    mount_ent *m = &ml->v[idx], *cover = NULL;
    char *base;
    int r;

    for (size_t i = 0; i < idx; i++)
        if (local_path_under(m->dst, ml->v[i].dst) &&
            (!cover || strlen(ml->v[i].dst) > strlen(cover->dst)))
            cover = &ml->v[i];
    if (cover && cover->kind != M_RW)
        return 0;
    base = cover ? xstrdup(cover->src) : xasprintf("%s/rootfs", lb->dir);
    r = mkpath_beneath(base, m->dst + (cover ? strlen(cover->dst) : 0) + 1, m->kind, m->is_file,
                       m->src, err);
    free(base);
    return r;
}

/* A JSON array of strings (the OCI spec's, sandbox.json's lists). */
cJSON *local_json_strv(const char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

/* One entry of the OCI spec's mounts array. */
static cJSON *oci_mount(const char *dst, const char *type, const char *src,
                        const char *const *opts, size_t nopts)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "destination", dst);
    cJSON_AddStringToObject(m, "type", type);
    cJSON_AddStringToObject(m, "source", src);
    if (nopts)
        cJSON_AddItemToObject(m, "options", local_json_strv(opts, nopts));
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
    char *rootfs = local_state_path(lb, "rootfs"), *text = NULL, *path = NULL;
    int r = -1;

    local_plan_mounts(lb, &ml);
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
        case M_TMPFS: {
            char mode[32], size[48], uid[32], gid[32];
            const char *o[6] = { "nosuid", "nodev", mode };
            size_t n = 3;
            snprintf(mode, sizeof(mode), "mode=%04o", m->mode ? m->mode : 01777);
            snprintf(size, sizeof(size), "size=%llu", m->size);
            if (m->size)
                o[n++] = size;
            /* HOME and the code copies are the caller's, as on the host: the commands run
             * as the caller's uid (below), and runsc makes a tmpfs root's otherwise. */
            if (m->caller_owned) {
                snprintf(uid, sizeof(uid), "uid=%u", (unsigned)getuid());
                snprintf(gid, sizeof(gid), "gid=%u", (unsigned)getgid());
                o[n++] = uid;
                o[n++] = gid;
            }
            cJSON_AddItemToArray(mounts, oci_mount(m->dst, "tmpfs", "tmpfs", o, n));
            break;
        }
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
        char *preload = local_state_path(lb, "rootfs/etc/ld.so.preload");
        char *etc = local_state_path(lb, "rootfs/etc");
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
    /* Who the commands run as: the caller's uid and gid, as on the host and under bwrap
     * (root stays root), so that `id`, `ls -l` and tools that refuse root or behave
     * otherwise as root (initdb, makepkg, pip) see who runs them. As root that is the
     * process's uid 0 here, with no capabilities. As a user (rootless runsc) it takes a
     * step: runsc runs its gofer in a user namespace that maps only the caller, to 0, so
     * the caller's host files belong to uid 0 inside, and a file or socket made in a host
     * directory by any other uid fails (the gofer cannot chown it to a uid it does not
     * map). The agent must bind its socket in one (the agent's directory, where the host
     * connects). So it starts as uid 0 with CAP_SETUID, CAP_SETGID and CAP_SETPCAP only,
     * binds its socket, and before it reads anything or starts anything becomes the
     * caller's uid and gid (`--user`, sync/agent_main.c: bounding set emptied, no groups,
     * every capability gone, or it exits). What the sandbox writes after that is memory
     * (the code copies, HOME and /tmp are tmpfs, the first two owned by the caller), where
     * uids are gVisor's own. */
    if (getuid() != 0) {
        static const char *const caps[] = { "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP" };
        static const char *const sets[] = { "bounding", "effective", "permitted" };
        cJSON *c = cJSON_AddObjectToObject(proc, "capabilities");
        cJSON_AddNumberToObject(user, "uid", 0);
        cJSON_AddNumberToObject(user, "gid", 0);
        for (size_t i = 0; i < ARRAY_SIZE(sets); i++)
            cJSON_AddItemToObject(c, sets[i], local_json_strv(caps, ARRAY_SIZE(caps)));
    } else {
        cJSON_AddNumberToObject(user, "uid", 0);
        cJSON_AddNumberToObject(user, "gid", getgid());
        cJSON_AddObjectToObject(proc, "capabilities");  /* none */
    }
    local_agent_argv(lb, &argv);
    cJSON_AddItemToObject(proc, "args", local_json_strv((const char *const *)argv.v, argv.n));
    cJSON_AddItemToObject(proc, "env",
                          local_json_strv((const char *const *)lb->agent_env.v, lb->agent_env.n));
    cJSON_AddStringToObject(proc, "cwd", "/");
    cJSON_AddBoolToObject(proc, "noNewPrivileges", true);
    /* The sandbox's process limit: the Sentry makes fork() fail with EAGAIN
     * at RLIMIT_NPROC, as Linux does (see "limits" above for why not the
     * host cgroup's pids.max). */
    if (lb->lim.pids_max) {
        cJSON *rls = cJSON_AddArrayToObject(proc, "rlimits"), *rl = cJSON_CreateObject();
        cJSON_AddStringToObject(rl, "type", "RLIMIT_NPROC");
        cJSON_AddNumberToObject(rl, "hard", lb->lim.pids_max);
        cJSON_AddNumberToObject(rl, "soft", lb->lim.pids_max);
        cJSON_AddItemToArray(rls, rl);
    }
    {
        cJSON *root = cJSON_AddObjectToObject(spec, "root");
        cJSON_AddStringToObject(root, "path", rootfs);
        cJSON_AddBoolToObject(root, "readonly", true);
    }
    cJSON_AddStringToObject(spec, "hostname", "sbx");
    cJSON_AddItemToObject(spec, "mounts", mounts);
    linux_ = cJSON_AddObjectToObject(spec, "linux");
    if (lb->runsc_cgroups) {
        /* Relative: under runsc's own cgroup, which is ours. */
        cJSON *res = cJSON_AddObjectToObject(linux_, "resources"), *o;
        char *cgp = xasprintf("sbxsh/%s", lb->id);
        cJSON_AddStringToObject(linux_, "cgroupsPath", cgp);
        free(cgp);
        o = cJSON_AddObjectToObject(res, "pids");
        cJSON_AddNumberToObject(o, "limit", lb->lim.pids_max ? (double)local_runsc_host_pids(lb->lim.pids_max)
                                                              : -1);
        if (lb->lim.memory_max) {
            o = cJSON_AddObjectToObject(res, "memory");
            cJSON_AddNumberToObject(o, "limit", (double)lb->lim.memory_max);
        }
        if (lb->lim.cpus_milli) {
            o = cJSON_AddObjectToObject(res, "cpu");
            cJSON_AddNumberToObject(o, "quota",
                                    (double)lb->lim.cpus_milli * SBX_CPU_PERIOD_US / 1000);
            cJSON_AddNumberToObject(o, "period", SBX_CPU_PERIOD_US);
        }
    }
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
    path = local_state_path(lb, "config.json");
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
    local_ml_free(&ml);
    return r;
}

/* runsc's global options, before its command (run, ...): its --root in the
 * session's state, the network, host sockets the agent creates, cgroups or not, and
 * --rootless for an ordinary user. Pure (tests/local/t-bwrap.c checks it). */
void local_runsc_argv(const local_runsc_params *p, strvec *argv)
{
    strvec_push(argv, p->runsc);
    strvec_pushf(argv, "--root=%s/runsc", p->state_dir);
    strvec_push(argv, p->network_host ? "--network=host" : "--network=none");
    /* The agent creates its socket in a bind mount; host processes may
     * connect to it. Nothing lets the sandbox open host sockets. */
    strvec_push(argv, p->allowlist ? "--host-uds=all" : "--host-uds=create");
    if (!p->cgroups)
        strvec_push(argv, "--ignore-cgroups");
    if (p->rootless)
        strvec_push(argv, "--rootless");
}

static char *const *runsc_env(void)
{
    static char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
    return env;
}

/* Runs runsc with its global options and args, waits, and gives its status;
 * its output goes to the sandbox's log. */
static int run_runsc(local_backend *lb, const char *const *args, size_t nargs, int *status,
                     sbx_err *err)
{
    strvec argv = {0};
    char *log = local_state_path(lb, "sandbox.log");
    int r;
    local_runsc_params rp = { .runsc = lb->runtime_path, .state_dir = lb->dir,
                              .network_host = lb->network_host,
                              .allowlist = lb->network_allowlist, .cgroups = lb->runsc_cgroups,
                              .rootless = getuid() != 0 };
    local_runsc_argv(&rp, &argv);
    for (size_t i = 0; i < nargs; i++)
        strvec_push(&argv, args[i]);
    r = local_spawn(argv.v, runsc_env(), log, NULL, true, status, err);
    strvec_clear(&argv);
    free(log);
    return r;
}

int local_start_runsc(local_backend *lb, sbx_err *err)
{
    char *bundle = xstrdup(lb->dir), *pidfile = local_state_path(lb, "runsc.pid");
    char *text = NULL;
    size_t len;
    int st = 0;
    int r = -1;

    lb->runsc_cgroups = local_runsc_cgroups_usable();
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
        char *log = local_state_path(lb, "sandbox.log");
        char *tail = sbx_file_tail(log, 600);
        sbx_errf(err, "runsc failed to start the sandbox%s%s%s", *tail ? " (" : "", tail,
                 *tail ? ")" : "");
        free(tail);
        free(log);
        goto out;
    }
    lb->pid = atoi(text);
    lb->starttime = sbx_proc_starttime(lb->pid);
    if (lb->runsc_cgroups)
        local_cg_find_runsc(&lb->lim, lb->id);
    else
        snprintf(lb->lim.mechanism, sizeof(lb->lim.mechanism), "rlimit");
    r = 0;
out:
    if (r < 0 && lb->runsc_cgroups) {
        /* runsc may have made them before failing */
        strvec_clear(&lb->lim.cgroups);
        local_cg_find_runsc(&lb->lim, lb->id);
        local_cg_remove(&lb->lim.cgroups);
        strvec_clear(&lb->lim.cgroups);
    }
    free(text);
    free(bundle);
    free(pidfile);
    return r;
}
