/*
 * Kubeconfig loading as kubectl does it (client-go's clientcmd): the files, their merge,
 * the current context's cluster and user, in-cluster service accounts, exec credential
 * plugins. Every error names the file and the key at fault.
 */
#include "kube/kubeconfig.h"
#include "kube/kpriv.h"
#include "common/run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

extern char **environ;

#define KC_MAX_FILE (16u << 20)  /* a kubeconfig larger than this is refused */
#define KC_MAX_PEM (4u << 20)    /* a CA bundle, certificate or key file */
#define KC_MAX_TOKEN (1u << 20)

/* ---- YAML files ------------------------------------------------------------------------ */

typedef struct kc_file {
    char *path;     /* as given */
    char *dir;      /* absolute directory, for the relative paths inside */
    yaml_document_t doc;
    bool has_doc;
    yaml_node_t *root;  /* a mapping, or NULL for an empty file */
} kc_file;

/* A named cluster, user or context, from the first file that defines the name. */
typedef struct kc_entry {
    const char *name;
    kc_file *f;
    int idx;            /* its index in that file's list */
    yaml_node_t *body;  /* the "cluster"/"user"/"context" mapping, or NULL */
} kc_entry;

typedef struct kc_list {
    kc_entry *v;
    size_t n, alloc;
} kc_list;

typedef struct kc_set {
    kc_file *files;
    size_t nfiles, afiles;
    kc_list clusters, users, contexts;
    const char *current;   /* current-context, from the first file that sets it */
    kc_file *current_f;
} kc_set;

static yaml_node_t *kc_node(kc_file *f, int id)
{
    return id ? yaml_document_get_node(&f->doc, id) : NULL;
}

static bool kc_is_null(const yaml_node_t *n)
{
    if (!n)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
           !strcmp(v, "NULL");
}

/* The value of key in a mapping (NULL when absent or null). */
static yaml_node_t *kc_get(kc_file *f, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = kc_node(f, p->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key)) {
            yaml_node_t *v = kc_node(f, p->value);
            return kc_is_null(v) ? NULL : v;
        }
    }
    return NULL;
}

static int kc_errf(sbx_err *err, const kc_file *f, const char *key, const char *fmt, ...)
    SBX_PRINTF(4, 5);
static int kc_errf(sbx_err *err, const kc_file *f, const char *key, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (key)
        return sbx_errf(err, "%s: %s: %s", f->path, key, what);
    return sbx_errf(err, "%s: %s", f->path, what);
}

/* A string field: *out NULL when absent; a mapping or a list is an error. */
static int kc_str(kc_file *f, yaml_node_t *map, const char *mpath, const char *key,
                  const char **out, sbx_err *err)
{
    yaml_node_t *v = kc_get(f, map, key);
    *out = NULL;
    if (!v)
        return 0;
    if (v->type != YAML_SCALAR_NODE)
        return kc_errf(err, f, NULL, "%s.%s: not a string", mpath, key);
    if (strlen((const char *)v->data.scalar.value) != v->data.scalar.length)
        return kc_errf(err, f, NULL, "%s.%s: holds a NUL byte", mpath, key);
    *out = (const char *)v->data.scalar.value;
    return 0;
}

static int kc_bool(kc_file *f, yaml_node_t *map, const char *mpath, const char *key, bool *out,
                   sbx_err *err)
{
    /* YAML 1.1's booleans, as go-yaml (which kubectl uses) reads them. */
    static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on",
                                       "On", "ON", "y", "Y" };
    static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", "off",
                                      "Off", "OFF", "n", "N" };
    yaml_node_t *v = kc_get(f, map, key);
    *out = false;
    if (!v)
        return 0;
    if (v->type == YAML_SCALAR_NODE) {
        const char *s = (const char *)v->data.scalar.value;
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
            if (!strcmp(s, yes[i])) {
                *out = true;
                return 0;
            }
            if (!strcmp(s, no[i]))
                return 0;
        }
    }
    return kc_errf(err, f, NULL, "%s.%s: not true or false", mpath, key);
}

static int kc_seq(kc_file *f, yaml_node_t *map, const char *mpath, const char *key,
                  yaml_node_t **out, sbx_err *err)
{
    *out = kc_get(f, map, key);
    if (*out && (*out)->type != YAML_SEQUENCE_NODE)
        return kc_errf(err, f, NULL, "%s%s%s: not a list", mpath, *mpath ? "." : "", key);
    return 0;
}

static int kc_map(kc_file *f, yaml_node_t *map, const char *mpath, const char *key,
                  yaml_node_t **out, sbx_err *err)
{
    *out = kc_get(f, map, key);
    if (*out && (*out)->type != YAML_MAPPING_NODE)
        return kc_errf(err, f, NULL, "%s%s%s: not a mapping", mpath, *mpath ? "." : "", key);
    return 0;
}

/* The absolute directory of path: what a relative path inside the file is relative to
 * (taken once, at load, so that a later chdir does not move what the file names). */
static char *kc_abs_dir(const char *path)
{
    char *copy = xstrdup(path), *slash = strrchr(copy, '/'), *dir;
    if (slash == copy)
        dir = xstrdup("/");
    else if (slash) {
        *slash = '\0';
        dir = copy[0] == '/' ? xstrdup(copy) : NULL;
        if (!dir) {
            char *cwd = getcwd(NULL, 0);
            dir = xasprintf("%s/%s", cwd ? cwd : ".", copy);
            free(cwd);
        }
    } else {
        char *cwd = getcwd(NULL, 0);
        dir = xstrdup(cwd ? cwd : ".");
        free(cwd);
    }
    free(copy);
    return dir;
}

/* Relative paths in a kubeconfig are relative to its directory (clientcmd's
 * ResolveLocalPaths). */
static char *kc_resolve(const kc_file *f, const char *p)
{
    if (p[0] == '/')
        return xstrdup(p);
    while (p[0] == '.' && p[1] == '/')
        for (p += 2; *p == '/'; p++)
            ;
    return xasprintf("%s/%s", f->dir, p);
}

static void kc_file_free(kc_file *f)
{
    if (f->has_doc)
        yaml_document_delete(&f->doc);
    free(f->path);
    free(f->dir);
}

