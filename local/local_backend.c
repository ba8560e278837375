/*
 * The local backend: one persistent sandbox per session on this machine,
 * under gVisor's runsc or bubblewrap, running `sbx-agent --listen` on a Unix
 * socket in a directory bind-mounted from the session's state directory.
 *
 * The state directory (cfg->state_root/SESSION, mode 0700) holds:
 *   sandbox.json   what a later holder needs to reattach: runtime, id, pid
 *                  and start time, creation time, code directories, network
 *   home/          the sandbox's private HOME (same path as the host's $HOME)
 *   agent/         /run/sbxsh inside: the agent's socket and state file
 *   sandbox.log    the runtime's and the agent's own stderr
 *   rootfs/, config.json, runsc/   runsc only: the OCI bundle and runsc's --root
 *
 * Both runtimes show the sandbox the same tree (plan_mounts): system
 * directories read-only, an allowlist of /etc, fresh /proc, /dev and /tmp,
 * the private HOME, and the agent read-only. Each code directory's copy is a
 * tmpfs inside the sandbox (of AGENT_SANDBOX_DISK_MAX bytes), not a host
 * directory: no host process can be steered into it, and it cannot fill the
 * host's disk. The sync fills it on the first push.
 *
 * Every sandbox runs under limits (sandbox_limits below): a cgroup made per
 * sandbox where one is writable (ours under bwrap, runsc's own under runsc),
 * else rlimits; sandbox.json records which, and release removes the cgroup.
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
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "local/egress.h"
#include "local/fsutil.h"

/* Where things sit inside the sandbox. */
#define SBX_IN_AGENT_BIN "/.sbxsh/sbx-agent"
#define SBX_IN_COMPAT_SO "/.sbxsh/sbx-runsc-compat.so"
#define SBX_AGENT_SOCKET "agent.sock"
/* AGENT_SANDBOX_LOCAL_NETWORK=allowlist: STATE/SESSION/egress (the proxy's socket) here. */
#define SBX_IN_EGRESS_DIR "/.sbxsh/egress"
#define SBX_EGRESS_SOCKET "proxy.sock"
/* The sandbox's /etc/resolv.conf without the host's network: the agent's DNS stub
 * (sync/dnsstub.h); one try, one second (a stub that is not there fails at once anyway:
 * the port is closed). */
#define SBX_RESOLV_CONF "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"
/* How long the egress proxy may take to listen. */
#define SBX_EGRESS_START_TIMEOUT_MS 10000

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
    unsigned long long size;    /* tmpfs: bytes, 0 = the runtime's default */
    unsigned mode;              /* tmpfs: permissions of its root, 0 = default */
} mount_ent;

/* The limits a sandbox runs under and how they are enforced (DESIGN.md 5:
 * the host stays usable whatever runs inside). */
typedef struct sandbox_limits {
    unsigned pids_max;              /* 0 = none */
    unsigned long long memory_max;  /* bytes, 0 = none */
    unsigned cpus_milli;            /* 0 = all CPUs */
    unsigned long long disk_max;    /* bytes of each code copy and of /tmp, 0 = none */
    char mechanism[16];             /* "cgroup v1", "cgroup v2", "rlimit" */
    strvec cgroups;                 /* the cgroup directories made for this sandbox */
} sandbox_limits;

