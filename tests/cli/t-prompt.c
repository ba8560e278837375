/* bash's prompt escapes, expanded on the host (cli/prompt.h). */
#include "tests/lib/tap.h"

#include "cli/prompt.h"

#include <stdlib.h>

static prompt_ctx ctx(void)
{
    prompt_ctx c = {
        .user = "ada", .host = "box.example.org", .cwd = "/home/ada/repo/sub",
        .home = "/home/ada", .shell = "sbxsh", .version = "0.1", .release = "0.1.0",
        .tty = "pts/3", .jobs = 2, .history_number = 41, .command_number = 7,
        .root = false, .now = 0,
    };
    return c;
}

static const char *ex(const char *ps, const prompt_ctx *c)
{
    static strbuf out = STRBUF_INIT;
    strbuf_reset(&out);
    prompt_expand(ps, c, &out);
    return out.buf;
}

int main(void)
{
    prompt_ctx c = ctx();
    setenv("TZ", "UTC", 1);
    tzset();

    is_str(ex("[sbx:demo] \\w\\$ ", &c), "[sbx:demo] ~/repo/sub$ ", "the default: session, ~/cwd, $");
    is_str(ex("\\u@\\h:\\W\\$ ", &c), "ada@box:sub$ ", "\\u \\h \\W");
    is_str(ex("\\H", &c), "box.example.org", "\\H is the whole host name");
    is_str(ex("\\s-\\v \\V", &c), "sbxsh-0.1 0.1.0", "\\s \\v \\V");
    is_str(ex("\\j \\l \\! \\#", &c), "2 pts/3 41 7", "\\j \\l \\! \\#");
    is_str(ex("a\\nb\\rc\\ad\\ee\\\\", &c), "a\nb\rc\ad\x1b" "e\\", "\\n \\r \\a \\e \\\\");
    is_str(ex("\\[\\e[32m\\]x\\[\\e[0m\\]", &c), "\001\x1b[32m\002x\001\x1b[0m\002",
           "\\[ \\] are readline's invisible markers");
    is_str(ex("\\101\\1022", &c), "AB2", "\\NNN is octal, three digits at most");
    is_str(ex("\\t \\A \\T \\@", &c), "00:00:00 00:00 12:00:00 12:00 AM", "times");
    is_str(ex("\\d", &c), "Thu Jan 01", "\\d");
    is_str(ex("\\D{%Y-%m}", &c), "1970-01", "\\D{format}");
    is_str(ex("\\q\\", &c), "\\q\\", "an unknown escape and a trailing backslash stay");
    /* bash's second pass (promptvars): read as in double quotes, as ${PS1@P} shows */
    is_str(ex("\\$", &c), "$", "\\$ is $ for a user (quoted by the first pass, unquoted by the second)");
    is_str(ex("\"\\\\\"", &c), "\"\"", "OpenHands' \"\\\\\" (an empty JSON string after its PROMPT_COMMAND) shows \"\"");
    is_str(ex("a\\\\b", &c), "a\\b", "a\\\\b shows a\\b");
    is_str(ex("a\\\\\\\\b", &c), "a\\b", "a\\\\\\\\b shows a\\b too");
    is_str(ex("a\\\"b", &c), "a\"b", "a\\\"b shows a\"b");
    is_str(ex("x\\\ny", &c), "xy", "a backslash-newline goes");
    is_str(ex("a\\'b", &c), "a\\'b", "a backslash before anything else stays");
    is_str(ex("\\\"\\u\\\\\"", &c), "\"ada\"", "quotes around \\u");
    c.cwd = "/tmp/d\"q\\b$x";
    is_str(ex("\\w", &c), "/tmp/d\"q\\b$x", "\\w shows the directory as it is, quotes and backslashes too");
    c.cwd = "/home/ada/repo/sub";
    c.root = true;
    is_str(ex("\\$", &c), "#", "\\$ is # for root");
    c.cwd = "/home/ada";
    is_str(ex("\\w \\W", &c), "~ ~", "at home: ~ for both");
    c.cwd = "/home/adam";
    is_str(ex("\\w", &c), "/home/adam", "a directory that only starts like home is not ~");
    c.cwd = "/";
    is_str(ex("\\w \\W", &c), "/ /", "at /");
    ok(!prompt_needs_shell("\\u \\$ \\w"), "escapes alone need no shell");
    ok(prompt_needs_shell("$PWD> "), "$VAR needs the shell");
    ok(prompt_needs_shell("`date` "), "a backquote needs the shell");
    ok(!prompt_needs_shell("\\`x\\$"), "escaped ones do not");

    /* prompt_filter: what of a prompt the sandbox chose reaches the terminal */
    {
        static strbuf out = STRBUF_INIT;
#define FILTERED(ps) (strbuf_reset(&out), prompt_filter((ps), sizeof(ps) - 1, &out), out.buf ? out.buf : "")
        is_str(FILTERED("\001\033[1;32m\002ok> "), "\001\033[1;32m\002ok> ",
               "colours and readline's markers pass");
        is_str(FILTERED("\033]0;title\007x> "), "\033]0;title\007x> ", "a title (OSC 0, BEL) passes");
        is_str(FILTERED("\033]2;t\033\\x> "), "\033]2;t\033\\x> ", "a title ended by ST passes");
        is_str(FILTERED("a\033]52;c;aGk=\007b> "), "ab> ", "OSC 52 (the clipboard) is dropped");
        is_str(FILTERED("a\033]52;c;?\033\\b> "), "ab> ", "...also a clipboard read");
        is_str(FILTERED("a\033[6nb> "), "ab> ", "a cursor position query (DSR) is dropped");
        is_str(FILTERED("a\033[cb\033P$qm\033\\> "), "ab> ", "DA and DECRQSS queries are dropped");
        is_str(FILTERED("a\033[2J\033[Hb> "), "ab> ", "clearing the screen and moving the cursor: dropped");
        is_str(FILTERED("a\033]0;ti\033[6ntle\007b> "), "ab> ", "a title hiding a control is dropped");
        is_str(FILTERED("a\033]4;1;?\007b> "), "ab> ", "a colour query (OSC 4 ?) is dropped");
        is_str(FILTERED("a\033]0;unterminated"), "a", "an OSC without its end is dropped");
        is_str(FILTERED("x\001\033[6\002n> "), "x\001\002n> ", "a query cut by a marker is dropped");
#undef FILTERED
        strbuf_release(&out);
    }

    return done_testing();
}