/* Reads and parses one file; a missing file is 1 when missing_ok; -2 when it cannot be
 * read, -1 when it is not a kubeconfig. Bounded (KC_MAX_FILE) before libyaml sees it:
 * KUBECONFIG may name any file, and a huge one must be an error, not our memory. */
static int kc_file_load(kc_file *f, const char *path, bool missing_ok, sbx_err *err)
{
    char *data;
    size_t len;
    yaml_parser_t parser;
    memset(f, 0, sizeof(*f));
    f->path = xstrdup(path);
    f->dir = kc_abs_dir(path);
    if (read_file(path, KC_MAX_FILE, &data, &len, err) < 0) {
        if (missing_ok && errno == ENOENT)
            return 1;
        return -2;
    }
    if (!yaml_parser_initialize(&parser))
        xdie_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    if (!yaml_parser_load(&parser, &f->doc)) {
        int r = sbx_errf(err, "%s: line %zu, column %zu: not valid YAML: %s%s%s", path,
                         (size_t)parser.problem_mark.line + 1,
                         (size_t)parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "syntax error",
                         parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        free(data);
        return r;
    }
    yaml_parser_delete(&parser);
    free(data);
    f->has_doc = true;
    f->root = yaml_document_get_root_node(&f->doc);
    if (kc_is_null(f->root)) {
        f->root = NULL;  /* an empty file is an empty config, as kubectl has it */
        return 0;
    }
    if (f->root->type != YAML_MAPPING_NODE)
        return sbx_errf(err, "%s: line %zu: not a kubeconfig (the top level is not a mapping)",
                        path, (size_t)f->root->start_mark.line + 1);
    return 0;
}

static kc_entry *kc_find(kc_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return &l->v[i];
    return NULL;
}

/* Adds the named entries of one file's list ("clusters", "cluster") to the merged set: the
 * first file that defines a name wins entirely (clientcmd's merge), and a name twice in
 * one file is an error, as kubectl's conversion says. */
static int kc_merge_list(kc_file *f, const char *list, const char *body, kc_list *out,
                         sbx_err *err)
{
    yaml_node_t *seq;
    size_t first = out->n;
    if (kc_seq(f, f->root, "", list, &seq, err) < 0)
        return -1;
    if (!seq)
        return 0;
    int idx = 0;
    for (yaml_node_item_t *it = seq->data.sequence.items.start;
         it < seq->data.sequence.items.top; it++, idx++) {
        yaml_node_t *e = kc_node(f, *it), *b;
        char path[64];
        const char *name;
        snprintf(path, sizeof(path), "%s[%d]", list, idx);
        if (!e || e->type != YAML_MAPPING_NODE)
            return kc_errf(err, f, path, "not a mapping");
        if (kc_str(f, e, path, "name", &name, err) < 0)
            return -1;
        if (!name || !*name)
            return kc_errf(err, f, NULL, "%s.name: missing", path);
        if (kc_map(f, e, path, body, &b, err) < 0)
            return -1;
        kc_entry *old = kc_find(out, name);
        if (old && old - out->v >= (ptrdiff_t)first)
            return kc_errf(err, f, NULL, "%s.name: \"%s\" is also %s[%d]'s name", path, name,
                           list, old->idx);
        if (old)
            continue;
        XGROW(out->v, out->alloc, out->n + 1);
        out->v[out->n++] = (kc_entry){ name, f, idx, b };
    }
    return 0;
}

static int kc_merge_file(kc_set *s, kc_file *f, sbx_err *err)
{
    const char *cur;
    if (!f->root)
        return 0;
    if (kc_merge_list(f, "clusters", "cluster", &s->clusters, err) < 0 ||
        kc_merge_list(f, "users", "user", &s->users, err) < 0 ||
        kc_merge_list(f, "contexts", "context", &s->contexts, err) < 0)
        return -1;
    if (kc_str(f, f->root, "", "current-context", &cur, err) < 0)
        return -1;
    if (cur && *cur && !s->current) {
        s->current = cur;
        s->current_f = f;
    }
    return 0;
}

static void kc_set_free(kc_set *s)
{
    for (size_t i = 0; i < s->nfiles; i++)
        kc_file_free(&s->files[i]);
    free(s->files);
    free(s->clusters.v);
    free(s->users.v);
    free(s->contexts.v);
}

static void kc_file_names(const kc_set *s, strbuf *sb)
{
    for (size_t i = 0; i < s->nfiles; i++)
        strbuf_addf(sb, "%s%s", i ? ", " : "", s->files[i].path);
}

/* ---- the target ------------------------------------------------------------------------ */

/* Whether TLS material holds a PEM block at all: a path that names some other file
 * (a typo, or the wrong variable) is refused with its name rather than handed to OpenSSL,
 * whose error would not say which key of which file was wrong. */
static bool looks_pem(const char *s, size_t n)
{
    return memmem(s, n, "-----BEGIN ", 11) != NULL;
}

/* One piece of TLS material: the file named by key, or the base64 of key-data. Both set is
 * an error (which one kubectl would use is not obvious to the person); a file is read now,
 * bounded (KC_MAX_PEM), so a wrong path is an error naming the key. */
static int kc_pem(kc_file *f, yaml_node_t *map, const char *mpath, const char *key,
                  char **out, size_t *outlen, sbx_err *err)
{
    char dkey[64];
    const char *file, *data;
    snprintf(dkey, sizeof(dkey), "%s-data", key);
    if (kc_str(f, map, mpath, key, &file, err) < 0 || kc_str(f, map, mpath, dkey, &data, err) < 0)
        return -1;
    if (file && !*file)
        file = NULL;
    if (data && !*data)
        data = NULL;
    if (file && data)
        return kc_errf(err, f, NULL, "%s: both %s and %s are set: keep one", mpath, key, dkey);
    if (data) {
        strbuf sb = STRBUF_INIT;
        if (sbx_base64_decode(data, strlen(data), &sb) < 0) {
            strbuf_release(&sb);
            return kc_errf(err, f, NULL, "%s.%s: not valid base64", mpath, dkey);
        }
        if (!looks_pem(sb.buf, sb.len)) {
            strbuf_release(&sb);
            return kc_errf(err, f, NULL, "%s.%s: not the base64 of a PEM block (no -----BEGIN "
                           "line)", mpath, dkey);
        }
        *out = strbuf_detach(&sb, outlen);
        return 0;
    }
    if (file) {
        char *p = kc_resolve(f, file);
        sbx_err e2;
        if (read_file(p, KC_MAX_PEM, out, outlen, &e2) < 0) {
            free(p);
            return kc_errf(err, f, NULL, "%s.%s: %s", mpath, key, e2.msg);
        }
        if (!looks_pem(*out, *outlen)) {
            kc_errf(err, f, NULL, "%s.%s: %s holds no PEM block (no -----BEGIN line)", mpath,
                    key, p);
            free(p);
            free(*out);
            *out = NULL;
            return -1;
        }
        free(p);
    }
    return 0;
}

/* A copy without surrounding blanks and newlines (a token file ends with one). */
static char *trim_dup(const char *s, size_t n)
{
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++, n--;
    return xstrndup(s, n);
}

/* The context's cluster: its server (http or https only: any other scheme in a URL given
 * to libcurl could read a local file or reach another protocol), the CA it is verified
 * with, or insecure-skip-tls-verify (never both: which one wins would be a guess), the
 * name TLS checks, and a proxy of a kind we support. */
static int kc_cluster(kc_file *f, const kc_entry *e, kube_target *t, sbx_err *err)
{
    char mpath[64];
    const char *server, *sni, *proxy;
    yaml_node_t *b = e->body;
    snprintf(mpath, sizeof(mpath), "clusters[%d].cluster", e->idx);
    if (kc_str(f, b, mpath, "server", &server, err) < 0)
        return -1;
    if (!server || !*server)
        return kc_errf(err, f, NULL, "%s.server: missing", mpath);
    if (strstr(server, "://"))
        t->server = xstrdup(server);
    else
        t->server = xasprintf("https://%s", server);  /* client-go's default scheme */
    if (strncmp(t->server, "https://", 8) && strncmp(t->server, "http://", 7))
        return kc_errf(err, f, NULL, "%s.server: \"%s\" is not an http(s) URL", mpath, server);
    for (size_t n = strlen(t->server); n > 8 && t->server[n - 1] == '/'; n--)
        t->server[n - 1] = '\0';
    if (kc_pem(f, b, mpath, "certificate-authority", &t->ca_pem, &t->ca_len, err) < 0 ||
        kc_bool(f, b, mpath, "insecure-skip-tls-verify", &t->insecure, err) < 0 ||
        kc_str(f, b, mpath, "tls-server-name", &sni, err) < 0 ||
        kc_str(f, b, mpath, "proxy-url", &proxy, err) < 0)
        return -1;
    if (t->insecure && t->ca_pem)
        return kc_errf(err, f, NULL, "%s: insecure-skip-tls-verify with a certificate "
                       "authority: keep one (kubectl refuses both too)", mpath);
    if (sni && *sni)
        t->tls_server_name = xstrdup(sni);
    if (proxy && *proxy) {
        if (strncmp(proxy, "http://", 7) && strncmp(proxy, "https://", 8) &&
            strncmp(proxy, "socks5://", 9))
            return kc_errf(err, f, NULL, "%s.proxy-url: \"%s\": only http, https and socks5 "
                           "proxies are supported", mpath, proxy);
        t->proxy_url = xstrdup(proxy);
    }
    return 0;
}

static int kc_exec(kc_file *f, yaml_node_t *x, const char *upath, kube_target *t, sbx_err *err)
{
    char mpath[96];
    const char *cmd, *api, *mode, *hint;
    yaml_node_t *args, *env;
    kube_exec_plugin *p = xcalloc(1, sizeof(*p));
    strvec_init(&p->args);
    strvec_init(&p->env);
    t->exec = p;
    snprintf(mpath, sizeof(mpath), "%s.exec", upath);
    if (kc_str(f, x, mpath, "command", &cmd, err) < 0 ||
        kc_str(f, x, mpath, "apiVersion", &api, err) < 0 ||
        kc_str(f, x, mpath, "interactiveMode", &mode, err) < 0 ||
        kc_str(f, x, mpath, "installHint", &hint, err) < 0 ||
        kc_bool(f, x, mpath, "provideClusterInfo", &p->provide_cluster_info, err) < 0 ||
        kc_seq(f, x, mpath, "args", &args, err) < 0 || kc_seq(f, x, mpath, "env", &env, err) < 0)
        return -1;
    if (!cmd || !*cmd)
        return kc_errf(err, f, NULL, "%s.command: missing", mpath);
    if (!api || !*api)
        return kc_errf(err, f, NULL, "%s.apiVersion: missing", mpath);
    if (strcmp(api, "client.authentication.k8s.io/v1") &&
        strcmp(api, "client.authentication.k8s.io/v1beta1"))
        return kc_errf(err, f, NULL, "%s.apiVersion: \"%s\" is not supported (use "
                       "client.authentication.k8s.io/v1)", mpath, api);
    if (mode && *mode) {
        if (strcmp(mode, "Never") && strcmp(mode, "IfAvailable") && strcmp(mode, "Always"))
            return kc_errf(err, f, NULL, "%s.interactiveMode: \"%s\" is none of Never, "
                           "IfAvailable, Always", mpath, mode);
        p->interactive_mode = xstrdup(mode);
    } else if (!strcmp(api, "client.authentication.k8s.io/v1")) {
        /* clientcmd's validation: v1 makes the field required. */
        return kc_errf(err, f, NULL, "%s.interactiveMode: missing (required with %s)", mpath,
                       api);
    }
    /* A command with a '/' is relative to the kubeconfig's directory; a bare name is
     * looked up in PATH when run. */
    p->command = strchr(cmd, '/') ? kc_resolve(f, cmd) : xstrdup(cmd);
    p->api_version = xstrdup(api);
    if (hint && *hint)
        p->install_hint = xstrdup(hint);
    int i = 0;
    for (yaml_node_item_t *it = args ? args->data.sequence.items.start : NULL;
         args && it < args->data.sequence.items.top; it++, i++) {
        yaml_node_t *a = kc_node(f, *it);
        if (!a || a->type != YAML_SCALAR_NODE)
            return kc_errf(err, f, NULL, "%s.args[%d]: not a string", mpath, i);
        strvec_push(&p->args, (const char *)a->data.scalar.value);
    }
    i = 0;
    for (yaml_node_item_t *it = env ? env->data.sequence.items.start : NULL;
         env && it < env->data.sequence.items.top; it++, i++) {
        yaml_node_t *e = kc_node(f, *it);
        char epath[128];
        const char *name, *value;
        snprintf(epath, sizeof(epath), "%s.env[%d]", mpath, i);
        if (!e || e->type != YAML_MAPPING_NODE)
            return kc_errf(err, f, NULL, "%s: not a mapping of name and value", epath);
        if (kc_str(f, e, epath, "name", &name, err) < 0 ||
            kc_str(f, e, epath, "value", &value, err) < 0)
            return -1;
        if (!name || !*name || strchr(name, '='))
            return kc_errf(err, f, NULL, "%s.name: %s", epath, name ? "not a variable name"
                                                                     : "missing");
        strvec_pushf(&p->env, "%s=%s", name, value ? value : "");
    }
    return 0;
}

/* A JWT's "exp" claim (unix seconds), as client-go's oidc idTokenExpired reads it: three
 * dot-separated parts, the middle one base64url without padding, JSON with a numeric exp.
 * -1 when it is not such a JWT. */
static int jwt_expiry(const char *jwt, int64_t *exp)
{
    const char *a = strchr(jwt, '.'), *b = a ? strchr(a + 1, '.') : NULL;
    if (!a || !b || strchr(b + 1, '.'))
        return -1;
    strbuf std = STRBUF_INIT, dec = STRBUF_INIT;
    for (const char *p = a + 1; p < b; p++)
        strbuf_addch(&std, *p == '-' ? '+' : *p == '_' ? '/' : *p);
    while (std.len % 4)
        strbuf_addch(&std, '=');
    int r = -1;
    if (sbx_base64_decode(std.buf, std.len, &dec) == 0) {
        cJSON *j = cJSON_ParseWithLength(dec.buf, dec.len);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "exp");
        if (cJSON_IsNumber(e)) {
            *exp = (int64_t)e->valuedouble;
            r = 0;
        }
        cJSON_Delete(j);
    }
    strbuf_release(&std);
    strbuf_release(&dec);
    return r;
}

