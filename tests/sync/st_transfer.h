/*
 * One delta from a tree to an applier in the same process, frame by frame, for the unit
 * tests of delta.c and apply.c (t-delta, t-sparse, t-unsynced): the scan, the encoder and
 * the applier exactly as the two ends of a connection use them, without the connection.
 */
#ifndef SBX_TESTS_ST_TRANSFER_H
#define SBX_TESTS_ST_TRANSFER_H

#include "sync/delta.h"
#include "sync/safefs.h"
#include "tests/sync/synctest.h"

typedef struct st_xfer {
    bool filter_git;             /* the host's .git filter on the sending side */
    void (*between)(void);       /* runs once after the first fill (to change the tree mid-send) */
    void (*mid)(apply_rx *);     /* runs once after the first content frame was applied */
    size_t wire_bytes, holes;    /* out: bytes of frames, HOLE frames */
} st_xfer;

/* Scans src and streams its delta (sequence seq) into rx; returns apply_frame's last
 * result (1: the delta is done). x may be NULL. */
static inline int st_transfer(mf_tree *src, apply_rx *rx, uint64_t seq, st_xfer *x,
                              sbx_err *err)
{
    st_xfer none = { 0 };
    mf_delta d = { 0 };
    delta_tx tx;
    strbuf out = STRBUF_INIT;
    bool full, done = false;
    int r = 0;
    size_t off = 0;
    void (*between)(void), (*mid)(apply_rx *);

    if (!x)
        x = &none;
    between = x->between;
    mid = x->mid;
    x->wire_bytes = x->holes = 0;
    mf_scan(src, &d, &full, st_warn, NULL, err);
    delta_tx_init(&tx, src, &d, seq, 0, x->filter_git, st_warn, NULL);
    while (!done && r >= 0) {
        done = delta_tx_fill(&tx, &out, out.len + 300000);
        if (between) {
            between();
            between = NULL;
        }
        for (;;) {
            wire_frame f;
            int p = wire_parse((const uint8_t *)out.buf + off, out.len - off, &f, err);
            if (p <= 0) {
                if (p < 0)
                    r = -1;
                break;
            }
            off += WIRE_HEADER + f.len;
            x->wire_bytes += WIRE_HEADER + f.len;
            x->holes += f.type == WIRE_HOLE;
            if (f.type == WIRE_DELTA_BEGIN) {
                uint64_t s, a;
                wire_get_u64_pair(&f, &s, &a, err);
                r = apply_begin(rx, s, a, err);
            } else {
                r = apply_frame(rx, &f, err);
                if (mid && (f.type == WIRE_CHUNK || f.type == WIRE_HOLE)) {
                    mid(rx);
                    mid = NULL;
                }
            }
            if (r < 0)
                break;
        }
    }
    delta_tx_release(&tx);
    strbuf_release(&out);
    return r;
}

/* Whether dir holds a staging directory of the host's apply (a pull left half done). */
static inline bool st_has_stage(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    bool found = false;
    while (d && (de = readdir(d)))
        found |= !strncmp(de->d_name, SF_STAGE_PREFIX, strlen(SF_STAGE_PREFIX));
    if (d)
        closedir(d);
    return found;
}

#endif