typedef struct local_backend {
    sbx_backend base;
    sbx_runtime runtime;
    char *runtime_path;     /* runsc or bwrap */
    char *session;
    char *dir;              /* the session's state directory */
    char *home;
    bool network_host;
    bool network_allowlist; /* HTTP(S) through sbx-egress to the hosts of egress only */
    strvec egress;
    pid_t egress_pid;       /* the proxy, while claimed (0: none) */
    uint64_t egress_start;
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
    sandbox_limits lim;     /* asked for (from cfg); mechanism and cgroups once claimed */
    bool runsc_cgroups;     /* runsc makes the sandbox's cgroup (else --ignore-cgroups) */
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

static bool cg_dir_ok(const char *dir);
static void cg_remove(const strvec *dirs);
static char *state_path(local_backend *lb, const char *name);
static cJSON *json_strv(const char *const *v, size_t n);

static const char *net_name(bool host, bool allowlist)
{
    return host ? "host" : allowlist ? "allowlist" : "none";
}

/* ---- the mount plan ---------------------------------------------------- */

typedef struct mount_list {
    mount_ent *v;
    size_t n, alloc;
} mount_list;

static mount_ent *ml_add(mount_list *ml, mount_kind kind, const char *src, const char *dst)
{
    struct stat st;
    XGROW(ml->v, ml->alloc, ml->n + 1);
    mount_ent *m = &ml->v[ml->n++];
    memset(m, 0, sizeof(*m));
    m->kind = kind;
    m->src = src ? xstrdup(src) : NULL;
    m->dst = xstrdup(dst);
    m->is_file = (kind == M_RO || kind == M_RW) && stat(src, &st) == 0 && !S_ISDIR(st.st_mode);
    return m;
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
        /* Without the host's network, names are looked up at the agent's DNS stub on the
         * sandbox's loopback (sync/dnsstub.h), which says the sandbox has no network. */
        if (!lb->network_host && !strcmp(etc_allow[i], "resolv.conf")) {
            p = state_path(lb, "resolv.conf");
            ml_add(ml, M_RO, p, "/etc/resolv.conf");
            free(p);
            continue;
        }
        p = xasprintf("/etc/%s", etc_allow[i]);
        plan_system_path(ml, p);
        free(p);
    }
    ml_add(ml, M_PROC, NULL, "/proc");
    ml_add(ml, M_DEV, NULL, "/dev");
    /* /tmp is memory: bounded like a code copy (and by the memory limit). */
    mount_ent *tmp = ml_add(ml, M_TMPFS, NULL, "/tmp");
    tmp->size = lb->lim.disk_max;
    tmp->mode = 01777;

    p = xasprintf("%s/agent", lb->dir);
    ml_add(ml, M_RW, p, SBX_SANDBOX_AGENT_DIR);
    free(p);
    ml_add(ml, M_RO, lb->agent_path, SBX_IN_AGENT_BIN);
    if (lb->network_allowlist) {
        p = state_path(lb, "egress");
        ml_add(ml, M_RO, p, SBX_IN_EGRESS_DIR);
        free(p);
    }
    if (lb->runtime == SBX_RUNTIME_RUNSC && lb->compat_so)
        ml_add(ml, M_RO, lb->compat_so, SBX_IN_COMPAT_SO);

    p = xasprintf("%s/home", lb->dir);
    ml_add(ml, M_RW, p, lb->home);
    free(p);
    /* The copies live in the sandbox's memory, at the same absolute paths:
     * nothing of them is a host path (a host process steered into one would
     * run with the sandbox's files), and they cannot grow the host's disk.
     * Each root carries the original's permissions. */
    for (size_t i = 0; i < lb->code_dirs.n; i++) {
        struct stat st;
        mount_ent *m = ml_add(ml, M_TMPFS, NULL, lb->code_dirs.v[i]);
        m->size = lb->lim.disk_max;
        m->mode = stat(lb->code_dirs.v[i], &st) == 0 ? st.st_mode & 0777 : 0755;
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
    cJSON_AddStringToObject(o, "network", net_name(lb->network_host, lb->network_allowlist));
    if (lb->network_allowlist) {
        cJSON *eg = cJSON_AddObjectToObject(o, "egress");
        cJSON_AddItemToObject(eg, "allow", json_strv((const char *const *)lb->egress.v,
                                                     lb->egress.n));
        cJSON_AddNumberToObject(eg, "proxy_pid", lb->egress_pid);
        cJSON_AddNumberToObject(eg, "proxy_starttime", (double)lb->egress_start);
    }
    for (size_t i = 0; i < lb->code_dirs.n; i++)
        cJSON_AddItemToArray(dirs, cJSON_CreateString(lb->code_dirs.v[i]));
    cJSON_AddItemToObject(o, "code_dirs", dirs);
    {
        cJSON *l = cJSON_AddObjectToObject(o, "limits"), *cg = cJSON_CreateArray();
        cJSON_AddNumberToObject(l, "pids_max", lb->lim.pids_max);
        cJSON_AddNumberToObject(l, "memory_max", (double)lb->lim.memory_max);
        cJSON_AddNumberToObject(l, "cpus_milli", lb->lim.cpus_milli);
        cJSON_AddNumberToObject(l, "disk_max", (double)lb->lim.disk_max);
        cJSON_AddStringToObject(l, "mechanism", lb->lim.mechanism);
        for (size_t i = 0; i < lb->lim.cgroups.n; i++)
            cJSON_AddItemToArray(cg, cJSON_CreateString(lb->lim.cgroups.v[i]));
        cJSON_AddItemToObject(l, "cgroups", cg);
    }
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
    bool network_allowlist;
    strvec egress;
    pid_t egress_pid;
    uint64_t egress_start;
    strvec code_dirs;
    sandbox_limits lim;
} saved_state;

static void saved_state_free(saved_state *s)
{
    strvec_clear(&s->egress);
    strvec_clear(&s->code_dirs);
    strvec_clear(&s->lim.cgroups);
}

/* Reads sandbox.json (written by us, but bounded all the same). */
/* A non-negative number member of a JSON object (the limits in sandbox.json). */
static bool json_count(const cJSON *o, const char *name, unsigned long long *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(it) || it->valuedouble < 0)
        return false;
    *out = (unsigned long long)it->valuedouble;
    return true;
}

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
    s->network_allowlist = cJSON_IsString(it) && !strcmp(it->valuestring, "allowlist");
    {
        cJSON *eg = cJSON_GetObjectItemCaseSensitive(o, "egress"), *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(eg, "allow")) {
            if (cJSON_IsString(e))
                strvec_push(&s->egress, e->valuestring);
        }
        it = cJSON_GetObjectItemCaseSensitive(eg, "proxy_pid");
        if (cJSON_IsNumber(it) && it->valuedouble > 1 && it->valuedouble < 1 << 30)
            s->egress_pid = (pid_t)it->valuedouble;
        it = cJSON_GetObjectItemCaseSensitive(eg, "proxy_starttime");
        if (cJSON_IsNumber(it) && it->valuedouble >= 0)
            s->egress_start = (uint64_t)it->valuedouble;
    }
    it = cJSON_GetObjectItemCaseSensitive(o, "code_dirs");
    cJSON *d;
    cJSON_ArrayForEach(d, it) {
        if (cJSON_IsString(d))
            strvec_push(&s->code_dirs, d->valuestring);
    }
    cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "limits");
    if (cJSON_IsObject(l)) {
        unsigned long long n;
        if (json_count(l, "pids_max", &n))
            s->lim.pids_max = (unsigned)n;
        if (json_count(l, "memory_max", &n))
            s->lim.memory_max = n;
        if (json_count(l, "cpus_milli", &n))
            s->lim.cpus_milli = (unsigned)n;
        if (json_count(l, "disk_max", &n))
            s->lim.disk_max = n;
        it = cJSON_GetObjectItemCaseSensitive(l, "mechanism");
        if (cJSON_IsString(it))
            snprintf(s->lim.mechanism, sizeof(s->lim.mechanism), "%s", it->valuestring);
        it = cJSON_GetObjectItemCaseSensitive(l, "cgroups");
        cJSON_ArrayForEach(d, it) {
            if (cJSON_IsString(d) && cg_dir_ok(d->valuestring))
                strvec_push(&s->lim.cgroups, d->valuestring);
        }
    }
    if (s->runtime[0] && s->id[0] && s->pid > 0)
        r = 0;
    cJSON_Delete(o);
    if (r < 0)
        saved_state_free(s);
    return r;
}

