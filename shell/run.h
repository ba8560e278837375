/*
 * Running commands: the -c, script, stdin and interactive loops, and
 * --route. Called by main() once the options are parsed; returns the exit
 * status sbxsh should end with.
 */
#ifndef SBX_SHELL_RUN_H
#define SBX_SHELL_RUN_H

#include "shell/options.h"

int shell_run(const sh_options *o);

#endif
