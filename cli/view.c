/*
 * A plain host directory's view for the scratch sandbox (view.h): view_build() reads one level
 * of it with no symlink followed (common/fsat.h), leaving out hidden names, names with a control
 * byte and files that look like credentials; view_push() sends it as a `bash -s` script through
 * the client library (session/session.h). cli/ may call router/, shell/, session/ and common/.
 * Untrusted: nothing of the sandbox's comes back here but the exit status and a spawn failure's
 * message (sanitized in session/session.c); the view is never pulled back.
 */
#include "cli/view.h"
#include "common/fsat.h"
#include "common/report.h"
#include "session/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir, opened with no symlink anywhere on the way (the router walked it so, but the name
 * may have changed since): a directory the person reached by a cd, never one a symlink put
 * there. The walk beneath "/" is common/fsat.h's. */
static int open_dir_nofollow(const char *dir)
{
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

    if (root < 0)
        return -1;
    fd = sbx_open_beneath(root, dir, strlen(dir), O_RDONLY);
    int e = errno;
    close(root);
    errno = e;
    return fd;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A name the view may carry: not hidden, no control byte (neither the completion nor the
 * terminal would show it as itself), not "." or "..". */
static bool name_ok(const char *n)
{
    if (n[0] == '.' || !n[0])
        return false;
    for (const unsigned char *p = (const unsigned char *)n; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* A file the view leaves out, whatever its size: by its name, a key or a credential (an
 * ssh key's id_*, *.pem, *.key, *.p12, a password store, a name saying credential, secret,
 * token or password); by its bytes, a private key. Plain files of a directory the person
 * walks through reach the sandbox so that `ls` and `cat` there read as under bash, but a
 * credential left in one must not: the sandbox is not trusted with secrets. */
static bool secret_file(const char *n, const strbuf *data)
{
    static const char *const suffixes[] = { ".pem", ".key", ".p12", ".pfx", ".jks",
                                            ".keystore", ".kdbx", ".gpg", ".asc", ".ovpn",
                                            ".ppk", ".netrc" };
    static const char *const words[] = { "credential", "secret", "token", "password",
                                         "passwd", "private", "apikey", "api_key" };
    size_t len = strlen(n);
    if (!strncmp(n, "id_", 3))
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
        size_t sl = strlen(suffixes[i]);
        if (len >= sl && !strcasecmp(n + len - sl, suffixes[i]))
            return true;
    }
    for (size_t i = 0; i < ARRAY_SIZE(words); i++)
        if (strcasestr(n, words[i]))
            return true;
    return data && memmem(data->buf, data->len, "PRIVATE KEY-----", 16) != NULL;
}

/* The bytes of a file as a printf format in single quotes: a backslash and % are doubled,
 * a quote closes and reopens the word, NUL (which no bash word holds) and bash's internal
 * quoting bytes (\001, \177) are octal escapes of three digits (printf's format takes at
 * most three, so a digit that follows is not taken into the escape). */
static void add_printf_format(strbuf *out, const unsigned char *b, size_t n)
{
    strbuf_addch(out, '\'');
    for (size_t i = 0; i < n; i++) {
        switch (b[i]) {
        case '\\': strbuf_addstr(out, "\\\\"); break;
        case '%': strbuf_addstr(out, "%%"); break;
        case '\'': strbuf_addstr(out, "'\\''"); break;
        case 0: strbuf_addstr(out, "\\000"); break;
        case 1: strbuf_addstr(out, "\\001"); break;
        case 0x7f: strbuf_addstr(out, "\\177"); break;
        default: strbuf_addch(out, b[i]); break;
        }
    }
    strbuf_addch(out, '\'');
}

/* A regular file's bytes, when it is one of at most cap bytes: 1 with them in out, 0 when
 * it is not (or no longer) such a file, or cannot be read. */
static int read_small_file(int dfd, const char *name, size_t cap, strbuf *out)
{
    struct stat st;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    int ok = 0;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= cap) {
        strbuf_reset(out);
        /* a file that grew past the cap since fstat is left out */
        ok = strbuf_read_fd(out, fd, cap) == 0;
    }
    close(fd);
    return ok;
}

int view_build(const char *dir, bool list, sbx_view *v, sbx_err *err)
{
    strvec all = STRVEC_INIT, dirs = STRVEC_INIT, execs = STRVEC_INIT;
    strbuf data = STRBUF_INIT;
    size_t bytes = 0, scanned = 0;
    struct dirent *de;
    DIR *d;
    int fd;

    memset(v, 0, sizeof(*v));
    v->dir = xstrdup(dir);
    strvec_init(&v->names);
    strbuf_init(&v->script, 0);
    if ((fd = open_dir_nofollow(dir)) < 0)
        return sbx_errno(err, "cannot read %s", dir);
    if (!(d = fdopendir(fd))) {
        close(fd);
        return sbx_errno(err, "cannot read %s", dir);
    }
    /* the names first (bounded), then the view is the first ones in name order, so that
     * the same directory gives the same view whatever readdir's order */
    while (list && (de = readdir(d))) {
        if (!name_ok(de->d_name))
            continue;
        if (++scanned > VIEW_MAX_SCAN) {
            v->left_out++;
            continue;
        }
        strvec_push(&all, de->d_name);
    }
    qsort(all.v, all.n, sizeof(*all.v), name_cmp);

    strbuf_addstr(&v->script, "builtin set +e +u +C; builtin umask 022; mkdir -p -- ");
    strbuf_add_shell_quoted(&v->script, dir, strlen(dir));
    strbuf_addstr(&v->script, " && builtin cd -- ");
    strbuf_add_shell_quoted(&v->script, dir, strlen(dir));
    strbuf_addstr(&v->script, " || builtin exit 1\n");
    for (size_t i = 0; i < all.n; i++) {
        const char *n = all.v[i];
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
            continue;   /* symlinks, fifos, sockets, devices: never */
        if (v->names.n >= VIEW_MAX_ENTRIES) {
            v->left_out++;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            strvec_pushf(&v->names, "%s/", n);
            strvec_push(&dirs, n);
            continue;
        }
        if (secret_file(n, NULL) || (uint64_t)st.st_size > VIEW_MAX_FILE ||
            bytes + (size_t)st.st_size > VIEW_MAX_BYTES ||
            !read_small_file(dirfd(d), n, VIEW_MAX_FILE, &data) ||
            bytes + data.len > VIEW_MAX_BYTES || secret_file(n, &data)) {
            v->left_out++;
            continue;
        }
        bytes += data.len;
        strvec_push(&v->names, n);
        if (data.len) {
            strbuf_addstr(&v->script, "builtin printf -- ");
            add_printf_format(&v->script, (const unsigned char *)data.buf, data.len);
        } else {
            strbuf_addstr(&v->script, ":");
        }
        strbuf_addstr(&v->script, " >| ");
        strbuf_add_shell_quoted(&v->script, n, strlen(n));
        strbuf_addstr(&v->script, "\n");
        if (st.st_mode & 0111)
            strvec_push(&execs, n);
    }
    closedir(d);
    /* directories in one mkdir per 100 names, the executables' mode after their bytes */
    for (size_t i = 0; i < dirs.n; i += 100) {
        strbuf_addstr(&v->script, "mkdir -p --");
        for (size_t k = i; k < dirs.n && k < i + 100; k++) {
            strbuf_addch(&v->script, ' ');
            strbuf_add_shell_quoted(&v->script, dirs.v[k], strlen(dirs.v[k]));
        }
        strbuf_addstr(&v->script, "\n");
    }
    for (size_t i = 0; i < execs.n; i += 100) {
        strbuf_addstr(&v->script, "chmod +x --");
        for (size_t k = i; k < execs.n && k < i + 100; k++) {
            strbuf_addch(&v->script, ' ');
            strbuf_add_shell_quoted(&v->script, execs.v[k], strlen(execs.v[k]));
        }
        strbuf_addstr(&v->script, "\n");
    }
    strbuf_addstr(&v->script, "builtin exit 0\n");
    qsort(v->names.v, v->names.n, sizeof(*v->names.v), name_cmp);
    strvec_clear(&all);
    strvec_clear(&dirs);
    strvec_clear(&execs);
    strbuf_release(&data);
    return 0;
}

void view_free(sbx_view *v)
{
    if (!v)
        return;
    free(v->dir);
    v->dir = NULL;
    strvec_clear(&v->names);
    strbuf_release(&v->script);
}

bool view_has(const sbx_view *v, const char *name, size_t len)
{
    for (size_t i = 0; i < v->names.n; i++) {
        const char *n = v->names.v[i];
        size_t nl = strlen(n);
        if (nl && n[nl - 1] == '/')
            nl--;
        if (nl == len && !memcmp(n, name, len))
            return true;
    }
    return false;
}

int view_push(sbx_config *cfg, const strvec *env, const sbx_view *v, sbx_err *err)
{
    static const char *const argv[] = { "bash", "-s", NULL };
    static const sbx_fd_map fds[] = { { 0, SBX_FD_API_IN, -1 } };
    sbx_command cmd = {
        .exe = "bash",
        .argv = argv,
        .env = (const char *const *)env->v,
        .cwd = "/",
        .fds = fds,
        .nfds = 1,
    };
    sbx_session *s;
    sbx_exit st;
    int rc = -1;

    if (session_open(cfg, NULL, &s, err) < 0)
        return -1;
    if (session_start(s, &cmd, err) == 0 &&
        session_write(s, 0, v->script.buf, v->script.len, err) == 0 &&
        session_close_fd(s, 0, err) == 0 && session_wait(s, &st, err) == 0) {
        if (st.spawn_failed)
            sbx_errf(err, "cannot start bash in the sandbox: %s", st.message);
        else if (st.wait_status != 0)
            sbx_errf(err, "the sandbox could not make %s", v->dir);
        else
            rc = 0;
    }
    session_close(s);
    return rc;
}
