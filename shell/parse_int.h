/*
 * The parser's internals, shared by lexer.c, word.c and parser.c. Not an
 * interface: everything outside shell/ uses parse.h and ast.h.
 *
 * The lexer follows bash 5.2's (parse.y: shell_getc, read_token,
 * read_token_word, parse_matched_pair, parse_comsub) closely, because bash's
 * token boundaries, reserved words and error messages depend on state that
 * the lexer keeps: the last two tokens read, and parser_state flags such as
 * "reading case patterns". The grammar is recursive descent over the same
 * token stream bash's yacc grammar reads, so errors are found at the same
 * token and reported with bash's words.
 *
 * Errors unwind with longjmp to the entry point (sh_parse_all/_next); all
 * memory lives in the parse's arena, so nothing leaks.
 */
#ifndef SBX_SHELL_PARSE_INT_H
#define SBX_SHELL_PARSE_INT_H

#include "shell/parse.h"

#include <setjmp.h>

/* Tokens. Single-character tokens are the character itself ('\n' ';' '&'
 * '|' '(' ')' '<' '>' '-' '{' '}'), as in bash. */
enum {
    T_EOF = 256,
    T_ERROR,             /* a lexical error already reported */
    T_WORD, T_ASSIGNMENT_WORD, T_NUMBER, T_REDIR_WORD,
    T_ARITH_CMD, T_ARITH_FOR_EXPRS,
    T_AND_AND, T_OR_OR, T_BAR_AND,
    T_SEMI_SEMI, T_SEMI_AND, T_SEMI_SEMI_AND,
    T_GREATER_GREATER, T_LESS_LESS, T_LESS_LESS_MINUS, T_LESS_LESS_LESS,
    T_LESS_AND, T_GREATER_AND, T_LESS_GREATER, T_GREATER_BAR,
    T_AND_GREATER, T_AND_GREATER_GREATER,
    /* reserved words */
    T_IF, T_THEN, T_ELSE, T_ELIF, T_FI, T_CASE, T_ESAC, T_FOR, T_SELECT,
    T_WHILE, T_UNTIL, T_DO, T_DONE, T_IN, T_FUNCTION, T_TIME, T_BANG,
    T_COND_START, T_COND_END, T_COPROC,
    T_TIMEOPT, T_TIMEIGN,
    T_DOLPAREN,          /* the start of a $( ) body (bash's trick token) */
    T_COND_CMD,          /* a [[ ]] expression, as bash's parser sees it */
};

/* bash's parser_state bits that the lexer consults. */
enum {
    PST_CASEPAT     = 1u << 0,   /* reading case patterns */
    PST_CASESTMT    = 1u << 1,   /* inside a case statement */
    PST_ALLOWOPNBRC = 1u << 2,   /* `{' allowed: function body follows */
    PST_REDIRLIST   = 1u << 3,   /* simple command begun with a redirection */
    PST_ASSIGNOK    = 1u << 4,   /* assignment builtin seen: a=(..) allowed */
    PST_COMPASSIGN  = 1u << 5,   /* inside a=( ... ) */
    PST_CONDCMD     = 1u << 6,   /* [[ seen */
    PST_CONDEXPR    = 1u << 7,   /* parsing a [[ ]] expression */
    PST_REGEXP      = 1u << 8,   /* reading the right side of =~ */
    PST_EXTPAT      = 1u << 9,   /* reading the right side of == in [[ ]] */
    PST_CMDSUBST    = 1u << 10,  /* parsing a $( ) body */
    PST_EOFTOKEN    = 1u << 11,  /* eof_token ends the parse */
    PST_NOEXPAND    = 1u << 12,  /* inside $( ): backslash quotes the next char */
};

/* Flags for scan_matched(), after bash's parse_matched_pair. */
enum {
    P_FIRSTCLOSE = 1u << 0,
    P_ALLOWESC   = 1u << 1,
    P_DQUOTE     = 1u << 2,
    P_COMMAND    = 1u << 3,
    P_BACKQUOTE  = 1u << 4,
    P_ARRAYSUB   = 1u << 5,
    P_DOLBRACE   = 1u << 6,
    P_ARITH      = 1u << 7,
};

#define SH_HEREDOC_MAX 16

/*
 * A word under construction: parts in order, plus the literal run being
 * extended. A literal run is a source range whose text is the range minus
 * backslash-newline pairs and NUL bytes; word.c splits runs into literal,
 * $name, glob and tilde parts once the word's context is known.
 */
