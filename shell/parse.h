/*
 * The bash parser: text in, sh_list (ast.h) out.
 *
 * A parse owns an arena; everything it returns lives there until
 * sh_parse_free(). The parser never exits, never recurses past
 * opts.max_depth, never reads past len, and is roughly linear in len.
 */
#ifndef SBX_SHELL_PARSE_H
#define SBX_SHELL_PARSE_H

#include "common/arena.h"
#include "common/strbuf.h"
#include "shell/ast.h"

typedef struct sh_parse_opts {
    bool extglob;          /* -O extglob / shopt -s extglob in effect */
    bool track_shopt;      /* turn extglob on after a top-level `shopt -s extglob`
                              command, as executing bash would (not for -n) */
    unsigned max_depth;    /* nesting limit; 0 = default (SH_MAX_DEPTH) */
    unsigned first_line;   /* lines before src (for sh_parse_next on a stream) */
} sh_parse_opts;

#define SH_MAX_DEPTH 1000

typedef enum sh_status {
    SH_OK,            /* a complete parse */
    SH_INCOMPLETE,    /* valid so far, more input needed (PS2 / keep reading) */
    SH_ERROR,         /* a syntax error */
} sh_status;

typedef struct sh_parse {
    arena arena;
    const char *src;       /* not owned; must outlive the parse */
    size_t len;
    sh_list *root;         /* SH_OK: the whole input's commands */
    sh_status status;
    bool extglob_after;    /* extglob state at the end (track_shopt) */
    /* SH_ERROR (and SH_INCOMPLETE when the input is known to be at EOF): */
    unsigned err_line;     /* 1-based line of the error, as bash counts */
    size_t err_offset;     /* byte offset where the error was detected */
    char err_msg[512];     /* e.g. "syntax error near unexpected token `fi'" */
    char err_text[512];    /* bash's second line: the offending input line, or "" */
    /* warnings bash prints without failing, e.g. a here-document at EOF */
    strbuf warnings;       /* "line 3: warning: ..." lines, each ending in \n */
    /* SH_ERROR: every line bash prints, "line N: ..." each ending in \n
     * (err_msg and err_text above are the first message and the offending
     * line); sh_parse_format_error() adds the prefix. */
    strbuf errors;
    int exit_status;       /* SH_ERROR: bash's status, 2, or 1 for an error in a=( )
                              that bash reports and then reads on after */
    unsigned end_line;     /* bash's line counter after the parse */
} sh_parse;

/* Parses all of src[0..len). Returns p->status. At the end of the input an
 * incomplete construct is an error (bash's "unexpected end of file"), unless
 * at_eof is false: then it is SH_INCOMPLETE. */
sh_status sh_parse_all(sh_parse *p, const char *src, size_t len, const sh_parse_opts *opts,
                       bool at_eof);

/* Parses one complete command as bash's reader does: an and-or list sequence
 * up to and including the newline that ends it, and the here-document bodies
 * that follow. On SH_OK, *consumed is the number of bytes used and p->root
 * the command. Used by the stdin and interactive loops: on SH_INCOMPLETE,
 * read more and call again with the longer buffer. A buffer holding only
 * blank lines and comments gives SH_OK with p->root->items == NULL. On
 * SH_ERROR with p->exit_status 1 (an error in a=( )), bash goes on after the
 * rest of the line: *consumed says where. Pass the lines consumed so far in
 * opts->first_line and p->extglob_after as the next opts->extglob. */
sh_status sh_parse_next(sh_parse *p, const char *src, size_t len, const sh_parse_opts *opts,
                        bool at_eof, size_t *consumed);

void sh_parse_free(sh_parse *p);

/* The source text of a span. */
static inline const char *sh_span_ptr(const sh_parse *p, sh_span s) { return p->src + s.start; }
static inline size_t sh_span_len(sh_span s) { return s.end - s.start; }

/* Appends the source text of span, followed by the bodies of the
 * here-documents whose operators lie inside span (a newline, then each body
 * and its delimiter line), so the text can be run on its own by bash. */
void sh_span_text_with_heredocs(const sh_parse *p, sh_span span, strbuf *out);

/* If every part of w is static (literal, quoted, escaped; no expansion, glob,
 * tilde, brace or $'...'), appends its value after quote removal to out and
 * returns true; else returns false and out is unchanged. */
bool sh_word_static_value(const sh_word *w, strbuf *out);

/* Prints the bash-style error for a failed parse:
 *   "<prefix>line N: syntax error near unexpected token `fi'\n<prefix>line N: `if fi'\n"
 * prefix is e.g. "sbxsh: -c: " or "script.sh: ". */
void sh_parse_format_error(const sh_parse *p, const char *prefix, strbuf *out);

/* Appends the warnings with prefix on each line, as bash prints them:
 * "bash: line 2: warning: ..." (bash uses "bash: " here even with -c, and
 * "script.sh: " for a script). */
void sh_parse_format_warnings(const sh_parse *p, const char *prefix, strbuf *out);

#endif