/* users[].user.auth-provider. kubectl 1.32 still has one, oidc
 * (k8s.io/client-go/plugin/pkg/client/auth/oidc/oidc.go; gcp and azure went in 1.26):
 * config.idp-issuer-url and config.client-id are required, and config.id-token is sent as
 * the bearer token while its exp claim is more than 10 s away (expiryDelta). client-go then
 * refreshes it at the issuer with config.refresh-token and writes the new one back to the
 * kubeconfig; sbxsh does not talk to identity providers: an id-token missing or expired
 * is an error that says to let kubectl refresh it (any kubectl command does) or to use an
 * exec plugin (kubelogin), which every later kubectl supports. */
static int kc_auth_provider(kc_file *f, yaml_node_t *ap, const char *mpath, kube_target *t,
                            sbx_err *err)
{
    char apath[96], cpath[112];
    const char *name, *issuer, *client, *idt, *refresh;
    yaml_node_t *cfg;
    snprintf(apath, sizeof(apath), "%s.auth-provider", mpath);
    snprintf(cpath, sizeof(cpath), "%s.config", apath);
    if (kc_str(f, ap, apath, "name", &name, err) < 0 ||
        kc_map(f, ap, apath, "config", &cfg, err) < 0)
        return -1;
    if (!name || strcmp(name, "oidc"))
        return kc_errf(err, f, NULL, "%s: the auth-provider \"%s\" is not supported (kubectl "
                       "dropped it too; it keeps only oidc): use an exec plugin "
                       "(gke-gcloud-auth-plugin, kubelogin)", apath, name ? name : "");
    if (kc_str(f, cfg, cpath, "idp-issuer-url", &issuer, err) < 0 ||
        kc_str(f, cfg, cpath, "client-id", &client, err) < 0 ||
        kc_str(f, cfg, cpath, "id-token", &idt, err) < 0 ||
        kc_str(f, cfg, cpath, "refresh-token", &refresh, err) < 0)
        return -1;
    if (!issuer || !*issuer)
        return kc_errf(err, f, NULL, "%s.idp-issuer-url: missing (the oidc auth-provider "
                       "needs it, as kubectl's)", cpath);
    if (!client || !*client)
        return kc_errf(err, f, NULL, "%s.client-id: missing (the oidc auth-provider needs "
                       "it, as kubectl's)", cpath);
    const char *todo = "sbxsh does not refresh oidc tokens: run any kubectl command with this "
                       "context (kubectl refreshes the id-token with the refresh-token and "
                       "writes it into the kubeconfig), or switch the user to an exec plugin "
                       "(kubelogin)";
    if (!idt || !*idt)
        return kc_errf(err, f, NULL, "%s.id-token: missing; %s", cpath, todo);
    int64_t exp;
    if (jwt_expiry(idt, &exp) < 0)
        return kc_errf(err, f, NULL, "%s.id-token: not a JWT with an exp claim", cpath);
    if ((int64_t)time(NULL) + 10 >= exp) {
        char when[40];
        struct tm tm;
        time_t tt = (time_t)exp;
        gmtime_r(&tt, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        return kc_errf(err, f, NULL, "%s.id-token: expired at %s; %s", cpath, when, todo);
    }
    t->token = xstrdup(idt);
    t->token_expires = exp;
    return 0;
}

/* The context's user: one kind of credential (a token or a token file, a username and
 * password, a client certificate and key, an exec plugin, or the oidc auth-provider).
 * Impersonation is refused rather than ignored: ignoring it would act with more rights
 * than the person asked for (the identity's own instead of the impersonated one's). */
static int kc_user(kc_file *f, const kc_entry *e, kube_target *t, sbx_err *err)
{
    char mpath[64];
    const char *token, *tfile, *user, *pass;
    yaml_node_t *b = e->body, *x, *ap;
    snprintf(mpath, sizeof(mpath), "users[%d].user", e->idx);
    if (kc_str(f, b, mpath, "token", &token, err) < 0 ||
        kc_str(f, b, mpath, "tokenFile", &tfile, err) < 0 ||
        kc_str(f, b, mpath, "username", &user, err) < 0 ||
        kc_str(f, b, mpath, "password", &pass, err) < 0 ||
        kc_map(f, b, mpath, "exec", &x, err) < 0 ||
        kc_map(f, b, mpath, "auth-provider", &ap, err) < 0)
        return -1;
    if (ap && (x || (token && *token) || (tfile && *tfile) || (user && *user)))
        return kc_errf(err, f, NULL, "%s: both an auth-provider and another credential are "
                       "set: keep one", mpath);
    if (ap && kc_auth_provider(f, ap, mpath, t, err) < 0)
        return -1;
    if (kc_get(f, b, "as") || kc_get(f, b, "as-groups") || kc_get(f, b, "as-uid"))
        return kc_errf(err, f, NULL, "%s.as: impersonation is not supported: use the "
                       "identity's own credentials", mpath);
    if (token && *token && ((user && *user) || (pass && *pass)))
        return kc_errf(err, f, NULL, "%s: both a token and a username/password are set: "
                       "keep one (kubectl refuses both too)", mpath);
    if (token && *token)
        t->token = xstrdup(token);
    if (tfile && *tfile) {
        t->token_file = kc_resolve(f, tfile);
        if (!t->token) {
            /* Read now, as clientcmd does, so a wrong path is an error that names it. */
            char *data;
            size_t len;
            sbx_err e2;
            if (read_file(t->token_file, KC_MAX_TOKEN, &data, &len, &e2) < 0)
                return kc_errf(err, f, NULL, "%s.tokenFile: %s", mpath, e2.msg);
            t->token = trim_dup(data, len);
            free(data);
        }
    }
    if (user && *user)
        t->username = xstrdup(user);
    if (pass && *pass)
        t->password = xstrdup(pass);
    if (kc_pem(f, b, mpath, "client-certificate", &t->cert_pem, &t->cert_len, err) < 0 ||
        kc_pem(f, b, mpath, "client-key", &t->key_pem, &t->key_len, err) < 0)
        return -1;
    if (!t->cert_pem != !t->key_pem)
        return kc_errf(err, f, NULL, "%s: %s without %s", mpath,
                       t->cert_pem ? "a client-certificate" : "a client-key",
                       t->cert_pem ? "its client-key" : "its client-certificate");
    if (x && kc_exec(f, x, mpath, t, err) < 0)
        return -1;
    return 0;
}

/* The target from the merged files: the context AGENT_SANDBOX_KUBE_CONTEXT names (else
 * current-context), its cluster and user, its namespace unless AGENT_SANDBOX_NAMESPACE
 * says otherwise. Each missing piece is an error naming the file and key. */
static int kc_build(kc_set *s, const kube_load_opts *o, kube_target *t, sbx_err *err)
{
    const char *want = o->context && *o->context ? o->context : s->current;
    const char *cluster, *user, *ns;
    kc_entry *ctx, *ce, *ue = NULL;
    char mpath[64];
    strbuf names = STRBUF_INIT;
    kc_file_names(s, &names);
    if (!want) {
        sbx_errf(err, "%s: no current-context (set one with `kubectl config use-context`, "
                 "or AGENT_SANDBOX_KUBE_CONTEXT)", names.buf);
        strbuf_release(&names);
        return -1;
    }
    ctx = kc_find(&s->contexts, want);
    if (!ctx) {
        if (o->context && *o->context)
            sbx_errf(err, "AGENT_SANDBOX_KUBE_CONTEXT: no context named \"%s\" in %s", want,
                     names.buf);
        else
            kc_errf(err, s->current_f, "current-context", "no context named \"%s\"%s%s", want,
                    s->nfiles > 1 ? " in " : "", s->nfiles > 1 ? names.buf : "");
        strbuf_release(&names);
        return -1;
    }
    strbuf_release(&names);
    snprintf(mpath, sizeof(mpath), "contexts[%d].context", ctx->idx);
    if (kc_str(ctx->f, ctx->body, mpath, "cluster", &cluster, err) < 0 ||
        kc_str(ctx->f, ctx->body, mpath, "user", &user, err) < 0 ||
        kc_str(ctx->f, ctx->body, mpath, "namespace", &ns, err) < 0)
        return -1;
    if (!cluster || !*cluster)
        return kc_errf(err, ctx->f, NULL, "%s.cluster: missing", mpath);
    ce = kc_find(&s->clusters, cluster);
    if (!ce)
        return kc_errf(err, ctx->f, NULL, "%s.cluster: no cluster named \"%s\"", mpath, cluster);
    if (user && *user && !(ue = kc_find(&s->users, user)))
        return kc_errf(err, ctx->f, NULL, "%s.user: no user named \"%s\"", mpath, user);
    t->source = xstrdup(ctx->f->path);
    t->context = xstrdup(want);
    t->namespace_ = xstrdup(o->namespace_ && *o->namespace_ ? o->namespace_
                            : ns && *ns                    ? ns
                                                           : "default");
    if (kc_cluster(ce->f, ce, t, err) < 0)
        return -1;
    if (ue && kc_user(ue->f, ue, t, err) < 0)
        return -1;
    return 0;
}

/* ---- in-cluster ------------------------------------------------------------------------ */

static const char *sa_dir(const kube_load_opts *o)
{
    return o->incluster_dir ? o->incluster_dir : "/var/run/secrets/kubernetes.io/serviceaccount";
}

/* clientcmd falls back to the service account only when both variables and the token
 * file are there. */
static bool incluster_possible(const kube_load_opts *o)
{
    const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
    char *tok;
    bool r;
    if (!h || !*h || !p || !*p)
        return false;
    tok = xasprintf("%s/token", sa_dir(o));
    r = access(tok, F_OK) == 0;
    free(tok);
    return r;
}

/* The pod's own service account (sbxsh running inside a cluster): the API server from
 * the variables Kubernetes sets, the token, CA and namespace from the mounted secret
 * (each bounded); an IPv6 host is bracketed in the URL. */
static int incluster_load(const kube_load_opts *o, kube_target *t, sbx_err *err)
{
    const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
    const char *dir = sa_dir(o);
    char *path, *data;
    size_t len;
    sbx_err e2;
    t->source = xstrdup("in-cluster");
    t->server = strchr(h, ':') ? xasprintf("https://[%s]:%s", h, p) : xasprintf("https://%s:%s", h, p);
    t->token_file = xasprintf("%s/token", dir);
    if (read_file(t->token_file, KC_MAX_TOKEN, &data, &len, err) < 0)
        return sbx_err_prefix(err, "in-cluster service account");
    t->token = trim_dup(data, len);
    free(data);
    /* A missing CA leaves the system's roots, as rest.InClusterConfig does. */
    path = xasprintf("%s/ca.crt", dir);
    if (read_file(path, KC_MAX_PEM, &t->ca_pem, &t->ca_len, &e2) < 0 && errno != ENOENT) {
        free(path);
        return sbx_errf(err, "in-cluster service account: %s", e2.msg);
    }
    free(path);
    if (o->namespace_ && *o->namespace_) {
        t->namespace_ = xstrdup(o->namespace_);
    } else {
        path = xasprintf("%s/namespace", dir);
        if (read_file(path, 4096, &data, &len, &e2) == 0) {
            t->namespace_ = trim_dup(data, len);
            free(data);
        }
        free(path);
        if (!t->namespace_ || !*t->namespace_) {
            free(t->namespace_);
            t->namespace_ = xstrdup("default");
        }
    }
    return 0;
}

/* ---- loading --------------------------------------------------------------------------- */

static kc_file *kc_add_file(kc_set *s)
{
    XGROW(s->files, s->afiles, s->nfiles + 1);
    return &s->files[s->nfiles++];
}

/* Where the configuration comes from, in kubectl's order: AGENT_SANDBOX_KUBECONFIG alone
 * (it must exist), else KUBECONFIG's files (missing ones skipped, each file once), else
 * ~/.kube/config; then the merge (the first file to define a name wins), and the service
 * account when nothing was configured at all. */
int kube_target_load(const kube_load_opts *o, kube_target *t, sbx_err *err)
{
    kc_set s;
    int r = -1;
    memset(t, 0, sizeof(*t));
    memset(&s, 0, sizeof(s));
    if (o->explicit_path && *o->explicit_path) {
        /* Only this file, and it must be there (as kubectl's --kubeconfig). */
        kc_file *f = kc_add_file(&s);
        int lr = kc_file_load(f, o->explicit_path, false, err);
        if (lr == -2)
            sbx_err_prefix(err, "AGENT_SANDBOX_KUBECONFIG");
        if (lr < 0)
            goto out;
    } else if (o->kubeconfig_env && *o->kubeconfig_env) {
        char *list = xstrdup(o->kubeconfig_env), *save = NULL;
        for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
            bool dup = false;
            for (size_t i = 0; i < s.nfiles; i++)
                dup |= !strcmp(s.files[i].path, p);
            if (dup)
                continue;
            kc_file *f = kc_add_file(&s);
            int lr = kc_file_load(f, p, true, err);
            if (lr < 0) {
                free(list);
                goto out;
            }
            if (lr == 1)  /* missing: skipped, as clientcmd's loader does */
                kc_file_free(&s.files[--s.nfiles]);
        }
        free(list);
        if (!s.nfiles && !incluster_possible(o)) {
            sbx_errf(err, "KUBECONFIG=%s: none of its files exists", o->kubeconfig_env);
            goto out;
        }
    } else {
        const char *home = o->home ? o->home : getenv("HOME");
        if (home && *home) {
            char *p = xasprintf("%s/.kube/config", home);
            kc_file *f = kc_add_file(&s);
            int lr = kc_file_load(f, p, true, err);
            free(p);
            if (lr < 0)
                goto out;
            if (lr == 1)
                kc_file_free(&s.files[--s.nfiles]);
        }
    }
    for (size_t i = 0; i < s.nfiles; i++)
        if (kc_merge_file(&s, &s.files[i], err) < 0)
            goto out;
    /* An empty configuration falls back to the service account (clientcmd's
     * DeferredLoadingClientConfig); nothing at all is an error that says where we looked. */
    if (!s.contexts.n && !s.current && !(o->context && *o->context)) {
        if (incluster_possible(o)) {
            r = incluster_load(o, t, err);
            goto out;
        }
        if (!s.nfiles) {
            const char *home = o->home ? o->home : getenv("HOME");
            sbx_errf(err, "no Kubernetes configuration: set AGENT_SANDBOX_KUBECONFIG or "
                     "KUBECONFIG, or create %s/.kube/config (and this is not a pod with a "
                     "service account)", home ? home : "~");
            goto out;
        }
    }
    r = kc_build(&s, o, t, err);
out:
    kc_set_free(&s);
    if (r < 0)
        kube_target_free(t);
    return r;
}

