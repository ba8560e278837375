/*
 * sandbox.json: what a later holder (or `sbx` with no holder running) needs
 * to find the session's sandbox again: runtime, id, pid and start time,
 * creation time, code directories, network, and the limits it was made with.
 * Also the backend class's peek and adopt hooks, which read it.
 */
#include "local/local.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "common/fsutil.h"

/* ---- state ------------------------------------------------------------- */

char *local_state_path(local_backend *lb, const char *name)
{
    return xasprintf("%s/%s", lb->dir, name);
}

/* Writes sandbox.json atomically (a crash leaves the old file or the new one: a torn one
 * would lose the pid, and the sandbox would be left running, found by nobody), 0600 in
 * the session's private state directory. */
int local_save_state(local_backend *lb, sbx_err *err)
{
    cJSON *o = cJSON_CreateObject(), *dirs = cJSON_CreateArray();
    char *text, *path;
    int r;

    cJSON_AddStringToObject(o, "runtime", local_runtime_name(lb->runtime));
    cJSON_AddStringToObject(o, "id", lb->id);
    cJSON_AddNumberToObject(o, "pid", lb->pid);
    cJSON_AddNumberToObject(o, "starttime", (double)lb->starttime);
    cJSON_AddNumberToObject(o, "created", (double)lb->created);
    cJSON_AddStringToObject(o, "network", local_net_name(lb->network_host, lb->network_allowlist));
    if (lb->network_allowlist) {
        cJSON *eg = cJSON_AddObjectToObject(o, "egress");
        cJSON_AddItemToObject(eg, "allow", local_json_strv((const char *const *)lb->egress.v,
                                                     lb->egress.n));
        cJSON_AddNumberToObject(eg, "proxy_pid", lb->egress_pid);
        cJSON_AddNumberToObject(eg, "proxy_starttime", (double)lb->egress_start);
    }
    for (size_t i = 0; i < lb->code_dirs.n; i++)
        cJSON_AddItemToArray(dirs, cJSON_CreateString(lb->code_dirs.v[i]));
    cJSON_AddItemToObject(o, "code_dirs", dirs);
    {
        cJSON *l = cJSON_AddObjectToObject(o, "limits"), *cg = cJSON_CreateArray();
        cJSON_AddNumberToObject(l, "pids_max", lb->lim.pids_max);
        cJSON_AddNumberToObject(l, "memory_max", (double)lb->lim.memory_max);
        cJSON_AddNumberToObject(l, "cpus_milli", lb->lim.cpus_milli);
        cJSON_AddNumberToObject(l, "disk_max", (double)lb->lim.disk_max);
        cJSON_AddStringToObject(l, "mechanism", lb->lim.mechanism);
        for (size_t i = 0; i < lb->lim.cgroups.n; i++)
            cJSON_AddItemToArray(cg, cJSON_CreateString(lb->lim.cgroups.v[i]));
        cJSON_AddItemToObject(l, "cgroups", cg);
    }
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text)
        xdie_oom();
    path = local_state_path(lb, "sandbox.json");
    r = sbx_write_file_atomic(path, text, strlen(text), 0600, err);
    free(path);
    cJSON_free(text);
    return r;
}

void local_saved_state_free(saved_state *s)
{
    strvec_clear(&s->egress);
    strvec_clear(&s->code_dirs);
    strvec_clear(&s->lim.cgroups);
}

/* A non-negative number member of a JSON object (the limits in sandbox.json). */
static bool json_count(const cJSON *o, const char *name, unsigned long long *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(it) || it->valuedouble < 0)
        return false;
    *out = (unsigned long long)it->valuedouble;
    return true;
}

/* Reads sandbox.json (written by us, but bounded all the same: 1 MiB, each member checked
 * for its type and range, strings cut to their fields). The file decides what a later
 * sbxsh kills and writes, so every value that leads to an action is checked again where
 * it is used too: a pid only with its start time (local_state_alive), a cgroup only under
 * sbxsh's own cgroups, with no ".." (local_cg_dir_ok). -1 unless the runtime, id and pid
 * are there. */
