/*
 * The bubblewrap runtime: a persistent sandbox started without
 * --die-with-parent in its own session; --info-fd gives the pid namespace's
 * init, whose death ends every process inside.
 */
#include "local/local.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/fsutil.h"

/* bwrap's options for the sandbox, everything that goes through --args: the
 * namespaces (the network's is made before, unless the host's is shared), our uid and
 * gid, no capabilities, the agent's environment, then the
 * mount plan in its order (parents first), and a read-only root. A function of its
 * inputs only (tests/local/t-bwrap.c checks it); the start below runs it. */
void local_bwrap_options(const local_bwrap_params *p, const mount_list *ml, strvec *argv)
{
    strvec_push(argv, "--unshare-user");
    strvec_push(argv, "--uid");
    strvec_pushf(argv, "%u", p->uid);
    strvec_push(argv, "--gid");
    strvec_pushf(argv, "%u", p->gid);
    strvec_push(argv, "--unshare-pid");
    strvec_push(argv, "--unshare-ipc");
    strvec_push(argv, "--unshare-uts");
    strvec_push(argv, "--unshare-cgroup-try");
    /* no host network: the namespace is made before bwrap runs (local_dns_netns) */
    strvec_push(argv, "--hostname");
    strvec_push(argv, "sbx");
    /* Root inside is the caller's uid without capabilities: when that uid is
     * 0 on the host, it still reaches nothing the mounts do not show, cannot
     * remount them, and cannot make a new user namespace to regain caps. */
    strvec_push(argv, "--disable-userns");
    strvec_push(argv, "--cap-drop");
    strvec_push(argv, "ALL");
    strvec_push(argv, "--new-session");
    strvec_push(argv, "--clearenv");
    for (size_t i = 0; i < p->agent_env->n; i++) {
        const char *eq = strchr(p->agent_env->v[i], '=');
        if (!eq)
            continue;
        strvec_push(argv, "--setenv");
        strvec_pushf(argv, "%.*s", (int)(eq - p->agent_env->v[i]), p->agent_env->v[i]);
        strvec_push(argv, eq + 1);
    }
    strvec_push(argv, "--info-fd");
    strvec_pushf(argv, "%d", 3);
    /* Directories bwrap would otherwise make with mode 0700. */
    static const char *const dirs[] = { "/etc", "/etc/ssl", "/run", "/.sbxsh" };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        strvec_push(argv, "--perms");
        strvec_push(argv, "0755");
        strvec_push(argv, "--dir");
        strvec_push(argv, dirs[i]);
    }
    for (size_t i = 0; i < ml->n; i++) {
        mount_ent *m = &ml->v[i];
        switch (m->kind) {
        case M_RO:
            /* our resolv.conf as data, not a bind: mountinfo would show its state path */
            if (!p->network_host && !strcmp(m->dst, "/etc/resolv.conf")) {
                strvec_push(argv, "--ro-bind-data");
                strvec_push(argv, "5");
                strvec_push(argv, m->dst);
                continue;
            }
            strvec_push(argv, "--ro-bind");
            break;
        case M_RW: strvec_push(argv, "--bind"); break;
        case M_TMPFS:
            if (m->mode) {
                strvec_push(argv, "--perms");
                strvec_pushf(argv, "%04o", m->mode);
            }
            if (m->size) {
                strvec_push(argv, "--size");
                strvec_pushf(argv, "%llu", m->size);
            }
            strvec_push(argv, "--tmpfs");
            break;
        case M_PROC: strvec_push(argv, "--proc"); break;
        case M_DEV: strvec_push(argv, "--dev"); break;
        case M_SYMLINK: strvec_push(argv, "--symlink"); break;
        }
        if (m->src)
            strvec_push(argv, m->src);
        strvec_push(argv, m->dst);
    }
    strvec_push(argv, "--remount-ro");
    strvec_push(argv, "/");
    strvec_push(argv, "--chdir");
    strvec_push(argv, "/");
}