static void exec_plugin_free(kube_exec_plugin *p)
{
    if (!p)
        return;
    free(p->command);
    strvec_clear(&p->args);
    strvec_clear(&p->env);
    free(p->api_version);
    free(p->interactive_mode);
    free(p->install_hint);
    free(p);
}

void kube_target_free(kube_target *t)
{
    free(t->source);
    free(t->context);
    free(t->server);
    free(t->namespace_);
    free(t->ca_pem);
    free(t->cert_pem);
    /* Secrets are wiped before the memory goes back. */
    if (t->key_pem)
        explicit_bzero(t->key_pem, t->key_len);
    free(t->key_pem);
    free(t->tls_server_name);
    free(t->proxy_url);
    if (t->token)
        explicit_bzero(t->token, strlen(t->token));
    free(t->token);
    free(t->token_file);
    exec_plugin_free(t->exec);
    free(t->username);
    if (t->password)
        explicit_bzero(t->password, strlen(t->password));
    free(t->password);
    memset(t, 0, sizeof(*t));
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static char *memdup_or_null(const char *s, size_t n)
{
    return s ? xstrndup(s, n) : NULL;
}

void kube_target_copy(kube_target *d, const kube_target *s)
{
    memset(d, 0, sizeof(*d));
    d->source = dup_or_null(s->source);
    d->context = dup_or_null(s->context);
    d->server = dup_or_null(s->server);
    d->namespace_ = dup_or_null(s->namespace_);
    d->ca_pem = memdup_or_null(s->ca_pem, s->ca_len);
    d->ca_len = s->ca_len;
    d->cert_pem = memdup_or_null(s->cert_pem, s->cert_len);
    d->cert_len = s->cert_len;
    d->key_pem = memdup_or_null(s->key_pem, s->key_len);
    d->key_len = s->key_len;
    d->insecure = s->insecure;
    d->tls_server_name = dup_or_null(s->tls_server_name);
    d->proxy_url = dup_or_null(s->proxy_url);
    d->token = dup_or_null(s->token);
    d->token_expires = s->token_expires;
    d->token_file = dup_or_null(s->token_file);
    d->username = dup_or_null(s->username);
    d->password = dup_or_null(s->password);
    if (s->exec) {
        kube_exec_plugin *p = xcalloc(1, sizeof(*p));
        p->command = dup_or_null(s->exec->command);
        strvec_init(&p->args);
        strvec_pushv(&p->args, s->exec->args.v);
        strvec_init(&p->env);
        strvec_pushv(&p->env, s->exec->env.v);
        p->api_version = dup_or_null(s->exec->api_version);
        p->interactive_mode = dup_or_null(s->exec->interactive_mode);
        p->provide_cluster_info = s->exec->provide_cluster_info;
        p->install_hint = dup_or_null(s->exec->install_hint);
        d->exec = p;
    }
}

/* ---- exec credential plugins ----------------------------------------------------------- */

#define EXEC_MAX_STDOUT (1u << 20)
#define EXEC_STDERR_TAIL 2048

/* RFC 3339 ("2026-12-01T16:00:00Z", "...T16:00:00.123+01:00") to unix seconds. Strict
 * (a plugin's expirationTimestamp decides when a token is asked for again): every field
 * in range and nothing after the zone, else -1 and the credential is refused. */
static int parse_rfc3339(const char *s, int64_t *out)
{
    struct tm tm;
    int n = 0;
    memset(&tm, 0, sizeof(tm));
    if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || !n)
        return -1;
    const char *p = s + n;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm, k = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &k) != 2 || k != 5)
            return -1;
        off = (hh * 60L + mm) * 60L * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (int64_t)timegm(&tm) - off;
    return 0;
}

