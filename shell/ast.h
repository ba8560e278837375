/*
 * The syntax tree of a bash command line.
 *
 * Every node keeps its source span (byte offsets into the parsed text), so
 * the exact original text of any node can be recovered with sh_span_text()
 * and shipped verbatim to the sandbox's bash (Oils' lossless idea). All nodes
 * live in the parse's arena and are freed together.
 *
 * Shape (always this deep, so walkers need no special cases):
 *
 *   sh_list      a sequence of and-or lists, each ended by ';', '&', newline
 *    sh_andor    pipelines joined by && and ||
 *     sh_pipeline  commands joined by | or |&, with optional ! and time
 *      sh_cmd      a simple command or a compound command (which holds lists)
 *
 * Words are sequences of parts (literal, quoted, expansions); every part
 * keeps its own span too. Linked lists use ->next throughout.
 */
#ifndef SBX_SHELL_AST_H
#define SBX_SHELL_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sh_span {
    uint32_t start;  /* byte offset of the first byte */
    uint32_t end;    /* byte offset one past the last byte */
} sh_span;

typedef struct sh_list sh_list;
typedef struct sh_andor sh_andor;
typedef struct sh_pipeline sh_pipeline;
typedef struct sh_cmd sh_cmd;
typedef struct sh_word sh_word;
typedef struct sh_wpart sh_wpart;
typedef struct sh_param sh_param;
typedef struct sh_redir sh_redir;
typedef struct sh_assign sh_assign;
typedef struct sh_case_item sh_case_item;
typedef struct sh_if_clause sh_if_clause;
typedef struct sh_cond sh_cond;

/* ---- words ------------------------------------------------------------ */

typedef enum sh_wpart_kind {
    WP_LIT,          /* unquoted literal bytes, no special meaning: text */
    WP_ESCAPED,      /* backslash-escaped byte outside quotes (\x): text = "x" */
    WP_SQUOTE,       /* '...': text = content */
    WP_DQUOTE,       /* "...": parts = content (WP_LIT, WP_ESCAPED, expansions) */
    WP_ANSI,         /* $'...': text = decoded value (may contain NUL) */
    WP_LOCALE,       /* $"...": parts as WP_DQUOTE */
    WP_PARAM,        /* $name, $1, $@, ${...}: param */
    WP_CMDSUB,       /* $(...): body */
    WP_BACKQUOTE,    /* `...`: body (parsed after bash's backslash removal) */
    WP_ARITH,        /* $((...)) and $[...]: text = expression source */
    WP_PROCSUB_IN,   /* <(...): body */
    WP_PROCSUB_OUT,  /* >(...): body */
    WP_TILDE,        /* ~ or ~user where bash expands it: text = user ("" for ~) */
    WP_GLOB,         /* unquoted * ? or [...] bracket expression: text = source */
    WP_EXTGLOB,      /* ?( *( +( @( !( ... ) when extglob is on: text = source */
    WP_BRACE,        /* brace expansion {a,b} or {1..3}: text = source; parts = the
                        expression's parts when it holds quotes or expansions */
} sh_wpart_kind;

struct sh_wpart {
    sh_wpart_kind kind;
    sh_span span;        /* the part's full source, quotes and $ included */
    const char *text;    /* see kind; NUL-terminated, len is the truth */
    size_t len;
    sh_wpart *parts;     /* WP_DQUOTE, WP_LOCALE */
    sh_list *body;       /* WP_CMDSUB, WP_BACKQUOTE, WP_PROCSUB_*: the parsed commands;
                            NULL when empty, or when body_unparsed */
    bool body_unparsed;  /* text bash parses only when it runs the command (a backquote
                            body, a $(( that is not arithmetic, a substitution in a
                            here-document body) and that would fail then; in a
                            here-document body the part covers the rest of the body */
    sh_param *param;     /* WP_PARAM */
    sh_wpart *next;
};