typedef struct wbuild {
    sh_wpart *head, **tail;
    bool run_open;
    uint32_t run_start, run_end;
    unsigned flags;          /* SH_WF_* seen so far (expansions inside quotes, ...) */
} wbuild;

/* Literal runs are parts of this private kind until word.c resolves them. */
#define WP_RUN ((sh_wpart_kind)100)

/* How word.c resolves literal runs: which expansions apply. */
typedef enum word_ctx {
    WCTX_WORD,        /* an unquoted shell word: $name, globs, tilde, braces */
    WCTX_ASSIGN,      /* an assignment value: also tilde after = and : */
    WCTX_DQUOTE,      /* inside "...": $name only */
    WCTX_PATTERN,     /* case pattern / [[ ]] operand: no brace expansion */
    WCTX_PARAM_ARG,   /* operand inside ${...}: $name, globs, tilde */
    WCTX_HEREDOC,     /* here-document body: $name only */
    WCTX_LITERAL,     /* regex text and similar: $name only, rest literal */
} word_ctx;

/* A token read by the lexer. */
typedef struct token {
    int type;
    sh_span span;
    sh_word *word;           /* T_WORD, T_ASSIGNMENT_WORD, T_REDIR_WORD */
    long number;             /* T_NUMBER */
    sh_span text;            /* T_ARITH_CMD, T_ARITH_FOR_EXPRS: expression source */
    unsigned line;           /* line where the token was read */
} token;

typedef struct parser parser;
typedef struct lx_memo lx_memo;

struct parser {
    sh_parse *p;
    arena *a;
    const char *src;
    size_t len;              /* bytes of src */
    size_t vlen;             /* len plus bash's newline after an unterminated last line */
    bool at_eof;             /* the input is complete (else: SH_INCOMPLETE at its end) */
    size_t limit;            /* the reader stops here (a here-document body's end) */

    /* reader: bash's shell_input_line, as a window on src */
    size_t pos;              /* next character */
    size_t lastpos;          /* position of the last character returned */
    size_t hist[8];          /* positions of the last characters returned, for ungetc */
    unsigned nhist;
    size_t line_start, line_end;  /* the current line */
    size_t next_fetch;       /* where the next line starts (after here-documents) */
    size_t hw;               /* high-water mark: lines before it are counted */
    unsigned lineno;         /* bash's line_number */
    bool eof_reached;
    bool in_eof_line;        /* the current line is bash's empty line at EOF */
    bool eof_pushback;       /* EOF was read and put back */

    /* lexer state, as bash keeps it */
    int last_tok, tok_before, two_ago, cur_tok;
    unsigned pstate;
    int token_to_read;       /* a token to return again (after `!' or `time' alone) */
    token pushed_tok;
    int open_brace_count, esacs_needed, expecting_in;
    int eof_token;           /* ')' while parsing a $( ) body */
    bool extglob;
    sh_redir *heredocs[SH_HEREDOC_MAX];
    int nheredoc;
    bool noerror;            /* an error was already reported (bash's PST_NOERROR) */
    unsigned in_compound;    /* inside a=( ... ), even through a $( ) */

    /* the current lookahead token */
    token tok;
    bool have_tok;
    strbuf tokbuf;           /* bash's text of the token being read */

    unsigned depth, max_depth;
    jmp_buf *jb;

    /* literal-run nodes already resolved, reused for new parts */
    sh_wpart *free_parts;

    /* constructs already parsed, by position: shared by the parses that
     * read the same bytes again (see lexer.c), NULL in backquote bodies */
    lx_memo *memo;

    /* the top-level list being built: units are linked in when complete */
    sh_andor **unit_tail;
    sh_andor *unit_first;
};

