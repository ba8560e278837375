# shell/: the front end. The lead engineer owns main.c, options.[ch] and run.[ch];
# the parser's files (lexer, parser, AST helpers, JSON) are added below them.
SBXSH_MAIN := shell/main.c
LIB_SRCS += shell/options.c shell/run.c
# The parser (shell/README.md): lexer, grammar, words, AST helpers, JSON.
LIB_SRCS += shell/lexer.c shell/parser.c shell/word.c shell/ast.c shell/ast_json.c
TEST_HELPERS += tests/shell/parsecheck.c