/* KUBERNETES_EXEC_INFO, as client-go's exec authenticator writes it. */
static char *exec_info(const kube_target *t, bool interactive)
{
    cJSON *root = cJSON_CreateObject(), *spec;
    cJSON_AddStringToObject(root, "kind", "ExecCredential");
    cJSON_AddStringToObject(root, "apiVersion", t->exec->api_version);
    spec = cJSON_AddObjectToObject(root, "spec");
    if (t->exec->provide_cluster_info) {
        cJSON *cl = cJSON_AddObjectToObject(spec, "cluster");
        cJSON_AddStringToObject(cl, "server", t->server ? t->server : "");
        if (t->tls_server_name)
            cJSON_AddStringToObject(cl, "tls-server-name", t->tls_server_name);
        if (t->insecure)
            cJSON_AddBoolToObject(cl, "insecure-skip-tls-verify", true);
        if (t->ca_pem) {
            strbuf sb = STRBUF_INIT;
            sbx_base64_encode(t->ca_pem, t->ca_len, &sb);
            cJSON_AddStringToObject(cl, "certificate-authority-data", sb.buf);
            strbuf_release(&sb);
        }
        if (t->proxy_url)
            cJSON_AddStringToObject(cl, "proxy-url", t->proxy_url);
        cJSON_AddNullToObject(cl, "config");
    }
    cJSON_AddBoolToObject(spec, "interactive", interactive);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!s)
        xdie_oom();
    return s;
}

