/*
 * Kubeconfig loading (kube/kubeconfig.c) on files in a scratch directory: one file, the
 * KUBECONFIG merge, ~/.kube/config, the in-cluster service account, overrides, exec
 * plugins run for real, and errors that name the file and the key.
 */
#include "kube/kubeconfig.h"
#include "kube/kpriv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/tap.h"

static char *tmp;

static char *at(const char *name)
{
    return xasprintf("%s/%s", tmp, name);
}

static void put(const char *name, const char *content)
{
    char *p = at(name);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    char *cmd = xasprintf("mkdir -p '%s'", p);
    if (system(cmd))
        exit(1);
    free(cmd);
    *slash = '/';
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    if (fd < 0 || write_full(fd, content, strlen(content)) < 0 || close(fd) < 0) {
        perror(p);
        exit(1);
    }
    free(p);
}

static int load(kube_load_opts o, kube_target *t, sbx_err *err)
{
    err->msg[0] = '\0';
    return kube_target_load(&o, t, err);
}

#define PEM_CA "-----BEGIN CERTIFICATE-----\nMIIBfake-ca\n-----END CERTIFICATE-----\n"
#define PEM_CERT "-----BEGIN CERTIFICATE-----\nMIIBfake-cert\n-----END CERTIFICATE-----\n"
#define PEM_KEY "-----BEGIN EC PRIVATE KEY-----\nMHcfake-key\n-----END EC PRIVATE KEY-----\n"
/* base64 of the three above (printf '%s' ... | base64 -w0) */
#define B64_CA "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlLWNhCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"
#define B64_CERT "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlLWNlcnQKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define B64_KEY "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY2Zha2Uta2V5Ci0tLS0tRU5EIEVDIFBSSVZBVEUgS0VZLS0tLS0K"

static void test_single(void)
{
    kube_target t;
    sbx_err err;
    put("one/ca.crt", PEM_CA);
    put("one/tok", "tok-from-file\n");
    put("one/config",
        "apiVersion: v1\n"
        "kind: Config\n"
        "current-context: main\n"
        "clusters:\n"
        "- name: c1\n"
        "  cluster:\n"
        "    server: https://10.1.2.3:6443/\n"
        "    certificate-authority: ca.crt\n"
        "    tls-server-name: api.example\n"
        "    proxy-url: http://proxy:3128\n"
        "- name: c2\n"
        "  cluster: {server: 'https://other:443', insecure-skip-tls-verify: true}\n"
        "users:\n"
        "- name: u1\n"
        "  user:\n"
        "    tokenFile: tok\n"
        "- name: u2\n"
        "  user: {username: alice, password: secret}\n"
        "contexts:\n"
        "- name: main\n"
        "  context: {cluster: c1, user: u1, namespace: team}\n"
        "- name: other\n"
        "  context: {cluster: c2, user: u2}\n");
    char *path = at("one/config"), *ca = at("one/ca.crt"), *tok = at("one/tok");
    is_int(load((kube_load_opts){ .explicit_path = path }, &t, &err), 0, "one file: loads");
    if (err.msg[0])
        diag("%s", err.msg);
    is_str(t.source, path, "one file: the source is the file");
    is_str(t.context, "main", "one file: the current context");
    is_str(t.server, "https://10.1.2.3:6443", "one file: the server, no trailing slash");
    is_str(t.namespace_, "team", "one file: the context's namespace");
    ok(t.ca_pem && t.ca_len == strlen(PEM_CA) && !memcmp(t.ca_pem, PEM_CA, t.ca_len),
       "one file: a relative certificate-authority is read from the kubeconfig's directory");
    is_str(t.tls_server_name, "api.example", "one file: tls-server-name");
    is_str(t.proxy_url, "http://proxy:3128", "one file: proxy-url");
    is_str(t.token_file, tok, "one file: tokenFile resolved against the kubeconfig's directory");
    is_str(t.token, "tok-from-file", "one file: tokenFile read (trailing newline dropped)");
    ok(!t.insecure && !t.exec && !t.username, "one file: nothing else");
    kube_target_free(&t);

    is_int(load((kube_load_opts){ .explicit_path = path, .namespace_ = "override" }, &t, &err),
           0, "namespace override: loads");
    is_str(t.namespace_, "override", "namespace override: AGENT_SANDBOX_NAMESPACE wins");
    kube_target_free(&t);

    is_int(load((kube_load_opts){ .explicit_path = path, .context = "other" }, &t, &err), 0,
           "context override: loads");
    is_str(t.context, "other", "context override: that context");
    is_str(t.server, "https://other:443", "context override: its cluster");
    ok(t.insecure, "context override: insecure-skip-tls-verify");
    is_str(t.username, "alice", "context override: basic auth user");
    is_str(t.password, "secret", "context override: basic auth password");
    is_str(t.namespace_, "default", "context override: no namespace is default");
    kube_target_free(&t);

    is_int(load((kube_load_opts){ .explicit_path = path, .context = "nope" }, &t, &err), -1,
           "context override naming no context: an error");
    ok(strstr(err.msg, "AGENT_SANDBOX_KUBE_CONTEXT: no context named \"nope\" in") &&
       strstr(err.msg, path), "... saying which and where it looked");

    /* ~/.kube/config */
    put("home/.kube/config", "current-context: h\nclusters: [{name: c, cluster: {server: "
                             "'https://home:1'}}]\ncontexts: [{name: h, context: {cluster: c}}]\n");
    char *home = at("home");
    is_int(load((kube_load_opts){ .home = home }, &t, &err), 0, "~/.kube/config: loads");
    is_str(t.server, "https://home:1", "~/.kube/config: its server");
    kube_target_free(&t);
    /* KUBECONFIG set hides ~/.kube/config, as in kubectl */
    is_int(load((kube_load_opts){ .home = home, .kubeconfig_env = path }, &t, &err), 0,
           "KUBECONFIG beats ~/.kube/config");
    is_str(t.server, "https://10.1.2.3:6443", "... its file is the one used");
    kube_target_free(&t);

    char *missing = at("no/such/config");
    is_int(load((kube_load_opts){ .explicit_path = missing, .home = home }, &t, &err), -1,
           "AGENT_SANDBOX_KUBECONFIG missing: an error (no fallback)");
    ok(strstr(err.msg, "AGENT_SANDBOX_KUBECONFIG") && strstr(err.msg, missing) &&
       strstr(err.msg, "No such file"), "... naming the variable and the file");
    diag("%s", err.msg);
    free(missing);
    free(home);
    free(path);
    free(ca);
    free(tok);
}

