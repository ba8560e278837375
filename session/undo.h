/*
 * `sbx log` and `sbx undo` (docs/undo.md), and the audit records of the undo journal's
 * entries. The journal itself (what is saved, how an undo writes) is sync/journal.h's.
 */
#ifndef SBX_SESSION_UNDO_H
#define SBX_SESSION_UNDO_H

#include "session/config.h"
#include "sync/journal.h"

/* Appends e (a pull or an undo the journal wrote) to the audit log: its files. */
void session_audit_journal(const sbx_config *cfg, const jnl_entry *e);

/* The commands; argv[0] is the command's name. Exit statuses as sbx's (125: its own
 * failure). */
int session_sbx_log(int argc, char **argv);
int session_sbx_undo(int argc, char **argv);

extern const char session_usage_log[], session_usage_undo[];

#endif