/* Whether our environment entry is replaced for the plugin: by the kubeconfig's env, or
 * KUBERNETES_EXEC_INFO, which is always ours (a stale one from our environment must not
 * tell the plugin about another cluster). */
static bool env_overridden(const char *entry, const strvec *env)
{
    const char *eq = strchr(entry, '=');
    size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
    if (n == 20 && !strncmp(entry, "KUBERNETES_EXEC_INFO", 20))
        return true;
    for (size_t i = 0; i < env->n; i++)
        if (!strncmp(env->v[i], entry, n) && env->v[i][n] == '=')
            return true;
    return false;
}

/* The error for a plugin that failed: pre, then the last 400 bytes of its stderr on one
 * line, its control bytes replaced (what a plugin prints must not reach the terminal as
 * escapes through our message). */
static void stderr_tail(strbuf *sb, const char *pre, sbx_err *err)
{
    /* The last line or two of what the plugin said: usually the reason. */
    size_t n = sb->len;
    while (n && (sb->buf[n - 1] == '\n' || sb->buf[n - 1] == ' '))
        n--;
    size_t start = n > 400 ? n - 400 : 0;
    if (!n) {
        sbx_errf(err, "%s", pre);
        return;
    }
    char *tail = xstrndup(sb->buf + start, n - start);
    for (char *p = tail; *p; p++)
        if (*p == '\n' || (unsigned char)*p < 0x20)
            *p = *p == '\n' ? '|' : '?';
    sbx_errf(err, "%s: %s%s", pre, start ? "..." : "", tail);
    free(tail);
}

