/*
 * Credentials in pushed .git files, and putting them back on a pull (gitcred.h). A fetch
 * from https://user:TOKEN@host writes that URL into reflogs, FETCH_HEAD and merge
 * messages; pushed as they are, the token would be readable by anything in the sandbox.
 * So the push strips it (common/urlcred.h), and when such a file comes back on a pull the
 * host's own lines are put back where the sandbox returned them unchanged, so that the
 * round trip does not leave the person's history with the secret cut out. Only a line
 * that matches a stripped host line exactly gets its original: the sandbox cannot make
 * the host write a secret into a line it did not have.
 */
#include "sync/gitcred.h"
#include "common/urlcred.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool name_starts(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    return n >= m && !memcmp(s, lit, m);
}

/* Whether the push filters rel: a reflog (anything under a .git's logs/) or FETCH_HEAD,
 * MERGE_MSG, SQUASH_MSG (and their variants named with those prefixes). */
bool git_push_strips_credentials(const char *rel, size_t len)
{
    bool in_git = false, in_logs = false;
    size_t i = 0;

    while (i < len) {
        size_t j = i;
        const char *c = rel + i;
        while (j < len && rel[j] != '/')
            j++;
        if (j == len) {
            /* The file itself: below .git/.../logs/, or one of the names that carry a
             * URL (git fmt-merge-msg writes "Merge branch 'x' of URL"). */
            return in_git && (in_logs || name_starts(c, j - i, "FETCH_HEAD") ||
                              name_starts(c, j - i, "MERGE_MSG") ||
                              name_starts(c, j - i, "SQUASH_MSG"));
        }
        /* Any letter case: a host on a case-insensitive file system reads ".GIT" too. */
        if (j - i == 4 && !strncasecmp(c, ".git", 4))
            in_git = true;
        else if (in_git && j - i == 4 && !memcmp(c, "logs", 4))
            in_logs = true;
        i = j + 1;
    }
    return false;
}

/* A line of the host's file that filtering changed: its filtered form is the key. */
typedef struct cred_line {
    const char *key;     /* in the keys buffer, set once it stops growing */
    size_t key_off, key_len;
    const char *orig;    /* in the host's text */
    size_t orig_len;
} cred_line;

static int cmp_key(const void *a, const void *b)
{
    const cred_line *x = a, *y = b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* The next line of t[*pos..len), its newline excluded; false at the end. */
static bool next_line(const char *t, size_t len, size_t *pos, const char **line, size_t *n,
                      bool *nl)
{
    const char *e;
    if (*pos >= len)
        return false;
    *line = t + *pos;
    e = memchr(*line, '\n', len - *pos);
    *n = e ? (size_t)(e - *line) : len - *pos;
    *nl = e != NULL;
    *pos += *n + (e ? 1 : 0);
    return true;
}

/* pulled with each line that equals the stripped form of a host line with a secret
 * replaced by that host line; the count replaced. Lookups by a sorted table (a reflog of
 * 100,000 lines is not a quadratic scan). */
size_t gitcred_restore(const char *host, size_t host_len, const char *pulled, size_t pulled_len,
                       strbuf *out)
{
    cred_line *lines = NULL;
    size_t nlines = 0, alines = 0, pos = 0, restored = 0, n;
    strbuf keys = STRBUF_INIT;
    const char *line;
    bool nl;

    /* The host's lines with a secret, by their filtered form (offsets first: the keys'
     * buffer moves while it grows). */
    while (next_line(host, host_len, &pos, &line, &n, &nl)) {
        size_t at = keys.len;
        if (!urlcred_has(line, n))
            continue;
        urlcred_strip(line, n, &keys);
        XGROW(lines, alines, nlines + 1);
        lines[nlines++] = (cred_line){ .key_off = at, .key_len = keys.len - at, .orig = line,
                                       .orig_len = n };
    }
    for (size_t k = 0; k < nlines; k++)
        lines[k].key = keys.buf + lines[k].key_off;
    if (nlines)
        qsort(lines, nlines, sizeof(*lines), cmp_key);

    pos = 0;
    while (next_line(pulled, pulled_len, &pos, &line, &n, &nl)) {
        cred_line want = { .key = line, .key_len = n }, *hit = NULL;
        if (nlines)
            hit = bsearch(&want, lines, nlines, sizeof(*lines), cmp_key);
        if (hit) {
            strbuf_add(out, hit->orig, hit->orig_len);
            restored++;
        } else {
            strbuf_add(out, line, n);
        }
        if (nl)
            strbuf_addch(out, '\n');
    }
    free(lines);
    strbuf_release(&keys);
    return restored;
}
