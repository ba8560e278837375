/*
 * The syntax tree as JSON (sbxsh --ast), built with cJSON. The shape is
 * documented in shell/README.md.
 */
#ifndef SBX_SHELL_AST_JSON_H
#define SBX_SHELL_AST_JSON_H

#include "common/util.h"
#include "shell/parse.h"

#include <stdio.h>

/* Prints p's tree (p->status must be SH_OK) to out, followed by a newline. */
int sh_ast_json_print(const sh_parse *p, FILE *out, sbx_err *err);

/* The tree as a JSON string (malloc'd), or NULL if cJSON runs out of memory. */
char *sh_ast_json_string(const sh_parse *p, bool pretty);

#endif
