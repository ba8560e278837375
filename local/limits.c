/*
 * The sandbox's limits. Which mechanism enforces a sandbox's limits, decided at claim:
 *
 *   cgroup v1  (a hybrid or legacy host, root): a directory OWN/sbxsh/ID in
 *              the pids, memory and cpu hierarchies, where OWN is our own
 *              cgroup there, with pids.max, memory.limit_in_bytes (and
 *              memsw), cpu.cfs_quota_us;
 *   cgroup v2  (a unified host where our cgroup's subtree is delegated to
 *              us): OWN/sbxsh/ID with pids.max, memory.max, cpu.max;
 *   rlimit     (neither is writable: a user on v1, a v2 host without
 *              delegation): RLIMIT_NPROC and RLIMIT_DATA on the sandbox's
 *              processes, a rough bound that says so in `sbx status`.
 *
 * bubblewrap: we make the cgroup, and the process that becomes bwrap joins
 * it before exec, so nothing of the sandbox ever runs outside it. runsc: its
 * own cgroup support makes it (linux.cgroupsPath sbxsh/ID, relative to our
 * own cgroup, and linux.resources), because only then does the Sentry size
 * itself to the limit (it gets --total-memory and --cpu-num from it). Its
 * host pids limit is a backstop, not the sandbox's limit: under the ptrace
 * platform every process inside costs about twelve host tasks (its stub's
 * threads) and the Sentry panics when it cannot make one, so the limit that
 * makes fork() fail inside is RLIMIT_NPROC, which the Sentry enforces. A
 * sandbox over its memory limit under runsc loses the Sentry to the host's
 * OOM killer: the sandbox dies, the session gets a new one.
 * Release kills what is left in the cgroup and removes it, either way.
 */
#include "local/local.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Host tasks a runsc sandbox may have: the Sentry, the gofer and, under the
 * ptrace platform, a stub process per process inside with a thread per
 * Sentry thread that ran it (measured here: 96 sleeping processes inside,
 * 1127 host tasks; a fork bomb held at 100 by RLIMIT_NPROC peaked at 2833 while
 * bash retried its forks), capped at half the host's pid space so that even the
 * backstop leaves the host room. Reaching it kills the sandbox (the Sentry
 * panics), not the host. */
unsigned long long local_runsc_host_pids(unsigned pids_max)
{
    unsigned long long n = 48ULL * pids_max + 1024, pid_max = 32768;
    char *text = NULL;
    size_t len;
    if (read_file("/proc/sys/kernel/pid_max", 64, &text, &len, NULL) == 0)
        pid_max = strtoull(text, NULL, 10);
    free(text);
    if (pid_max >= 1024 && n > pid_max / 2)
        n = pid_max / 2;
    return n;
}

/* Whether tok is one of the comma-separated items of list (a cgroup line's
 * controllers, a mount's super options). */
static bool token_in(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, tok, n))
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* Where the v1 hierarchy holding ctrl (e.g. "pids", "name=systemd") is
 * mounted, from /proc/self/mountinfo; NULL when it is not. Malloc'd. */
static char *cg_v1_mount(const char *ctrl)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096], *found = NULL;
    if (!f)
        return NULL;
    while (!found && fgets(line, sizeof(line), f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS */
        char *dash = strstr(line, " - "), *fields[5], *save = NULL, *t, *fstype, *super;
        if (!dash)
            continue;
        *dash = '\0';
        size_t n = 0;
        for (t = strtok_r(line, " ", &save); t && n < 5; t = strtok_r(NULL, " ", &save))
            fields[n++] = t;
        save = NULL;
        fstype = strtok_r(dash + 3, " ", &save);
        (void)strtok_r(NULL, " ", &save);
        super = strtok_r(NULL, " \n", &save);
        if (n == 5 && fstype && super && !strcmp(fstype, "cgroup") && token_in(super, ctrl) &&
            !strchr(fields[4], '\\'))
            found = xstrdup(fields[4]);
    }
    fclose(f);
    return found;
}

/* The cgroup of pid (0: ourselves) in the hierarchy whose controller list
 * holds ctrl (v1), or the unified one (ctrl ""). Malloc'd, "" for the root. */
