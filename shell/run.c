#include "shell/run.h"

#include <stdio.h>

/* Placeholder until the router and the session client exist (issues 3 and 5). */
int shell_run(const sh_options *o)
{
    fprintf(stderr, "%s: running commands is not built yet; use -n or --ast\n", o->progname);
    return SBX_EXIT_INTERNAL;
}