/* bwrap's own command line: what the sandbox's /proc/1/cmdline shows, so sandbox
 * paths only (the options, with the host's state paths, come from fd 4). */
void local_bwrap_command(const char *bwrap, local_backend *lb, strvec *argv)
{
    strvec_push(argv, bwrap);
    strvec_push(argv, "--args");
    strvec_push(argv, "4");
    strvec_push(argv, "--");
    local_agent_argv(lb, argv);
}

/* Starts the sandbox: the options into a memfd (--args), the cgroup made and joined
 * before exec (or the rlimits), then bwrap detached; waits for --info-fd's
 * child-pid, the pid namespace's init that identifies the sandbox from now on. */
int local_start_bwrap(local_backend *lb, sbx_err *err)
{
    strvec argv = {0};
    mount_list ml = {0};
    int info[2];
    char *log = local_state_path(lb, "sandbox.log");
    char buf[4096];
    size_t len = 0;
    int r = -1;

    strvec joins = {0};
    int argfd = -1, resolvfd = -1;

    if (pipe2(info, O_CLOEXEC) < 0) {
        free(log);
        return sbx_errno(err, "pipe");
    }
    local_plan_mounts(lb, &ml);
    {
        local_bwrap_params bp = { .uid = (unsigned)getuid(), .gid = (unsigned)getgid(),
                                  .network_host = lb->network_host,
                                  .agent_env = &lb->agent_env };
        local_bwrap_options(&bp, &ml, &argv);
    }

    /* The options go through --args: bwrap stays the sandbox's pid 1, and
     * its /proc/1/cmdline would otherwise show the host's state paths (the
     * bind sources) to everything inside. The command stays on the command
     * line (bwrap takes it only from there): sandbox paths only. */
    if (!lb->network_host) {
        resolvfd = memfd_create("resolv.conf", MFD_CLOEXEC);
        if (resolvfd < 0 || write_full(resolvfd, SBX_RESOLV_CONF, strlen(SBX_RESOLV_CONF)) < 0 ||
            lseek(resolvfd, 0, SEEK_SET) < 0) {
            sbx_errno(err, "cannot write the sandbox's resolv.conf");
            close(info[1]);
            goto out;
        }
    }
    argfd = memfd_create("bwrap-args", MFD_CLOEXEC);
    if (argfd < 0) {
        sbx_errno(err, "memfd_create");
        close(info[1]);
        goto out;
    }
    for (size_t i = 0; i < argv.n; i++) {
        if (write_full(argfd, argv.v[i], strlen(argv.v[i]) + 1) < 0) {
            sbx_errno(err, "cannot write bwrap's arguments");
            close(info[1]);
            goto out;
        }
    }
    lseek(argfd, 0, SEEK_SET);

    if (local_cg_create(&lb->lim, lb->id, err) < 0) {
        close(info[1]);
        goto out;
    }
    for (size_t i = 0; i < lb->lim.cgroups.n; i++)
        strvec_pushf(&joins, "%s/cgroup.procs", lb->lim.cgroups.v[i]);
    if (!lb->lim.cgroups.n)
        snprintf(lb->lim.mechanism, sizeof(lb->lim.mechanism), "rlimit");
    {
        char *path_env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        strvec bargv = {0};
        local_bwrap_command(lb->runtime_path, lb, &bargv);
        spawn_opts so = { { info[1], argfd, resolvfd }, joins.v, joins.n,
                          lb->lim.cgroups.n ? NULL : &lb->lim, !lb->network_host };
        int sr = local_spawn(bargv.v, path_env, log, &so, false, NULL, err);
        strvec_clear(&bargv);
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
    if (r < 0) {
        local_cg_remove(&lb->lim.cgroups);
        strvec_clear(&lb->lim.cgroups);
    }
    if (argfd >= 0)
        close(argfd);
    if (resolvfd >= 0)
        close(resolvfd);
    strvec_clear(&joins);
    close(info[0]);
    strvec_clear(&argv);
    local_ml_free(&ml);
    free(log);
    return r;
}