static char *cg_own_path(pid_t pid, const char *ctrl)
{
    char path[64], line[4096], *found = NULL;
    FILE *f;
    if (pid)
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    else
        snprintf(path, sizeof(path), "/proc/self/cgroup");
    if (!(f = fopen(path, "re")))
        return NULL;
    while (!found && fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        char *nl = strchr(c2 + 1, '\n');
        if (nl)
            *nl = '\0';
        /* "N:ctrl,ctrl:/path" (v1) or "0::/path" (v2) */
        bool match = *ctrl ? token_in(c1 + 1, ctrl) : !strcmp(line, "0") && !c1[1];
        if (match)
            found = xstrdup(strcmp(c2 + 1, "/") ? c2 + 1 : "");
    }
    fclose(f);
    return found;
}

bool local_cg_unified(void)
{
    return access(SBX_CGROUP_ROOT "/cgroup.controllers", F_OK) == 0;
}

/* Writes value to a cgroup control file, never through a symlink. */
static int cg_write(const char *dir, const char *file, const char *value, sbx_err *err)
{
    char *p = xasprintf("%s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW), r = 0;
    if (fd < 0 || write_full(fd, value, strlen(value)) < 0)
        r = sbx_errno(err, "cannot write %s", p);
    if (fd >= 0)
        close(fd);
    free(p);
    return r;
}

/* pids.max reads the same in v1 and v2: a number, or "max" for no limit. */
static int cg_write_pids(const char *dir, unsigned pids_max, sbx_err *err)
{
    char buf[32];
    if (pids_max)
        snprintf(buf, sizeof(buf), "%u", pids_max);
    else
        snprintf(buf, sizeof(buf), "max");
    return cg_write(dir, "pids.max", buf, err);
}

/* A cgroup directory recorded in sandbox.json is only ever one of ours. */
bool local_cg_dir_ok(const char *dir)
{
    return !strncmp(dir, SBX_CGROUP_ROOT "/", sizeof(SBX_CGROUP_ROOT)) &&
           strstr(dir, "/sbxsh/") && !strstr(dir, "/../") && !strstr(dir, "/./");
}

/* Kills what is left in a sandbox's cgroups and removes them (and the
 * sbxsh/ parent when it is empty). Bounded: a process stuck in the kernel
 * leaves its cgroup behind, which the next release of the session retries. */
void local_cg_remove(const strvec *dirs)
{
    for (size_t i = 0; i < dirs->n; i++) {
        const char *dir = dirs->v[i];
        char *procs = xasprintf("%s/cgroup.procs", dir);
        if (!local_cg_dir_ok(dir)) {
            free(procs);
            continue;
        }
        for (int round = 0; round < 400; round++) {
            char *text = NULL;
            size_t len;
            if (read_file(procs, 1 << 20, &text, &len, NULL) < 0 || !len) {
                free(text);
                break;
            }
            for (char *p = text; *p;) {
                long pid = strtol(p, &p, 10);
                if (pid > 1)
                    kill((pid_t)pid, SIGKILL);
                while (*p == '\n')
                    p++;
            }
            free(text);
            usleep(5000);
        }
        rmdir(dir);
        char *parent = xstrdup(dir);
        *strrchr(parent, '/') = '\0';
        rmdir(parent);      /* ENOTEMPTY while other sandboxes run */
        free(parent);
        free(procs);
    }
}

/* bwrap: makes the sandbox's cgroup in each hierarchy and sets its limits;
 * fills lim->cgroups and lim->mechanism. Returns 0 with no cgroup when none
 * is writable here (the caller falls back to rlimits). */
int local_cg_create(sandbox_limits *lim, const char *id, sbx_err *err)
{
    char buf[64];
    sbx_err e2;

    if (local_cg_unified()) {
        char *own = cg_own_path(0, "");
        if (!own)
            return 0;
        char *base = xasprintf("%s%s", SBX_CGROUP_ROOT, own), *mid = xasprintf("%s/sbxsh", base);
        char *dir = xasprintf("%s/%s", mid, id);
        free(own);
        /* Controllers must be enabled down to the new cgroup; our own cgroup
         * accepts that only when it is delegated to us and holds no process
         * itself (v2's no-internal-process rule), else this fails. */
        (void)cg_write(base, "cgroup.subtree_control", "+pids +memory +cpu", &e2);
        if ((mkdir(mid, 0755) == 0 || errno == EEXIST) &&
            cg_write(mid, "cgroup.subtree_control", "+pids +memory", &e2) == 0) {
            (void)cg_write(mid, "cgroup.subtree_control", "+cpu", &e2);
            if (mkdir(dir, 0755) == 0) {
                char *pm = xasprintf("%s/pids.max", dir), *mm = xasprintf("%s/memory.max", dir);
                bool usable = access(pm, W_OK) == 0 && access(mm, W_OK) == 0;
                free(pm);
                free(mm);
                if (usable) {
                    strvec_push(&lim->cgroups, dir);
                    snprintf(lim->mechanism, sizeof(lim->mechanism), "cgroup v2");
                } else {
                    rmdir(dir);
                }
            }
        }
        free(base);
        free(mid);
        free(dir);
        if (!lim->cgroups.n)
            return 0;
        const char *d = lim->cgroups.v[0];
        if (cg_write_pids(d, lim->pids_max, err) < 0)
            goto fail;
        if (lim->memory_max) {
            snprintf(buf, sizeof(buf), "%llu", lim->memory_max);
            if (cg_write(d, "memory.max", buf, err) < 0)
                goto fail;
            (void)cg_write(d, "memory.swap.max", "0", &e2);
        }
        if (lim->cpus_milli) {
            snprintf(buf, sizeof(buf), "%llu %d",
                     (unsigned long long)lim->cpus_milli * SBX_CPU_PERIOD_US / 1000,
                     SBX_CPU_PERIOD_US);
            if (cg_write(d, "cpu.max", buf, err) < 0)
                goto fail;
        }
        return 0;
    }

    static const char *const ctrls[] = { "pids", "memory", "cpu" };
    for (size_t i = 0; i < ARRAY_SIZE(ctrls); i++) {
        char *mnt = cg_v1_mount(ctrls[i]), *own = mnt ? cg_own_path(0, ctrls[i]) : NULL;
        char *mid = own ? xasprintf("%s%s/sbxsh", mnt, own) : NULL;
        char *dir = mid ? xasprintf("%s/%s", mid, id) : NULL;
        bool made = false;
        /* (twice: another session's release may remove an empty sbxsh/
         * between the two mkdirs) */
        for (int t = 0; dir && !made && t < 2; t++)
            made = (mkdir(mid, 0755) == 0 || errno == EEXIST) && mkdir(dir, 0755) == 0;
        if (made)
            strvec_push(&lim->cgroups, dir);
        free(mnt);
        free(own);
        free(mid);
        free(dir);
        /* pids and memory are what keep the host alive: without both, no
         * cgroup at all (rlimits then); cpu is a bonus. */
        if (!made && i < 2) {
            local_cg_remove(&lim->cgroups);
            strvec_clear(&lim->cgroups);
            return 0;
        }
        if (!made)
            continue;
        const char *d = lim->cgroups.v[lim->cgroups.n - 1];
        if (i == 0) {
            if (cg_write_pids(d, lim->pids_max, err) < 0)
                goto fail;
        } else if (i == 1 && lim->memory_max) {
            snprintf(buf, sizeof(buf), "%llu", lim->memory_max);
            if (cg_write(d, "memory.limit_in_bytes", buf, err) < 0)
                goto fail;
            /* With swap: memory + swap may not exceed the limit either. */
            char *sw = xasprintf("%s/memory.memsw.limit_in_bytes", d);
            if (access(sw, F_OK) == 0 && cg_write(d, "memory.memsw.limit_in_bytes", buf, err) < 0) {
                free(sw);
                goto fail;
            }
            free(sw);
        } else if (i == 2 && lim->cpus_milli) {
            snprintf(buf, sizeof(buf), "%d", SBX_CPU_PERIOD_US);
            if (cg_write(d, "cpu.cfs_period_us", buf, err) < 0)
                goto fail;
            snprintf(buf, sizeof(buf), "%llu",
                     (unsigned long long)lim->cpus_milli * SBX_CPU_PERIOD_US / 1000);
            if (cg_write(d, "cpu.cfs_quota_us", buf, err) < 0)
                goto fail;
        }
    }
    snprintf(lim->mechanism, sizeof(lim->mechanism), "cgroup v1");
    return 0;
fail:
    sbx_err_prefix(err, "cannot set the sandbox's limits");
    local_cg_remove(&lim->cgroups);
    strvec_clear(&lim->cgroups);
    return -1;
}

/* Whether runsc can make its cgroups here: as root, in a v1 hierarchy (pids
 * and memory mounted) or a v2 one whose subtree we may write. */
bool local_runsc_cgroups_usable(void)
{
    if (getuid() != 0)
        return false;
    if (local_cg_unified()) {
        char *own = cg_own_path(0, ""), *p = own ? xasprintf(SBX_CGROUP_ROOT "%s", own) : NULL;
        bool ok = p && access(p, W_OK) == 0;
        free(own);
        free(p);
        return ok;
    }
    char *a = cg_v1_mount("pids"), *b = cg_v1_mount("memory");
    bool ok = a && b;
    free(a);
    free(b);
    return ok;
}

/* runsc: the cgroups it made for sandbox ID, relative to its cgroup (which
 * is ours) in every hierarchy it found: OWN/sbxsh/ID where that exists. */
void local_cg_find_runsc(sandbox_limits *lim, const char *id)
{
    char line[4096];
    FILE *f = fopen("/proc/self/cgroup", "re");
    bool v2 = local_cg_unified();
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            struct stat st;
            if (!c2)
                continue;
            *c1 = *c2 = '\0';
            char *own = c2 + 1, *nl = strchr(own, '\n');
            if (nl)
                *nl = '\0';
            if (!strcmp(own, "/"))
                own = "";
            /* v1 hierarchies, or the unified one on a v2 host */
            char *mnt = c1[1] ? cg_v1_mount(strtok(c1 + 1, ",")) : v2 ? xstrdup(SBX_CGROUP_ROOT) : NULL;
            if (!mnt)
                continue;
            char *dir = xasprintf("%s%s/sbxsh/%s", mnt, own, id);
            if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode))
                strvec_push(&lim->cgroups, dir);
            free(dir);
            free(mnt);
        }
        fclose(f);
    }
    snprintf(lim->mechanism, sizeof(lim->mechanism), "%s",
             !lim->cgroups.n ? "rlimit" : v2 ? "cgroup v2" : "cgroup v1");
}

