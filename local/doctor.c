/*
 * sbx doctor's checks for the local backend (the class's doctor hook): the
 * runtimes and whether each starts a sandbox, user namespaces, the runsc
 * statx shim beside the agent, whether the limits get a cgroup, and the network.
 */
#include "local/local.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/run.h"

/* Runs argv quietly (common/run.h); returns its exit status (or -1) and its first output
 * line (stdout and stderr) in line. */
static int run_quiet(char *const argv[], char *line, size_t linesz)
{
    strbuf out = STRBUF_INIT;
    sbx_run r = { .argv = argv, .cwd_fd = -1, .stderr_to = SBX_RUN_ERR_OUT, .max = linesz - 1 };
    sbx_err err;
    int st, rc = sbx_run_capture(&r, &out, &st, &err);

    snprintf(line, linesz, "%.*s", (int)strcspn(out.buf, "\n"), out.buf);
    strbuf_release(&out);
    return rc < 0 ? -1 : sbx_run_exit_code(st);
}

/* Whether this process may make a user namespace (bubblewrap needs one). */
static int try_userns(void *ctx)
{
    return unshare(CLONE_NEWUSER) == 0 ? 0 : 1;
}

/* (in a child: the namespace is not ours to keep) */
static bool userns_works(void)
{
    sbx_run run = { .fn = try_userns, .file = "a user namespace test", .cwd_fd = -1 };
    sbx_err err;
    pid_t pid;
    int st;

    return sbx_run_start(&run, &pid, NULL, &err) == 0 && sbx_run_wait(pid, &st, &err) == 0 &&
           WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Which runtimes are installed and whether each starts a sandbox here: a missing or
 * broken one is a problem only when it is the one asked for. */
static void doctor_runtimes(const sbx_config *cfg, sbx_doctor_finding *finding)
{
    char *runsc = sbx_which("runsc"), *bwrap = sbx_which("bwrap");
    local_runtime want = local_settings_of(cfg)->runtime;   /* as asked */
    char line[512];
    local_runtime rt;
    sbx_err err;

    if (runsc) {
        char *v[] = { runsc, "--version", NULL };
        run_quiet(v, line, sizeof(line));
        finding(0, "runsc (gVisor) found:", "%s, %s", runsc, line);
        unsigned long date = local_runsc_release_date(line);
        if (date && !local_runsc_has_systrap(date))
            finding(1, "this runsc has only the ptrace platform:", "gVisor of %lu-%02lu-%02lu; "
                    "a system call inside costs 30-100 us, so `git status` or a first sync "
                    "take 15-20 times the host's; a runsc of mid-2023 or later has systrap "
                    "(on Debian 12: bookworm-backports' runsc, which `make deps` installs)",
                    date / 10000, date / 100 % 100, date % 100);
        else if (date && date < LOCAL_RUNSC_IDLE_PARK_DATE)
            finding(1, "an idle runsc sandbox costs CPU here:", "gVisor of %lu-%02lu-%02lu "
                    "polls every 400 us on its systrap platform, about 3%% of a CPU per idle "
                    "sandbox that cannot be frozen (one running a background process; an "
                    "idle one without is stopped after 30 s) until "
                    "AGENT_SANDBOX_IDLE_TIMEOUT (default 30 min) releases it "
                    "(bench/idle-cpu.sh); gVisor from 2026-06-22 on sleeps instead; a "
                    "shorter AGENT_SANDBOX_IDLE_TIMEOUT or sbx release bounds it",
                    date / 10000, date / 100 % 100, date % 100);
        char *t[] = { runsc, "--network=none", "--ignore-cgroups", "do", "/bin/true", NULL };
        int r = run_quiet(t, line, sizeof(line));
        if (r == 0)
            finding(0, "runsc starts a sandbox (runsc do /bin/true)", NULL);
        else
            finding(want == LOCAL_RUNTIME_RUNSC ? 2 : 1,
                    "runsc cannot start a sandbox here", "%s; run as root, or set "
                    "AGENT_SANDBOX_LOCAL_RUNTIME=bwrap", line[0] ? line : "no message");
    } else {
        finding(want == LOCAL_RUNTIME_RUNSC ? 2 : 1, "runsc (gVisor) is not installed",
                "apt-get install runsc (or make deps) for the stronger sandbox");
    }
    if (bwrap) {
        char *v[] = { bwrap, "--version", NULL };
        run_quiet(v, line, sizeof(line));
        finding(0, "bubblewrap found:", "%s, %s", bwrap, line);
        char *t[] = { bwrap, "--unshare-user", "--unshare-pid", "--unshare-net",
                      "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
                      "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
                      "--proc", "/proc", "--dev", "/dev", "/bin/true", NULL };
        int r = run_quiet(t, line, sizeof(line));
        if (r == 0)
            finding(0, "bubblewrap starts a sandbox with user, pid and network namespaces",
                    NULL);
        else
            finding(want == LOCAL_RUNTIME_BWRAP ? 2 : 1, "bubblewrap cannot start a sandbox here",
                    "%s; enable unprivileged user namespaces "
                    "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0)",
                    line[0] ? line : "no message");
    } else {
        finding(want == LOCAL_RUNTIME_BWRAP ? 2 : 1, "bubblewrap is not installed",
                "apt-get install bubblewrap (or make deps)");
    }
    if (local_runtime_resolve(want, &rt, NULL, &err) < 0)
        finding(2, "no usable sandbox runtime", "%s", err.msg);
    else
        finding(0, "runtime in use:", "%s (AGENT_SANDBOX_LOCAL_RUNTIME=%s)",
                local_runtime_name(rt), local_runtime_name(want));
    free(runsc);
    free(bwrap);
}

/* runsc: the statx shim must sit beside the agent (runsc_compat.c says why). */
static void doctor_shim(sbx_doctor_finding *finding)
{
    sbx_err err;
    char *agent = session_find_agent(&err);
    if (!agent)
        return;     /* the session layer reports the agent itself */
    char *so = session_find_libexec(agent, "sbx-runsc-compat.so");
    if (so)
        finding(0, "runsc statx shim:", "%s", so);
    else
        finding(1, "sbx-runsc-compat.so missing beside sbx-agent", "without it `ls` and "
                "`stat` fail under Debian 12's runsc; run `make` or `make install`");
    free(so);
    free(agent);
}

/* Whether the sandbox's limits (which keep the host usable whatever runs inside) can be
 * enforced here, and by what. */
static void doctor_limits(const sbx_config *cfg, local_runtime rt, sbx_doctor_finding *finding)
{
    strbuf how = STRBUF_INIT;
    char mem[32] = "no";
    if (cfg->memory_max)
        session_format_size(mem, sizeof(mem), (double)cfg->memory_max);
    if (local_limits_probe(rt, &how) == 0)
        finding(0, "sandbox limits enforced:", "%s (%u processes, %s memory)", how.buf,
                cfg->pids_max, mem);
    else
        finding(3, "sandbox limits cannot be enforced by a cgroup here",
                "%s; sandboxes get rlimits only (RLIMIT_NPROC, RLIMIT_DATA per process), "
                "which a fork bomb or a memory hog can still hurt the host through: run as "
                "root on cgroup v1, or delegate a cgroup v2 subtree (systemd: "
                "Delegate=yes, or run sbxsh under `systemd-run --user --scope -p "
                "Delegate=yes`)", how.buf);
    strbuf_release(&how);
}

/* The network mode, and for the allowlist its list and whether its proxy is here. */
static void doctor_network(const sbx_config *cfg, sbx_doctor_finding *finding)
{
    if (local_settings_of(cfg)->network_host) {
        finding(0, "network:", "host (AGENT_SANDBOX_LOCAL_NETWORK=host: the host's network)");
        return;
    }
    if (!local_settings_of(cfg)->network_allowlist) {
        finding(0, "network:", "none (lookups get a notice on the first command that tries)");
        return;
    }
    strbuf sb = STRBUF_INIT;
    for (size_t i = 0; i < local_settings_of(cfg)->egress.n; i++)
        strbuf_addf(&sb, "%s%s", i ? "," : "", local_settings_of(cfg)->egress.v[i]);
    char *proxy = session_find_libexec(cfg->agent_path, "sbx-egress");
    if (proxy)
        finding(0, "network:", "allowlist, HTTP(S) through %s to %s", proxy, sb.buf);
    else
        finding(2, "network: allowlist, but sbx-egress (the egress proxy) is not installed",
                "make install puts it beside sbx-agent");
    free(proxy);
    strbuf_release(&sb);
}

void local_doctor(const sbx_config *cfg, sbx_doctor_finding *finding)
{
    local_runtime rt = LOCAL_RUNTIME_AUTO;
    char line[64];

    doctor_runtimes(cfg, finding);
    if (userns_works())
        finding(0, "user namespaces work", NULL);
    else
        finding(getuid() == 0 ? 1 : 2, "user namespaces are not available",
                "bubblewrap needs them: sysctl -w user.max_user_namespaces=15000 "
                "(and kernel.unprivileged_userns_clone=1 where it exists)");
    FILE *f = fopen("/proc/sys/user/max_user_namespaces", "r");
    if (f && fgets(line, sizeof(line), f) && atoi(line) == 0)
        finding(2, "user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000");
    if (f)
        fclose(f);
    local_runtime_resolve(local_settings_of(cfg)->runtime, &rt, NULL, NULL);
    if (rt == LOCAL_RUNTIME_RUNSC)
        doctor_shim(finding);
    doctor_limits(cfg, rt, finding);
    doctor_network(cfg, finding);
}
