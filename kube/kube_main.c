/*
 * sbx-kube: the Kubernetes backend's program that talks to the API server (the class in
 * kube/backend*.c runs it; kube.mk says why the two halves). Not meant to be run by hand,
 * but it can be: `sbx-kube doctor` checks a cluster.
 *
 *   sbx-kube claim   --state DIR --session S [opts] [--code-dir D]...
 *   sbx-kube check   --state DIR --session S [opts]
 *   sbx-kube release --state DIR --session S [opts]
 *   sbx-kube stream  --state DIR --session S [opts] --agent PATH --home DIR -- AGENT_ARGS...
 *   sbx-kube doctor  [--advisory] [opts]
 *
 * opts: --kubeconfig F --context C --namespace N --pool P --ttl SECS --timeout SECS
 * --credential-fd N.
 * stdout carries lines for the class: "progress TEXT", "reattached", "error TEXT" (claim,
 * release), "credential ..." (claim: the exec plugin's credential, which the holder keeps
 * in memory and gives the stream on --credential-fd, so that the plugin runs once),
 * findings (doctor), or the stream itself (stream). Diagnostics go to stderr (the holder's
 * log).
 */
#include "kube/tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kclass.h"

static const char usage[] =
    "usage: sbx-kube claim|check|release|stream|doctor [options]\n"
    "The Kubernetes backend's client (sbxsh runs it; `sbx-kube doctor` checks a cluster).\n"
    "options: --kubeconfig FILE --context NAME --namespace NS --pool POOL --ttl SECS\n"
    "         --timeout SECS --state DIR --session NAME --code-dir DIR --agent PATH\n"
    "         --home DIR --advisory --credential-fd N -- AGENT_ARGS...\n";

/* The credential the holder passed on fd (a pipe it wrote and closed): read, given to
 * the client, wiped. Unusable or unreadable: ignored (the plugin runs, as without it). */
static void take_credential(kt *k, int fd)
{
    strbuf sb = STRBUF_INIT;
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && sb.len < (1u << 20))
            strbuf_add(&sb, chunk, (size_t)n);
    explicit_bzero(chunk, sizeof(chunk));
    close(fd);
    if (sb.len && kube_client_import_credential(k->c, sb.buf) < 0)
        fprintf(stderr, "sbx-kube: the credential passed on fd %d is not usable: the exec "
                "plugin runs again\n", fd);
    if (sb.alloc)
        explicit_bzero(sb.buf, sb.alloc);
    strbuf_release(&sb);
}

static int parse_uint(const char *s, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v > 100000000UL)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv)
{
    kt_opts o = { .ttl = SBX_KUBE_TTL_DEFAULT, .timeout = SBX_KUBE_CLAIM_TIMEOUT_DEFAULT,
                  .credential_fd = -1 };
    unsigned cfd;
    const char *sub;
    sbx_err err = { "" };
    kt k;
    int r;

    if (argc < 2 || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    sub = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            o.agent_args = argv + i + 1;
            break;
        }
        if (!strcmp(a, "--advisory")) {
            o.advisory = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "sbx-kube: %s wants a value\n%s", a, usage);
            return 2;
        }
        i++;
        if (!strcmp(a, "--kubeconfig"))
            o.kubeconfig = v;
        else if (!strcmp(a, "--context"))
            o.context = v;
        else if (!strcmp(a, "--namespace"))
            o.namespace_ = v;
        else if (!strcmp(a, "--pool"))
            o.pool = v;
        else if (!strcmp(a, "--state"))
            o.state_dir = v;
        else if (!strcmp(a, "--session"))
            o.session = v;
        else if (!strcmp(a, "--code-dir"))
            strvec_push(&o.code_dirs, v);
        else if (!strcmp(a, "--agent"))
            o.agent = v;
        else if (!strcmp(a, "--home"))
            o.home = v;
        else if (!strcmp(a, "--credential-fd") && parse_uint(v, &cfd) == 0 && cfd > 2 &&
                 cfd < 1024)
            o.credential_fd = (int)cfd;
        else if ((!strcmp(a, "--ttl") && parse_uint(v, &o.ttl) == 0) ||
                 (!strcmp(a, "--timeout") && parse_uint(v, &o.timeout) == 0))
            ;
        else {
            fprintf(stderr, "sbx-kube: bad option %s %s\n%s", a, v, usage);
            return 2;
        }
    }
    if (!strcmp(sub, "doctor"))
        return kt_doctor(&o);
    if (!o.state_dir || !o.session) {
        fprintf(stderr, "sbx-kube %s: --state and --session are required\n", sub);
        return 2;
    }
    if (!strcmp(sub, "stream") && (!o.agent || !o.home)) {
        fprintf(stderr, "sbx-kube stream: --agent and --home are required\n");
        return 2;
    }
    if (kt_connect(&k, &o, &err) < 0) {
        printf("error %s\n", err.msg);
        fprintf(stderr, "sbx-kube %s: %s\n", sub, err.msg);
        return 1;
    }
    if (o.credential_fd >= 0)
        take_credential(&k, o.credential_fd);
    if (!strcmp(sub, "claim")) {
        r = kt_claim(&k, &err) < 0 ? 1 : 0;
        strbuf cred = STRBUF_INIT;
        if (r == 0 && kube_client_export_credential(k.c, &cred) == 0) {
            printf("credential %s\n", cred.buf);
            fflush(stdout);
        }
        if (cred.alloc)
            explicit_bzero(cred.buf, cred.alloc);
        strbuf_release(&cred);
    } else if (!strcmp(sub, "check"))
        r = kt_check(&k);
    else if (!strcmp(sub, "release"))
        r = kt_release(&k, &err) < 0 ? 1 : 0;
    else if (!strcmp(sub, "stream"))
        r = kt_stream(&k, &err);
    else {
        fprintf(stderr, "sbx-kube: unknown command %s\n%s", sub, usage);
        r = 2;
    }
    if (r == 1 && strcmp(sub, "stream") && strcmp(sub, "check")) {
        printf("error %s\n", err.msg);
        fprintf(stderr, "sbx-kube %s: %s\n", sub, err.msg);
    }
    kt_close(&k);
    strvec_clear(&o.code_dirs);
    return r;
}