static void test_data_fields(void)
{
    kube_target t;
    sbx_err err;
    put("data/config", "current-context: d\n"
                       "clusters:\n- name: c\n  cluster:\n    server: https://d:1\n"
                       "    certificate-authority-data: " B64_CA "\n"
                       "users:\n- name: u\n  user:\n"
                       "    client-certificate-data: " B64_CERT "\n"
                       "    client-key-data: " B64_KEY "\n"
                       "contexts:\n- name: d\n  context: {cluster: c, user: u}\n");
    char *path = at("data/config");
    is_int(load((kube_load_opts){ .explicit_path = path }, &t, &err), 0, "-data fields: load");
    if (err.msg[0])
        diag("%s", err.msg);
    ok(t.ca_pem && t.ca_len == strlen(PEM_CA) && !memcmp(t.ca_pem, PEM_CA, t.ca_len),
       "certificate-authority-data decoded");
    ok(t.cert_pem && t.cert_len == strlen(PEM_CERT) && !memcmp(t.cert_pem, PEM_CERT, t.cert_len),
       "client-certificate-data decoded");
    ok(t.key_pem && t.key_len == strlen(PEM_KEY) && !memcmp(t.key_pem, PEM_KEY, t.key_len),
       "client-key-data decoded");
    kube_target_free(&t);

    kube_target c;
    is_int(load((kube_load_opts){ .explicit_path = path }, &t, &err), 0, "copy: load");
    kube_target_copy(&c, &t);
    kube_target_free(&t);
    ok(c.key_pem && c.key_len == strlen(PEM_KEY) && !memcmp(c.key_pem, PEM_KEY, c.key_len) &&
       !strcmp(c.server, "https://d:1"), "kube_target_copy: a deep copy");
    kube_target_free(&c);
    free(path);
}

