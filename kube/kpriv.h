/*
 * What kubeconfig.c and client.c share and nobody else needs.
 */
#ifndef SBX_KUBE_KPRIV_H
#define SBX_KUBE_KPRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base64.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "kube/kubeconfig.h"


/* kube_exec_credential with a hook polled while the plugin runs (Ctrl-C) and a bound on
 * its run time (0: the default, KUBE_EXEC_TIMEOUT_MS). */
#define KUBE_EXEC_TIMEOUT_MS 60000
int kube_exec_credential_poll(const kube_target *t, bool (*interrupted)(void *ctx), void *ctx,
                              unsigned timeout_ms, kube_credential *cred, sbx_err *err);

#endif
