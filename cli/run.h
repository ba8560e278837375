/*
 * Running commands: the -c, script, stdin and interactive loops, and
 * --route. Called by main() once the options are parsed; returns the exit
 * status sbxsh should end with.
 */
#ifndef SBX_CLI_RUN_H
#define SBX_CLI_RUN_H

#include "cli/options.h"

int cli_shell_run(const cli_options *o);

/* bash's check before it runs (or -n checks) a script: a NUL byte in the
 * first 80 bytes before the first newline makes it "cannot execute binary
 * file", status 126. */
bool cli_script_is_binary(const char *text, size_t len);

#endif