static void test_json(void)
{
    kube_target t;
    sbx_err err;
    /* JSON is YAML: kubectl reads a JSON kubeconfig too */
    put("j/config", "{\"apiVersion\": \"v1\", \"kind\": \"Config\", \"current-context\": \"j\",\n"
                    " \"clusters\": [{\"name\": \"c\", \"cluster\": {\"server\": \"https://j:1\", "
                    "\"insecure-skip-tls-verify\": true}}],\n"
                    " \"users\": [{\"name\": \"u\", \"user\": {\"token\": \"tok-j\"}}],\n"
                    " \"contexts\": [{\"name\": \"j\", \"context\": {\"cluster\": \"c\", "
                    "\"user\": \"u\", \"namespace\": \"jns\"}}]}\n");
    char *path = at("j/config");
    is_int(load((kube_load_opts){ .explicit_path = path }, &t, &err), 0, "JSON kubeconfig: loads");
    ok(t.server && !strcmp(t.server, "https://j:1") && t.insecure && t.token &&
       !strcmp(t.token, "tok-j") && !strcmp(t.namespace_, "jns"), "JSON kubeconfig: its fields");
    kube_target_free(&t);
    free(path);
}

static void test_merge(void)
{
    kube_target t;
    sbx_err err;
    put("m/a", "current-context: ctx-a\n"
               "clusters:\n- name: shared\n  cluster: {server: 'https://from-a:1'}\n"
               "contexts:\n- name: ctx-a\n  context: {cluster: shared, user: u, namespace: from-a}\n"
               "- name: ctx-b\n  context: {cluster: shared, namespace: shadowed}\n");
    put("m/b", "current-context: ctx-b\n"
               "clusters:\n- name: shared\n  cluster: {server: 'https://from-b:1', "
               "insecure-skip-tls-verify: true}\n"
               "users:\n- name: u\n  user: {token: tok-b}\n"
               "contexts:\n- name: ctx-b\n  context: {cluster: shared, namespace: from-b}\n");
    char *a = at("m/a"), *b = at("m/b"), *gone = at("m/gone");
    char *ab = xasprintf("%s:%s:%s", gone, a, b), *ba = xasprintf("%s:%s", b, a);
    is_int(load((kube_load_opts){ .kubeconfig_env = ab }, &t, &err), 0,
           "KUBECONFIG=missing:a:b: loads (the missing file skipped)");
    if (err.msg[0])
        diag("%s", err.msg);
    is_str(t.context, "ctx-a", "merge: current-context from the first file that sets it");
    is_str(t.namespace_, "from-a", "merge: that context as the first file defines it");
    is_str(t.server, "https://from-a:1", "merge: a cluster name in both: the first file's");
    ok(!t.insecure, "merge: the first definition wins entirely (no field of the later one)");
    is_str(t.token, "tok-b", "merge: a user only the second file has");
    is_str(t.source, a, "merge: the source is the context's file");
    kube_target_free(&t);

    is_int(load((kube_load_opts){ .kubeconfig_env = ba }, &t, &err), 0, "KUBECONFIG=b:a");
    is_str(t.context, "ctx-b", "merge b:a: b's current-context");
    is_str(t.namespace_, "from-b", "merge b:a: b's definition of ctx-b");
    is_str(t.server, "https://from-b:1", "merge b:a: b's cluster");
    ok(t.insecure, "merge b:a: with its fields");
    kube_target_free(&t);

    is_int(load((kube_load_opts){ .kubeconfig_env = gone }, &t, &err), -1,
           "KUBECONFIG with no file that exists: an error");
    ok(strstr(err.msg, "KUBECONFIG=") && strstr(err.msg, gone), "... naming the variable");
    free(a);
    free(b);
    free(gone);
    free(ab);
    free(ba);
}

static void test_incluster(void)
{
    kube_target t;
    sbx_err err;
    char *sa = at("sa"), *home = at("emptyhome");
    put("sa/token", "sa-token\n");
    put("sa/namespace", "pod-ns\n");
    put("sa/ca.crt", PEM_CA);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    is_int(load((kube_load_opts){ .home = home, .incluster_dir = sa }, &t, &err), 0,
           "in-cluster: no kubeconfig, a service account");
    is_str(t.source, "in-cluster", "in-cluster: the source says so");
    is_str(t.server, "https://10.96.0.1:443", "in-cluster: the server from the variables");
    is_str(t.token, "sa-token", "in-cluster: the token");
    ok(t.token_file && strstr(t.token_file, "/sa/token"), "in-cluster: the token file (it rotates)");
    is_str(t.namespace_, "pod-ns", "in-cluster: the namespace file");
    ok(t.ca_pem && t.ca_len == strlen(PEM_CA), "in-cluster: the CA");
    kube_target_free(&t);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    is_int(load((kube_load_opts){ .home = home, .incluster_dir = sa, .namespace_ = "mine" },
                &t, &err), 0, "in-cluster: IPv6");
    is_str(t.server, "https://[fd00::1]:443", "in-cluster: an IPv6 host is bracketed");
    is_str(t.namespace_, "mine", "in-cluster: AGENT_SANDBOX_NAMESPACE wins");
    kube_target_free(&t);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    is_int(load((kube_load_opts){ .home = home, .incluster_dir = sa }, &t, &err), -1,
           "nothing at all: an error");
    ok(strstr(err.msg, "no Kubernetes configuration") && strstr(err.msg, "AGENT_SANDBOX_KUBECONFIG"),
       "... that says where to put one");
    free(sa);
    free(home);
}

