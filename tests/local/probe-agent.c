/*
 * A stand-in for sbx-agent that needs no sync engine: `probe-agent --listen
 * SOCKET [ignored...]` accepts connections one at a time; each sends one
 * command line, terminated by a newline, which runs under /bin/sh -c with
 * stdout and stderr on the connection, followed by a line "exit N". Lets
 * tests/local/t-backend.c look at a sandbox's view of the machine without
 * the sync protocol.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int lfd;

    if (argc < 3 || strcmp(argv[1], "--listen")) {
        fprintf(stderr, "usage: probe-agent --listen SOCKET\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[2]);
    unlink(argv[2]);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0) {
        perror("probe-agent: listen");
        return 1;
    }
    for (;;) {
        char line[8192];
        size_t len = 0;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        while (len < sizeof(line) - 1) {
            ssize_t n = read(c, line + len, 1);
            if (n <= 0 || line[len] == '\n')
                break;
            len++;
        }
        line[len] = '\0';
        pid_t pid = fork();
        if (pid == 0) {
            /* Only 1 and 2 are the connection, so that a background
             * process that closes them does not hold it open. */
            int null = open("/dev/null", O_RDONLY);
            dup2(null, 0);
            dup2(c, 1);
            dup2(c, 2);
            execl("/bin/sh", "sh", "-c", line, (char *)NULL);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        dprintf(c, "exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        close(c);
    }
}
