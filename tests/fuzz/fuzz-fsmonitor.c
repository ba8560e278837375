/*
 * libFuzzer driver for git's fsmonitor in the sandbox (sync/fsmonitor.c): a request from any
 * process of the sandbox is parsed within its bounds; the hook's check of an answer takes
 * only what git can read (a token, then non-empty NUL-terminated paths); and the agent's
 * journal, driven by a fuzzed series of events, losses, scans and questions, always answers
 * with its own current token and something that check takes.
 *
 *   make fuzz-fsmonitor FUZZ_SECONDS=300
 */
#include "sync/fsmonitor.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next NUL-terminated string of the input (or the rest), copied. */
static char *next_str(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nul = memchr(*p, '\0', (size_t)(end - *p));
    size_t len = nul ? (size_t)(nul - *p) : (size_t)(end - *p);
    char *s = malloc(len + 1);
    memcpy(s, *p, len);
    s[len] = '\0';
    *p += len + (nul ? 1 : 0);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *tok, *cwd;
    const uint8_t *p = data + 1, *end = data + size;
    char *bases[1] = { "/nonexistent-sbx-fsmonitor-fuzz" };
    fsm_state s;
    strbuf out = STRBUF_INIT;
    char last[64] = "";

    if (!size)
        return 0;
    if (data[0] == 0) {
        if (fsm_parse_request((const char *)p, size - 1, &tok, &cwd) == 0 &&
            (strlen(tok) > FSM_TOKEN_MAX || cwd[0] != '/' || strlen(cwd) > FSM_CWD_MAX))
            abort();
        return 0;
    }
    if (data[0] == 1) {
        if (fsm_answer_ok((const char *)p, size - 1)) {
            const char *b = (const char *)p;
            size_t n = size - 1, t = strlen(b);
            if (t == 0 || t > FSM_TOKEN_MAX || b[n - 1] != '\0')
                abort();
            for (size_t i = t + 1; i < n; i++)
                if (!b[i] && !b[i - 1] && i - 1 > t)
                    abort();   /* an empty path */
        }
        return 0;
    }
    fsm_init(&s, 42);
    while (p < end) {
        uint8_t op = *p++;
        char *a = next_str(&p, end);
        switch (op % 6) {
        case 0:
        case 1:
            fsm_note(&s, op >> 7, a, strlen(a), op & 0x10, op & 0x20);
            break;
        case 2:
            fsm_note_blind(&s, op >> 7, a, strlen(a));
            break;
        case 3:
            fsm_lost(&s, op & 0x10);
            break;
        case 4:
            fsm_scanned(&s, !(op & 0x10), bases, 1);
            break;
        case 5: {
            char *prefix = next_str(&p, end);
            const char *token = (op & 0x10) ? last : a;
            fsm_answer(&s, token, !(op & 0x20), op >> 7, bases[0], prefix, &out);
            if (!fsm_answer_ok(out.buf, out.len) || strncmp(out.buf, "sbx1:000000000000002a:", 22))
                abort();
            strncpy(last, out.buf, sizeof(last) - 1);
            free(prefix);
            break;
        }
        }
        free(a);
    }
    strbuf_release(&out);
    fsm_release(&s);
    return 0;
}
