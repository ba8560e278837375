/*
 * The audit log (docs/undo.md): JSON lines under the state root (audit.jsonl), appended by
 * sbxsh (each line it ran, its parts, the host argv) and by the holder (each pull's files).
 * Append-only: O_APPEND, one write() per record, under an flock of audit.lock (so that a
 * rotation never splits a record); past max bytes the file rotates (audit.jsonl.1 .. .3).
 */
#ifndef SBX_COMMON_AUDIT_H
#define SBX_COMMON_AUDIT_H

#include "common/strbuf.h"
#include "common/util.h"

#include <stdint.h>

#define SBX_AUDIT_FILE "audit.jsonl"
#define SBX_AUDIT_KEEP 3

/* Appends record (one JSON object, without its newline) to dir/audit.jsonl; max is the
 * size at which the file rotates (0: nothing is written). 0, or -1 with err. */
int sbx_audit_append(const char *dir, uint64_t max, const char *record, size_t len, sbx_err *err);

#endif