/* ${...} and $name. For $name forms only name is set. */
struct sh_param {
    const char *name;    /* "x", "10", "@", "*", "#", "?", "-", "$", "!", "0" */
    size_t name_len;
    bool braced;         /* ${...} */
    bool length;         /* ${#x} */
    bool indirect;       /* ${!x}, ${!prefix*}, ${!arr[@]} */
    bool has_subscript;  /* ${a[...]} */
    sh_span subscript;   /* the text between [ and ] */
    const char *op;      /* NULL, or one of ":-" "-" ":=" "=" ":?" "?" ":+" "+"
                            "#" "##" "%" "%%" "/" "//" "/#" "/%" "^" "^^" "," ",,"
                            ":" (substring) "@" (transform) "*" "@" (after !prefix) */
    sh_word *arg;        /* operand: default word, pattern, offset, transform letter */
    sh_word *arg2;       /* replacement of / forms, length of : substring */
    bool bad;            /* not a valid ${...}: bash reports "bad substitution" only
                            when it expands it, so the parse succeeds */
};

/* Word flags, computed by the parser for quick checks. */
enum {
    SH_WF_QUOTED    = 1u << 0,  /* some part is quoted or escaped */
    SH_WF_EXPANSION = 1u << 1,  /* a parameter, command, arithmetic or process expansion */
    SH_WF_GLOB      = 1u << 2,  /* an unquoted glob or extglob */
    SH_WF_TILDE     = 1u << 3,  /* a tilde expansion */
    SH_WF_BRACE     = 1u << 4,  /* a brace expansion */
    SH_WF_ANSI      = 1u << 5,  /* $'...' or $"..." */
    SH_WF_ASSIGN    = 1u << 6,  /* an assignment-shaped argument (declare a=(..)) */
};

struct sh_word {
    sh_span span;
    sh_wpart *parts;
    unsigned flags;      /* SH_WF_* */
    sh_assign *assign;   /* SH_WF_ASSIGN: the argument parsed as an assignment */
    sh_word *next;
};

/* ---- assignments and redirections ------------------------------------- */

struct sh_assign {
    sh_span span;          /* name through the end of the value */
    const char *name;
    size_t name_len;
    bool has_subscript;    /* a[i]=v */
    sh_span subscript;     /* text between [ and ] */
    bool append;           /* += */
    bool is_array;         /* name=( ... ) */
    sh_word *value;        /* scalar value (an empty word when `a=`); NULL if is_array */
    sh_word *elements;     /* is_array: the words between ( and ); a [k]=v element has
                              ->assign with an empty name and subscript k */
    sh_assign *next;
};

typedef enum sh_redir_op {
    R_IN,           /* <   */
    R_OUT,          /* >   */
    R_APPEND,       /* >>  */
    R_CLOBBER,      /* >|  */
    R_RDWR,         /* <>  */
    R_DUP_IN,       /* <&  */
    R_DUP_OUT,      /* >&  */
    R_OUT_ERR,      /* &>  */
    R_APPEND_ERR,   /* &>> */
    R_HERESTRING,   /* <<< */
    R_HEREDOC,      /* <<  */
    R_HEREDOC_TAB,  /* <<- */
} sh_redir_op;

struct sh_redir {
    sh_span span;          /* from the fd number or {var} through the target word */
    int fd;                /* explicit fd number, or -1 */
    const char *fd_var;    /* {var}> form: "var", else NULL */
    size_t fd_var_len;
    sh_redir_op op;
    sh_word *target;       /* file name, fd word ("1", "-", "$fd"), here-string, or
                              here-document delimiter as written */
    /* here-documents only */
    bool heredoc_quoted;   /* some quoting in the delimiter: body is literal */
    const char *delim;     /* the delimiter after quote removal */
    size_t delim_len;
    sh_span body;          /* body lines, without the terminating delimiter line */
    sh_span body_end;      /* body plus the delimiter line (and its newline if any) */
    sh_wpart *body_parts;  /* unquoted delimiter: the body's parts (expansions) */
    sh_redir *next;
};

/* ---- commands ------------------------------------------------------------ */

typedef enum sh_cmd_kind {
    SH_SIMPLE,      /* assigns, words, redirs */
    SH_SUBSHELL,    /* ( body ) */
    SH_GROUP,       /* { body; } */
    SH_IF,          /* clauses, else_body */
    SH_WHILE,       /* cond, body */
    SH_UNTIL,       /* cond, body */
    SH_FOR,         /* var, words (has_in), body */
    SH_ARITH_FOR,   /* arith_init, arith_cond, arith_step, body */
    SH_SELECT,      /* var, words (has_in), body */
    SH_CASE,        /* subject, items */
    SH_DBRACKET,    /* [[ cond ]] */
    SH_ARITH,       /* (( arith )) */
    SH_FUNCDEF,     /* name, func_body; `function` keyword or name() form */
    SH_COPROC,      /* coproc [name] command */
} sh_cmd_kind;

