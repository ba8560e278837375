/*
 * A streaming filter for output relayed to a terminal: a command in the
 * sandbox must not be able to move the cursor, clear the screen, rewrite the
 * window title, switch character sets or query the terminal (whose answers
 * would be typed into the next prompt), unless the person asked for an
 * interactive tty session.
 *
 * Kept: printable text and UTF-8, tab, newline, carriage return, backspace,
 * bell, and SGR sequences (ESC [ params m: colours, bold). Dropped: every
 * other escape sequence (CSI, OSC, DCS, SOS, PM, APC, ESC x), other C0
 * controls, and C1 controls encoded in UTF-8 (U+0080..U+009F; a bare byte
 * 0x80..0x9f is a continuation byte to a UTF-8 terminal and is kept).
 * Sequences split across writes are handled: the state carries over.
 */
#ifndef SBX_SESSION_TERMFILTER_H
#define SBX_SESSION_TERMFILTER_H

#include <stddef.h>

#include "common/strbuf.h"

#define SBX_TERMFILTER_SEQ_MAX 64

typedef struct sbx_termfilter {
    int state;
    size_t seqlen;
    unsigned char seq[SBX_TERMFILTER_SEQ_MAX];
} sbx_termfilter;

void sbx_termfilter_init(sbx_termfilter *f);
/* Appends what may reach the terminal of buf[0..len) to out. */
void sbx_termfilter_feed(sbx_termfilter *f, const void *buf, size_t len, strbuf *out);

#endif