static bool state_alive(pid_t pid, uint64_t starttime)
{
    return pid > 0 && starttime && sbx_proc_starttime(pid) == starttime;
}

/* ---- limits -------------------------------------------------------------
 *
 * Which mechanism enforces a sandbox's limits, decided at claim:
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

#define SBX_CGROUP_ROOT "/sys/fs/cgroup"
#define SBX_CPU_PERIOD_US 100000

/* Host tasks a runsc sandbox may have: the Sentry, the gofer and, under the
 * ptrace platform, a stub process per process inside with a thread per
 * Sentry thread that ran it (measured here: 96 sleeping processes inside,
 * 1127 host tasks; a fork bomb held at 100 by RLIMIT_NPROC peaked at 2833 while
 * bash retried its forks), capped at half the host's pid space so that even the
 * backstop leaves the host room. Reaching it kills the sandbox (the Sentry
 * panics), not the host. */
static unsigned long long runsc_host_pids(unsigned pids_max)
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

static bool cg_unified(void)
{
    return access(SBX_CGROUP_ROOT "/cgroup.controllers", F_OK) == 0;
}

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
static bool cg_dir_ok(const char *dir)
{
    return !strncmp(dir, SBX_CGROUP_ROOT "/", sizeof(SBX_CGROUP_ROOT)) &&
           strstr(dir, "/sbxsh/") && !strstr(dir, "/../") && !strstr(dir, "/./");
}

/* Kills what is left in a sandbox's cgroups and removes them (and the
 * sbxsh/ parent when it is empty). Bounded: a process stuck in the kernel
 * leaves its cgroup behind, which the next release of the session retries. */
