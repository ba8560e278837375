/*
 * The local backend's section of the session configuration (cfg->local), read
 * from AGENT_SANDBOX_LOCAL_* by the class's configure hook, and what of it fixes
 * a sandbox's shape (the fingerprint hook): the runtime as asked, the network and the
 * egress allowlist.
 */
#include "local/local.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Unset and empty are the same: the default. */
static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* AGENT_SANDBOX_EGRESS: only with AGENT_SANDBOX_LOCAL_NETWORK=allowlist, which needs it;
 * checked whole (local/egress.h), kept trimmed and lower-case so that the same list
 * written otherwise is the same shape. */
static int load_egress(sbx_config *cfg, const char *mode, sbx_err *err)
{
    const char *v = env_nonempty("AGENT_SANDBOX_EGRESS");
    sbx_egress_policy pol;

    if (v && !cfg->local.network_allowlist)
        return sbx_errf(err, "AGENT_SANDBOX_EGRESS is set, but AGENT_SANDBOX_LOCAL_NETWORK is "
                        "'%s': the list applies only with AGENT_SANDBOX_LOCAL_NETWORK=allowlist",
                        mode ? mode : "none");
    if (!cfg->local.network_allowlist)
        return 0;
    if (!v)
        return sbx_errf(err, "AGENT_SANDBOX_LOCAL_NETWORK=allowlist needs AGENT_SANDBOX_EGRESS: "
                        "the hosts the sandbox may reach, comma-separated (e.g. "
                        "registry.npmjs.org,pypi.org)");
    if (sbx_egress_parse(v, &pol, err) < 0)
        return -1;
    sbx_egress_policy_free(&pol);
    sbx_split_list(&cfg->local.egress, v, ',');
    for (size_t i = 0; i < cfg->local.egress.n; i++) {
        char *e = cfg->local.egress.v[i], *a = e, *z;
        while (isspace((unsigned char)*a))
            a++;
        memmove(e, a, strlen(a) + 1);
        for (z = e + strlen(e); z > e && isspace((unsigned char)z[-1]); z--)
            ;
        *z = '\0';
        for (char *p = e; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    for (size_t i = 0; i < cfg->local.egress.n;) {
        if (!cfg->local.egress.v[i][0]) {
            free(cfg->local.egress.v[i]);
            memmove(&cfg->local.egress.v[i], &cfg->local.egress.v[i + 1],
                    (cfg->local.egress.n - i) * sizeof(char *));
            cfg->local.egress.n--;
        } else {
            i++;
        }
    }
    return 0;
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
    else if (v && !strcmp(v, "allowlist"))
        cfg->local.network_allowlist = true;
    else if (v && strcmp(v, "none"))
        return sbx_errf(err, "AGENT_SANDBOX_LOCAL_NETWORK='%s': use none (the default), host, or "
                        "allowlist (with AGENT_SANDBOX_EGRESS)", v);
    return load_egress(cfg, v, err);
}

void local_fingerprint(const sbx_config *cfg, strbuf *out)
{
    strbuf_addf(out, "runtime=%s network=%s", sbx_runtime_name(cfg->local.runtime),
                local_net_name(cfg->local.network_host, cfg->local.network_allowlist));
    /* the list is part of the shape: a sandbox's proxy admits what it was started with */
    for (size_t i = 0; i < cfg->local.egress.n; i++)
        strbuf_addf(out, "%s%s", i ? "," : " egress=", cfg->local.egress.v[i]);
    strbuf_addch(out, ' ');
}

/* A session that named its runtime serves a call that leaves it to the default (auto):
 * the person who started it with AGENT_SANDBOX_LOCAL_RUNTIME=bwrap, then ran sbxsh without
 * the variable, was refused for the session's whole life. A session that took the default
 * serves a call naming the runtime the default chose (the one this machine resolves auto
 * to, as the backend did when it started). Network and egress must still match. */
void local_fingerprint_also(const sbx_config *cfg, strvec *also)
{
    sbx_config other = *cfg;
    strbuf sb = STRBUF_INIT;
    sbx_runtime chosen;

    if (cfg->local.runtime != SBX_RUNTIME_AUTO) {
        other.local.runtime = SBX_RUNTIME_AUTO;
    } else {
        if (sbx_local_runtime_resolve(SBX_RUNTIME_AUTO, &chosen, NULL, NULL) < 0)
            return;
        other.local.runtime = chosen;
    }
    local_fingerprint(&other, &sb);
    strvec_push(also, sb.buf);
    strbuf_release(&sb);
}

/* What every local command gets besides sbx_sandbox_env()'s: USER and LOGNAME as the
 * caller has them, and with AGENT_SANDBOX_LOCAL_NETWORK=allowlist the agent's relay to the
 * host's egress proxy (local/egress.h), in both spellings tools read; it replaces a
 * forwarded host proxy, which the sandbox could not reach anyway. */
void local_sandbox_env(const sbx_config *cfg, strvec *vars)
{
    static const char *const names[] = { "http_proxy", "https_proxy", "HTTP_PROXY",
                                         "HTTPS_PROXY" };
    static const char *const who[] = { "USER", "LOGNAME" };
    /* The local sandbox runs as the caller (uid, gid, and so the name `id -un` finds in
     * the /etc/passwd it sees): the login names bash has here are the sandbox's too, as
     * they are, and absent when absent (bash sets neither itself). */
    for (size_t i = 0; i < ARRAY_SIZE(who); i++) {
        const char *v = getenv(who[i]);
        if (v)
            strvec_pushf(vars, "%s=%s", who[i], v);
    }
    if (!cfg->local.network_allowlist)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        strvec_pushf(vars, "%s=http://127.0.0.1:%d", names[i], SBX_EGRESS_PORT);
    strvec_push(vars, "no_proxy=localhost,127.0.0.1");
    strvec_push(vars, "NO_PROXY=localhost,127.0.0.1");
}
