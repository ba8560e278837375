/*
 * The facts `sbx status` and `sbx ls` show of a local sandbox, as JSON: the
 * same object whether a holder has it claimed (status()) or only its
 * sandbox.json is read (peek()).
 */
#include "local/local.h"

#include <string.h>

/* The "limits" member of the status JSON, as `sbx status` prints it: the
 * numbers, the mechanism and the cgroup directories. */
static void limits_json(strbuf *json, const sandbox_limits *l)
{
    strbuf_addf(json, "\"limits\":{\"pids_max\":%u,\"memory_max\":%llu,\"cpus_milli\":%u,"
                "\"disk_max\":%llu,\"mechanism\":\"", l->pids_max, l->memory_max,
                l->cpus_milli, l->disk_max);
    strbuf_add_json_escaped(json, l->mechanism, strlen(l->mechanism));
    strbuf_addstr(json, "\",\"cgroups\":[");
    for (size_t i = 0; i < l->cgroups.n; i++) {
        strbuf_addstr(json, i ? ",\"" : "\"");
        strbuf_add_json_escaped(json, l->cgroups.v[i], strlen(l->cgroups.v[i]));
        strbuf_addch(json, '"');
    }
    strbuf_addstr(json, "]},");
}

void local_status_json(strbuf *json, const char *runtime, const char *id, int64_t created,
                       bool alive, pid_t pid, bool network_host, const egress_status *eg,
                       const char *dir, const sandbox_limits *lim)
{
    strbuf_addstr(json, "{\"backend\":\"local\",\"runtime\":\"");
    strbuf_add_json_escaped(json, runtime, strlen(runtime));
    strbuf_addstr(json, "\",\"id\":\"");
    strbuf_add_json_escaped(json, id, strlen(id));
    strbuf_addf(json, "\",\"created\":%lld,\"alive\":%s,\"pid\":%d,\"network\":\"%s\",",
                (long long)created, alive ? "true" : "false", (int)pid,
                local_net_name(network_host, eg->allowlist));
    if (eg->allowlist) {
        strbuf_addstr(json, "\"egress\":{\"allow\":[");
        for (size_t i = 0; i < eg->allow->n; i++) {
            strbuf_addstr(json, i ? ",\"" : "\"");
            strbuf_add_json_escaped(json, eg->allow->v[i], strlen(eg->allow->v[i]));
            strbuf_addch(json, '"');
        }
        strbuf_addf(json, "],\"proxy_pid\":%d,\"proxy_alive\":%s},", (int)eg->pid,
                    local_egress_alive(eg->pid, eg->start) ? "true" : "false");
    }
    limits_json(json, lim);
    strbuf_addstr(json, "\"state_dir\":\"");
    strbuf_add_json_escaped(json, dir, strlen(dir));
    strbuf_addstr(json, "\"}");
}

void local_status(sbx_backend *b, strbuf *json)
{
    local_backend *lb = (local_backend *)b;
    egress_status eg = { lb->network_allowlist, &lb->egress, lb->egress_pid, lb->egress_start };
    local_status_json(json, sbx_runtime_name(lb->runtime), lb->id ? lb->id : "", lb->created,
                local_alive(b), lb->pid, lb->network_host, &eg, lb->dir, &lb->lim);
}
