/*
 * sbx render-pool, a command of the kube backend's own (the class's commands): a tenant's
 * namespace, the agent host's identity there (ServiceAccount, Role, RoleBinding) and its
 * SandboxTemplate and SandboxWarmPool (agent-sandbox v1beta1), printed as YAML with the
 * secure defaults sbxsh expects of a pod and the trade-offs named in comments, for a
 * platform team to review and apply.
 *
 * One namespace per tenant, because a namespace is what Kubernetes' RBAC scopes a Role to:
 * in one namespace shared by every tenant's pool, any agent host's identity could get,
 * claim and exec into every other tenant's sessions. Here tenant T's ServiceAccount is
 * bound only in T's namespace (sbxsh-T), so another tenant's kubeconfig gets 403 there;
 * cluster/admission.yaml refuses what would undo that (a binding of another namespace's
 * subject, another tenant's package cache).
 *
 * It prints, never applies: what runs in a cluster should be a file someone read. Every
 * value that reaches the YAML is checked against a strict character set first, so no
 * option can add a key, a document or a comment to the output; the checks fail with
 * exit status 2 and nothing on stdout.
 *
 * The pod it describes is what cluster/admission.yaml's policy expects: the gvisor (or kata) runtime class, uid 10001 (the image's sbx user),
 * no capabilities, no service-account token, limits on every container, a read-only
 * root file system with emptyDirs where sbx-agent writes (the code directories under
 * /home, /tmp, and /run/sbxsh, the agent's socket and uploaded binary).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kclass.h"

#define SANDBOX_UID 10001
#define MAX_EGRESS 32

static const char usage[] =
    "usage: sbx render-pool --tenant T --image IMG [--runtime gvisor|kata] [--replicas N]\n"
    "                       [--cache-mount PATH] [--egress-cidr CIDR:PORT ...] [--dns]\n"
    "                       [--router-ingress] [--cpu N] [--memory Q] [--disk Q]\n"
    "                       [--namespace NS] [--pool-only]\n"
    "\n"
    "Print tenant T's namespace (sbxsh-T), the agent host's ServiceAccount, Role and\n"
    "RoleBinding there (exactly the verbs sbxsh uses, in that namespace only), and a\n"
    "SandboxTemplate and a SandboxWarmPool (agent-sandbox v1beta1) named sbx-T, with\n"
    "sbxsh's secure defaults; review, then `kubectl apply -f`. Then\n"
    "`cluster/make-kubeconfig.sh SERVER T` writes the agent host's kubeconfig, and sessions\n"
    "use it with AGENT_SANDBOX_BACKEND=kube AGENT_SANDBOX_POOL=sbx-T.\n"
    "\n"
    "  --tenant T            the tenant: a DNS label of at most 40 characters\n"
    "  --image IMG           the runtime image (cluster/image/: sbx-agent, bash, git, ...)\n"
    "  --runtime R           gvisor (default) or kata: the RuntimeClass\n"
    "  --replicas N          warm sandboxes kept ready (default 2; 0: every claim cold)\n"
    "  --cache-mount PATH    mount the tenant's package cache on each node\n"
    "                        (/var/lib/sbxsh/cache/T, made by cluster/cache-gc-install.sh)\n"
    "                        at PATH in the sandbox\n"
    "  --egress-cidr CIDR:PORT\n"
    "                        allow TCP to CIDR on PORT (repeatable; default: no egress)\n"
    "  --dns                 allow DNS to the cluster's kube-dns\n"
    "  --router-ingress      keep agent-sandbox's sandbox-router ingress rule (sbxsh\n"
    "                        itself needs none: it reaches pods by pods/exec)\n"
    "  --cpu N               CPU limit (default 2)\n"
    "  --memory Q            memory limit (default 4Gi)\n"
    "  --disk Q              ephemeral storage limit, code copies included (default 10Gi)\n"
    "  --namespace NS        the tenant's namespace (default sbxsh-T); one per tenant: in a\n"
    "                        shared one, any agent host can exec into any session\n"
    "  --pool-only           print only the template and the pool (the namespace and its\n"
    "                        RBAC made otherwise)\n";

struct egress {
    char cidr[64];
    unsigned port;
};

struct opts {
    const char *tenant, *image, *runtime, *cache, *cpu, *memory, *disk, *ns;
    long replicas;
    bool dns, router, pool_only, ns_given;
    char ns_buf[64];
    struct egress egress[MAX_EGRESS];
    size_t negress;
};

static bool bad(const char *what, const char *value, const char *why)
{
    fprintf(stderr, "sbx render-pool: %s '%s': %s\n", what, value, why);
    return false;
}

/* A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends. */
static bool dns_label(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

static bool only(const char *s, const char *set)
{
    return s[strspn(s, set)] == '\0';
}

static bool matches(const char *s, const char *ere)
{
    regex_t re;
    if (regcomp(&re, ere, REG_EXTENDED | REG_NOSUB))
        return false;
    bool ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

/* CIDR:PORT, the CIDR IPv4 or IPv6 (so the port is after the last ':'). */
static bool parse_egress(const char *arg, struct egress *e)
{
    const char *colon = strrchr(arg, ':');
    const char *slash = strchr(arg, '/');
    if (!colon || !slash || slash > colon || (size_t)(colon - arg) >= sizeof(e->cidr))
        return bad("--egress-cidr", arg, "expected CIDR:PORT, such as 10.0.0.0/8:443");
    char addr[64];
    size_t alen = (size_t)(slash - arg);
    memcpy(addr, arg, alen);
    addr[alen] = '\0';
    unsigned char buf[16];
    int maxlen = inet_pton(AF_INET, addr, buf) == 1 ? 32 : inet_pton(AF_INET6, addr, buf) == 1 ? 128 : -1;
    if (maxlen < 0)
        return bad("--egress-cidr", arg, "not an IPv4 or IPv6 address before the '/'");
    char *end;
    long len = strtol(slash + 1, &end, 10);
    if (end != colon || slash + 1 == colon || len < 0 || len > maxlen)
        return bad("--egress-cidr", arg, "the prefix length is out of range");
    long port = strtol(colon + 1, &end, 10);
    if (*end || !colon[1] || port < 1 || port > 65535)
        return bad("--egress-cidr", arg, "the port must be 1-65535");
    memcpy(e->cidr, arg, (size_t)(colon - arg));
    e->cidr[colon - arg] = '\0';
    e->port = (unsigned)port;
    return true;
}

static bool check(const struct opts *o)
{
    if (!o->tenant || !o->image) {
        fprintf(stderr, "sbx render-pool: --tenant and --image are required\n\n%s", usage);
        return false;
    }
    if (!dns_label(o->tenant, 40))
        return bad("--tenant", o->tenant, "a DNS label (a-z, 0-9, '-') of at most 40 characters");
    if (!dns_label(o->ns, 63))
        return bad("--namespace", o->ns, "a DNS label (a-z, 0-9, '-') of at most 63 characters");
    if (strlen(o->image) > 255 || o->image[0] == '-' || !only(o->image, ALNUM "._/:@-"))
        return bad("--image", o->image, "an image reference (letters, digits and ._/:@-)");
    if (strcmp(o->runtime, "gvisor") && strcmp(o->runtime, "kata"))
        return bad("--runtime", o->runtime, "gvisor or kata");
    if (!matches(o->cpu, "^[0-9]{1,4}(\\.[0-9]{1,3})?m?$") || !strcmp(o->cpu, "0"))
        return bad("--cpu", o->cpu, "a CPU quantity such as 2, 1.5 or 500m");
    if (!matches(o->memory, "^[1-9][0-9]{0,5}(Ki|Mi|Gi|Ti|K|M|G|T)?$"))
        return bad("--memory", o->memory, "a memory quantity such as 4Gi or 512Mi");
    if (!matches(o->disk, "^[1-9][0-9]{0,5}(Ki|Mi|Gi|Ti|K|M|G|T)?$"))
        return bad("--disk", o->disk, "a storage quantity such as 10Gi");
    if (o->cache) {
        /* Absolute, plain, and not over a directory the pod needs as it is. */
        if (o->cache[0] != '/' || strlen(o->cache) > 200 || !only(o->cache, ALNUM "._/-") ||
            matches(o->cache, "(^|/)\\.\\.?(/|$)") || strstr(o->cache, "//") ||
            matches(o->cache, "^/(bin|dev|etc|lib|lib64|proc|run|sbin|sys|usr)?/?$") ||
            !strncmp(o->cache, "/run/sbxsh", 10))
            return bad("--cache-mount", o->cache,
                       "an absolute path such as /home/sbx/.cache, not a system directory");
    }
    return true;
}

static void print_header(const struct opts *o)
{
    printf("# Rendered by `sbx render-pool` for tenant %s. Review, then:\n"
           "#   kubectl apply -f THIS-FILE\n",
           o->tenant);
    if (!o->pool_only)
        printf("# make the agent host's kubeconfig (a bound, expiring token of this tenant's\n"
               "# ServiceAccount):\n"
               "#   cluster/make-kubeconfig.sh SERVER %s%s%s > sbxsh-%s.kubeconfig\n",
               o->tenant, o->ns_given ? " " : "", o->ns_given ? o->ns : "", o->tenant);
    printf("# and point the agent host's sessions at it:\n"
           "#   AGENT_SANDBOX_BACKEND=kube AGENT_SANDBOX_NAMESPACE=%s AGENT_SANDBOX_POOL=sbx-%s\n"
           "#\n"
           "# The choices made here, and what they cost:\n",
           o->ns, o->tenant);
    if (!o->pool_only)
        printf("# - namespace %s for this tenant alone, its ServiceAccount bound there only: a\n"
               "#   namespace shared by tenants means any agent host can exec into any session.\n"
               "#   The Role grants exactly the verbs sbxsh uses (sbx doctor asks each), no list\n"
               "#   or watch on pods, no secrets, nothing cluster-wide.\n",
               o->ns);
    if (!strcmp(o->runtime, "gvisor"))
        printf("# - runtimeClassName gvisor: a user-space kernel between the sandbox and the node's;\n"
               "#   no KVM needed, but system-call-heavy work (builds, package installs) runs slower\n"
               "#   than under runc. --runtime kata gives each pod its own VM instead (needs KVM).\n");
    else
        printf("# - runtimeClassName kata: each pod is a VM (needs KVM or nested virtualisation on\n"
               "#   the nodes, and about 160Mi more memory per pod); the default gvisor needs neither.\n");
    printf("# - uid %d, no capabilities, no privilege escalation, RuntimeDefault seccomp and a\n"
           "#   read-only root file system: nothing can be installed system-wide at run time (bake\n"
           "#   tools into the image). sbx-agent writes only to the emptyDirs: the code directories\n"
           "#   must live under /home on the agent host (or add an emptyDir at their root), /tmp,\n"
           "#   and /run/sbxsh (the agent's socket and, when the image lacks it, its binary).\n"
           "# - automountServiceAccountToken false: the sandbox cannot reach the API server as\n"
           "#   anyone; a prompt-injected command cannot list or exec into other pods.\n"
           "# - limits cpu %s, memory %s, ephemeral-storage %s: a build that needs more is\n"
           "#   OOM-killed or evicted. Requests reserve the memory (an idle warm pod holds it) and\n"
           "#   a quarter of a CPU (or the limit, if less).\n",
           SANDBOX_UID, o->cpu, o->memory, o->disk);
    if (o->negress == 0 && !o->dns)
        printf("# - egress: none. git's network commands run on the agent host, so the sandbox needs\n"
               "#   no network for them; package installs fail until you add --egress-cidr for your\n"
               "#   registry (or its proxy).\n");
    else
        printf("# - egress: only what is listed below%s. Anything the sandbox reaches, a\n"
               "#   prompt-injected command can reach too (and send the code to).\n",
               o->dns ? " and the cluster's DNS" : " (no DNS: use addresses, or add --dns)");
    if (o->router)
        printf("# - ingress: from agent-sandbox's sandbox-router only; sbxsh itself needs none.\n");
    else
        printf("# - ingress: none. sbxsh reaches the pod through pods/exec on the API server, which\n"
               "#   NetworkPolicy does not govern; --router-ingress keeps agent-sandbox's router rule.\n");
    if (o->cache)
        printf("# - the package cache: the node's /var/lib/sbxsh/cache/%s at %s, shared by the\n"
               "#   tenant's sandboxes on that node: one of them can poison what the next reads\n"
               "#   (within the tenant only). cluster/cache-gc-install.sh makes it (owned by uid %d)\n"
               "#   and prunes it daily; on a node without it the pod does not start (FailedMount).\n",
               o->tenant, o->cache, SANDBOX_UID);
    printf("# - updateStrategy Recreate: editing the template replaces idle warm sandboxes at once\n"
           "#   (claimed ones keep running), so no session starts on a stale one.\n"
           "# - envVarsInjectionPolicy and volumeClaimTemplatesPolicy Disallowed: a claim cannot add\n"
           "#   environment or volumes (either would also force a cold start).\n"
           "# - %ld warm sandboxes: claims beyond them start cold (seconds, not ~0.2 s); each warm\n"
           "#   one holds its memory request while idle.\n",
           o->replicas);
}

/* The CPU request: a quarter of a CPU, or the limit when that is less (a request above its
 * limit makes the pod invalid). */
static void cpu_request(const char *limit, char *out, size_t outsz)
{
    size_t n = strlen(limit);
    double millis = limit[n - 1] == 'm' ? strtod(limit, NULL) : strtod(limit, NULL) * 1000;
    if (millis >= 250)
        snprintf(out, outsz, "250m");
    else
        snprintf(out, outsz, "%s", limit);
}

/* The start every object in the tenant's namespace shares: an optional comment, its
 * apiVersion and kind, its name there and sbxsh's labels (the tenant's among them). */
static void print_meta(const char *comment, const char *api, const char *kind, const char *name,
                       const struct opts *o)
{
    printf("---\n"
           "%s"
           "apiVersion: %s\n"
           "kind: %s\n"
           "metadata:\n"
           "  name: %s\n"
           "  namespace: %s\n"
           "  labels:\n"
           "    app.kubernetes.io/managed-by: sbxsh\n"
           "    sbxsh.dev/tenant: %s\n",
           comment ? comment : "", api, kind, name, o->ns, o->tenant);
}

/* The start of the template and the pool: sbx-TENANT, up to "spec:". */
static void print_head(const char *kind, const struct opts *o)
{
    char name[128];

    snprintf(name, sizeof(name), "sbx-%s", o->tenant);
    print_meta(NULL, "extensions.agents.x-k8s.io/v1beta1", kind, name, o);
    printf("spec:\n");
}

/*
 * The tenant's namespace and the agent host's identity there: a ServiceAccount, and a Role
 * with exactly the verbs sbxsh uses (kube/tool_doctor.c asks the same list with
 * SelfSubjectAccessReviews; tests/cluster/rbac.t compares them) bound to it in this
 * namespace only:
 *   sandboxclaims    create get list watch patch delete   claim, wait, extend shutdownTime, release
 *   sandboxes        get list watch                        the claimed Sandbox and its pod's name
 *   sandboxwarmpools get list                              sbx doctor: the pool exists
 *   sandboxtemplates get list                              sbx doctor: its runtime class
 *   pods             get                                   the pod's phase before an exec
 *   pods/exec        create get                            sbx-agent's stream (a WebSocket upgrade
 *                                                          is a GET, which older servers
 *                                                          authorize as get; newer ones ask
 *                                                          create, as for SPDY's POST)
 * SelfSubjectReview and SelfSubjectAccessReview are every authenticated user's already.
 */
static void print_access(const struct opts *o)
{
    printf("---\n"
           "apiVersion: v1\n"
           "kind: Namespace\n"
           "metadata:\n"
           "  name: %s\n"
           "  labels:\n"
           "    app.kubernetes.io/managed-by: sbxsh\n"
           "    # cluster/admission.yaml's bindings select the namespaces with this label.\n"
           "    sbxsh.dev/sandboxes: \"true\"\n"
           "    # Whose namespace it is: admission.yaml allows only this tenant's package cache.\n"
           "    sbxsh.dev/tenant: %s\n"
           "# No Pod Security Admission label: the package cache is a hostPath volume, which even\n"
           "# the \"baseline\" level refuses; admission.yaml enforces what matters instead.\n",
           o->ns, o->tenant);
    print_meta(NULL, "v1", "ServiceAccount", "sbxsh-agent-host", o);
    printf("# make-kubeconfig.sh asks for bound, expiring tokens; no long-lived Secret token.\n"
           "automountServiceAccountToken: false\n");
    print_meta("# Exactly the verbs sbxsh uses, in this namespace only (sbx doctor asks each).\n",
               "rbac.authorization.k8s.io/v1", "Role", "sbxsh-agent-host", o);
    printf("rules:\n"
           "- apiGroups: [\"extensions.agents.x-k8s.io\"]\n"
           "  resources: [\"sandboxclaims\"]\n"
           "  verbs: [\"create\", \"get\", \"list\", \"watch\", \"patch\", \"delete\"]\n"
           "- apiGroups: [\"agents.x-k8s.io\"]\n"
           "  resources: [\"sandboxes\"]\n"
           "  verbs: [\"get\", \"list\", \"watch\"]\n"
           "- apiGroups: [\"extensions.agents.x-k8s.io\"]\n"
           "  resources: [\"sandboxwarmpools\", \"sandboxtemplates\"]\n"
           "  verbs: [\"get\", \"list\"]\n"
           "- apiGroups: [\"\"]\n"
           "  resources: [\"pods\"]\n"
           "  verbs: [\"get\"]\n"
           "- apiGroups: [\"\"]\n"
           "  resources: [\"pods/exec\"]\n"
           "  verbs: [\"create\", \"get\"]\n");
    print_meta(NULL, "rbac.authorization.k8s.io/v1", "RoleBinding", "sbxsh-agent-host", o);
    printf("roleRef:\n"
           "  apiGroup: rbac.authorization.k8s.io\n"
           "  kind: Role\n"
           "  name: sbxsh-agent-host\n"
           "subjects:\n"
           "- kind: ServiceAccount\n"
           "  name: sbxsh-agent-host\n"
           "  namespace: %s\n",
           o->ns);
}

static void print_template(const struct opts *o)
{
    char cpu_req[32];
    cpu_request(o->cpu, cpu_req, sizeof(cpu_req));
    print_head("SandboxTemplate", o);
    printf("  envVarsInjectionPolicy: Disallowed\n"
           "  volumeClaimTemplatesPolicy: Disallowed\n"
           "  networkPolicyManagement: Managed\n"
           "  networkPolicy:\n");
    if (o->router)
        printf("    ingress:\n"
               "    - from:\n"
               "      - namespaceSelector:\n"
               "          matchLabels:\n"
               "            kubernetes.io/metadata.name: agent-sandbox-system\n"
               "        podSelector:\n"
               "          matchLabels:\n"
               "            app: sandbox-router\n");
    else
        printf("    ingress: []\n");
    if (o->negress == 0 && !o->dns)
        printf("    egress: []\n");
    else
        printf("    egress:\n");
    for (size_t i = 0; i < o->negress; i++)
        printf("    - to:\n"
               "      - ipBlock:\n"
               "          cidr: \"%s\"\n"
               "      ports:\n"
               "      - protocol: TCP\n"
               "        port: %u\n",
               o->egress[i].cidr, o->egress[i].port);
    if (o->dns)
        printf("    - to:\n"
               "      - namespaceSelector:\n"
               "          matchLabels:\n"
               "            kubernetes.io/metadata.name: kube-system\n"
               "        podSelector:\n"
               "          matchLabels:\n"
               "            k8s-app: kube-dns\n"
               "      ports:\n"
               "      - protocol: UDP\n"
               "        port: 53\n"
               "      - protocol: TCP\n"
               "        port: 53\n");
    printf("  podTemplate:\n"
           "    metadata:\n"
           "      labels:\n"
           "        sbxsh.dev/tenant: %s\n"
           "    spec:\n"
           "      runtimeClassName: %s\n"
           "      automountServiceAccountToken: false\n"
           "      enableServiceLinks: false\n"
           "      securityContext:\n"
           "        runAsNonRoot: true\n"
           "        runAsUser: %d\n"
           "        runAsGroup: %d\n"
           "        fsGroup: %d\n"
           "        seccompProfile:\n"
           "          type: RuntimeDefault\n"
           "      containers:\n"
           "      - name: sandbox\n"
           "        image: \"%s\"\n"
           "        # The pod only waits (its HOME made in the /home emptyDir first): sbxsh starts\n"
           "        # sbx-agent through pods/exec.\n"
           "        command: [\"/bin/sh\", \"-c\", \"mkdir -p \\\"$HOME\\\" && exec sleep infinity\"]\n"
           "        env:\n"
           "        - name: HOME\n"
           "          value: /home/sbx\n"
           "        securityContext:\n"
           "          allowPrivilegeEscalation: false\n"
           "          privileged: false\n"
           "          readOnlyRootFilesystem: true\n"
           "          runAsNonRoot: true\n"
           "          capabilities:\n"
           "            drop: [\"ALL\"]\n"
           "        resources:\n"
           "          requests:\n"
           "            cpu: \"%s\"\n"
           "            memory: \"%s\"\n"
           "          limits:\n"
           "            cpu: \"%s\"\n"
           "            memory: \"%s\"\n"
           "            ephemeral-storage: \"%s\"\n"
           "        volumeMounts:\n"
           "        - name: home\n"
           "          mountPath: /home\n"
           "        - name: tmp\n"
           "          mountPath: /tmp\n"
           "        - name: run\n"
           "          mountPath: /run/sbxsh\n",
           o->tenant, o->runtime, SANDBOX_UID, SANDBOX_UID, SANDBOX_UID, o->image, cpu_req,
           o->memory, o->cpu, o->memory, o->disk);
    if (o->cache)
        printf("        - name: cache\n"
               "          mountPath: %s\n",
               o->cache);
    printf("      volumes:\n"
           "      - name: home\n"
           "        emptyDir:\n"
           "          sizeLimit: \"%s\"\n"
           "      - name: tmp\n"
           "        emptyDir:\n"
           "          sizeLimit: 2Gi\n"
           "      - name: run\n"
           "        emptyDir:\n"
           "          medium: Memory\n"
           "          sizeLimit: 64Mi\n",
           o->disk);
    if (o->cache)
        printf("      - name: cache\n"
               "        hostPath:\n"
               "          path: /var/lib/sbxsh/cache/%s\n"
               "          type: Directory\n",
               o->tenant);
}

static void print_pool(const struct opts *o)
{
    print_head("SandboxWarmPool", o);
    printf("  replicas: %ld\n"
           "  sandboxTemplateRef:\n"
           "    name: sbx-%s\n"
           "  updateStrategy:\n"
           "    type: Recreate\n",
           o->replicas, o->tenant);
}

int kube_render_pool(int argc, char **argv)
{
    enum { O_TENANT = 256, O_IMAGE, O_RUNTIME, O_REPLICAS, O_CACHE, O_EGRESS, O_DNS, O_ROUTER,
           O_CPU, O_MEMORY, O_DISK, O_NS, O_POOL_ONLY, O_HELP };
    static const struct option longopts[] = {
        { "tenant", required_argument, NULL, O_TENANT },
        { "image", required_argument, NULL, O_IMAGE },
        { "runtime", required_argument, NULL, O_RUNTIME },
        { "replicas", required_argument, NULL, O_REPLICAS },
        { "cache-mount", required_argument, NULL, O_CACHE },
        { "egress-cidr", required_argument, NULL, O_EGRESS },
        { "dns", no_argument, NULL, O_DNS },
        { "router-ingress", no_argument, NULL, O_ROUTER },
        { "cpu", required_argument, NULL, O_CPU },
        { "memory", required_argument, NULL, O_MEMORY },
        { "disk", required_argument, NULL, O_DISK },
        { "namespace", required_argument, NULL, O_NS },
        { "pool-only", no_argument, NULL, O_POOL_ONLY },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    struct opts o = { .runtime = "gvisor", .cpu = "2", .memory = "4Gi", .disk = "10Gi",
                      .replicas = 2 };
    char *end;
    int c;

    optind = 1;
    opterr = 0;
    /* "+": options end at the first operand, which is then an error (none are taken). */
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case O_TENANT: o.tenant = optarg; break;
        case O_IMAGE: o.image = optarg; break;
        case O_RUNTIME: o.runtime = optarg; break;
        case O_REPLICAS:
            o.replicas = strtol(optarg, &end, 10);
            if (*end || !*optarg || o.replicas < 0 || o.replicas > 1000)
                return bad("--replicas", optarg, "a number from 0 to 1000"), 2;
            break;
        case O_CACHE: o.cache = optarg; break;
        case O_EGRESS:
            if (o.negress == MAX_EGRESS)
                return bad("--egress-cidr", optarg, "at most 32 rules"), 2;
            if (!parse_egress(optarg, &o.egress[o.negress++]))
                return 2;
            break;
        case O_DNS: o.dns = true; break;
        case O_ROUTER: o.router = true; break;
        case O_CPU: o.cpu = optarg; break;
        case O_MEMORY: o.memory = optarg; break;
        case O_DISK: o.disk = optarg; break;
        case O_NS: o.ns = optarg; o.ns_given = true; break;
        case O_POOL_ONLY: o.pool_only = true; break;
        case O_HELP: case 'h': fputs(usage, stdout); return 0;
        default:
            fprintf(stderr, "sbx render-pool: unknown or incomplete option '%s'\n\n%s",
                    argv[optind - 1], usage);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sbx render-pool: unexpected argument '%s'\n\n%s", argv[optind], usage);
        return 2;
    }
    /* The tenant's own namespace unless one is named (checked with the tenant: a tenant of
     * at most 40 characters makes a name of at most 46). */
    if (!o.ns && o.tenant) {
        snprintf(o.ns_buf, sizeof(o.ns_buf), "sbxsh-%s", o.tenant);
        o.ns = o.ns_buf;
    }
    if (!check(&o))
        return 2;
    print_header(&o);
    if (!o.pool_only)
        print_access(&o);
    print_template(&o);
    print_pool(&o);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 125;
}