/* The plugin's stdout as an ExecCredential: of the apiVersion the kubeconfig asked for
 * (another version's fields may mean other things), with a token or a whole client
 * certificate and key, and a valid expiry when it gives one. Its output holds a secret:
 * the caller zeroes the buffer. */
static int parse_credential(const kube_target *t, const char *out, size_t len,
                            kube_credential *cred, sbx_err *err)
{
    const char *cmd = t->exec->command;
    cJSON *root = cJSON_ParseWithLength(out, len);
    const cJSON *st, *v;
    int r = -1;
    if (!cJSON_IsObject(root)) {
        sbx_errf(err, "exec plugin %s: its output is not an ExecCredential (not JSON)", cmd);
        goto out;
    }
    v = cJSON_GetObjectItemCaseSensitive(root, "apiVersion");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, t->exec->api_version)) {
        sbx_errf(err, "exec plugin %s: answered apiVersion %s, the kubeconfig (%s) asks for %s",
                 cmd, cJSON_IsString(v) ? v->valuestring : "(none)", t->source,
                 t->exec->api_version);
        goto out;
    }
    v = cJSON_GetObjectItemCaseSensitive(root, "kind");
    st = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "ExecCredential") || !cJSON_IsObject(st)) {
        sbx_errf(err, "exec plugin %s: its output is not an ExecCredential with a status", cmd);
        goto out;
    }
    v = cJSON_GetObjectItemCaseSensitive(st, "token");
    if (cJSON_IsString(v) && *v->valuestring)
        cred->token = xstrdup(v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(st, "clientCertificateData");
    if (cJSON_IsString(v) && *v->valuestring)
        cred->cert_pem = xstrdup(v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(st, "clientKeyData");
    if (cJSON_IsString(v) && *v->valuestring)
        cred->key_pem = xstrdup(v->valuestring);
    if (!cred->cert_pem != !cred->key_pem) {
        sbx_errf(err, "exec plugin %s: gave %s without %s", cmd,
                 cred->cert_pem ? "clientCertificateData" : "clientKeyData",
                 cred->cert_pem ? "clientKeyData" : "clientCertificateData");
        goto out;
    }
    if (!cred->token && !cred->cert_pem) {
        sbx_errf(err, "exec plugin %s: gave neither a token nor a client certificate", cmd);
        goto out;
    }
    v = cJSON_GetObjectItemCaseSensitive(st, "expirationTimestamp");
    if (cJSON_IsString(v) && *v->valuestring && parse_rfc3339(v->valuestring, &cred->expires) < 0) {
        sbx_errf(err, "exec plugin %s: expirationTimestamp \"%.64s\" is not an RFC 3339 time",
                 cmd, v->valuestring);
        goto out;
    }
    r = 0;
out:
    cJSON_Delete(root);
    if (r < 0)
        kube_credential_free(cred);
    return r;
}

/* Runs the kubeconfig's exec plugin for a credential, as client-go does: our environment
 * with the kubeconfig's env over it and KUBERNETES_EXEC_INFO, our terminal only when its
 * interactiveMode asks for it and there is one. Bounded in time (timeout_ms, and the
 * caller's interruption) and in output (1 MiB): a plugin that hangs or floods must not
 * hang or fill sbxsh. */
int kube_exec_credential_poll(const kube_target *t, bool (*interrupted)(void *ctx), void *ctx,
                              unsigned timeout_ms, kube_credential *cred, sbx_err *err)
{
    const kube_exec_plugin *p = t->exec;
    bool interactive = false;
    strvec argv = STRVEC_INIT, envv = STRVEC_INIT;
    strbuf out = STRBUF_INIT, errs = STRBUF_INIT;
    char *info;
    int r = -1, status = 0;
    sbx_err rerr;

    memset(cred, 0, sizeof(*cred));
    if (!p)
        return sbx_errf(err, "%s: the user has no exec plugin", t->source);
    if (p->interactive_mode && !strcmp(p->interactive_mode, "Always")) {
        if (!isatty(0))
            return sbx_errf(err, "exec plugin %s (from %s) wants a terminal "
                            "(interactiveMode: Always), and standard input is not one",
                            p->command, t->source);
        interactive = true;
    } else if (p->interactive_mode && !strcmp(p->interactive_mode, "IfAvailable")) {
        interactive = isatty(0);
    }
    strvec_push(&argv, p->command);
    strvec_pushv(&argv, p->args.v);
    for (char **e = environ; e && *e; e++)
        if (!env_overridden(*e, &p->env))
            strvec_push(&envv, *e);
    strvec_pushv(&envv, p->env.v);
    info = exec_info(t, interactive);
    strvec_pushf(&envv, "KUBERNETES_EXEC_INFO=%s", info);
    free(info);

    /* common/run.h: an interactive plugin has our terminal (stdin, stderr); any other runs
     * in its own process group, killed as a group when it overruns, its stderr's tail kept
     * for the message */
    sbx_run run = {
        .argv = argv.v,
        .env = envv.v,
        .path_search = true,
        .cwd_fd = -1,
        .stdin_inherit = interactive,
        .stderr_to = interactive ? SBX_RUN_ERR_INHERIT : SBX_RUN_ERR_CAPTURE,
        .err_out = &errs,
        .err_tail = EXEC_STDERR_TAIL,
        .new_pgrp = !interactive,
        .max = EXEC_MAX_STDOUT,
        .over_max_fails = true,
        .secret = true,         /* a token, a client key */
        .timeout_ms = timeout_ms ? timeout_ms : KUBE_EXEC_TIMEOUT_MS,
        .interrupted = interrupted,
        .ctx = ctx,
    };
    if (sbx_run_capture(&run, &out, &status, &rerr) < 0) {
        if (errno == ENOENT)
            sbx_errf(err, "exec plugin %s (from %s): not found%s%s", p->command, t->source,
                     p->install_hint ? ": " : "", p->install_hint ? p->install_hint : "");
        else if (errno == EINTR)
            sbx_errf(err, "exec plugin %s (from %s): interrupted", p->command, t->source);
        else if (errno == ETIMEDOUT)
            sbx_errf(err, "exec plugin %s (from %s): no answer within %u ms", p->command,
                     t->source, run.timeout_ms);
        else if (errno == EFBIG)
            sbx_errf(err, "exec plugin %s (from %s): wrote more than %u bytes", p->command,
                     t->source, EXEC_MAX_STDOUT);
        else
            sbx_errno(err, "exec plugin %s (from %s)", p->command, t->source);
        goto out;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char pre[600];
        if (WIFEXITED(status))
            snprintf(pre, sizeof(pre), "exec plugin %s (from %s) exited with status %d",
                     p->command, t->source, WEXITSTATUS(status));
        else
            snprintf(pre, sizeof(pre), "exec plugin %s (from %s) was killed by signal %d",
                     p->command, t->source, WTERMSIG(status));
        stderr_tail(&errs, pre, err);
        goto out;
    }
    r = parse_credential(t, out.buf, out.len, cred, err);
out:
    strvec_clear(&argv);
    strvec_clear(&envv);
    if (out.len)
        explicit_bzero(out.buf, out.len);
    strbuf_release(&out);
    strbuf_release(&errs);
    return r;
}

int kube_exec_credential(const kube_target *t, kube_credential *cred, sbx_err *err)
{
    return kube_exec_credential_poll(t, NULL, NULL, 0, cred, err);
}

void kube_credential_free(kube_credential *cred)
{
    if (cred->token)
        explicit_bzero(cred->token, strlen(cred->token));
    if (cred->key_pem)
        explicit_bzero(cred->key_pem, strlen(cred->key_pem));
    free(cred->token);
    free(cred->cert_pem);
    free(cred->key_pem);
    memset(cred, 0, sizeof(*cred));
}
