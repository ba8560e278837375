/*
 * The host-command policy for the front end (cli/policy.c): the files it is read from,
 * the one loaded per process for the route context, and `sbxsh --policy`, which is what
 * `sbx policy show|check [FILE]` runs.
 */
#ifndef SBX_CLI_POLICY_H
#define SBX_CLI_POLICY_H

#include "common/strvec.h"
#include "router/policy.h"
#include "router/route.h"

#include <stdbool.h>

/* The policy files, in the order they are read: the system's, then the person's
 * (AGENT_SANDBOX_POLICY, else the XDG one); *user_explicit when AGENT_SANDBOX_POLICY
 * named it (then it must exist). */
void cli_policy_paths(strvec *paths, bool *user_explicit);
/* The policy, loaded on the first call against ctx (problems said once, as warnings). */
const route_policy *cli_policy_for(const route_ctx *ctx);
/* `sbxsh --policy show|check [FILE]` (argv[0] is "--policy"): the exit status. */
int cli_policy_main(int argc, char **argv);

#endif
