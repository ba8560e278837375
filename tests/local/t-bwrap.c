/* The runtimes' command lines as pure functions of the backend's settings
 * (local/local.h): bwrap's options and command, runsc's global options. */
#include "tests/lib/tap.h"

#include <stdlib.h>
#include <string.h>

#include "local/local.h"

/* The index of the first run of argv equal to want[0..n), or -1. */
static long find_seq(const strvec *argv, const char *const *want, size_t n)
{
    for (size_t i = 0; i + n <= argv->n; i++) {
        size_t k = 0;
        while (k < n && !strcmp(argv->v[i + k], want[k]))
            k++;
        if (k == n)
            return (long)i;
    }
    return -1;
}
#define HAS(argv, ...)                                                                  \
    (find_seq((argv), (const char *const[]){ __VA_ARGS__ },                             \
              sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *)) >= 0)
#define AT(argv, ...)                                                                   \
    find_seq((argv), (const char *const[]){ __VA_ARGS__ },                              \
             sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))

static bool has_word(const strvec *argv, const char *w)
{
    for (size_t i = 0; i < argv->n; i++)
        if (strstr(argv->v[i], w))
            return true;
    return false;
}

int main(void)
{
    strvec env = STRVEC_INIT, argv = STRVEC_INIT;
    mount_list ml = {0};
    mount_ent *m;

    strvec_push(&env, "PATH=/usr/bin:/bin");
    strvec_push(&env, "NOEQUALS");
    strvec_push(&env, "A=b=c");
    local_ml_add(&ml, M_RO, "/usr", "/usr");
    local_ml_add(&ml, M_RO, "/etc/resolv.conf", "/etc/resolv.conf");
    local_ml_add(&ml, M_SYMLINK, "usr/bin", "/bin");
    local_ml_add(&ml, M_PROC, NULL, "/proc");
    local_ml_add(&ml, M_DEV, NULL, "/dev");
    local_ml_add(&ml, M_RW, "/state/s/agent", "/run/sbxsh");
    m = local_ml_add(&ml, M_TMPFS, NULL, "/home/u/proj");
    m->mode = 0750;
    m->size = 1048576;
    local_ml_add(&ml, M_TMPFS, NULL, "/scratch");

    local_bwrap_params p = { .uid = 1234, .gid = 5678, .network_host = false, .agent_env = &env };
    local_bwrap_options(&p, &ml, &argv);
    ok(HAS(&argv, "--unshare-user", "--uid", "1234", "--gid", "5678"),
       "bwrap: a user namespace, as the caller's uid and gid");
    ok(HAS(&argv, "--unshare-pid") && HAS(&argv, "--unshare-ipc") && HAS(&argv, "--unshare-uts"),
       "bwrap: pid, ipc and uts namespaces");
    ok(!HAS(&argv, "--unshare-net"), "bwrap: its network namespace is not bwrap's own (made "
       "before it, with the DNS stub's sockets)");
    ok(HAS(&argv, "--ro-bind-data", "5", "/etc/resolv.conf") &&
       !HAS(&argv, "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"),
       "bwrap: without the host's network, resolv.conf is data from fd 5 (the DNS stub), "
       "not a bind");
    ok(HAS(&argv, "--disable-userns") && HAS(&argv, "--cap-drop", "ALL") &&
       HAS(&argv, "--new-session"), "bwrap: no capabilities, no nested user namespace, "
       "a new session (no TIOCSTI into ours)");
    ok(HAS(&argv, "--clearenv"), "bwrap: none of our environment");
    ok(HAS(&argv, "--setenv", "PATH", "/usr/bin:/bin"), "bwrap: the agent's PATH");
    ok(HAS(&argv, "--setenv", "A", "b=c"), "bwrap: a value holding '=' stays whole");
    ok(!has_word(&argv, "NOEQUALS"), "bwrap: an entry without '=' is skipped");
    ok(HAS(&argv, "--info-fd", "3"), "bwrap: the info fd is 3");
    ok(HAS(&argv, "--perms", "0755", "--dir", "/etc"), "bwrap: /etc is made 0755, not 0700");
    ok(HAS(&argv, "--ro-bind", "/usr", "/usr"), "bwrap: a read-only bind");
    ok(HAS(&argv, "--symlink", "usr/bin", "/bin"), "bwrap: a symlink");
    ok(HAS(&argv, "--proc", "/proc") && HAS(&argv, "--dev", "/dev"), "bwrap: fresh /proc and /dev");
    ok(HAS(&argv, "--bind", "/state/s/agent", "/run/sbxsh"), "bwrap: the agent's directory, "
       "writable");
    ok(HAS(&argv, "--perms", "0750", "--size", "1048576", "--tmpfs", "/home/u/proj"),
       "bwrap: a code copy is a tmpfs of the disk limit, with the original's mode");
    ok(HAS(&argv, "--tmpfs", "/scratch") && !HAS(&argv, "--size", "0"),
       "bwrap: a tmpfs without size or mode gets neither option");
    ok(AT(&argv, "--ro-bind", "/usr", "/usr") < AT(&argv, "--symlink", "usr/bin", "/bin") &&
       AT(&argv, "--symlink", "usr/bin", "/bin") < AT(&argv, "--tmpfs", "/home/u/proj"),
       "bwrap: mounts in the plan's order");
    is_int(AT(&argv, "--remount-ro", "/", "--chdir", "/"), (long)argv.n - 4,
           "bwrap: ends with a read-only root and cwd /");

    strvec_clear(&argv);
    p.network_host = true;
    local_bwrap_options(&p, &ml, &argv);
    ok(!HAS(&argv, "--unshare-net") &&
       HAS(&argv, "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"),
       "bwrap: AGENT_SANDBOX_LOCAL_NETWORK=host shares the network and the host's resolv.conf");

    /* The command line is what the sandbox's /proc/1/cmdline shows. */
    local_backend lb;
    memset(&lb, 0, sizeof(lb));
    lb.network_host = true;     /* the network options of the agent are its own business */
    strvec_init(&lb.agent_args);
    strvec_push(&lb.agent_args, "--root");
    strvec_push(&lb.agent_args, "/home/u/proj");
    strvec_clear(&argv);
    local_bwrap_command("/usr/bin/bwrap", &lb, &argv);
    is_int((long)argv.n, 9, "bwrap command: bwrap --args 4 -- agent --listen SOCK ARGS");
    ok(HAS(&argv, "/usr/bin/bwrap", "--args", "4", "--", SBX_IN_AGENT_BIN, "--listen",
           SBX_SANDBOX_AGENT_DIR "/" SBX_AGENT_SOCKET, "--root", "/home/u/proj"),
       "bwrap command: the options come from fd 4; after -- only sandbox paths");
    ok(!has_word(&argv, "/state/"), "bwrap command: no host state path");

    local_runsc_params rp = { .runsc = "/usr/bin/runsc", .state_dir = "/state/s",
                              .network_host = false, .cgroups = true, .rootless = false };
    strvec_clear(&argv);
    local_runsc_argv(&rp, &argv);
    ok(HAS(&argv, "/usr/bin/runsc", "--root=/state/s/runsc", "--network=none",
           "--host-uds=create") && argv.n == 4,
       "runsc: its root in the session's state, no network, agent sockets reachable");
    rp.allowlist = true;
    strvec_clear(&argv);
    local_runsc_argv(&rp, &argv);
    ok(HAS(&argv, "--host-uds=all"), "runsc: with the egress allowlist the agent's relay may "
       "connect to the proxy's host socket");
    rp.allowlist = false;
    rp.network_host = true;
    rp.cgroups = false;
    rp.rootless = true;
    strvec_clear(&argv);
    local_runsc_argv(&rp, &argv);
    ok(HAS(&argv, "--network=host") && HAS(&argv, "--ignore-cgroups") && HAS(&argv, "--rootless"),
       "runsc: host network, no cgroups, rootless for an ordinary user");

    is_int((long)local_runsc_release_date("runsc version 0.0~20221219.0"), 20221219,
           "runsc's date from Debian's version line");
    is_int((long)local_runsc_release_date("runsc version release-20240729.0"), 20240729,
           "...and from Google's");
    is_int((long)local_runsc_release_date("runsc version 0.0~202407"), 0,
           "...none in a short number");
    is_int((long)local_runsc_release_date("runsc version 1.2.3"), 0, "...nor without one");
    ok(!local_runsc_has_systrap(20221219) && local_runsc_has_systrap(20240729),
       "Debian 12's runsc (2022-12) has only ptrace; bookworm-backports' (2024-07) has systrap");

    strvec_clear(&argv);
    strvec_clear(&env);
    strvec_clear(&lb.agent_args);
    local_ml_free(&ml);
    return done_testing();
}
