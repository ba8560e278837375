/*
 * Exclude rules in gitignore syntax (.sbxignore files and AGENT_SANDBOX_SYNC_EXCLUDE), and
 * the glob matcher they and the sync-path patterns use.
 *
 * Semantics are git's: blank lines and '#' comments are skipped, trailing spaces trimmed
 * unless escaped, '!' negates, a trailing '/' matches directories only, a pattern with a '/'
 * elsewhere is relative to the directory holding the file (else it matches a name at any
 * depth), '*' and '?' never match '/', '**' matches across directories. Rules of a deeper
 * directory win over shallower ones; within a file the last matching line wins. An excluded
 * directory is not descended into, so nothing below it can be re-included (as in git).
 *
 * The matcher is git's wildmatch algorithm, whose early aborts keep it polynomial: patterns
 * may come from files the sandbox wrote, and must not be able to stall a scan.
 */
#ifndef SBX_SYNC_IGNORE_H
#define SBX_SYNC_IGNORE_H

#include <stdbool.h>
#include <stddef.h>

#define IGN_MAX_RULES 10000         /* rules kept from one source */
#define IGN_MAX_PATTERN 1024        /* bytes of one pattern */
#define IGN_MAX_FILE (1024 * 1024)  /* bytes read from one .sbxignore */

typedef struct ign_list ign_list;

/* Parses rules from text (one per line). base is the directory the rules are relative to,
 * relative to the root ("" for the root and for global excludes). */
ign_list *ign_parse(const char *text, size_t len, const char *base, size_t base_len);
/* Global excludes: one pattern per entry, like lines of a file at the root. */
ign_list *ign_from_patterns(const char *const *patterns, const size_t *lens, size_t n);
void ign_free(ign_list *l);
size_t ign_count(const ign_list *l);

/* Whether rel (relative to the root; a directory when is_dir) matches list l: 1 excluded,
 * 0 re-included by a '!' rule, -1 no rule of l matches. */
int ign_match(const ign_list *l, const char *rel, size_t rel_len, bool is_dir);

/* Glob matching of text against pattern. With pathname, '*', '?' and brackets never match
 * '/', and '**' components match any number of directories. */
bool wildmatch(const char *pattern, const char *text, bool pathname);

/* True when s has glob characters (* ? [ or a backslash escape). */
bool has_glob(const char *s, size_t len);

#endif
