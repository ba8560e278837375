# shell/: the parser (shell/README.md): lexer, grammar, words, AST helpers, JSON.
LIB_SRCS += shell/lexer.c shell/parser.c shell/word.c shell/ast.c shell/ast_json.c
TEST_HELPERS += tests/shell/parsecheck.c

# The parser's libFuzzer driver (clang): `make fuzz` runs it FUZZ_SECONDS,
# seeded and starting from tests/fuzz/corpus-parse. Inputs that ever broke
# it live in tests/shell/regress/ and run in make check.
PARSER_SRCS := shell/lexer.c shell/parser.c shell/word.c shell/ast.c shell/ast_json.c
FUZZ_C += tests/fuzz/fuzz-parse.c
build-fuzz/fuzz-parse: tests/fuzz/fuzz-parse.c $(PARSER_SRCS) $(COMMON_SRCS) $(wildcard shell/*.h common/*.h)
	$(call fuzz_link,-lcjson)
fuzz-parse: build-fuzz/fuzz-parse
	$(call fuzz_run,parse,4096)
fuzz: fuzz-parse
.PHONY: fuzz-parse
TEST_C += tests/shell/t-parse.c
TEST_C += tests/shell/t-fuzz-regress.c

# bench/parse*: parse time per agent command line, throughput on the machine's
# shell scripts against bash -n (see shell/README.md for the figures).
BENCH_C += bench/parse-bench.c
PARSE_BENCH_DIRS ?= /usr/bin /etc
$(BUILD)/bench/parse-bench: bench/parse-bench.c $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/bench/parse-bench.d -MT $@ $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libsbx.a $(LDLIBS)
bench-parse: $(BUILD)/bench/parse-bench
	$(BUILD)/bench/parse-bench $(PARSE_BENCH_DIRS)
bench: bench-parse
.PHONY: bench-parse