static int calls;
static bool stop_after_3(void *ctx)
{
    return ++calls > 3;
}

static void test_exec(void)
{
    kube_target t;
    kube_credential cred;
    sbx_err err;
    put("x/plugin.sh", "#!/bin/sh\n"
                       "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$(dirname \"$0\")/info\"\n"
                       "cat <<EOF\n"
                       "{\"apiVersion\": \"client.authentication.k8s.io/v1\", \"kind\": "
                       "\"ExecCredential\", \"status\": {\"token\": \"tok-$1-$FOO\", "
                       "\"expirationTimestamp\": \"2030-01-02T03:04:05Z\"}}\n"
                       "EOF\n");
    put("x/fail.sh", "#!/bin/sh\necho 'error: login required: run cloud-login' >&2\nexit 1\n");
    put("x/config",
        "current-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://x:1', certificate-authority-data: " B64_CA "}}]\n"
        "users:\n"
        "- name: u\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1\n"
        "      command: ./plugin.sh\n"
        "      args: [arg]\n"
        "      env: [{name: FOO, value: bar}]\n"
        "      interactiveMode: Never\n"
        "      provideClusterInfo: true\n"
        "- name: f\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, "
        "command: ./fail.sh, interactiveMode: Never}\n"
        "- name: m\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, "
        "command: no-such-plugin-xyz, interactiveMode: IfAvailable, "
        "installHint: 'install it with: apt install xyz'}\n"
        "contexts:\n- {name: x, context: {cluster: c, user: u}}\n"
        "- {name: f, context: {cluster: c, user: f}}\n"
        "- {name: m, context: {cluster: c, user: m}}\n");
    char *path = at("x/config"), *plugin = at("x/plugin.sh");
    /* the relative command resolves against the kubeconfig's directory, not the cwd */
    is_int(load((kube_load_opts){ .explicit_path = path }, &t, &err), 0, "exec plugin: loads");
    if (err.msg[0])
        diag("%s", err.msg);
    ok(t.exec && !strcmp(t.exec->command, plugin), "exec plugin: ./plugin.sh is beside the "
                                                   "kubeconfig");
    ok(t.exec && t.exec->args.n == 1 && t.exec->env.n == 1 &&
       !strcmp(t.exec->env.v[0], "FOO=bar") && t.exec->provide_cluster_info,
       "exec plugin: args, env, provideClusterInfo");
    is_int(kube_exec_credential(&t, &cred, &err), 0, "exec plugin: runs");
    if (err.msg[0])
        diag("%s", err.msg);
    is_str(cred.token, "tok-arg-bar", "exec plugin: its token (args and env reached it)");
    is_int(cred.expires, 1893553445, "exec plugin: expirationTimestamp");
    kube_credential_free(&cred);
    char *infop = at("x/info"), *info = NULL;
    size_t len;
    if (read_file(infop, 65536, &info, &len, &err) < 0)
        info = xstrdup("");
    ok(strstr(info, "\"kind\":\"ExecCredential\"") && strstr(info, "\"interactive\":false") &&
       strstr(info, "\"server\":\"https://x:1\"") &&
       strstr(info, "\"certificate-authority-data\":\"" B64_CA "\""),
       "exec plugin: KUBERNETES_EXEC_INFO as kubectl writes it, with the cluster");
    diag("KUBERNETES_EXEC_INFO=%s", info);
    free(info);
    free(infop);
    kube_target_free(&t);

    is_int(load((kube_load_opts){ .explicit_path = path, .context = "f" }, &t, &err), 0,
           "failing plugin: loads");
    is_int(kube_exec_credential(&t, &cred, &err), -1, "failing plugin: an error");
    ok(strstr(err.msg, "exited with status 1") && strstr(err.msg, "login required: run cloud-login"),
       "failing plugin: the status and its stderr");
    diag("%s", err.msg);
    kube_target_free(&t);

    is_int(load((kube_load_opts){ .explicit_path = path, .context = "m" }, &t, &err), 0,
           "missing plugin: loads");
    is_int(kube_exec_credential(&t, &cred, &err), -1, "missing plugin: an error");
    ok(strstr(err.msg, "no-such-plugin-xyz") && strstr(err.msg, "not found") &&
       strstr(err.msg, "apt install xyz"), "missing plugin: says so, with the installHint");
    diag("%s", err.msg);
    kube_target_free(&t);

    /* a plugin that hangs: bounded in time, and Ctrl-C ends it */
    put("x/hang.sh", "#!/bin/sh\nexec sleep 30\n");
    put("x/hang", "current-context: h\n"
                  "clusters: [{name: c, cluster: {server: 'https://x:1'}}]\n"
                  "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
                  "command: ./hang.sh, interactiveMode: Never}}}]\n"
                  "contexts: [{name: h, context: {cluster: c, user: u}}]\n");
    char *hang = at("x/hang");
    is_int(load((kube_load_opts){ .explicit_path = hang }, &t, &err), 0, "hanging plugin: loads");
    is_int(kube_exec_credential_poll(&t, NULL, NULL, 300, &cred, &err), -1,
           "hanging plugin: ends at its time bound");
    ok(strstr(err.msg, "no answer within 300 ms") != NULL, "hanging plugin: %s", err.msg);
    calls = 0;
    is_int(kube_exec_credential_poll(&t, stop_after_3, NULL, 0, &cred, &err), -1,
           "hanging plugin: the interrupt hook ends it");
    ok(strstr(err.msg, "interrupted") != NULL, "hanging plugin: %s", err.msg);
    kube_target_free(&t);
    free(hang);

    /* interactiveMode: Always needs a terminal on stdin */
    put("x/always", "current-context: a\n"
                    "clusters: [{name: c, cluster: {server: 'https://x:1'}}]\n"
                    "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
                    "command: ./plugin.sh, interactiveMode: Always}}}]\n"
                    "contexts: [{name: a, context: {cluster: c, user: u}}]\n");
    char *always = at("x/always");
    int saved = dup(0), nul = open("/dev/null", O_RDONLY);
    dup2(nul, 0);
    close(nul);
    is_int(load((kube_load_opts){ .explicit_path = always }, &t, &err), 0, "Always: loads");
    is_int(kube_exec_credential(&t, &cred, &err), -1, "Always without a terminal: an error");
    ok(strstr(err.msg, "wants a terminal") != NULL, "Always: %s", err.msg);
    dup2(saved, 0);
    close(saved);
    kube_target_free(&t);
    free(always);
    free(path);
    free(plugin);
}

