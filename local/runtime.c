/*
 * Which runtime a local sandbox uses: the one asked for
 * (AGENT_SANDBOX_LOCAL_RUNTIME), or for auto runsc when it is installed,
 * else bubblewrap.
 */
#include "local/local.h"

#include <stdlib.h>

#include "common/fsutil.h"

int sbx_local_runtime_resolve(sbx_runtime want, sbx_runtime *out, char **path, sbx_err *err)
{
    char *p = NULL;
    if (want == SBX_RUNTIME_AUTO || want == SBX_RUNTIME_RUNSC) {
        p = sbx_which("runsc");
        if (p) {
            *out = SBX_RUNTIME_RUNSC;
        } else if (want == SBX_RUNTIME_RUNSC) {
            return sbx_errf(err, "runsc (gVisor) is not installed: apt-get install runsc "
                            "(or make deps), or set AGENT_SANDBOX_LOCAL_RUNTIME=bwrap");
        }
    }
    if (!p) {
        p = sbx_which("bwrap");
        if (!p)
            return sbx_errf(err, want == SBX_RUNTIME_BWRAP
                            ? "bubblewrap is not installed: apt-get install bubblewrap "
                              "(or make deps), or set AGENT_SANDBOX_LOCAL_RUNTIME=runsc"
                            : "no sandbox runtime: install gVisor or bubblewrap with "
                              "apt-get install runsc bubblewrap (or make deps)");
        *out = SBX_RUNTIME_BWRAP;
    }
    if (path)
        *path = p;
    else
        free(p);
    return 0;
}
