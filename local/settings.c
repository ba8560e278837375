/*
 * The local backend's section of the session configuration (local_settings), read
 * from AGENT_SANDBOX_LOCAL_* by the class's configure hook and freed by its settings_free
 * hook (the session layer keeps it without knowing what it holds), and what of it fixes
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
static int load_egress(local_settings *ls, const char *mode, sbx_err *err)
{
    const char *v = env_nonempty("AGENT_SANDBOX_EGRESS");
    local_egress_policy pol;

    if (v && !ls->network_allowlist)
        return sbx_errf(err, "AGENT_SANDBOX_EGRESS is set, but AGENT_SANDBOX_LOCAL_NETWORK is "
                        "'%s': the list applies only with AGENT_SANDBOX_LOCAL_NETWORK=allowlist",
                        mode ? mode : "none");
    if (!ls->network_allowlist)
        return 0;
    if (!v)
        return sbx_errf(err, "AGENT_SANDBOX_LOCAL_NETWORK=allowlist needs AGENT_SANDBOX_EGRESS: "
                        "the hosts the sandbox may reach, comma-separated (e.g. "
                        "registry.npmjs.org,pypi.org)");
    if (local_egress_parse(v, &pol, err) < 0)
        return -1;
    local_egress_policy_free(&pol);
    session_split_list(&ls->egress, v, ',');
    for (size_t i = 0; i < ls->egress.n; i++) {
        char *e = ls->egress.v[i], *a = e, *z;
        while (isspace((unsigned char)*a))
            a++;
        memmove(e, a, strlen(a) + 1);
        for (z = e + strlen(e); z > e && isspace((unsigned char)z[-1]); z--)
            ;
        *z = '\0';
        for (char *p = e; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    for (size_t i = 0; i < ls->egress.n;) {
        if (!ls->egress.v[i][0]) {
            free(ls->egress.v[i]);
            memmove(&ls->egress.v[i], &ls->egress.v[i + 1],
                    (ls->egress.n - i) * sizeof(char *));
            ls->egress.n--;
        } else {
            i++;
        }
    }
    return 0;
}

/* The section a configure left: settings_free is called on it whether configure
 * succeeded or not. */
void local_settings_free(void *settings)
{
    local_settings *ls = settings;
    strvec_clear(&ls->egress);
    free(ls);
}

const local_settings *local_settings_of(const sbx_config *cfg)
{
    static const local_settings defaults = { .runtime = LOCAL_RUNTIME_AUTO };
    const local_settings *ls = session_backend_settings(cfg, &local_backend_class);
    return ls ? ls : &defaults;
}

int local_configure(const sbx_config *cfg, void **settings, sbx_err *err)
{
    const char *v = env_nonempty("AGENT_SANDBOX_LOCAL_RUNTIME");
    local_settings *ls = xcalloc(1, sizeof(*ls));

    (void)cfg;      /* nothing of the rest of the configuration decides these */
    *settings = ls;

    if (!v || !strcmp(v, "auto"))
        ls->runtime = LOCAL_RUNTIME_AUTO;
    else if (!strcmp(v, "runsc") || !strcmp(v, "gvisor"))
        ls->runtime = LOCAL_RUNTIME_RUNSC;
    else if (!strcmp(v, "bwrap") || !strcmp(v, "bubblewrap"))
        ls->runtime = LOCAL_RUNTIME_BWRAP;
    else
        return sbx_errf(err, "AGENT_SANDBOX_LOCAL_RUNTIME='%s': use runsc, bwrap or auto", v);

    v = env_nonempty("AGENT_SANDBOX_LOCAL_NETWORK");
    if (v && !strcmp(v, "host"))
        ls->network_host = true;
    else if (v && !strcmp(v, "allowlist"))
        ls->network_allowlist = true;
    else if (v && strcmp(v, "none"))
        return sbx_errf(err, "AGENT_SANDBOX_LOCAL_NETWORK='%s': use none (the default), host, or "
                        "allowlist (with AGENT_SANDBOX_EGRESS)", v);
    return load_egress(ls, v, err);
}

static void fingerprint_of(const local_settings *ls, strbuf *out)
{
    strbuf_addf(out, "runtime=%s network=%s", local_runtime_name(ls->runtime),
                local_net_name(ls->network_host, ls->network_allowlist));
    /* the list is part of the shape: a sandbox's proxy admits what it was started with */
    for (size_t i = 0; i < ls->egress.n; i++)
        strbuf_addf(out, "%s%s", i ? "," : " egress=", ls->egress.v[i]);
    strbuf_addch(out, ' ');
}

void local_fingerprint(const sbx_config *cfg, strbuf *out)
{
    fingerprint_of(local_settings_of(cfg), out);
}

/* A session that named its runtime serves a call that leaves it to the default (auto):
 * the person who started it with AGENT_SANDBOX_LOCAL_RUNTIME=bwrap, then ran sbxsh without
 * the variable, was refused for the session's whole life. A session that took the default
 * serves a call naming the runtime the default chose (the one this machine resolves auto
 * to, as the backend did when it started). Network and egress must still match. */
void local_fingerprint_also(const sbx_config *cfg, strvec *also)
{
    local_settings other = *local_settings_of(cfg);     /* shares egress: only read */
    strbuf sb = STRBUF_INIT;
    local_runtime chosen;

    if (other.runtime != LOCAL_RUNTIME_AUTO) {
        other.runtime = LOCAL_RUNTIME_AUTO;
    } else {
        if (local_runtime_resolve(LOCAL_RUNTIME_AUTO, &chosen, NULL, NULL) < 0)
            return;
        other.runtime = chosen;
    }
    fingerprint_of(&other, &sb);
    strvec_push(also, sb.buf);
    strbuf_release(&sb);
}

/* What every local command gets besides session_sandbox_env()'s: USER and LOGNAME as the
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
    if (!local_settings_of(cfg)->network_allowlist)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        strvec_pushf(vars, "%s=http://127.0.0.1:%d", names[i], SBX_EGRESS_PORT);
    strvec_push(vars, "no_proxy=localhost,127.0.0.1");
    strvec_push(vars, "NO_PROXY=localhost,127.0.0.1");
}