/* Loads content as a kubeconfig and expects an error with each of the substrings. */
static void bad(const char *name, const char *content, const char *want1, const char *want2,
                const char *what)
{
    kube_target t;
    sbx_err err;
    put(name, content);
    char *path = at(name);
    int r = load((kube_load_opts){ .explicit_path = path }, &t, &err);
    char *pre = xasprintf("%s: ", path);
    ok(r == -1 && !strncmp(err.msg, pre, strlen(pre)) && strstr(err.msg, want1) &&
       (!want2 || strstr(err.msg, want2)), "%s: %s", what, err.msg);
    if (r == 0)
        kube_target_free(&t);
    free(pre);
    free(path);
}

static void test_errors(void)
{
    const char *cl = "clusters: [{name: c, cluster: {server: 'https://e:1'}}]\n";
    const char *ctx = "contexts: [{name: e, context: {cluster: c, user: u}}]\ncurrent-context: e\n";
    char *s;

    bad("e/yaml", "clusters:\n- name: c\n  cluster: {server: [unclosed\n", "line ", "not valid YAML",
        "malformed YAML: the file and the line");
    s = xasprintf("%s%susers:\n- name: u\n  user:\n    client-certificate-data: " B64_CERT "\n"
                  "    client-key-data: 'not base64!'\n", cl, ctx);
    bad("e/b64", s, "users[0].user.client-key-data: not valid base64", NULL,
        "bad base64: the file and the key");
    free(s);
    s = xasprintf("%s%susers:\n- name: u\n  user: {client-key-data: " B64_CA "}\n", cl, ctx);
    bad("e/halfcert", s, "users[0].user: a client-key without its client-certificate", NULL,
        "a key without a certificate");
    free(s);
    bad("e/dangling-cluster",
        "contexts: [{name: e, context: {cluster: nope}}]\ncurrent-context: e\n",
        "contexts[0].context.cluster: no cluster named \"nope\"", NULL,
        "a context naming no cluster: the key");
    s = xasprintf("%s%s", cl, "contexts: [{name: e, context: {cluster: c, user: ghost}}]\n"
                              "current-context: e\n");
    bad("e/dangling-user", s, "contexts[0].context.user: no user named \"ghost\"", NULL,
        "a context naming no user: the key");
    free(s);
    s = xasprintf("%s%s", cl, "contexts: [{name: e, context: {cluster: c}}]\n"
                              "current-context: elsewhere\n");
    bad("e/dangling-current", s, "current-context: no context named \"elsewhere\"", NULL,
        "current-context naming no context: the key");
    free(s);
    bad("e/noserver", "clusters: [{name: c, cluster: {}}]\ncontexts: [{name: e, context: "
                      "{cluster: c}}]\ncurrent-context: e\n",
        "clusters[0].cluster.server: missing", NULL, "no server");
    bad("e/cafile", "clusters: [{name: c, cluster: {server: 'https://e:1', "
                    "certificate-authority: nothere.crt}}]\ncontexts: [{name: e, context: "
                    "{cluster: c}}]\ncurrent-context: e\n",
        "clusters[0].cluster.certificate-authority: ", "nothere.crt: No such file",
        "a certificate-authority file missing");
    bad("e/bool", "clusters: [{name: c, cluster: {server: 'https://e:1', "
                  "insecure-skip-tls-verify: maybe}}]\ncontexts: [{name: e, context: "
                  "{cluster: c}}]\ncurrent-context: e\n",
        "clusters[0].cluster.insecure-skip-tls-verify: not true or false", NULL, "a bad boolean");
    bad("e/dup", "clusters: [{name: c, cluster: {server: 'https://e:1'}}, {name: c, cluster: "
                 "{server: 'https://f:1'}}]\ncontexts: [{name: e, context: {cluster: c}}]\n"
                 "current-context: e\n",
        "clusters[1].name: \"c\" is also clusters[0]'s name", NULL, "a name twice in one file");
    bad("e/proxy", "clusters: [{name: c, cluster: {server: 'https://e:1', proxy-url: "
                   "'ftp://p:1'}}]\ncontexts: [{name: e, context: {cluster: c}}]\n"
                   "current-context: e\n",
        "clusters[0].cluster.proxy-url: \"ftp://p:1\": only http, https and socks5", NULL,
        "a proxy-url of another scheme");
    bad("e/list", "clusters: {name: c}\n", "clusters: not a list", NULL, "clusters not a list");
    bad("e/nocur", cl, "no current-context", NULL, "no current-context");
    s = xasprintf("%s%susers:\n- name: u\n  user:\n    exec: {command: x, apiVersion: "
                  "client.authentication.k8s.io/v1}\n", cl, ctx);
    bad("e/exec-mode", s, "users[0].user.exec.interactiveMode: missing", NULL,
        "a v1 exec plugin without interactiveMode");
    free(s);
    s = xasprintf("%s%susers:\n- name: u\n  user:\n    tokenFile: /nonexistent/token\n", cl, ctx);
    bad("e/tokenfile", s, "users[0].user.tokenFile: /nonexistent/token", NULL,
        "a tokenFile that cannot be read");
    free(s);
    s = xasprintf("%s%susers:\n- name: u\n  user:\n    auth-provider: {name: gcp}\n", cl, ctx);
    bad("e/authprov", s, "users[0].user.auth-provider: ", "exec plugin", "auth-provider");
    free(s);
}

