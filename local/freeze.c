/*
 * Freezing an idle runsc sandbox (issue 21): gVisor 2024-07's systrap monitor
 * loop costs about 3 % of a CPU for as long as the Sentry runs, idle or not
 * (bench/idle.md). The holder asks, once nobody has used the session for a while,
 * to freeze it; this stops every host process of the sandbox (the Sentry and its
 * stubs: the tree under the recorded pid) with SIGSTOP, but only when the sandbox
 * is quiescent: it holds no process but sbx-agent's own, so that nothing a user
 * left running (a dev server started with &) is stopped. Thawing sends SIGCONT to
 * the same processes, before anything talks to the agent again.
 *
 * Quiescence is read from the host with `runsc ps` (the Sentry's own process
 * table, no request to the agent): the agent is the sandbox's pid 1 and its DNS
 * stub, forked at its start before any command, its pid 2; any other process, or
 * either of those not looking so, means not quiescent. The sandbox can at most make
 * itself look quiescent (a process renaming itself), which freezes only itself
 * until the next command: no host action beyond its own processes.
 *
 * Each process is signalled through a pidfd opened before its start time is
 * checked, so a pid reused meanwhile is never signalled.
 */
#include "local/local.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/run.h"

/* runsc ps is a small query of the Sentry: bounded, never a hang of the holder. */
#define FREEZE_PS_TIMEOUT_MS 5000

/* Field 4 (ppid) of /proc/PID/stat; -1 when unreadable. */
static pid_t proc_ppid(pid_t pid)
{
    char path[64], buf[1024];
    FILE *f;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    int ppid;
    if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1)
        return -1;
    return (pid_t)ppid;
}

/* The recorded sandbox process and every descendant of it, each with its start
 * time (the Sentry first: it is stopped first and continued last). */
static void collect_tree(pid_t root, uint64_t root_start, local_frozen *out)
{
    out->n = 0;
    if (!local_state_alive(root, root_start))
        return;
    out->v[out->n].pid = root;
    out->v[out->n++].start = root_start;
    /* descendants: a pass per generation, until one adds nothing */
    for (bool added = true; added && out->n < LOCAL_FROZEN_MAX;) {
        added = false;
        DIR *d = opendir("/proc");
        if (!d)
            return;
        struct dirent *e;
        while ((e = readdir(d)) && out->n < LOCAL_FROZEN_MAX) {
            if (!isdigit((unsigned char)e->d_name[0]))
                continue;
            pid_t pid = (pid_t)atoi(e->d_name), ppid = proc_ppid(pid);
            bool known = false, parent = false;
            for (size_t i = 0; i < out->n; i++) {
                known |= out->v[i].pid == pid;
                parent |= out->v[i].pid == ppid;
            }
            uint64_t st = !known && parent ? sbx_proc_starttime(pid) : 0;
            if (st) {
                out->v[out->n].pid = pid;
                out->v[out->n++].start = st;
                added = true;
            }
        }
        closedir(d);
    }
}

/* Sends sig to pid only if it is still the process that started at start. */
static void signal_checked(pid_t pid, uint64_t start, int sig)
{
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd < 0) {
        /* no pidfds (an old kernel): the start-time check as elsewhere in local/ */
        if (errno == ENOSYS && local_state_alive(pid, start))
            kill(pid, sig);
        return;
    }
    if (local_state_alive(pid, start))
        syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
    close(pfd);
}

/* 1 when `runsc ps` shows only the agent (pid 1) and its DNS stub (pid 2, its
 * child), 0 when it shows anything else (or a line not of that form); -1 with err when
 * runsc ps failed (not answering within its bound included): not frozen either way. */
static int runsc_quiescent(local_backend *lb, sbx_err *err)
{
    strvec argv = {0};
    strbuf out = STRBUF_INIT;
    int status = 0;
    int ok = 0;
    local_runsc_params rp = { .runsc = lb->runtime_path, .state_dir = lb->dir,
                              .network_host = lb->network_host,
                              .allowlist = lb->network_allowlist, .cgroups = lb->runsc_cgroups,
                              .rootless = getuid() != 0 };
    static char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };

    local_runsc_argv(&rp, &argv);
    strvec_push(&argv, "ps");
    strvec_push(&argv, lb->id);
    sbx_run r = { .argv = argv.v, .env = env, .cwd_fd = -1, .stderr_to = SBX_RUN_ERR_NULL,
                  .max = 65536, .over_max_fails = true, .timeout_ms = FREEZE_PS_TIMEOUT_MS };
    if (sbx_run_capture(&r, &out, &status, err) < 0) {
        ok = -1;
        goto done;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ok = sbx_errf(err, "runsc ps failed (status %d)", sbx_run_exit_code(status));
        goto done;
    }
    /* UID PID PPID C TTY STIME TIME CMD: a header, then one line per process */
    char *save = NULL, *line = strtok_r(out.buf, "\n", &save);
    if (!line || strncmp(line, "UID", 3))
        goto done;
    int nproc = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        char cmd[64] = "";
        long uid, pid, ppid;
        int end = 0;
        /* the whole line: a name with a space after "sbx-agent" is not the agent's */
        if (sscanf(line, "%ld %ld %ld %*s %*s %*s %*s %63s%n", &uid, &pid, &ppid, cmd, &end) != 4 ||
            line[end + strspn(line + end, " \t")] != '\0' || strcmp(cmd, "sbx-agent") ||
            !((pid == 1 && ppid == 0) || (pid == 2 && ppid == 1)))
            goto done;
        nproc++;
    }
    ok = nproc >= 1 ? 1 : 0;
done:
    strbuf_release(&out);
    strvec_clear(&argv);
    return ok;
}

int local_freeze(sbx_backend *b, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;

    if (lb->runtime != LOCAL_RUNTIME_RUNSC || !local_alive(b))
        return 0;
    if (lb->frozen.n)
        return 1;
    int q = runsc_quiescent(lb, err);
    if (q <= 0)
        return q;
    collect_tree(lb->pid, lb->starttime, &lb->frozen);
    for (size_t i = 0; i < lb->frozen.n; i++)
        signal_checked(lb->frozen.v[i].pid, lb->frozen.v[i].start, SIGSTOP);
    return lb->frozen.n ? 1 : 0;
}

void local_thaw(sbx_backend *b)
{
    local_backend *lb = (local_backend *)b;

    for (size_t i = lb->frozen.n; i-- > 0;)
        signal_checked(lb->frozen.v[i].pid, lb->frozen.v[i].start, SIGCONT);
    lb->frozen.n = 0;
}

void local_thaw_tree(pid_t pid, uint64_t start)
{
    local_frozen f;
    collect_tree(pid, start, &f);
    for (size_t i = f.n; i-- > 0;)
        signal_checked(f.v[i].pid, f.v[i].start, SIGCONT);
}
