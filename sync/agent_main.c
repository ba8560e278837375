/* sbx-agent's command line. */
#include "sync/agent.h"
#include "sync/dnsstub.h"
#include "sync/fsmonitor.h"
#include "sync/wire.h"
#include "common/strvec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char usage[] =
    "usage: sbx-agent [options]                 serve the host on stdin/stdout\n"
    "       sbx-agent --listen SOCKET [options] serve hosts connecting to SOCKET\n"
    "       sbx-agent --connect SOCKET          relay stdin/stdout to a listening agent\n"
    "\n"
    "The sandbox's end of sbxsh: applies the host's changes to the code directories, runs\n"
    "commands (each in a process group of its own), relays their input and output, and sends\n"
    "the sandbox's changes back after each command. It speaks the sbx-agent protocol, version\n"
    "%d, and trusts the host that connects to it.\n"
    "\n"
    "options:\n"
    "  --listen SOCKET      listen on a Unix socket (mode 0600, only this uid or root may\n"
    "                       connect); one host at a time, and a new connection takes over,\n"
    "                       keeping the manifest, running commands and background processes\n"
    "  --connect SOCKET     bridge stdin/stdout to an agent listening on SOCKET\n"
    "  --start              with --connect: when none answers, start `--listen SOCKET` with\n"
    "                       the other options, detached, and connect to it\n"
    "  --resume ID          with --connect: stdin/stdout carry a resumable stream (sync/\n"
    "                       resume.h) kept by a detached keeper per ID, so that a dropped\n"
    "                       transport loses nothing: the next --connect resumes it\n"
    "  --fsmonitor SOCKET   answer git's fsmonitor hook on SOCKET (a Unix socket, mode 0600):\n"
    "                       what changed in the code directories since the hook's token,\n"
    "                       from the inotify watch\n"
    "  --fsmonitor-link PATH\n"
    "                       with --fsmonitor: make PATH (its name " FSM_HOOK_NAME ") a\n"
    "                       symlink to this program, for core.fsmonitor to name\n"
    "  --fsmonitor-hook SOCKET 2 TOKEN\n"
    "                       (first, alone) git's fsmonitor hook, version 2 (core.fsmonitor\n"
    "                       names its first two words): asks the agent at SOCKET and prints\n"
    "                       its answer, or `/` (everything) when it cannot\n"
    "  --state FILE         keep the manifest in FILE across restarts (written at disconnect,\n"
    "                       exit, and every few seconds after a change)\n"
    "  --idle-timeout SECS  with --listen: exit after SECS seconds without a host (default:\n"
    "                       never); commands still running keep running\n"
    "  --root-prefix DIR    prepend DIR to every synced path, cwd and file (for tests: two\n"
    "                       trees on one machine)\n"
    "  --no-watch           never use inotify: every sync is a full stat walk\n"
    "  --no-network MODE    the sandbox has no network (MODE none) or only an egress proxy\n"
    "                       (allowlist): answer DNS on 127.0.0.1:53 at once with NXDOMAIN\n"
    "                       and say so on the first lookup's commands' stderr\n"
    "  --dns-fds UDP,TCP    with --no-network: serve DNS on these sockets, bound already\n"
    "  --egress-relay PORT:SOCKET  relay 127.0.0.1:PORT to the egress proxy's socket\n"
    "  --user UID:GID       with --listen, started as root: once SOCKET is bound, run as\n"
    "                       UID:GID (not root) with no capabilities and no other groups,\n"
    "                       before anything else (it exits if that fails)\n"
    "  --version            print the version and protocol version\n"
    "  --help               this text\n";

/* Sets close-on-exec on every inherited fd above 2, so commands never inherit one:
 * close_range(CLOSE_RANGE_CLOEXEC) where the kernel has it, else the fds /proc lists. */
static void cloexec_inherited(void)
{
    DIR *d;
    struct dirent *de;
    if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) == 0)
        return;
    d = opendir("/proc/self/fd");
    if (!d) {
        for (int fd = 3; fd < 4096; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
        return;
    }
    while ((de = readdir(d))) {
        int fd = atoi(de->d_name);
        if (fd > 2 && fd != dirfd(d))
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    closedir(d);
}

/* capget(2)'s structures (version 3: two 32-bit words per set), declared here because
 * musl has no <sys/capability.h> and the static build no kernel headers. */
struct cap_header { uint32_t version; int pid; };
struct cap_data { uint32_t effective, permitted, inheritable; };
#define CAP_VERSION_3 0x20080522

/*
 * --user UID:GID. Under rootless runsc the agent starts as uid 0 with CAP_SETUID,
 * CAP_SETGID and CAP_SETPCAP only, because only uid 0 there may make its socket in the
 * host directory the host connects to (local/runsc.c, write_bundle); the commands must
 * run as the caller. So, with the socket bound and before reading or starting anything,
 * it becomes UID:GID for good, in this order: every capability out of the bounding set
 * (CAP_SETPCAP; no exec can bring one back), no supplementary groups and the gid
 * (CAP_SETGID), then the uid (CAP_SETUID), whose change from 0 empties the permitted and
 * effective sets. Then it checks: all three uids and gids are the new ones, no capability
 * is left in any set (ambient cleared too). Any failure returns -1 and the agent exits
 * rather than serve as root.
 */
static int become_user(uid_t uid, gid_t gid)
{
    struct cap_header h = { CAP_VERSION_3, 0 };
    struct cap_data d[2];
    uid_t ru, eu, su;
    gid_t rg, eg, sg;

    for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
            return -1;
    if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
        return -1;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    errno = 0;  /* from here, a failed check says "something is left" (main) */
    if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 || ru != uid ||
        eu != uid || su != uid || rg != gid || eg != gid || sg != gid ||
        getgroups(0, NULL) != 0 || syscall(SYS_capget, &h, d) < 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (d[i].effective || d[i].permitted || d[i].inheritable)
            return -1;
    for (int c = 0; c < 64; c++)
        if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) > 0)
            return -1;
    return 0;
}

