/*
 * The facts `sbx status` and `sbx ls` show of a local sandbox, as JSON: the
 * same object whether a holder has it claimed (status()) or only its
 * sandbox.json is read (peek()).
 */
#include "local/local.h"
#include "common/json.h"

#include <string.h>

/* The "limits" member of the status JSON, as `sbx status` prints it: the
 * numbers, the mechanism and the cgroup directories. */
static void limits_json(sbx_json *j, const sandbox_limits *l)
{
    sbx_json_begin_obj(j, "limits");
    sbx_json_uint(j, "pids_max", l->pids_max);
    sbx_json_uint(j, "memory_max", l->memory_max);
    sbx_json_uint(j, "cpus_milli", l->cpus_milli);
    sbx_json_uint(j, "disk_max", l->disk_max);
    sbx_json_str(j, "mechanism", l->mechanism);
    sbx_json_begin_arr(j, "cgroups");
    for (size_t i = 0; i < l->cgroups.n; i++)
        sbx_json_str(j, NULL, l->cgroups.v[i]);
    sbx_json_end(j);
    sbx_json_end(j);
}

void local_status_json(strbuf *json, const char *runtime, const char *id, int64_t created,
                       bool alive, pid_t pid, bool network_host, const egress_status *eg,
                       const char *dir, const sandbox_limits *lim)
{
    sbx_json j;

    sbx_json_init(&j, json);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_str(&j, "backend", "local");
    sbx_json_str(&j, "runtime", runtime);
    sbx_json_str(&j, "id", id);
    sbx_json_int(&j, "created", (long long)created);
    sbx_json_bool(&j, "alive", alive);
    sbx_json_int(&j, "pid", (int)pid);
    sbx_json_str(&j, "network", local_net_name(network_host, eg->allowlist));
    if (eg->allowlist) {
        sbx_json_begin_obj(&j, "egress");
        sbx_json_begin_arr(&j, "allow");
        for (size_t i = 0; i < eg->allow->n; i++)
            sbx_json_str(&j, NULL, eg->allow->v[i]);
        sbx_json_end(&j);
        sbx_json_int(&j, "proxy_pid", (int)eg->pid);
        sbx_json_bool(&j, "proxy_alive", local_egress_alive(eg->pid, eg->start));
        sbx_json_end(&j);
    }
    limits_json(&j, lim);
    sbx_json_str(&j, "state_dir", dir);
    sbx_json_end(&j);
}

void local_status(sbx_backend *b, strbuf *json)
{
    local_backend *lb = (local_backend *)b;
    egress_status eg = { lb->network_allowlist, &lb->egress, lb->egress_pid, lb->egress_start };
    local_status_json(json, sbx_runtime_name(lb->runtime), lb->id ? lb->id : "", lb->created,
                local_alive(b), lb->pid, lb->network_host, &eg, lb->dir, &lb->lim);
}
