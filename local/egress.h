/*
 * The egress allowlist (AGENT_SANDBOX_LOCAL_NETWORK=allowlist): the policy that
 * AGENT_SANDBOX_EGRESS describes, and the parser of what the sandbox sends the host-side
 * proxy (sbx-egress, local/egress_main.c). Both read untrusted text: the list comes from the
 * caller, requests from the sandbox (hostile); tests/fuzz/fuzz-egress.c drives both.
 *
 * AGENT_SANDBOX_EGRESS is comma-separated; each entry is one of
 *   registry.npmjs.org       that name, on ports 443 and 80
 *   *.example.com            any name below example.com (not example.com itself)
 *   example.com:8443         that name on port 8443 too (besides 443 and 80)
 *   10.1.0.0/16, fd00::/8    a range of addresses that listed names may resolve to:
 *                            loopback, private, link-local, multicast and other special
 *                            ranges are refused unless a CIDR entry lists them
 * Requests name the host (CONNECT host:port, or an absolute http:// URI); an IP literal is
 * refused whatever is listed. The proxy resolves the name itself and connects to the very
 * address it checked.
 */
#ifndef SBX_LOCAL_EGRESS_H
#define SBX_LOCAL_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/util.h"

#define SBX_EGRESS_MAX_ENTRIES 256
#define SBX_EGRESS_HEAD_MAX 8192    /* a request's line and headers */
#define SBX_EGRESS_PORT 3128        /* the relay's port inside the sandbox */

typedef struct local_egress_host {
    char *name;         /* lower-case; for a wildcard, the suffix after "*." */
    bool wildcard;
    unsigned port;      /* 0: 443 and 80 only */
} local_egress_host;

typedef struct local_egress_net {
    int family;         /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    unsigned prefix;
} local_egress_net;

typedef struct local_egress_policy {
    local_egress_host *hosts;
    size_t nhosts, ahosts;
    local_egress_net *nets;
    size_t nnets, anets;
} local_egress_policy;

/* Parses a comma-separated list; 0, or -1 with a message naming the entry. */
int local_egress_parse(const char *list, local_egress_policy *p, sbx_err *err);
void local_egress_policy_free(local_egress_policy *p);

/* Whether host (a name, lower-case) may be reached on port. An IP literal never may. */
bool local_egress_host_allowed(const local_egress_policy *p, const char *host, unsigned port);
/* Whether the address may be connected to: a public unicast one, or one inside a listed
 * range. why (when refused) says what kind of address it is. */
bool local_egress_addr_allowed(const local_egress_policy *p, const struct sockaddr *sa,
                             const char **why);
/* Whether s is an IPv4 or IPv6 literal (with or without brackets). */
bool local_egress_is_ip_literal(const char *s);

typedef struct local_egress_req {
    bool connect;       /* CONNECT host:port, else an absolute-URI request */
    char method[16];
    char host[256];     /* lower-case */
    unsigned port;
    size_t target_off, target_len;  /* the origin-form path ("/..."), absolute-URI only */
    size_t version_off;             /* "HTTP/1.x" in the request line */
    size_t line_end;                /* offset past the request line's CRLF */
    size_t head_len;                /* offset past the blank line ending the headers */
} local_egress_req;

/* Parses a request head from buf[0..len): 1 when more bytes are needed (and len is below
 * SBX_EGRESS_HEAD_MAX), 0 when r is filled, -1 when the request cannot be served, with a
 * reason in *why. */
int local_egress_parse_request(const char *buf, size_t len, local_egress_req *r, const char **why);

#endif
