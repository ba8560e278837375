/*
 * Which runtime a local sandbox uses: the one asked for
 * (AGENT_SANDBOX_LOCAL_RUNTIME), or for auto runsc when it is installed,
 * else bubblewrap.
 */
#include "local/local.h"

#include <stdlib.h>

#include "common/fsutil.h"

const char *local_runtime_name(local_runtime rt)
{
    switch (rt) {
    case LOCAL_RUNTIME_RUNSC: return "runsc";
    case LOCAL_RUNTIME_BWRAP: return "bwrap";
    case LOCAL_RUNTIME_AUTO: break;
    }
    return "auto";
}

int local_runtime_resolve(local_runtime want, local_runtime *out, char **path, sbx_err *err)
{
    char *p = NULL;
    if (want == LOCAL_RUNTIME_AUTO || want == LOCAL_RUNTIME_RUNSC) {
        p = sbx_which("runsc");
        if (p) {
            *out = LOCAL_RUNTIME_RUNSC;
        } else if (want == LOCAL_RUNTIME_RUNSC) {
            return sbx_errf(err, "runsc (gVisor) is not installed: apt-get install runsc "
                            "(or make deps), or set AGENT_SANDBOX_LOCAL_RUNTIME=bwrap");
        }
    }
    if (!p) {
        p = sbx_which("bwrap");
        if (!p)
            return sbx_errf(err, want == LOCAL_RUNTIME_BWRAP
                            ? "bubblewrap is not installed: apt-get install bubblewrap "
                              "(or make deps), or set AGENT_SANDBOX_LOCAL_RUNTIME=runsc"
                            : "no sandbox runtime: install gVisor or bubblewrap with "
                              "apt-get install runsc bubblewrap (or make deps)");
        *out = LOCAL_RUNTIME_BWRAP;
    }
    if (path)
        *path = p;
    else
        free(p);
    return 0;
}

/*
 * gVisor's releases are named by date ("runsc version 0.0~20240729.0" from Debian,
 * "runsc version release-20240729.0" from Google's builds). The date says which
 * platforms it has: systrap, whose system calls cost microseconds, became runsc's
 * default in mid-2023; before that a machine without KVM had only ptrace, where each
 * costs tens of microseconds (docs/performance.md).
 */
unsigned long local_runsc_release_date(const char *version_line)
{
    for (const char *p = version_line; *p; p++) {
        if (p[0] == '2' && p[1] == '0' && (p == version_line || p[-1] == '~' || p[-1] == '-')) {
            unsigned long d = 0;
            int n = 0;
            while (n < 8 && p[n] >= '0' && p[n] <= '9')
                d = d * 10 + (unsigned long)(p[n++] - '0');
            if (n == 8 && !(p[n] >= '0' && p[n] <= '9'))
                return d;
        }
    }
    return 0;
}

bool local_runsc_has_systrap(unsigned long release_date)
{
    return release_date >= LOCAL_RUNSC_SYSTRAP_DATE;
}