/* The rlimit fallback, applied in the child before exec: RLIMIT_NPROC (in
 * bwrap's user namespace, kernel >= 5.14 counts it per user namespace and
 * up the chain: the sandbox's processes count against the uid's on the
 * host, so it bounds the host's count too); RLIMIT_DATA bounds each
 * process's heap, not the sandbox's sum. */
void local_apply_rlimits(const sandbox_limits *lim)
{
    if (lim->pids_max) {
        struct rlimit rl = { lim->pids_max, lim->pids_max };
        setrlimit(RLIMIT_NPROC, &rl);
    }
    if (lim->memory_max) {
        struct rlimit rl = { lim->memory_max, lim->memory_max };
        setrlimit(RLIMIT_DATA, &rl);
    }
}

int local_limits_probe(local_runtime rt, strbuf *how)
{
    sandbox_limits lim = { .pids_max = 0 };
    char id[64];
    sbx_err err;
    int r = -1;

    snprintf(id, sizeof(id), "doctor-%d", (int)getpid());
    if (rt == LOCAL_RUNTIME_RUNSC && !local_runsc_cgroups_usable()) {
        strbuf_addstr(how, getuid() ? "runsc makes cgroups only as root"
                                    : "no pids and memory cgroup hierarchy is mounted");
        return -1;
    }
    /* A real cgroup, made and removed as a sandbox's would be. */
    if (local_cg_create(&lim, id, &err) < 0) {
        strbuf_addstr(how, err.msg);
    } else if (!lim.cgroups.n) {
        strbuf_addstr(how, local_cg_unified() ? "our cgroup's subtree is not delegated to us (no "
                      "pids and memory controllers in a writable cgroup)"
                      : "the pids and memory cgroup hierarchies are not writable by us");
    } else {
        strbuf_addf(how, "%s, e.g. %s", lim.mechanism, lim.cgroups.v[0]);
        r = 0;
    }
    local_cg_remove(&lim.cgroups);
    strvec_clear(&lim.cgroups);
    return r;
}
