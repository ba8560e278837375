/*
 * The host-command policy: the person's own list of programs that run on the host, word
 * by word (sbxsh-policy(5), docs/policy.md). The router consults it after its built-in
 * rules (router/classify.c): a command whose program no built-in rule owns runs on the
 * host only when a rule accepts every one of its words.
 *
 *   route_policy *pol = route_policy_new();
 *   route_policy_load(pol, "/usr/local/etc/sbxsh/policy", false, &ctx);   // a system file
 *   route_policy_load(pol, user_path, explicit, &ctx);                    // the person's
 *   ctx.policy = pol;             // route_plan_build() and route_run_host() now use it
 *   ...
 *   route_policy_free(pol);
 *
 * A file is read through one descriptor, and what is checked is that descriptor's fstat
 * and the real path it names: a file (or the directory holding it, or the link naming it)
 * that the sandbox or another user could write is refused whole, with a message in the
 * policy's problems. Patterns are compiled once, at load (pcre2: anchored at both ends,
 * no UTF, no callouts, with match, depth and heap limits; JIT where available); a
 * pattern that does not compile, or a match that hits a limit, keeps that command in the
 * sandbox with a warning. Programs are resolved at load on the host PATH, never inside
 * the code directories, and the absolute path found is what runs.
 */
#ifndef SBX_ROUTER_POLICY_H
#define SBX_ROUTER_POLICY_H

#include "router/route.h"

#include "common/strbuf.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct route_policy route_policy;

/* pcre2's limits for one word against one pattern (pcre2_set_match_limit, _depth_limit,
 * _heap_limit in KiB): a pattern that backtracks catastrophically stops well within a
 * millisecond's worth of steps and sends its command to the sandbox. */
#define ROUTE_POLICY_MATCH_LIMIT 100000
#define ROUTE_POLICY_DEPTH_LIMIT 1000
#define ROUTE_POLICY_HEAP_LIMIT  8192
/* A policy file: bytes, a line, rules, a rule's options and operands, a pattern. */
#define ROUTE_POLICY_MAX_FILE    (1 << 20)
#define ROUTE_POLICY_MAX_LINE    4096
#define ROUTE_POLICY_MAX_RULES   1024
#define ROUTE_POLICY_MAX_ITEMS   256
#define ROUTE_POLICY_MAX_COUNT   64

route_policy *route_policy_new(void);
void route_policy_free(route_policy *pol);

/* Reads one policy file into pol, after the rules already there (earlier rules win).
 * A missing file adds nothing unless must_exist. A file that is not the host's own
 * (inside the code directories or sync paths, writable by another user or group, in a
 * directory that is, through a link that is) adds nothing and a problem; syntax errors
 * add a problem each and drop that rule. ctx gives the code directories and the PATH
 * programs are resolved on. Returns 0, or -1 when the file was refused or had errors. */
int route_policy_load(route_policy *pol, const char *path, bool must_exist,
                      const route_ctx *ctx);
/* The same from bytes already read (the fuzzer, the tests): name is what messages call
 * the file. */
int route_policy_load_text(route_policy *pol, const char *name, const char *text, size_t len,
                           const route_ctx *ctx);

/* Problems found while loading, one a line: "FILE:LINE: message" (or "FILE: message"). */
const char *route_policy_problems(const route_policy *pol);
size_t route_policy_rule_count(const route_policy *pol);

/* sbx policy check: every problem of loading, plus programs not found, patterns that do
 * not compile or use callouts, rules an earlier one shadows, rules naming a program a
 * built-in rule owns, and options that run programs or read configuration (--exec, -e,
 * --config...) accepted by a rule; one a line with file and line, into out. Returns the
 * number of errors. */
size_t route_policy_check(const route_policy *pol, strbuf *out);

/* sbx policy show: the built-in rules (git's network commands, in the same format, for
 * reading: they stay code) and then every rule loaded, as the files have them. */
void route_policy_show(const route_policy *pol, strbuf *out);

/* Matching one command's words (argv[0] is the command name as typed) against the
 * rules: what the router does for a program no built-in rule owns. */
typedef struct route_policy_match {
    const char *rule;          /* the rule that accepts it (borrowed), or NULL */
    const char *file;          /* ... its file, as shown (~ for HOME), and line */
    unsigned line;
    const char *prog;          /* ... the absolute program it runs */
    const char *const *env;    /* ... the host variables it keeps (NULL-terminated) */
    bool limit;                /* no rule: a pattern failed or hit a limit: warn */
} route_policy_match;

/* Returns true with m filled when a rule accepts argv; else false with why (one line:
 * no rule for the program, or the nearest rule and which word failed which pattern). */
bool route_policy_match_argv(const route_policy *pol, const route_ctx *ctx,
                             char *const *argv, size_t argc, route_policy_match *m,
                             strbuf *why);

/* Whether name is a program a built-in rule owns (echo, printf, cd, git, sbx and the
 * filters): the policy is never consulted for it. */
bool route_policy_builtin_name(const char *name);

#endif
