/*
 * The local sandbox's file-system tree, the same under both runtimes: which
 * host paths it sees (the system directories, an allowlist of /etc), fresh
 * /proc, /dev and /tmp, the agent and its directory, the private HOME, and a
 * tmpfs per code directory. bwrap.c and runsc.c turn the plan into their
 * runtime's terms.
 */
#include "local/local.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

mount_ent *local_ml_add(mount_list *ml, mount_kind kind, const char *src, const char *dst)
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

void local_ml_free(mount_list *ml)
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

bool local_path_under(const char *p, const char *dir)
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
            local_ml_add(ml, M_RO, path, path);
        return;
    }
    n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0 || !realpath(path, real))
        return;
    target[n] = '\0';
    if (!strncmp(real, "/usr/", 5) || !strncmp(real, "/proc/", 6) ||
        (!strncmp(real, "/etc/", 5) && strchr(target, '/') == NULL)) {
        local_ml_add(ml, M_SYMLINK, target, path);
    } else if (!strncmp(real, "/etc/", 5) || !strncmp(real, "/run/", 5) ||
               !strncmp(real, "/var/", 5)) {
        if (stat(real, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
            local_ml_add(ml, M_RO, real, path);
    }
}

void local_plan_mounts(local_backend *lb, mount_list *ml)
{
    char *p;

    for (size_t i = 0; i < ARRAY_SIZE(sys_dirs); i++)
        plan_system_path(ml, sys_dirs[i]);
    for (size_t i = 0; i < ARRAY_SIZE(etc_allow); i++) {
        /* Without the host's network, names are looked up at the agent's DNS stub on the
         * sandbox's loopback (sync/dnsstub.h), which says the sandbox has no network. */
        if (!lb->network_host && !strcmp(etc_allow[i], "resolv.conf")) {
            p = local_state_path(lb, "resolv.conf");
            local_ml_add(ml, M_RO, p, "/etc/resolv.conf");
            free(p);
            continue;
        }
        p = xasprintf("/etc/%s", etc_allow[i]);
        plan_system_path(ml, p);
        free(p);
    }
    local_ml_add(ml, M_PROC, NULL, "/proc");
    local_ml_add(ml, M_DEV, NULL, "/dev");
    /* /tmp is memory: bounded like a code copy (and by the memory limit). */
    mount_ent *tmp = local_ml_add(ml, M_TMPFS, NULL, "/tmp");
    tmp->size = lb->lim.disk_max;
    tmp->mode = 01777;

    p = xasprintf("%s/agent", lb->dir);
    local_ml_add(ml, M_RW, p, SBX_SANDBOX_AGENT_DIR);
    free(p);
    local_ml_add(ml, M_RO, lb->agent_path, SBX_IN_AGENT_BIN);
    local_ml_add(ml, M_RO, lb->agent_path, SBX_IN_FSMONITOR_HOOK);
    if (lb->network_allowlist) {
        p = local_state_path(lb, "egress");
        local_ml_add(ml, M_RO, p, SBX_IN_EGRESS_DIR);
        free(p);
    }
    if (lb->runtime == LOCAL_RUNTIME_RUNSC && lb->compat_so)
        local_ml_add(ml, M_RO, lb->compat_so, SBX_IN_COMPAT_SO);
    if (lb->bash_so)
        local_ml_add(ml, M_RO, lb->bash_so, SBX_IN_BASH_SO);

    /* The private HOME is memory too, mode 0700, nosuid and nodev (as every tmpfs here):
     * not a host directory. As one (STATE/SESSION/home, bound in), it held on the host
     * whatever the sandbox made there: setuid and setgid executables of the caller (root
     * under CI), fifos, sockets, world-writable directories, and as many files and bytes as
     * the host's disk would take. Here it is bounded like /tmp, and gone with the sandbox. */
    mount_ent *home = local_ml_add(ml, M_TMPFS, NULL, lb->home);
    home->size = lb->lim.disk_max;
    home->mode = 0700;
    home->caller_owned = true;
    /* The copies live in the sandbox's memory, at the same absolute paths:
     * nothing of them is a host path (a host process steered into one would
     * run with the sandbox's files), and they cannot grow the host's disk.
     * Each root carries the original's permissions. */
    for (size_t i = 0; i < lb->code_dirs.n; i++) {
        struct stat st;
        mount_ent *m = local_ml_add(ml, M_TMPFS, NULL, lb->code_dirs.v[i]);
        m->size = lb->lim.disk_max;
        m->mode = stat(lb->code_dirs.v[i], &st) == 0 ? st.st_mode & 0777 : 0755;
        m->caller_owned = true;
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
