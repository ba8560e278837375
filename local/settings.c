/*
 * The local backend's section of the session configuration (cfg->local), read
 * from AGENT_SANDBOX_LOCAL_* by the class's configure hook, and what of it fixes
 * a sandbox's shape (the fingerprint hook): the runtime as asked and the network.
 */
#include "local/local.h"

#include <stdlib.h>
#include <string.h>

/* Unset and empty are the same: the default. */
static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int local_configure(sbx_config *cfg, sbx_err *err)
{
    const char *v = env_nonempty("AGENT_SANDBOX_LOCAL_RUNTIME");

    if (!v || !strcmp(v, "auto"))
        cfg->local.runtime = SBX_RUNTIME_AUTO;
    else if (!strcmp(v, "runsc") || !strcmp(v, "gvisor"))
        cfg->local.runtime = SBX_RUNTIME_RUNSC;
    else if (!strcmp(v, "bwrap") || !strcmp(v, "bubblewrap"))
        cfg->local.runtime = SBX_RUNTIME_BWRAP;
    else
        return sbx_errf(err, "AGENT_SANDBOX_LOCAL_RUNTIME='%s': use runsc, bwrap or auto", v);

    v = env_nonempty("AGENT_SANDBOX_LOCAL_NETWORK");
    if (v && !strcmp(v, "host"))
        cfg->local.network_host = true;
    else if (v && strcmp(v, "none"))
        return sbx_errf(err, "AGENT_SANDBOX_LOCAL_NETWORK='%s': use none (the default) or host",
                        v);
    return 0;
}

void local_fingerprint(const sbx_config *cfg, strbuf *out)
{
    strbuf_addf(out, "runtime=%s network=%s ", sbx_runtime_name(cfg->local.runtime),
                cfg->local.network_host ? "host" : "none");
}
