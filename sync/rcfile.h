/*
 * The user's shell startup files, for the sandbox's private HOME (docs/terminals.md, "Startup
 * files"): read on the host, filtered, and put at the same paths in the sandbox when a
 * connection opens (and again when one changed on the host), as the user's ~/.gitconfig is.
 *
 * Which files: RC_FILES (the ones bash reads itself, plus ~/.bash_aliases, which Debian's
 * and Ubuntu's ~/.bashrc source), and, from those, the files they `source` or `.` by a
 * literal path in the home directory (`~/x`, `$HOME/x`, `${HOME}/x`, and those in double
 * quotes), at most RC_MAX_DEPTH levels down, RC_MAX_FILES files of at most RC_MAX_SIZE
 * bytes each. Never a file under a credential place of the home directory
 * (rc_path_allowed), nor one whose resolved path leaves the home directory.
 *
 * What the filter removes (rc_filter), keeping every line, so that the file still parses:
 *   - the value of an assignment to a variable whose name looks secret (rc_secret_name):
 *     `export GITHUB_TOKEN=ghp_x` becomes `export GITHUB_TOKEN= # sbxsh: value removed`;
 *     the value is the shell word after the `=` (quotes, `$(...)`, `${...}`, backslashes
 *     and an array's parentheses followed, across lines when a quote stays open);
 *   - anywhere, a token of a known shape: GitHub (ghp_, gho_, ghs_, ghu_, ghr_,
 *     github_pat_), GitLab (glpat-), OpenAI and Anthropic style (sk-...), Slack
 *     (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-), AWS access key ids (AKIA/ASIA + 16);
 *   - anywhere, the credentials of a URL (common/urlcred.h).
 * The filter is a pure function of its input; it never fails.
 */
#ifndef SBX_SYNC_RCFILE_H
#define SBX_SYNC_RCFILE_H

#include "common/strbuf.h"
#include "common/strvec.h"

#include <stdbool.h>
#include <stddef.h>

#define RC_MAX_SIZE (256u * 1024)   /* a bigger startup file is not put into the sandbox */
#define RC_MAX_FILES 32             /* files put, the top-level ones included */
#define RC_MAX_DEPTH 3              /* levels of `source` followed below a top-level file */

/* The top-level startup files, relative to the home directory, NULL-terminated. */
extern const char *const RC_FILES[];

/* Appends text to out with the secrets removed; returns how many values and tokens were. */
size_t rc_filter(const char *text, size_t len, strbuf *out);

/* Whether a variable name looks like it holds a secret. */
bool rc_secret_name(const char *name, size_t len);

/* Appends to rel the files text sources by a literal path in the home directory, each
 * relative to it ("dir/file"), normalized, without duplicates (of what rel holds already);
 * paths rc_path_allowed refuses are left out. */
void rc_sourced(const char *text, size_t len, strvec *rel);

/* Whether a path relative to the home directory may be read for the sandbox: clean (no
 * empty, "." or ".." component) and not under a credential place (~/.ssh, ~/.aws, ...). */
bool rc_path_allowed(const char *rel, size_t len);

#endif