int local_load_state(const char *dir, saved_state *s)
{
    char *path = xasprintf("%s/sandbox.json", dir);
    char *text = NULL;
    size_t len;
    cJSON *o, *it;
    int r = -1;

    memset(s, 0, sizeof(*s));
    if (read_file(path, 1 << 20, &text, &len, NULL) < 0) {
        free(path);
        return -1;
    }
    free(path);
    o = cJSON_ParseWithLength(text, len);
    free(text);
    if (!o)
        return -1;
    it = cJSON_GetObjectItemCaseSensitive(o, "runtime");
    if (cJSON_IsString(it))
        snprintf(s->runtime, sizeof(s->runtime), "%s", it->valuestring);
    it = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (cJSON_IsString(it))
        snprintf(s->id, sizeof(s->id), "%s", it->valuestring);
    it = cJSON_GetObjectItemCaseSensitive(o, "pid");
    if (cJSON_IsNumber(it) && it->valuedouble > 0 && it->valuedouble < 1 << 30)
        s->pid = (pid_t)it->valuedouble;
    it = cJSON_GetObjectItemCaseSensitive(o, "starttime");
    if (cJSON_IsNumber(it) && it->valuedouble >= 0)
        s->starttime = (uint64_t)it->valuedouble;
    it = cJSON_GetObjectItemCaseSensitive(o, "created");
    if (cJSON_IsNumber(it))
        s->created = (int64_t)it->valuedouble;
    it = cJSON_GetObjectItemCaseSensitive(o, "network");
    s->network_host = cJSON_IsString(it) && !strcmp(it->valuestring, "host");
    s->network_allowlist = cJSON_IsString(it) && !strcmp(it->valuestring, "allowlist");
    {
        cJSON *eg = cJSON_GetObjectItemCaseSensitive(o, "egress"), *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(eg, "allow")) {
            if (cJSON_IsString(e))
                strvec_push(&s->egress, e->valuestring);
        }
        it = cJSON_GetObjectItemCaseSensitive(eg, "proxy_pid");
        if (cJSON_IsNumber(it) && it->valuedouble > 1 && it->valuedouble < 1 << 30)
            s->egress_pid = (pid_t)it->valuedouble;
        it = cJSON_GetObjectItemCaseSensitive(eg, "proxy_starttime");
        if (cJSON_IsNumber(it) && it->valuedouble >= 0)
            s->egress_start = (uint64_t)it->valuedouble;
    }
    it = cJSON_GetObjectItemCaseSensitive(o, "code_dirs");
    cJSON *d;
    cJSON_ArrayForEach(d, it) {
        if (cJSON_IsString(d))
            strvec_push(&s->code_dirs, d->valuestring);
    }
    cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "limits");
    if (cJSON_IsObject(l)) {
        unsigned long long n;
        if (json_count(l, "pids_max", &n))
            s->lim.pids_max = (unsigned)n;
        if (json_count(l, "memory_max", &n))
            s->lim.memory_max = n;
        if (json_count(l, "cpus_milli", &n))
            s->lim.cpus_milli = (unsigned)n;
        if (json_count(l, "disk_max", &n))
            s->lim.disk_max = n;
        it = cJSON_GetObjectItemCaseSensitive(l, "mechanism");
        if (cJSON_IsString(it))
            snprintf(s->lim.mechanism, sizeof(s->lim.mechanism), "%s", it->valuestring);
        it = cJSON_GetObjectItemCaseSensitive(l, "cgroups");
        cJSON_ArrayForEach(d, it) {
            if (cJSON_IsString(d) && local_cg_dir_ok(d->valuestring))
                strvec_push(&s->lim.cgroups, d->valuestring);
        }
    }
    if (s->runtime[0] && s->id[0] && s->pid > 0)
        r = 0;
    cJSON_Delete(o);
    if (r < 0)
        local_saved_state_free(s);
    return r;
}

/* Whether pid is still the process that was recorded: the pid and its start time (pids
 * are reused; a pid alone could make release kill some other process of the person's). */
bool local_state_alive(pid_t pid, uint64_t starttime)
{
    return pid > 0 && starttime && sbx_proc_starttime(pid) == starttime;
}

/* The class's peek hook: `sbx status` of a session without a holder, from the file. */
int local_peek(const char *state_dir, strbuf *json)
{
    saved_state s;
    if (local_load_state(state_dir, &s) < 0)
        return -1;
    egress_status eg = { s.network_allowlist, &s.egress, s.egress_pid, s.egress_start };
    local_status_json(json, s.runtime, s.id, s.created, local_state_alive(s.pid, s.starttime), s.pid,
                s.network_host, &eg, state_dir, &s.lim);
    local_saved_state_free(&s);
    return 0;
}

/* The class's adopt hook: a session keeps the shape it was made with (runtime, network,
 * egress list, limits), so a later call without the variables joins it rather than
 * being refused as another configuration. */
int local_adopt(const char *state_dir, sbx_config *cfg)
{
    saved_state s;
    local_settings *ls = session_backend_settings(cfg, &local_backend_class);
    /* (no code directories is a session too: a scratch one, in ~ or /tmp) */
    if (!ls)
        return -1;
    if (local_load_state(state_dir, &s) < 0) {
        local_saved_state_free(&s);
        return -1;
    }
    strvec_clear(&s.lim.cgroups);
    ls->runtime = !strcmp(s.runtime, "runsc") ? LOCAL_RUNTIME_RUNSC : LOCAL_RUNTIME_BWRAP;
    ls->network_host = s.network_host;
    ls->network_allowlist = s.network_allowlist;
    strvec_clear(&ls->egress);
    ls->egress = s.egress;
    strvec_clear(&cfg->code_dirs);
    cfg->code_dirs = s.code_dirs;
    return 0;
}
