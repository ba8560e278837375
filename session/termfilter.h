/*
 * A streaming filter for output relayed to a terminal, in two modes.
 *
 * Plain (session_termfilter_init): output relayed through pipes to a terminal. A command in the
 * sandbox must not be able to move the cursor, clear the screen, rewrite the window title,
 * switch character sets or query the terminal (whose answers would be typed into the next
 * prompt). Kept: printable text and UTF-8, tab, newline, carriage return, backspace, bell,
 * and SGR sequences (ESC [ params m: colours, bold). Dropped: every other escape sequence
 * (CSI, OSC, DCS, SOS, PM, APC, ESC x), other C0 controls, and C1 controls, encoded in UTF-8
 * (U+0080..U+009F) or as a bare byte 0x80..0x9f that continues no UTF-8 character (the 8-bit
 * CSI 0x9b, OSC 0x9d, DCS 0x90 of a terminal that takes 8-bit controls). Both modes.
 *
 * Pty (session_termfilter_init_pty): a command on a pseudo-terminal (vi, less, top need cursor
 * movement, the alternate screen, colours), so escape sequences pass, but not what a hostile
 * program could turn against the person at the terminal:
 *   - OSC 52 (clipboard write or read) and every OSC not named below (OSC 7's cwd, 777 and 9
 *     notifications, 1337's file transfers, 50 fonts...);
 *   - colour queries (OSC 4/10-19 with a `?`): their answers are typed into the input;
 *   - hyperlinks (OSC 8) to anything but http:, https: and mailto: (a file: link names a
 *     path that opens on the person's machine, not in the sandbox);
 *   - an OSC whose text holds a control (a C0 byte, DEL, or a UTF-8 C1 control that a
 *     terminal may take as its end, leaving the rest to be read as a new sequence);
 *   - CSI ... t (window moves, resizes and reports: `CSI 21 t` types the title back into
 *     the input) but the title stack's push and pop (22, 23), and CSI ... i (media copy:
 *     printer controller mode);
 *   - DCS (DECRQSS `ESC P $ q`, XTGETTCAP: the terminal answers into the input), SOS, PM,
 *     APC; ENQ (0x05: the answerback string); C1 controls (UTF-8 encoded or 8-bit);
 *   - every request for a report, whose answer the terminal types into the input (the next
 *     line the person types): DSR (`CSI 5 n`, `CSI 6 n`, `CSI ? 6 n`...), DA1/DA2/DA3
 *     (`CSI c`, `CSI > c`, `CSI = c`), DECID (`ESC Z`), DECRQM (`CSI ? Ps $ p`), XTVERSION
 *     (`CSI > q`), DECREQTPARM (`CSI x`), XTQMODKEYS (`CSI ? m`), the kitty keyboard query
 *     (`CSI ? u`), XTSMGRAPHICS, DECRQPSR, DECRQTSR, DECRQCRA, DECRQLP, XTREPORTSGR, and the
 *     window reports above. A program that asks gets no answer.
 *   Kept: text, every other C0 control, ESC x and ESC with intermediates (save/restore cursor,
 *   keypad modes, charsets), every other CSI (cursor, erase, scroll regions, modes, the
 *   alternate screen, SGR, the cursor's shape), OSC 0/1/2 (titles), OSC 4/10-19 and
 *   104/110-119 that set colours, OSC 8 to the schemes above.
 *
 * Sequences split across writes are handled: the state carries over.
 *
 * Pty mode also follows the modes the program sets (DECSET/DECRST and the keypad): the
 * alternate screens, a hidden cursor, mouse and focus reports, bracketed paste, application
 * cursor keys and keypad, insert mode. session_termfilter_pty_reset() writes what turns off those
 * still on, for when the program is done with the terminal: one that crashed, was killed or
 * is hostile must not leave the person's prompt on the alternate screen, the cursor hidden,
 * or mouse moves typing escape sequences into the next command line.
 */
#ifndef SBX_SESSION_TERMFILTER_H
#define SBX_SESSION_TERMFILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

#define SBX_TERMFILTER_SEQ_MAX 64
/* An OSC kept in pty mode is judged whole, so it is held until its end; a longer one
 * (a hyperlink of over 2 KiB) is dropped. */
#define SBX_TERMFILTER_OSC_MAX 2048

typedef struct sbx_termfilter {
    int state;
    bool pty;
    size_t seqlen;
    unsigned char seq[SBX_TERMFILTER_SEQ_MAX];
    unsigned modes;     /* pty mode: the modes set and not reset (termfilter.c: MODE_*) */
    unsigned char utf8_need;          /* continuation bytes the last lead byte still wants */
    unsigned char utf8_lo, utf8_hi;   /* the range of the next one */
    size_t osclen;
    bool osc_over;      /* the OSC outgrew osc[]: dropped at its end */
    unsigned char osc[SBX_TERMFILTER_OSC_MAX];
} sbx_termfilter;

void session_termfilter_init(sbx_termfilter *f);
void session_termfilter_init_pty(sbx_termfilter *f);
/* Appends what may reach the terminal of buf[0..len) to out. */
void session_termfilter_feed(sbx_termfilter *f, const void *buf, size_t len, strbuf *out);
/* Pty mode: appends to out the sequences that turn off the modes the program left on (their
 * defaults: the main screen, the cursor shown, no reports, normal keys), and forgets them.
 * Nothing when none is on. A sequence the program left half written is dropped. */
void session_termfilter_pty_reset(sbx_termfilter *f, strbuf *out);

#endif
