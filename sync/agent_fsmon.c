/* The agent's fsmonitor socket: git's fsmonitor hook in the sandbox (`sbx-agent
 * --fsmonitor-hook`, sync/fsmonitor.c) asks what changed since its token, and the agent
 * answers from the journal its inotify watch keeps (sync/fsmonitor.h). */
#include "sync/agent_int.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/random.h>

/* How long one client may take to send its request, and to read the answer: the loop
 * serves nothing else meanwhile (the hook sends at once and reads to the end). */
#define FSM_READ_MS 2000
#define FSM_WRITE_MS 10000

uint64_t agent_fsm_instance(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
    }
    return v;
}

static int64_t now_ms(void)
{
    return mf_now_ns() / 1000000;
}

/* Waits until fd is ready for ev or the deadline passes: false then. */
static bool wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = ev };
        int64_t left = deadline - now_ms();
        int r;
        if (left <= 0)
            return false;
        r = poll(&p, 1, (int)left);
        if (r > 0)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
    }
}

/* Which watched code directory holds cwd: its index and cwd's path below it. */
static bool find_root(agent *a, const char *cwd, uint16_t *root, const char **prefix)
{
    for (size_t i = 0; a->tree && i < mf_nroots(a->tree); i++) {
        mf_root *r = mf_root_at(a->tree, i);
        char real[PATH_MAX];
        size_t len;
        if (r->kind != WIRE_ROOT_CODE || !r->scanned || !realpath(r->base, real))
            continue;
        len = strlen(real);
        if (len == 1)
            len = 0;  /* the root directory "/" */
        if (!strncmp(cwd, real, len) && (cwd[len] == '\0' || cwd[len] == '/')) {
            *root = (uint16_t)i;
            *prefix = cwd[len] ? cwd + len + 1 : cwd + len;
            return true;
        }
    }
    return false;
}

void agent_fsmonitor_serve(agent *a)
{
    char req[FSM_REQUEST_MAX];
    size_t len = 0, off = 0;
    int64_t deadline = now_ms() + FSM_READ_MS;
    const char *token, *cwd, *prefix = "";
    uint16_t root = 0;
    bool known;
    strbuf out = STRBUF_INIT;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    int fd = accept4(a->fsm_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

    if (fd < 0)
        return;
    /* The sandbox's own user (or root), as on the host socket. */
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
        (cred.uid != 0 && cred.uid != getuid()))
        goto out;
    for (;;) {
        ssize_t n;
        if (!wait_fd(fd, POLLIN, deadline))
            goto out;
        n = read(fd, req + len, sizeof(req) - len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            goto out;
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == sizeof(req))
            goto out;   /* longer than any request */
    }
    if (fsm_parse_request(req, len, &token, &cwd) < 0)
        goto out;
    known = find_root(a, cwd, &root, &prefix);
    /* What happened up to now is in the journal before the answer is made: a change the
     * client's git made before it ran the hook is named. */
    if (a->tree)
        mf_drain_events(a->tree);
    fsm_answer(&a->fsm, token, known, root, known ? mf_root_at(a->tree, root)->base : NULL,
               prefix, &out);
    deadline = now_ms() + FSM_WRITE_MS;
    while (off < out.len) {
        ssize_t n = write(fd, out.buf + off, out.len - off);
        if (n < 0 && errno == EAGAIN) {
            if (!wait_fd(fd, POLLOUT, deadline))
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
out:
    strbuf_release(&out);
    close(fd);
}