struct sh_if_clause {
    sh_list *cond;
    sh_list *then_body;
    sh_span span;          /* from `if`/`elif` through the end of the then-body */
    sh_if_clause *next;    /* elif clauses */
};

typedef enum sh_case_term {
    CASE_BREAK,     /* ;;  (or none before esac) */
    CASE_FALL,      /* ;&  */
    CASE_CONTINUE,  /* ;;& */
} sh_case_term;

struct sh_case_item {
    sh_span span;
    sh_word *patterns;     /* alternatives separated by | */
    sh_list *body;         /* may be NULL for an empty body */
    sh_case_term term;
    sh_case_item *next;
};

typedef enum sh_cond_kind {
    COND_AND,       /* a && b */
    COND_OR,        /* a || b */
    COND_NOT,       /* ! a */
    COND_GROUP,     /* ( a ) */
    COND_UNARY,     /* -f word */
    COND_BINARY,    /* word == word, word =~ regex, word -nt word ... */
    COND_WORD,      /* a lone word (non-empty test) */
} sh_cond_kind;

struct sh_cond {
    sh_cond_kind kind;
    sh_span span;
    const char *op;        /* COND_UNARY/BINARY: "-f", "==", "=~", "<", ... */
    sh_word *left;         /* COND_UNARY operand, BINARY left, COND_WORD */
    sh_word *right;        /* COND_BINARY right (a regex for =~) */
    sh_cond *a, *b;        /* AND/OR: a, b; NOT/GROUP: a */
};

struct sh_cmd {
    sh_cmd_kind kind;
    sh_span span;          /* the whole command, its redirections included */
    sh_redir *redirs;      /* in source order; for compound commands the trailing ones */
    bool pipe_stderr;      /* followed by |& rather than | */
    sh_cmd *next;          /* next command in the pipeline */

    /* SH_SIMPLE */
    sh_assign *assigns;
    sh_word *words;        /* command name first; NULL for assignment- or redirection-only */

    /* SH_SUBSHELL, SH_GROUP, loops, SH_FOR/SELECT/ARITH_FOR bodies */
    sh_list *body;
    /* SH_WHILE, SH_UNTIL */
    sh_list *cond;
    /* SH_IF */
    sh_if_clause *clauses;
    sh_list *else_body;
    /* SH_FOR, SH_SELECT */
    const char *var;
    size_t var_len;
    bool has_in;           /* `in` given (else "$@") */
    sh_word *for_words;
    /* SH_ARITH_FOR: the three expressions' source; SH_ARITH: arith_cond */
    sh_span arith_init, arith_cond, arith_step;
    /* SH_CASE */
    sh_word *subject;
    sh_case_item *items;
    /* SH_DBRACKET */
    sh_cond *cond_expr;
    /* SH_FUNCDEF, SH_COPROC (name may be NULL for coproc) */
    const char *name;
    size_t name_len;
    bool function_keyword; /* `function f` form */
    sh_cmd *func_body;     /* SH_FUNCDEF body, SH_COPROC command */
};

struct sh_pipeline {
    sh_span span;          /* from ! or time through the last command */
    bool bang;             /* leading ! (two of them cancel, as in bash) */
    bool timed;            /* leading time */
    bool time_posix;       /* time -p */
    sh_cmd *cmds;
    int op;                /* how it joins the previous pipeline: 0, SH_OP_AND, SH_OP_OR */
    sh_pipeline *next;
};

enum { SH_OP_AND = 1, SH_OP_OR = 2 };

/* What ends an and-or list. */
typedef enum sh_sep {
    SH_SEP_NONE,       /* end of input or of the enclosing construct */
    SH_SEP_SEMI,       /* ; */
    SH_SEP_AMP,        /* & */
    SH_SEP_NEWLINE,    /* newline */
} sh_sep;

struct sh_andor {
    sh_span span;          /* first pipeline through last, separator excluded */
    sh_pipeline *pipes;
    sh_sep sep;
    sh_andor *next;
};

struct sh_list {
    sh_span span;
    sh_andor *items;
};

#endif
