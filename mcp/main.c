/*
 * sbx-mcp: `sbx mcp`, the MCP server on stdio (server.h), as its own program: `sbx`
 * (session/) execs it, since the server is built on libsbxsh, a layer above sbx's.
 *
 * Stdout carries the protocol and nothing else: before anything runs, the real stdin and
 * stdout are moved to close-on-exec descriptors of the server's own, and fds 0 and 1 are
 * pointed at /dev/null, so that no printf, library or child process of this one can write
 * a byte between two messages or read one from the client's stream. Stderr stays the
 * client's log, as MCP's stdio transport allows; this program's own messages go there
 * through common/report.h (sanitized).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/report.h"
#include "common/util.h"
#include "common/version.h"
#include "server.h"

static const char usage[] =
    "usage: sbx mcp [--session S] [--cwd DIR] [--output-limit N]\n"
    "\n"
    "Serve the Model Context Protocol on stdin and stdout (JSON-RPC 2.0, one message a\n"
    "line), for an MCP client (an agent, an editor) that starts this command. Its tools:\n"
    "  execute_command   run a command line as `sbxsh -c` (arguments: command, and\n"
    "                    timeout in seconds); returns exit_code, stdout and stderr\n"
    "  session_status    the session's status (what sbx status prints, as JSON)\n"
    "  release_session   release the session, as `sbx release`\n"
    "\n"
    "  --session S       the session (default: sbxsh's, from the directory)\n"
    "  --cwd DIR         where commands run, and so the code directories (default: the\n"
    "                    current directory)\n"
    "  --output-limit N  characters kept of each stream's output, head and tail (default\n"
    "                    30000, at least 200)\n"
    "\n"
    "Nothing but protocol messages is written to stdout; messages for people go to stderr.\n"
    "See docs/agents.md for a client's configuration.\n";

static int stop_wr = -1;

static void on_stop(int sig)
{
    int saved = errno;
    char b = (char)sig;
    if (write(stop_wr, &b, 1) < 0) { /* already asked to stop */ }
    errno = saved;
}

static SBX_NORETURN void die(const char *msg)
{
    sbx_report("sbx mcp", "%s", msg);
    exit(SBX_EXIT_INTERNAL);
}

/* sbxsh beside this program (the build tree, or an install into one directory), else
 * NULL: libsbxsh's own default. */
static char *sbxsh_beside_self(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return NULL;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    char *p = xasprintf("%s/sbxsh", self);
    if (access(p, X_OK) == 0)
        return p;
    free(p);
    return NULL;
}

int main(int argc, char **argv)
{
    enum { O_SESSION = 1, O_CWD, O_LIMIT, O_HELP, O_VERSION };
    static const struct option longs[] = {
        { "session", required_argument, NULL, O_SESSION },
        { "cwd", required_argument, NULL, O_CWD },
        { "output-limit", required_argument, NULL, O_LIMIT },
        { "help", no_argument, NULL, O_HELP },
        { "version", no_argument, NULL, O_VERSION },
        { NULL, 0, NULL, 0 },
    };
    mcp_server_opts o = { 0 };
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case O_SESSION: o.session = optarg; break;
        case O_CWD: o.cwd = optarg; break;
        case O_LIMIT: {
            char *end;
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || v < 200 || v > 10000000) {
                fprintf(stderr, "sbx mcp: --output-limit wants a number of characters from "
                        "200 to 10000000\n");
                return 2;
            }
            o.output_cap = v;
            break;
        }
        case O_HELP: case 'h': fputs(usage, stdout); return 0;
        case O_VERSION: printf("sbx mcp (sbxsh) %s\n", SBXSH_VERSION); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fputs(usage, stderr);
        return 2;
    }

    /* fds 0-2 open (a closed one would be the next open()'s, a protocol fd among them) */
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
            die("cannot open /dev/null");
    /* the protocol's fds, out of everyone else's reach */
    int in_fd = fcntl(0, F_DUPFD_CLOEXEC, 3), out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (in_fd < 0 || out_fd < 0 || null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0)
        die("cannot set up stdin and stdout");
    close(null_fd);

    /* A client gone mid-answer is a failed write (EPIPE), not a death; commands run by
     * libsbxsh get SIGPIPE back at its default (common/run.c). TERM, INT and HUP (a
     * client's shutdown, ^C in its terminal) cancel the running commands, then exit. */
    int sp[2];
    if (pipe2(sp, O_CLOEXEC | O_NONBLOCK) < 0)
        die("cannot make a pipe");
    stop_wr = sp[1];
    struct sigaction sa = { .sa_handler = SIG_IGN };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    /* MCP clients may start servers with a reduced environment (the TypeScript SDK keeps
     * HOME, LOGNAME, PATH, SHELL, TERM and USER): without XDG_RUNTIME_DIR the session's
     * socket path is /tmp/sbxsh-UID's, not a terminal's sbxsh's, and a client there finds
     * the session's holder through its state directory instead (session.c,
     * connect_recorded_holder): one holder serves both. */

    /* --cwd as given may be relative (`--cwd ../proj`): libsbxsh takes absolute paths */
    char *cwd = NULL;
    if (o.cwd && !(cwd = realpath(o.cwd, NULL))) {
        sbx_report("sbx mcp", "--cwd %s: %s", o.cwd, strerror(errno));
        return SBX_EXIT_INTERNAL;
    }
    o.cwd = cwd;

    char *program = sbxsh_beside_self();
    o.program = program;
    sbx_err err;
    int rc = mcp_server_run(in_fd, out_fd, sp[0], &o, &err);
    free(program);
    free(cwd);
    if (rc < 0)
        die(err.msg);
    return 0;
}