static void cg_remove(const strvec *dirs)
{
    for (size_t i = 0; i < dirs->n; i++) {
        const char *dir = dirs->v[i];
        char *procs = xasprintf("%s/cgroup.procs", dir);
        if (!cg_dir_ok(dir)) {
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
static int cg_create(sandbox_limits *lim, const char *id, sbx_err *err)
{
    char buf[64];
    sbx_err e2;

    if (cg_unified()) {
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
            cg_remove(&lim->cgroups);
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
    cg_remove(&lim->cgroups);
    strvec_clear(&lim->cgroups);
    return -1;
}

/* Whether runsc can make its cgroups here: as root, in a v1 hierarchy (pids
 * and memory mounted) or a v2 one whose subtree we may write. */
static bool runsc_cgroups_usable(void)
{
    if (getuid() != 0)
        return false;
    if (cg_unified()) {
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
static void cg_find_runsc(sandbox_limits *lim, const char *id)
{
    char line[4096];
    FILE *f = fopen("/proc/self/cgroup", "re");
    bool v2 = cg_unified();
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
static void apply_rlimits(const sandbox_limits *lim)
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

/* ---- running things ---------------------------------------------------- */

/* What a spawned child gets besides argv and envp. */
typedef struct spawn_opts {
    int pass_fds[3];            /* become its fds 3, 4 and 5 (-1: none) */
    /* cgroup.procs files the child writes its pid to before exec, so that
     * it and everything it starts run inside the sandbox's cgroup. */
    char *const *join;
    size_t njoin;
    const sandbox_limits *rlimits;  /* the rlimit fallback, or NULL */
    bool dns_netns;             /* bwrap: its network namespace made here (dns_netns) */
} spawn_opts;

/* Where the DNS stub's sockets sit in bwrap's sandbox (sbx-agent --dns-fds). */
#define SBX_DNS_FDS "6,7"

/* bwrap without the host's network: the sandbox's network namespace is made here, in the
 * process that becomes bwrap, and the DNS stub's UDP and TCP sockets on 127.0.0.1:53 bound
 * in it, at fds 6 and 7, which bwrap passes on to the agent. bwrap's own --unshare-net
 * would not do: --disable-userns leaves the sandbox in a nested user namespace, where no
 * capability reaches a network namespace bwrap made, so port 53 could not be bound there.
 * As root, the namespace is the host user namespace's; as a user, it needs a user
 * namespace of ours first (the caller's uid and gid mapped to themselves), inside which
 * bwrap makes its own as usual. */
static int dns_netns(void)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ifreq ifr;
    int s, fds[2];

    if (unshare(CLONE_NEWNET) < 0) {
        char map[64];
        int fd;
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
            return -1;
        if ((fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC)) >= 0) {
            (void)write_full(fd, "deny", 4);
            close(fd);
        }
        snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
        if ((fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC)) < 0 ||
            write_full(fd, map, strlen(map)) < 0)
            return -1;
        close(fd);
        snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
        if ((fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC)) < 0 ||
            write_full(fd, map, strlen(map)) < 0)
            return -1;
        close(fd);
    }
    /* a new network namespace's loopback starts down */
    if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        close(s);
        return -1;
    }
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
        close(s);
        return -1;
    }
    close(s);
    for (int i = 0; i < 2; i++) {
        int one = 1;
        s = socket(AF_INET, (i ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
        if (s < 0)
            return -1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (i && listen(s, 64) < 0) ||
            (fds[i] = fcntl(s, F_DUPFD_CLOEXEC, 10)) < 0)
            return -1;
        close(s);
    }
    /* not close-on-exec: bwrap passes them to the agent */
    if (dup2(fds[0], 6) < 0 || dup2(fds[1], 7) < 0)
        return -1;
    return 0;
}

/* Runs argv as a new session with stdin /dev/null, stdout and stderr
 * appended to log, and none of our fds but o->pass_fds. With wait: waits
 * for it and gives its status in *status. Without: double-forks, so that
 * the child is nobody's zombie, and returns once the intermediate process
 * is gone. A child that cannot join its cgroup does not run (fails closed). */
static int spawn(char *const argv[], char *const envp[], const char *log, const spawn_opts *o,
                 bool wait, int *status, sbx_err *err)
{
    static const spawn_opts none = { { -1, -1, -1 }, NULL, 0, NULL, false };
    if (!o)
        o = &none;
    pid_t pid = fork();
    if (pid < 0)
        return sbx_errno(err, "fork");
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        int keep = 3;
        setsid();
        if (!wait && fork() != 0)
            _exit(0);
        if (null < 0 || out < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
        for (size_t i = 0; i < o->njoin; i++) {
            int fd = open(o->join[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0 || dprintf(fd, "%d\n", (int)getpid()) < 0) {
                dprintf(2, "sbxsh: cannot join the sandbox's cgroup %s: %s\n", o->join[i],
                        strerror(errno));
                _exit(127);
            }
            close(fd);
        }
        if (o->rlimits)
            apply_rlimits(o->rlimits);
        /* Move the passed fds out of the way before placing them at 3, 4, 5. */
        int tmp[3] = { -1, -1, -1 };
        for (int i = 0; i < 3; i++)
            if (o->pass_fds[i] >= 0 && (tmp[i] = fcntl(o->pass_fds[i], F_DUPFD_CLOEXEC, 10)) < 0)
                _exit(127);
        for (int i = 0; i < 3; i++)
            if (tmp[i] >= 0) {
                if (dup2(tmp[i], 3 + i) < 0)
                    _exit(127);
                keep = 4 + i;
            }
        char *const *args = argv;
        strvec fallback = {0};
        if (o->dns_netns) {
            if (dns_netns() == 0) {
                keep = 8;
            } else {
                /* fail closed: bwrap's own namespace, and no stub (the agent says so) */
                dprintf(2, "sbxsh: cannot make the sandbox's network namespace for its DNS "
                        "stub (%s); lookups will not say that the sandbox has no network\n",
                        strerror(errno));
                strvec_push(&fallback, argv[0]);
                strvec_push(&fallback, "--unshare-net");
                for (size_t i = 1; argv[i]; i++)
                    strvec_push(&fallback, argv[i]);
                args = fallback.v;
            }
        }
        for (int fd = keep; fd < 1024; fd++)
            close(fd);
        signal(SIGPIPE, SIG_DFL);
        execve(argv[0], args, envp);
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
    if (!lb->network_host) {
        strvec_push(argv, "--no-network");
        strvec_push(argv, lb->network_allowlist ? "allowlist" : "none");
        /* bwrap: bound before it ran (dns_netns); runsc's netstack lets the agent bind
         * port 53 itself */
        if (lb->runtime == SBX_RUNTIME_BWRAP) {
            strvec_push(argv, "--dns-fds");
            strvec_push(argv, SBX_DNS_FDS);
        }
    }
    if (lb->network_allowlist) {
        strvec_push(argv, "--egress-relay");
        strvec_pushf(argv, "%d:%s/%s", SBX_EGRESS_PORT, SBX_IN_EGRESS_DIR, SBX_EGRESS_SOCKET);
    }
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

    strvec joins = {0};
    int argfd = -1, resolvfd = -1;

    if (pipe2(info, O_CLOEXEC) < 0) {
        free(log);
        return sbx_errno(err, "pipe");
    }
    plan_mounts(lb, &ml);
    strvec_push(&argv, "--unshare-user");
    strvec_push(&argv, "--uid");
    strvec_pushf(&argv, "%u", (unsigned)getuid());
    strvec_push(&argv, "--gid");
    strvec_pushf(&argv, "%u", (unsigned)getgid());
    strvec_push(&argv, "--unshare-pid");
    strvec_push(&argv, "--unshare-ipc");
    strvec_push(&argv, "--unshare-uts");
    strvec_push(&argv, "--unshare-cgroup-try");
    /* no host network: the namespace is made before bwrap runs (dns_netns) */
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
        case M_RO:
            /* our resolv.conf as data, not a bind: mountinfo would show its state path */
            if (!lb->network_host && !strcmp(m->dst, "/etc/resolv.conf")) {
                strvec_push(&argv, "--ro-bind-data");
                strvec_push(&argv, "5");
                strvec_push(&argv, m->dst);
                continue;
            }
            strvec_push(&argv, "--ro-bind");
            break;
        case M_RW: strvec_push(&argv, "--bind"); break;
        case M_TMPFS:
            if (m->mode) {
                strvec_push(&argv, "--perms");
                strvec_pushf(&argv, "%04o", m->mode);
            }
            if (m->size) {
                strvec_push(&argv, "--size");
                strvec_pushf(&argv, "%llu", m->size);
            }
            strvec_push(&argv, "--tmpfs");
            break;
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

    if (cg_create(&lb->lim, lb->id, err) < 0) {
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
        strvec_push(&bargv, lb->runtime_path);
        strvec_push(&bargv, "--args");
        strvec_push(&bargv, "4");
        strvec_push(&bargv, "--");
        build_agent_argv(lb, &bargv);
        spawn_opts so = { { info[1], argfd, resolvfd }, joins.v, joins.n,
                          lb->lim.cgroups.n ? NULL : &lb->lim, !lb->network_host };
        int sr = spawn(bargv.v, path_env, log, &so, false, NULL, err);
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
        cg_remove(&lb->lim.cgroups);
        strvec_clear(&lb->lim.cgroups);
    }
    if (argfd >= 0)
        close(argfd);
    if (resolvfd >= 0)
        close(resolvfd);
    strvec_clear(&joins);
    close(info[0]);
    strvec_clear(&argv);
    ml_free(&ml);
    free(log);
    return r;
}

/* Makes rel (a relative path) beneath the directory base without following
 * any link on the way: base may be a directory the sandbox writes (the
 * private HOME), where a symlink planted by an earlier sandbox must not
 * steer a host mkdir or create elsewhere. The last component becomes a
 * directory, an empty file, or a symlink to target. */
static int mkpath_beneath(const char *base, const char *rel, mount_kind kind, bool is_file,
                          const char *target, sbx_err *err)
{
    int dfd = open(base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char *copy = xstrdup(rel), *save = NULL, *c, *next;
    int r = 0;

    if (dfd < 0) {
        free(copy);
        return sbx_errno(err, "cannot open %s", base);
    }
    for (c = strtok_r(copy, "/", &save); c && r == 0; c = next) {
        next = strtok_r(NULL, "/", &save);
        if (!next && kind == M_SYMLINK) {
            if (symlinkat(target, dfd, c) < 0 && errno != EEXIST)
                r = sbx_errno(err, "cannot create %s/%s", base, rel);
        } else if (!next && is_file) {
            int fd = openat(dfd, c, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0)
                r = sbx_errno(err, "cannot create %s/%s", base, rel);
            else
                close(fd);
        } else {
            if (mkdirat(dfd, c, 0755) < 0 && errno != EEXIST) {
                r = sbx_errno(err, "cannot create %s/%s", base, rel);
                break;
            }
            int nfd = openat(dfd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (nfd < 0) {
                r = sbx_errno(err, "cannot create %s/%s (not a directory)", base, rel);
                break;
            }
            close(dfd);
            dfd = nfd;
        }
    }
    close(dfd);
    free(copy);
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
        if (path_under(m->dst, ml->v[i].dst) &&
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
        case M_TMPFS: {
            char mode[32], size[48];
            const char *o[5] = { "nosuid", "nodev", mode, size, NULL };
            snprintf(mode, sizeof(mode), "mode=%04o", m->mode ? m->mode : 01777);
            snprintf(size, sizeof(size), "size=%llu", m->size);
            cJSON_AddItemToArray(mounts, oci_mount(m->dst, "tmpfs", "tmpfs", o, m->size ? 4 : 3));
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
    /* Rootless runsc (a non-root caller) runs the sandbox in a user namespace where the
     * caller is root: files the caller owns on the host (the agent's directory, the
     * private HOME, all mode 0700) belong to uid 0 inside. The agent must be that uid 0
     * to use them; it is still only the caller on the host, with no capabilities. As
     * root on the host, the caller's uid is 0 already. */
    cJSON_AddNumberToObject(user, "uid", getuid() ? 0 : getuid());
    cJSON_AddNumberToObject(user, "gid", getuid() ? 0 : getgid());
    build_agent_argv(lb, &argv);
    cJSON_AddItemToObject(proc, "args", json_strv((const char *const *)argv.v, argv.n));
    cJSON_AddItemToObject(proc, "env",
                          json_strv((const char *const *)lb->agent_env.v, lb->agent_env.n));
    cJSON_AddStringToObject(proc, "cwd", "/");
    cJSON_AddObjectToObject(proc, "capabilities");  /* none */
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
        cJSON_AddNumberToObject(o, "limit", lb->lim.pids_max ? (double)runsc_host_pids(lb->lim.pids_max)
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
    strvec_push(argv, lb->network_allowlist ? "--host-uds=all" : "--host-uds=create");
    if (!lb->runsc_cgroups)
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
    r = spawn(argv.v, runsc_env(), log, NULL, true, status, err);
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

    lb->runsc_cgroups = runsc_cgroups_usable();
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
    if (lb->runsc_cgroups)
        cg_find_runsc(&lb->lim, lb->id);
    else
        snprintf(lb->lim.mechanism, sizeof(lb->lim.mechanism), "rlimit");
    r = 0;
out:
    if (r < 0 && lb->runsc_cgroups) {
        /* runsc may have made them before failing */
        strvec_clear(&lb->lim.cgroups);
        cg_find_runsc(&lb->lim, lb->id);
        cg_remove(&lb->lim.cgroups);
        strvec_clear(&lb->lim.cgroups);
    }
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
static void stop_sandbox(pid_t pid, uint64_t starttime, const strvec *cgroups)
{
    if (state_alive(pid, starttime))
        kill(pid, SIGKILL);
    for (int i = 0; i < 400 && state_alive(pid, starttime); i++)
        usleep(5000);
    /* and whatever else is left in its cgroup (runsc's gofer, a process
     * that left bwrap's pid namespace cannot exist, but costs nothing) */
    if (cgroups)
        cg_remove(cgroups);
}

/* Empties what a sandbox had, except the private HOME when keep_home. */
static int wipe_state(local_backend *lb, bool keep_home, sbx_err *err)
{
    /* "code" held the copies before they moved into the sandbox's tmpfs: a
     * state directory of an older sbxsh still has it. */
    static const char *const parts[] = { "code", "agent", "rootfs", "runsc", "config.json",
                                         "runsc.pid", "sandbox.json", "egress", "resolv.conf" };
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
    static const char *const dirs[] = { "agent", "home", "runsc", "egress" };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        char *p = state_path(lb, dirs[i]);
        int r = !strcmp(dirs[i], "egress") && !lb->network_allowlist ? 0
                : sbx_mkdir_p(p, 0700, err);
        free(p);
        if (r < 0)
            return -1;
    }
    if (!lb->network_host) {
        /* runsc binds it from here; bwrap gets it as data (start_bwrap) */
        char *p = state_path(lb, "resolv.conf");
        int r = sbx_write_file_atomic(p, SBX_RESOLV_CONF, strlen(SBX_RESOLV_CONF), 0644, err);
        free(p);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* ---- the egress proxy (AGENT_SANDBOX_LOCAL_NETWORK=allowlist) -------------------------
 *
 * sbx-egress (local/egress_main.c) is a host process of its own per sandbox, started once
 * the sandbox runs and watching it (it exits when the sandbox's pid ends); release and a
 * claim that replaces the sandbox kill it by its recorded pid and start time. */

static bool egress_alive(pid_t pid, uint64_t start)
{
    return state_alive(pid, start);
}

static void stop_egress(pid_t pid, uint64_t start)
{
    if (egress_alive(pid, start))
        kill(pid, SIGKILL);
    for (int i = 0; i < 400 && egress_alive(pid, start); i++)
        usleep(5000);
}

static int start_egress(local_backend *lb, sbx_err *err)
{
    char *bin = sbx_find_libexec(lb->agent_path, "sbx-egress");
    char *dir = state_path(lb, "egress"), *log = state_path(lb, "sandbox.log");
    strbuf allow = STRBUF_INIT;
    strvec argv = {0};
    int ready[2] = { -1, -1 }, r = -1;
    char buf[32];
    ssize_t n = 0;

    lb->egress_pid = 0;
    lb->egress_start = 0;
    if (!bin) {
        sbx_errf(err, "sbx-egress (the egress proxy) is not installed beside sbx-agent; "
                 "make install, or unset AGENT_SANDBOX_LOCAL_NETWORK=allowlist");
        goto out;
    }
    if (pipe2(ready, O_CLOEXEC) < 0) {
        sbx_errno(err, "pipe");
        goto out;
    }
    for (size_t i = 0; i < lb->egress.n; i++)
        strbuf_addf(&allow, "%s%s", i ? "," : "", lb->egress.v[i]);
    strvec_push(&argv, bin);
    strvec_push(&argv, "--socket");
    strvec_pushf(&argv, "%s/%s", dir, SBX_EGRESS_SOCKET);
    strvec_push(&argv, "--allow");
    strvec_push(&argv, allow.buf);
    strvec_push(&argv, "--watch");
    strvec_pushf(&argv, "%d:%llu", (int)lb->pid, (unsigned long long)lb->starttime);
    strvec_push(&argv, "--ready-fd");
    strvec_push(&argv, "3");
    {
        char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        spawn_opts so = { { ready[1], -1, -1 }, NULL, 0, NULL, false };
        int sr = spawn(argv.v, env, log, &so, false, NULL, err);
        close(ready[1]);
        if (sr < 0)
            goto out;
    }
    /* it writes its pid once it listens, and closes the pipe */
    for (size_t got = 0;;) {
        struct pollfd pfd = { ready[0], POLLIN, 0 };
        if (poll(&pfd, 1, SBX_EGRESS_START_TIMEOUT_MS) <= 0)
            break;
        ssize_t k = read(ready[0], buf + got, sizeof(buf) - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
        n = (ssize_t)got;
        if (memchr(buf, '\n', got) || got == sizeof(buf) - 1)
            break;
    }
    buf[n > 0 ? n : 0] = '\0';
    if (atoi(buf) <= 1) {
        char *tail = sbx_file_tail(log, 400);
        sbx_errf(err, "the egress proxy did not start%s%s%s", *tail ? " (" : "", tail,
                 *tail ? ")" : "; see sandbox.log");
        free(tail);
        goto out;
    }
    lb->egress_pid = atoi(buf);
    lb->egress_start = sbx_proc_starttime(lb->egress_pid);
    r = 0;
out:
    if (ready[0] >= 0)
        close(ready[0]);
    strvec_clear(&argv);
    strbuf_release(&allow);
    free(bin);
    free(dir);
    free(log);
    return r;
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
                    s.network_host == lb->network_host &&
                    s.network_allowlist == lb->network_allowlist &&
                    sbx_strvec_equal(&s.egress, &lb->egress) &&
                    sbx_strvec_equal(&s.code_dirs, &lb->code_dirs);
        if (same && state_alive(s.pid, s.starttime)) {
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
            if (lb->network_allowlist && !egress_alive(lb->egress_pid, lb->egress_start) &&
                (start_egress(lb, err) < 0 || save_state(lb, err) < 0))
                return -1;
            return 0;
        }
        /* Dead, or made for other code directories or another runtime:
         * nothing of it can be reused but the private HOME. */
        stop_sandbox(s.pid, s.starttime, &s.lim.cgroups);
        stop_egress(s.egress_pid, s.egress_start);
        saved_state_free(&s);
    }
    strvec_clear(&lb->lim.cgroups);
    lb->lim.mechanism[0] = '\0';
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
    if ((lb->network_allowlist && start_egress(lb, err) < 0) || save_state(lb, err) < 0) {
        stop_sandbox(lb->pid, lb->starttime, &lb->lim.cgroups);
        stop_egress(lb->egress_pid, lb->egress_start);
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
    saved_state_free(&s);
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

static int local_open_stream(sbx_backend *b, int *rfd, int *wfd, sbx_err *err)
{
    local_backend *lb = (local_backend *)b;
    char *dir = state_path(lb, "agent");
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
        stop_sandbox(s.pid, s.starttime, &s.lim.cgroups);
        stop_egress(s.egress_pid, s.egress_start);
        saved_state_free(&s);
    } else if (lb->claimed) {
        stop_sandbox(lb->pid, lb->starttime, &lb->lim.cgroups);
        stop_egress(lb->egress_pid, lb->egress_start);
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

static void limits_json(strbuf *json, const sandbox_limits *l)
{
    strbuf_addf(json, "\"limits\":{\"pids_max\":%u,\"memory_max\":%llu,\"cpus_milli\":%u,"
                "\"disk_max\":%llu,\"mechanism\":\"", l->pids_max, l->memory_max,
                l->cpus_milli, l->disk_max);
    strbuf_add_json_escaped(json, l->mechanism, strlen(l->mechanism));
    strbuf_addstr(json, "\",\"cgroups\":[");
    for (size_t i = 0; i < l->cgroups.n; i++) {
        strbuf_addstr(json, i ? ",\"" : "\"");
        strbuf_add_json_escaped(json, l->cgroups.v[i], strlen(l->cgroups.v[i]));
        strbuf_addch(json, '"');
    }
    strbuf_addstr(json, "]},");
}

/* The egress part of a status: the list, and whether its proxy runs. */
typedef struct egress_status {
    bool allowlist;
    const strvec *allow;
    pid_t pid;
    uint64_t start;
} egress_status;

static void status_json(strbuf *json, const char *runtime, const char *id, int64_t created,
                        bool alive, pid_t pid, bool network_host, const egress_status *eg,
                        const char *dir, const sandbox_limits *lim)
{
    strbuf_addstr(json, "{\"backend\":\"local\",\"runtime\":\"");
    strbuf_add_json_escaped(json, runtime, strlen(runtime));
    strbuf_addstr(json, "\",\"id\":\"");
    strbuf_add_json_escaped(json, id, strlen(id));
    strbuf_addf(json, "\",\"created\":%lld,\"alive\":%s,\"pid\":%d,\"network\":\"%s\",",
                (long long)created, alive ? "true" : "false", (int)pid,
                net_name(network_host, eg->allowlist));
    if (eg->allowlist) {
        strbuf_addstr(json, "\"egress\":{\"allow\":[");
        for (size_t i = 0; i < eg->allow->n; i++) {
            strbuf_addstr(json, i ? ",\"" : "\"");
            strbuf_add_json_escaped(json, eg->allow->v[i], strlen(eg->allow->v[i]));
            strbuf_addch(json, '"');
        }
        strbuf_addf(json, "],\"proxy_pid\":%d,\"proxy_alive\":%s},", (int)eg->pid,
                    egress_alive(eg->pid, eg->start) ? "true" : "false");
    }
    limits_json(json, lim);
    strbuf_addstr(json, "\"state_dir\":\"");
    strbuf_add_json_escaped(json, dir, strlen(dir));
    strbuf_addstr(json, "\"}");
}

static void local_status(sbx_backend *b, strbuf *json)
{
    local_backend *lb = (local_backend *)b;
    egress_status eg = { lb->network_allowlist, &lb->egress, lb->egress_pid, lb->egress_start };
    status_json(json, sbx_runtime_name(lb->runtime), lb->id ? lb->id : "", lb->created,
                local_alive(b), lb->pid, lb->network_host, &eg, lb->dir, &lb->lim);
}

int sbx_local_backend_peek(const char *state_dir, strbuf *json)
{
    saved_state s;
    if (load_state(state_dir, &s) < 0)
        return -1;
    egress_status eg = { s.network_allowlist, &s.egress, s.egress_pid, s.egress_start };
    status_json(json, s.runtime, s.id, s.created, state_alive(s.pid, s.starttime), s.pid,
                s.network_host, &eg, state_dir, &s.lim);
    saved_state_free(&s);
    return 0;
}

int sbx_local_backend_adopt(const char *state_dir, sbx_config *cfg)
{
    saved_state s;
    /* (no code directories is a session too: a scratch one, in ~ or /tmp) */
    if (load_state(state_dir, &s) < 0) {
        saved_state_free(&s);
        return -1;
    }
    strvec_clear(&s.lim.cgroups);
    cfg->runtime = !strcmp(s.runtime, "runsc") ? SBX_RUNTIME_RUNSC : SBX_RUNTIME_BWRAP;
    cfg->network_host = s.network_host;
    cfg->network_allowlist = s.network_allowlist;
    strvec_clear(&cfg->egress);
    cfg->egress = s.egress;
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
    .status = local_status,
    .free = local_free,
};

int sbx_local_limits_probe(sbx_runtime rt, strbuf *how)
{
    sandbox_limits lim = { .pids_max = 0 };
    char id[64];
    sbx_err err;
    int r = -1;

    snprintf(id, sizeof(id), "doctor-%d", (int)getpid());
    if (rt == SBX_RUNTIME_RUNSC && !runsc_cgroups_usable()) {
        strbuf_addstr(how, getuid() ? "runsc makes cgroups only as root"
                                    : "no pids and memory cgroup hierarchy is mounted");
        return -1;
    }
    /* A real cgroup, made and removed as a sandbox's would be. */
    if (cg_create(&lim, id, &err) < 0) {
        strbuf_addstr(how, err.msg);
    } else if (!lim.cgroups.n) {
        strbuf_addstr(how, cg_unified() ? "our cgroup's subtree is not delegated to us (no "
                      "pids and memory controllers in a writable cgroup)"
                      : "the pids and memory cgroup hierarchies are not writable by us");
    } else {
        strbuf_addf(how, "%s, e.g. %s", lim.mechanism, lim.cgroups.v[0]);
        r = 0;
    }
    cg_remove(&lim.cgroups);
    strvec_clear(&lim.cgroups);
    return r;
}

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
    lb->network_allowlist = cfg->network_allowlist;
    for (size_t i = 0; i < cfg->egress.n; i++)
        strvec_push(&lb->egress, cfg->egress.v[i]);
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
    lb->lim.pids_max = cfg->pids_max;
    lb->lim.memory_max = cfg->memory_max;
    lb->lim.cpus_milli = cfg->cpus_milli;
    lb->lim.disk_max = cfg->disk_max;
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