/* --fsmonitor-link PATH: PATH becomes a symlink to this program, by a rename over whatever
 * was there (a link an earlier agent made, maybe to a program since replaced). git runs it
 * by that name, which makes it the hook (FSM_HOOK_NAME). A failure is said and not fatal:
 * git then cannot run its hook, says so, and checks every file itself. */
static void link_hook(const char *path)
{
    char self[4096], *tmp;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0 || (size_t)n >= sizeof(self) - 1) {
        fprintf(stderr, "sbx-agent: cannot link git's fsmonitor hook: /proc/self/exe: %s\n",
                n < 0 ? strerror(errno) : "too long");
        return;
    }
    self[n] = '\0';
    tmp = xasprintf("%s.%ld.tmp", path, (long)getpid());
    unlink(tmp);
    if (symlink(self, tmp) < 0 || rename(tmp, path) < 0) {
        fprintf(stderr, "sbx-agent: cannot link git's fsmonitor hook %s: %s\n", path,
                strerror(errno));
        unlink(tmp);
    }
    free(tmp);
}

/* main's early returns: the daemon's argument list freed first, so that a refused option
 * leaves nothing behind for LeakSanitizer (make check-asan: identity.t's --user 0:0). */
static int drop_args(strvec *args, int rc)
{
    strvec_clear(args);
    return rc;
}