/* The oidc auth-provider (kubectl 1.32 still has it: client-go's plugin/pkg/client/auth/
 * oidc): its id-token is the bearer token while its exp is more than 10 s away; sbxsh does
 * not refresh it, and says what to do instead. */
#define JWT_HDR "eyJhbGciOiJSUzI1NiJ9"
/* {"iss":"https://idp.example/??>>","exp":4102444800}: base64url with '_', no padding */
#define JWT_LIVE JWT_HDR ".eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlLz8_Pj4iLCJleHAiOjQxMDI0NDQ4MDB9.c2ln"
/* {"sub":"a","exp":1000000000}: 2001 */
#define JWT_DEAD JWT_HDR ".eyJzdWIiOiJhIiwiZXhwIjoxMDAwMDAwMDAwfQ.c2ln"
static void test_oidc(void)
{
    const char *head = "clusters: [{name: c, cluster: {server: 'https://e:1'}}]\n"
                       "contexts: [{name: e, context: {cluster: c, user: u}}]\n"
                       "current-context: e\n"
                       "users:\n- name: u\n  user:\n    auth-provider:\n      name: oidc\n"
                       "      config:\n";
    kube_target t;
    sbx_err err;
    char *s = xasprintf("%s        idp-issuer-url: https://idp.example\n"
                        "        client-id: kubernetes\n        refresh-token: r1\n"
                        "        id-token: " JWT_LIVE "\n", head);
    put("oidc/live", s);
    free(s);
    char *path = at("oidc/live");
    int r = load((kube_load_opts){ .explicit_path = path }, &t, &err);
    ok(r == 0 && t.token && !strcmp(t.token, JWT_LIVE) && t.token_expires == 4102444800LL,
       "oidc: a live id-token is the bearer token, its exp kept (%s)", r ? err.msg : "loaded");
    if (r == 0) {
        kube_target c;
        kube_target_copy(&c, &t);
        ok(c.token_expires == 4102444800LL, "oidc: the copy keeps the expiry");
        kube_target_free(&c);
        kube_target_free(&t);
    }
    free(path);

    s = xasprintf("%s        idp-issuer-url: https://idp.example\n"
                  "        client-id: kubernetes\n        refresh-token: r1\n"
                  "        id-token: " JWT_DEAD "\n", head);
    bad("oidc/dead", s, "users[0].user.auth-provider.config.id-token: expired at "
        "2001-09-09T01:46:40Z", "run any kubectl command", "oidc: an expired id-token: when, "
        "and that kubectl refreshes it");
    free(s);
    s = xasprintf("%s        idp-issuer-url: https://idp.example\n"
                  "        client-id: kubernetes\n        refresh-token: r1\n", head);
    bad("oidc/none", s, "config.id-token: missing", "kubelogin",
        "oidc: no id-token (only a refresh-token): what to do");
    free(s);
    s = xasprintf("%s        idp-issuer-url: https://idp.example\n"
                  "        id-token: " JWT_LIVE "\n", head);
    bad("oidc/noclient", s, "config.client-id: missing", NULL,
        "oidc: client-id is required, as client-go's newOIDCAuthProvider says");
    free(s);
    s = xasprintf("%s        client-id: kubernetes\n        id-token: " JWT_LIVE "\n", head);
    bad("oidc/noissuer", s, "config.idp-issuer-url: missing", NULL,
        "oidc: idp-issuer-url is required");
    free(s);
    s = xasprintf("%s        idp-issuer-url: https://idp.example\n"
                  "        client-id: kubernetes\n        id-token: opaque-token\n", head);
    bad("oidc/notjwt", s, "config.id-token: not a JWT", NULL, "oidc: an id-token that is not a JWT");
    free(s);
    s = xasprintf("%s        idp-issuer-url: https://idp.example\n"
                  "        client-id: kubernetes\n        id-token: " JWT_LIVE "\n"
                  "    token: t2\n", head);
    bad("oidc/both", s, "users[0].user: both an auth-provider and another credential", NULL,
        "oidc beside a token: refused (which would be sent is not clear)");
    free(s);
}

int main(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    tmp = xasprintf("%s/sbx-kubeconfig-XXXXXX", base);
    if (!mkdtemp(tmp))
        return perror("mkdtemp"), 1;
    /* Nothing of the caller's own configuration may leak in. */
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    test_single();
    test_data_fields();
    test_merge();
    test_json();
    test_incluster();
    test_exec();
    test_errors();
    test_oidc();
    char *cmd = xasprintf("rm -rf '%s'", tmp);
    if (system(cmd))
        diag("could not remove %s", tmp);
    free(cmd);
    free(tmp);
    return done_testing();
}
