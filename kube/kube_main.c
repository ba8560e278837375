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
 * opts: --kubeconfig F --context C --namespace N --pool P --ttl SECS --timeout SECS.
 * stdout carries lines for the class: "progress TEXT", "reattached", "error TEXT" (claim,
 * release), findings (doctor), or the stream itself (stream). Diagnostics go to stderr
 * (the holder's log).
 */
#include "kube/tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kclass.h"

static const char usage[] =
    "usage: sbx-kube claim|check|release|stream|doctor [options]\n"
    "The Kubernetes backend's client (sbxsh runs it; `sbx-kube doctor` checks a cluster).\n"
    "options: --kubeconfig FILE --context NAME --namespace NS --pool POOL --ttl SECS\n"
    "         --timeout SECS --state DIR --session NAME --code-dir DIR --agent PATH\n"
    "         --home DIR --advisory -- AGENT_ARGS...\n";

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
    kt_opts o = { .ttl = SBX_KUBE_TTL_DEFAULT, .timeout = SBX_KUBE_CLAIM_TIMEOUT_DEFAULT };
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
    if (!strcmp(sub, "claim"))
        r = kt_claim(&k, &err) < 0 ? 1 : 0;
    else if (!strcmp(sub, "check"))
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
