/*
 * libFuzzer driver for what the egress proxy reads from the hostile sandbox and from the
 * caller's AGENT_SANDBOX_EGRESS (local/egress.c). The first byte picks: a request head
 * parsed and checked against a fixed policy (a parsed request always names a valid, non-IP
 * host, a port from 1 to 65535 and offsets inside the input), or the rest as an allowlist
 * (parsed, then every address kind checked against it).
 *
 *   make fuzz-egress FUZZ_SECONDS=300
 */
#include "local/egress.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static local_egress_policy fixed;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sbx_err err;
    if (!fixed.nhosts && local_egress_parse("registry.npmjs.org,*.example.com,h.test:8080,"
                                          "10.0.0.0/8,fd00::/8", &fixed, &err) < 0)
        abort();
    if (!size)
        return 0;
    if (data[0] & 1) {
        local_egress_req r;
        const char *why;
        size_t len = size - 1 > SBX_EGRESS_HEAD_MAX ? SBX_EGRESS_HEAD_MAX : size - 1;
        char *buf = malloc(len ? len : 1);
        memcpy(buf, data + 1, len);
        int rc = local_egress_parse_request(buf, len, &r, &why);
        if (rc < 0 && !why)
            abort();
        if (rc == 0) {
            if (!r.host[0] || strchr(r.host, ':') || local_egress_is_ip_literal(r.host) ||
                r.port < 1 || r.port > 65535 || r.head_len > len || r.line_end > r.head_len ||
                r.target_off + r.target_len > r.line_end || r.version_off + 8 > r.line_end)
                abort();
            (void)local_egress_host_allowed(&fixed, r.host, r.port);
        }
        free(buf);
        return 0;
    }
    char *list = malloc(size);
    memcpy(list, data + 1, size - 1);
    list[size - 1] = '\0';
    local_egress_policy p;
    if (local_egress_parse(list, &p, &err) == 0) {
        struct sockaddr_in a4 = { .sin_family = AF_INET };
        struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
        const char *why;
        memcpy(&a4.sin_addr, data + (size > 4 ? size - 4 : 0), size > 4 ? 4 : 0);
        memcpy(&a6.sin6_addr, data + (size > 16 ? size - 16 : 0), size > 16 ? 16 : 0);
        (void)local_egress_addr_allowed(&p, (struct sockaddr *)&a4, &why);
        (void)local_egress_addr_allowed(&p, (struct sockaddr *)&a6, &why);
        /* a listed name is admitted on 443 */
        for (size_t i = 0; i < p.nhosts; i++)
            if (!p.hosts[i].wildcard && !local_egress_host_allowed(&p, p.hosts[i].name, 443))
                abort();
        local_egress_policy_free(&p);
    }
    free(list);
    return 0;
}
