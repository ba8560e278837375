/*
 * The facts `sbx status` and `sbx ls` show of a local sandbox, as JSON: the
 * same object whether a holder has it claimed (status()) or only its
 * sandbox.json is read (peek()).
 */
#include "local/local.h"

#include <stdio.h>
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
