/*
 * The facts `sbx status` and `sbx ls` show of a local sandbox, as JSON: the
 * same object whether a holder has it claimed (status()) or only its
 * sandbox.json is read (peek()).
 */
#include "local/local.h"
#include "common/json.h"

#include <stdio.h>
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
    local_status_json(json, local_runtime_name(lb->runtime), lb->id ? lb->id : "", lb->created,
                local_alive(b), lb->pid, lb->network_host, &eg, lb->dir, &lb->lim);
}

/* `sbx status` for people (the describe hook): "egress:" for a sandbox with
 * AGENT_SANDBOX_LOCAL_NETWORK=allowlist. */
static void describe_egress(const cJSON *eg, strbuf *out)
{
    const cJSON *e, *pid = cJSON_GetObjectItemCaseSensitive(eg, "proxy_pid");
    if (!cJSON_IsObject(eg))
        return;
    strbuf_addstr(out, "egress:    ");
    int n = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(eg, "allow"))
        strbuf_addf(out, "%s%s", n++ ? ", " : "", cJSON_IsString(e) ? e->valuestring : "?");
    strbuf_addf(out, " (proxy pid %d, %s)\n", cJSON_IsNumber(pid) ? (int)pid->valuedouble : 0,
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(eg, "proxy_alive")) ? "running"
                                                                                 : "not running");
}

/* "limits:    100 processes, 256 MiB memory, all CPUs, 10 GiB per code copy and /tmp"
 * and how they are enforced. */
static void describe_limits(const cJSON *lim, strbuf *out)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(lim, "pids_max");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(lim, "memory_max");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(lim, "cpus_milli");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(lim, "disk_max");
    const cJSON *mech = cJSON_GetObjectItemCaseSensitive(lim, "mechanism");
    const cJSON *cgs = cJSON_GetObjectItemCaseSensitive(lim, "cgroups"), *cg;
    char mem[32] = "no memory limit", disk[48] = "no size limit on each code copy and /tmp";
    char pids[32] = "no process limit", cpus[32] = "all CPUs";

    if (cJSON_IsNumber(p) && p->valuedouble > 0)
        snprintf(pids, sizeof(pids), "%.0f processes", p->valuedouble);
    if (cJSON_IsNumber(m) && m->valuedouble > 0) {
        session_format_size(mem, sizeof(mem) - 7, m->valuedouble);
        strcat(mem, " memory");
    }
    if (cJSON_IsNumber(c) && c->valuedouble > 0)
        snprintf(cpus, sizeof(cpus), "%g CPUs", c->valuedouble / 1000);
    if (cJSON_IsNumber(d) && d->valuedouble > 0) {
        session_format_size(disk, 24, d->valuedouble);
        strcat(disk, " per code copy and /tmp");
    }
    strbuf_addf(out, "limits:    %s, %s, %s, %s\n", pids, mem, cpus, disk);
    const char *how = cJSON_IsString(mech) ? mech->valuestring : "";
    if (!strncmp(how, "cgroup", 6)) {
        strbuf_addf(out, "enforced:  by %s:", how);
        cJSON_ArrayForEach(cg, cgs)
            if (cJSON_IsString(cg) && (strstr(cg->valuestring, "/pids/") ||
                                       strstr(cg->valuestring, "/memory/") ||
                                       strstr(cg->valuestring, "/cpu/") ||
                                       cJSON_GetArraySize(cgs) == 1))
                strbuf_addf(out, " %s", cg->valuestring);
        strbuf_addch(out, '\n');
    } else if (!strcmp(how, "rlimit")) {
        strbuf_addstr(out, "enforced:  by rlimits only (RLIMIT_NPROC; RLIMIT_DATA per process, "
                      "not the sandbox's total): no cgroup is writable here, see sbx doctor\n");
    } else {
        strbuf_addstr(out, "enforced:  unknown (a sandbox made by an older sbxsh)\n");
    }
}

void local_describe(const cJSON *sb, strbuf *out)
{
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(sb, "limits");
    describe_egress(cJSON_GetObjectItemCaseSensitive(sb, "egress"), out);
    if (cJSON_IsObject(lim))
        describe_limits(lim, out);
}