/* Unwinds to the entry point with p->status set. */
void px_fail(parser *P) __attribute__((noreturn));
/* bash's parser_error(): "line N: msg", then unwinds. */
void px_error_at(parser *P, unsigned line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
/* bash's report_syntax_error(NULL) for the current token, then unwinds. */
void px_syntax_error(parser *P) __attribute__((noreturn));
/* Input ran out before the construct ended: SH_INCOMPLETE when !at_eof. */
void px_need_more(parser *P) __attribute__((noreturn));
void px_enter(parser *P);
static inline void px_leave(parser *P) { P->depth--; }
void px_warning(parser *P, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- lexer.c ---- */
void lx_init(parser *P, const char *src, size_t len, size_t limit, bool at_eof);
int lx_getc(parser *P, bool remove_nl);
/* Puts back the character c just read (bash's shell_ungetc). */
void lx_ungetc_c(parser *P, int c);
void lx_tokbuf_reset(parser *P);
/* A parser for a nested text (a here-document body, a substitution read
 * again): P's arena and options, errors into a scratch sh_parse, syntax
 * errors longjmp to *jb. On the heap, as longjmp() comes back into the
 * caller's frame; lx_child_free() releases it. */
parser *lx_child_new(parser *P, const char *src, size_t end, size_t start, jmp_buf *jb);
void lx_child_free(parser *C);
void lx_push_heredoc(parser *P, sh_redir *r);
/* The parts of an unquoted here-document's body. */
sh_wpart *lx_heredoc_parts(parser *P, sh_span body);
int lx_read_token(parser *P, token *t);
/* A memo for a parse over src (in the parse's arena). */
lx_memo *lx_memo_new(parser *P);
/* The text bash shows for a token in "near unexpected token `X'". */
void lx_token_text(parser *P, const token *t, strbuf *out);
bool lx_reserved_word_acceptable(const parser *P, int tok);
void lx_gather_heredocs(parser *P);
/* Parses a $( ) body after its "(" (bash's parse_comsub); NULL when empty. */
sh_list *px_parse_comsub(parser *P);
/* A compound-assignment error (bash goes on with the next line). */
void px_compound_error(parser *P, unsigned line, const token *t) __attribute__((noreturn));
/* Parses src[start, end) as a script on a child parser sharing P's arena;
 * *ok false when it does not parse (then NULL). */
sh_list *px_child_parse(parser *P, const char *src, size_t end, size_t start, bool *ok);
sh_span lx_span(const parser *P, size_t start, size_t end);

/* ---- word.c ---- */
void wb_init(wbuild *wb);
void wb_lit(parser *P, wbuild *wb, size_t pos);            /* one literal char at pos */
void wb_lit_range(parser *P, wbuild *wb, size_t start, size_t end);
void wb_part(parser *P, wbuild *wb, sh_wpart *part);
sh_wpart *wb_new_part(parser *P, sh_wpart_kind kind, size_t start, size_t end);
/* Drops the literal character at pos, just added (a '$' or '<' that turns
 * out to begin ${ $( $[ <( ). */
void wb_unlit_at(wbuild *wb, size_t pos);
/* Resolves literal runs for ctx; returns the parts. */
sh_wpart *wb_finish(parser *P, wbuild *wb, word_ctx ctx, unsigned *flags);
/* The text of a source range as bash read it: NULs dropped and (range)
 * backslash-newline pairs removed, or (raw) not. */
char *wb_range_text(parser *P, size_t start, size_t end, size_t *len);
char *wb_raw_text(parser *P, size_t start, size_t end, size_t *len);
/* Builds the word for a token's parts, with flags, braces and assignment. */
sh_word *wd_finish(parser *P, wbuild *wb, size_t start, size_t end, word_ctx ctx);
/* Parses ${...}'s inside (its builder holds the parts between the braces). */
sh_param *wd_param(parser *P, wbuild *inner, size_t start, size_t end);
/* An assignment-shaped word whose '=' is at eq_pos: "name=" and the value
 * (tilde after = and :), with ->assign when attach. */
sh_word *wd_assignment_word(parser *P, wbuild *wb, size_t start, size_t end, size_t eq_pos,
                            bool attach, sh_word *elements);
/* The word after quote removal (here-document delimiters). */
void wd_quote_removed(parser *P, const sh_word *w, strbuf *out);
bool wd_valid_array_reference(const char *s, size_t n);
/* $(( ... )) scanned as a matched pair: arithmetic if bash would take it so
 * when expanding, else a command substitution. */
sh_wpart *wd_arith_or_comsub(parser *P, int kind, size_t start, size_t content_start,
                             size_t close_pos);
/* Decodes $'...' content (escapes) into the arena. */
char *wd_ansi_decode(parser *P, const char *s, size_t n, size_t *outlen);
/* Parses a backquote body (after bash's backslash removal); NULL when bash
 * would only fail when running it. */
sh_list *wd_backquote_body(parser *P, size_t start, size_t end, bool in_dquote,
                           bool *unparsed);
unsigned wd_flags_of_parts(const sh_wpart *parts);
bool sh_legal_identifier(const char *s, size_t n);
/* bash's assignment(): index of '=' in s when s is name[sub]=..., name+=..., else -1. */
long sh_assignment_index(const char *s, size_t n, bool compassign);

#endif