int main(int argc, char **argv)
{
    agent_opts o = { 0 };
    dnsstub_opts net = { 0 };
    const char *connect_path = NULL, *resume_id = NULL;
    bool start = false, have_user = false;
    unsigned user_uid = 0, user_gid = 0;
    strvec daemon_args = { 0 };   /* the options but --connect, --start, --resume */

    /* git's fsmonitor hook: `sbx-agent --fsmonitor-hook SOCKET 2 TOKEN` (core.fsmonitor
     * names the first three words; git adds the version and its token). */
    if (argc >= 2 && !strcmp(argv[1], "--fsmonitor-hook"))
        return fsm_hook_main(argc - 2, argv + 2);
    {
        const char *base = strrchr(argv[0], '/');
        if (!strcmp(base ? base + 1 : argv[0], FSM_HOOK_NAME)) {
            char *hook_argv[4] = { FSM_DEFAULT_SOCKET, argc > 1 ? argv[1] : "",
                                   argc > 2 ? argv[2] : "", NULL };
            return fsm_hook_main(argc == 3 ? 3 : 0, hook_argv);
        }
    }

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(usage, SYNC_PROTOCOL_VERSION);
            return drop_args(&daemon_args, 0);
        }
        if (!strcmp(a, "--version")) {
            printf("sbx-agent %s (protocol %d)\n", SBX_AGENT_VERSION, SYNC_PROTOCOL_VERSION);
            return drop_args(&daemon_args, 0);
        }
        if (!strcmp(a, "--no-watch")) {
            o.no_watch = true;
            strvec_push(&daemon_args, a);
            continue;
        }
        if (!strcmp(a, "--start")) {
            start = true;
            continue;
        }
        if (!val) {
            fprintf(stderr, "sbx-agent: unknown option or missing value: %s\n"
                    "Try 'sbx-agent --help'.\n", a);
            return drop_args(&daemon_args, 2);
        }
        if (strcmp(a, "--connect") && strcmp(a, "--resume")) {
            strvec_push(&daemon_args, a);
            strvec_push(&daemon_args, val);
        }
        if (!strcmp(a, "--listen")) {
            o.listen_path = val;
        } else if (!strcmp(a, "--connect")) {
            connect_path = val;
        } else if (!strcmp(a, "--resume")) {
            resume_id = val;
        } else if (!strcmp(a, "--no-network")) {
            if (strcmp(val, "none") && strcmp(val, "allowlist")) {
                fprintf(stderr, "sbx-agent: --no-network wants none or allowlist\n");
                return drop_args(&daemon_args, 2);
            }
            net.dns = true;
            net.notice_mode = val;
        } else if (!strcmp(a, "--dns-fds")) {
            if (sscanf(val, "%d,%d", &net.dns_fds[0], &net.dns_fds[1]) != 2) {
                fprintf(stderr, "sbx-agent: --dns-fds wants UDP,TCP\n");
                return drop_args(&daemon_args, 2);
            }
        } else if (!strcmp(a, "--egress-relay")) {
            char *end;
            long port = strtol(val, &end, 10);
            if (*end != ':' || port <= 0 || port > 65535 || end[1] != '/') {
                fprintf(stderr, "sbx-agent: --egress-relay wants PORT:/SOCKET\n");
                return drop_args(&daemon_args, 2);
            }
            net.relay_port = (int)port;
            net.relay_socket = end + 1;
        } else if (!strcmp(a, "--user")) {
            char extra;
            if (sscanf(val, "%u:%u%c", &user_uid, &user_gid, &extra) != 2 || user_uid == 0) {
                fprintf(stderr, "sbx-agent: --user wants UID:GID, of a user other than root\n");
                return drop_args(&daemon_args, 2);
            }
            have_user = true;
        } else if (!strcmp(a, "--fsmonitor")) {
            o.fsmonitor_path = val;
        } else if (!strcmp(a, "--fsmonitor-link")) {
            const char *base = strrchr(val, '/');
            if (val[0] != '/' || strcmp(base + 1, FSM_HOOK_NAME)) {
                fprintf(stderr, "sbx-agent: --fsmonitor-link wants an absolute path ending "
                                "in /" FSM_HOOK_NAME "\n");
                return 2;
            }
            o.fsmonitor_link = val;
        } else if (!strcmp(a, "--state")) {
            o.state_file = val;
        } else if (!strcmp(a, "--root-prefix")) {
            if (val[0] != '/') {
                fprintf(stderr, "sbx-agent: --root-prefix needs an absolute directory\n");
                return drop_args(&daemon_args, 2);
            }
            o.root_prefix = val;
        } else if (!strcmp(a, "--idle-timeout")) {
            char *end;
            long v = strtol(val, &end, 10);
            if (*end || v < 0 || v > 100000000) {
                fprintf(stderr, "sbx-agent: --idle-timeout wants seconds, not '%s'\n", val);
                return drop_args(&daemon_args, 2);
            }
            o.idle_timeout = (int)v;
        } else {
            fprintf(stderr, "sbx-agent: unknown option: %s\nTry 'sbx-agent --help'.\n", a);
            return drop_args(&daemon_args, 2);
        }
        i++;
    }
    if (connect_path && o.listen_path) {
        fprintf(stderr, "sbx-agent: --listen and --connect exclude each other\n");
        return drop_args(&daemon_args, 2);
    }
    if (have_user && !o.listen_path) {
        fprintf(stderr, "sbx-agent: --user goes with --listen\n");
        return drop_args(&daemon_args, 2);
    }
    if ((start || resume_id) && !connect_path) {
        fprintf(stderr, "sbx-agent: --start and --resume go with --connect\n");
        return drop_args(&daemon_args, 2);
    }
    if (connect_path && (start || resume_id)) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0 && argv[0][0] != '/') {
            fprintf(stderr, "sbx-agent: cannot find my own program (/proc/self/exe)\n");
            return drop_args(&daemon_args, 1);
        }
        if (n > 0)
            self[n] = '\0';
        else
            snprintf(self, sizeof(self), "%s", argv[0]);
        return agent_pod_connect(self, connect_path, start, resume_id, daemon_args.v);
    }
    strvec_clear(&daemon_args);
    if (connect_path)
        return agent_bridge(connect_path);
    cloexec_inherited();
    umask(022);
    /* The socket first: with --user, it is all the agent does as root. */
    if (o.listen_path && (o.listen_fd = agent_listen_socket(o.listen_path)) < 0)
        return 1;
    if (have_user && become_user((uid_t)user_uid, (gid_t)user_gid) < 0) {
        fprintf(stderr, "sbx-agent: cannot become uid %u, gid %u without capabilities: %s\n",
                user_uid, user_gid, errno ? strerror(errno) : "something is left");
        return 1;
    }
    /* As the user: the hook (git, run by a command) connects as the user. */
    if (o.fsmonitor_path && (o.fsmonitor_fd = agent_listen_socket(o.fsmonitor_path)) < 0)
        return 1;
    if (o.fsmonitor_path && o.fsmonitor_link)
        link_hook(o.fsmonitor_link);
    if (net.dns || net.relay_port) {
        int fd = dnsstub_start(&net);
        o.notice_fd = fd > 0 && net.dns ? fd : 0;
    }
    if (o.listen_path)
        return agent_serve_listen(&o);
    return agent_serve_stdio(&o);
}
