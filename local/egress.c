/*
 * The egress allowlist's policy and request parser (egress.h), for sbx-egress, the host
 * process through which a sandbox with AGENT_SANDBOX_LOCAL_NETWORK=allowlist reaches the
 * network. The request comes from the sandbox, so it is hostile: the proxy must never
 * become a way to reach this machine or its network (the cloud metadata service at
 * 169.254.169.254, a database on 10.x, the host's own 127.0.0.1), nor a host the person did
 * not list. Hence: requests name hosts, never addresses (an address would bypass the list
 * by spelling), a name must be one the list allows, and every address it resolves to is
 * checked again before the connection (a listed name that resolves to a private address,
 * DNS rebinding, is refused unless the person listed that range).
 */
#include "local/egress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A host name as the allowlist and requests take it: labels of [a-z0-9_-], 1..63 bytes,
 * at most 253 in all, and a last label that starts with a letter. That last rule is what
 * keeps every numeric form out ("127.1", "0x7f.1", "2130706433": inet_aton would read
 * them as addresses), and IPv6 has ':' in it. Lower-cases s in place. */
static bool host_name_ok(char *s)
{
    size_t n = strlen(s), label = 0;
    const char *last = s;
    if (!n || n > 253 || s[0] == '.' || s[n - 1] == '.')
        return false;
    for (char *p = s; *p; p++) {
        *p = (char)tolower((unsigned char)*p);
        if (*p == '.') {
            if (!label)
                return false;
            label = 0;
            last = p + 1;
            continue;
        }
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
            return false;
        if (++label > 63)
            return false;
    }
    return *last >= 'a' && *last <= 'z';
}

bool local_egress_is_ip_literal(const char *s)
{
    unsigned char buf[16];
    char tmp[64];
    size_t n = strlen(s);
    struct in_addr a4;
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']' && n - 2 < sizeof(tmp)) {
        memcpy(tmp, s + 1, n - 2);
        tmp[n - 2] = '\0';
        s = tmp;
    }
    return inet_pton(AF_INET6, s, buf) == 1 || inet_aton(s, &a4) == 1;
}

/* A port: 1 to 65535 in plain decimal digits only (strtoul would take " +80" or "0x50",
 * spellings under which a refused port could pass a comparison). */
static int parse_port(const char *s, unsigned *out)
{
    unsigned long v = 0;
    if (!*s || strlen(s) > 5)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* One entry of AGENT_SANDBOX_EGRESS (the person's, not the sandbox's): a CIDR range with
 * a '/', else [*.]name[:port]. An address without a prefix is refused with the CIDR to
 * write instead: the proxy only admits requests by name, so a listed address alone would
 * never match, and the person would think it was allowed. */
static int parse_entry(local_egress_policy *p, const char *entry, sbx_err *err)
{
    char buf[300];
    char *slash, *colon;

    if (strlen(entry) >= sizeof(buf))
        return sbx_errf(err, "AGENT_SANDBOX_EGRESS: '%.40s...' is too long for a host name", entry);
    snprintf(buf, sizeof(buf), "%s", entry);
    if ((slash = strchr(buf, '/'))) {
        local_egress_net net = { 0 };
        unsigned prefix;
        *slash = '\0';
        if (inet_pton(AF_INET, buf, net.addr) == 1)
            net.family = AF_INET;
        else if (inet_pton(AF_INET6, buf, net.addr) == 1)
            net.family = AF_INET6;
        if (!net.family || (strcmp(slash + 1, "0") && parse_port(slash + 1, &prefix) < 0) ||
            (prefix = (unsigned)atoi(slash + 1)) > (net.family == AF_INET ? 32u : 128u))
            return sbx_errf(err, "AGENT_SANDBOX_EGRESS: '%s' is not an address range "
                            "(CIDR such as 10.0.0.0/8 or fd00::/8)", entry);
        net.prefix = prefix;
        XGROW(p->nets, p->anets, p->nnets + 1);
        p->nets[p->nnets++] = net;
        return 0;
    }
    local_egress_host h = { 0 };
    /* name:port (an IPv6 literal has colons too, and is refused below) */
    if ((colon = strchr(buf, ':')) && !strchr(colon + 1, ':')) {
        if (parse_port(colon + 1, &h.port) < 0)
            return sbx_errf(err, "AGENT_SANDBOX_EGRESS: '%s': the port must be a number from "
                            "1 to 65535", entry);
        *colon = '\0';
    }
    if (local_egress_is_ip_literal(buf) || strchr(buf, ':'))
        return sbx_errf(err, "AGENT_SANDBOX_EGRESS: '%s' is an IP address: list host names "
                        "(requests must name the host), and an address range as CIDR "
                        "(e.g. %s/32) to let names resolve there", entry, buf);
    char *name = buf;
    if (!strncmp(name, "*.", 2)) {
        h.wildcard = true;
        name += 2;
    }
    if (!host_name_ok(name))
        return sbx_errf(err, "AGENT_SANDBOX_EGRESS: '%s' is not a host name (letters, digits, "
                        "'-' and '.', e.g. registry.npmjs.org, *.example.com, host:8080, or a "
                        "CIDR range)", entry);
    h.name = xstrdup(name);
    XGROW(p->hosts, p->ahosts, p->nhosts + 1);
    p->hosts[p->nhosts++] = h;
    return 0;
}

int local_egress_parse(const char *list, local_egress_policy *p, sbx_err *err)
{
    size_t count = 0;
    memset(p, 0, sizeof(*p));
    for (const char *s = list; s && *s;) {
        const char *e = strchrnul(s, ',');
        size_t n = (size_t)(e - s);
        while (n && isspace((unsigned char)*s)) {
            s++;
            n--;
        }
        while (n && isspace((unsigned char)s[n - 1]))
            n--;
        if (n) {
            char *entry = xstrndup(s, n);
            int r = ++count > SBX_EGRESS_MAX_ENTRIES
                    ? sbx_errf(err, "AGENT_SANDBOX_EGRESS: more than %d entries",
                               SBX_EGRESS_MAX_ENTRIES)
                    : parse_entry(p, entry, err);
            free(entry);
            if (r < 0) {
                local_egress_policy_free(p);
                return -1;
            }
        }
        s = *e ? e + 1 : e;
    }
    if (!p->nhosts) {
        local_egress_policy_free(p);
        return sbx_errf(err, "AGENT_SANDBOX_EGRESS names no host: list the hosts the sandbox "
                        "may reach, comma-separated (e.g. registry.npmjs.org,pypi.org)");
    }
    return 0;
}

void local_egress_policy_free(local_egress_policy *p)
{
    for (size_t i = 0; i < p->nhosts; i++)
        free(p->hosts[i].name);
    free(p->hosts);
    free(p->nets);
    memset(p, 0, sizeof(*p));
}

/* Whether a request's host and port are on the list. The name is checked again here as
 * the list's names were (no address, a valid name, lower case), so that two spellings of
 * one host cannot differ in the answer. A wildcard matches only below its domain
 * ("*.example.com" takes a.example.com, not example.com nor badexample.com). Ports 80 and
 * 443 are every listed host's; another only when the entry names it. */
bool local_egress_host_allowed(const local_egress_policy *p, const char *host, unsigned port)
{
    char name[256];
    if (strlen(host) >= sizeof(name))
        return false;
    snprintf(name, sizeof(name), "%s", host);
    if (local_egress_is_ip_literal(name) || !host_name_ok(name))
        return false;
    for (size_t i = 0; i < p->nhosts; i++) {
        const local_egress_host *h = &p->hosts[i];
        size_t hn = strlen(h->name), n = strlen(name);
        bool match = h->wildcard ? n > hn + 1 && name[n - hn - 1] == '.' &&
                                   !strcmp(name + n - hn, h->name)
                                 : !strcmp(name, h->name);
        if (match && (port == 443 || port == 80 || port == h->port))
            return true;
    }
    return false;
}

/* Whether address a (4 or 16 bytes, network order) is in net/prefix. */
static bool in_net(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, net, full))
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

/* Ranges that are not the public internet: this machine, private networks, link-local,
 * multicast, and the reserved rest. */
static const char *special_v4(const uint8_t *a)
{
    static const struct { uint8_t net[4]; unsigned prefix; const char *what; } r[] = {
        { { 0, 0, 0, 0 }, 8, "a \"this network\" address (0.0.0.0/8)" },
        { { 127, 0, 0, 0 }, 8, "a loopback address (127.0.0.0/8)" },
        { { 10, 0, 0, 0 }, 8, "a private address (10.0.0.0/8)" },
        { { 172, 16, 0, 0 }, 12, "a private address (172.16.0.0/12)" },
        { { 192, 168, 0, 0 }, 16, "a private address (192.168.0.0/16)" },
        { { 100, 64, 0, 0 }, 10, "a shared (carrier NAT) address (100.64.0.0/10)" },
        { { 169, 254, 0, 0 }, 16, "a link-local address (169.254.0.0/16)" },
        { { 192, 0, 0, 0 }, 24, "a reserved address (192.0.0.0/24)" },
        { { 198, 18, 0, 0 }, 15, "a benchmarking address (198.18.0.0/15)" },
        { { 224, 0, 0, 0 }, 4, "a multicast address (224.0.0.0/4)" },
        { { 240, 0, 0, 0 }, 4, "a reserved address (240.0.0.0/4)" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(r); i++)
        if (in_net(a, r[i].net, r[i].prefix))
            return r[i].what;
    return NULL;
}

/* The IPv6 ones; NAT64 and 6to4 embed an IPv4 address that could be a private one. */
static const char *special_v6(const uint8_t *a)
{
    static const uint8_t zero[16], one[16] = { [15] = 1 };
    static const struct { uint8_t net[16]; unsigned prefix; const char *what; } r[] = {
        { { 0xfc }, 7, "a unique-local address (fc00::/7)" },
        { { 0xfe, 0x80 }, 10, "a link-local address (fe80::/10)" },
        { { 0xff }, 8, "a multicast address (ff00::/8)" },
        { { 0, 0x64, 0xff, 0x9b }, 96, "a NAT64 address (64:ff9b::/96)" },
        { { 0x20, 0x01, 0x0d, 0xb8 }, 32, "a documentation address (2001:db8::/32)" },
        { { 0x01 }, 64, "a discard address (100::/64)" },
        { { 0x20, 0x02 }, 16, "a 6to4 address (2002::/16)" },
    };
    if (!memcmp(a, zero, 16))
        return "the unspecified address (::)";
    if (!memcmp(a, one, 16))
        return "a loopback address (::1)";
    for (size_t i = 0; i < ARRAY_SIZE(r); i++)
        if (in_net(a, r[i].net, r[i].prefix))
            return r[i].what;
    return NULL;
}

/* Whether the proxy may connect to sa, an address a listed name resolved to (checked at
 * connect time, on the address that will be used): a range the person listed, else any
 * public address. An IPv4-mapped IPv6 address is judged as the IPv4 one it is, or
 * ::ffff:127.0.0.1 would pass as "not special". */
bool local_egress_addr_allowed(const local_egress_policy *p, const struct sockaddr *sa,
                             const char **why)
{
    static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
    const uint8_t *a;
    int family = sa->sa_family;
    const char *what;

    if (family == AF_INET) {
        a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
    } else if (family == AF_INET6) {
        a = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        /* an IPv4-mapped address is that IPv4 address (compat ::a.b.c.d is deprecated and
         * inside ::/96, refused below as reserved) */
        if (!memcmp(a, mapped, 12)) {
            a += 12;
            family = AF_INET;
        } else if (!memcmp(a, (const uint8_t[12]){ 0 }, 12)) {
            if (why)
                *why = "an IPv4-compatible address (::/96)";
            return false;
        }
    } else {
        if (why)
            *why = "not an internet address";
        return false;
    }
    for (size_t i = 0; i < p->nnets; i++)
        if (p->nets[i].family == family && in_net(a, p->nets[i].addr, p->nets[i].prefix))
            return true;
    what = family == AF_INET ? special_v4(a) : special_v6(a);
    if (what && why)
        *why = what;
    return what == NULL;
}

/* ---- requests ------------------------------------------------------------------------- */

/* RFC 9110's token characters (a method is a token). */
static bool is_tchar(char c)
{
    return isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c);
}

/* host[:port] from an authority of n bytes; default_port when none. A bracketed IPv6
 * literal, a second ':' (an unbracketed one) and any IPv4 spelling are refused (names
 * only, see the top); so is a user name ("user@host"), which some servers and proxies
 * read differently from us, the classic way to make a checked host and the connected one
 * differ. */
static int split_authority(const char *s, size_t n, local_egress_req *r, unsigned default_port,
                           bool port_required, const char **why)
{
    char buf[300];
    char *colon;
    if (n == 0 || n >= sizeof(buf)) {
        *why = "the request names no host, or one too long";
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (buf[0] == '[' || strchr(buf, '@')) {
        *why = buf[0] == '[' ? "an IP address: the proxy admits host names only"
                             : "a user name in the URL";
        return -1;
    }
    r->port = default_port;
    if ((colon = strchr(buf, ':'))) {
        if (strchr(colon + 1, ':')) {
            *why = "an IP address: the proxy admits host names only";
            return -1;
        }
        if (parse_port(colon + 1, &r->port) < 0) {
            *why = "a port that is not a number from 1 to 65535";
            return -1;
        }
        *colon = '\0';
    } else if (port_required) {
        *why = "CONNECT needs host:port";
        return -1;
    }
    if (local_egress_is_ip_literal(buf)) {
        *why = "an IP address: the proxy admits host names only";
        return -1;
    }
    if (strlen(buf) >= sizeof(r->host) || !host_name_ok(buf)) {
        *why = "not a host name";
        return -1;
    }
    memcpy(r->host, buf, strlen(buf) + 1);
    return 0;
}

/* The request's head, as the sandbox sent it: 1 while it is incomplete (and under
 * SBX_EGRESS_HEAD_MAX: a head that never ends cannot hold the proxy's memory), -1 with why,
 * or 0 with the method, host, port and where the target and version are (the proxy
 * rewrites only those). Exactly one request line of three parts, a token method, HTTP/1.0
 * or 1.1, and no control byte or space in the target: anything looser could be read one
 * way here and another way by the server behind (request smuggling). */
int local_egress_parse_request(const char *buf, size_t len, local_egress_req *r, const char **why)
{
    const char *end, *sp1, *sp2, *eol;
    size_t n;

    memset(r, 0, sizeof(*r));
    *why = NULL;
    end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end) {
        if (len >= SBX_EGRESS_HEAD_MAX) {
            *why = "the request's head is too long";
            return -1;
        }
        return 1;
    }
    r->head_len = (size_t)(end - buf) + 4;
    eol = memmem(buf, r->head_len, "\r\n", 2);
    r->line_end = (size_t)(eol - buf) + 2;
    sp1 = memchr(buf, ' ', (size_t)(eol - buf));
    sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || memchr(sp2 + 1, ' ', (size_t)(eol - sp2 - 1))) {
        *why = "not an HTTP request line";
        return -1;
    }
    n = (size_t)(sp1 - buf);
    if (!n || n >= sizeof(r->method)) {
        *why = "not an HTTP method";
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!is_tchar(buf[i])) {
            *why = "not an HTTP method";
            return -1;
        }
    memcpy(r->method, buf, n);
    r->method[n] = '\0';
    r->version_off = (size_t)(sp2 + 1 - buf);
    if ((size_t)(eol - sp2 - 1) != 8 || (memcmp(sp2 + 1, "HTTP/1.1", 8) &&
                                         memcmp(sp2 + 1, "HTTP/1.0", 8))) {
        *why = "not HTTP/1.0 or HTTP/1.1";
        return -1;
    }
    const char *t = sp1 + 1;
    size_t tn = (size_t)(sp2 - t);
    for (size_t i = 0; i < tn; i++)
        if ((unsigned char)t[i] <= ' ' || (unsigned char)t[i] >= 0x7f) {
            *why = "a control character in the request's target";
            return -1;
        }
    if (!strcmp(r->method, "CONNECT")) {
        r->connect = true;
        return split_authority(t, tn, r, 0, true, why) < 0 ? -1 : 0;
    }
    if (tn < 7 || strncasecmp(t, "http://", 7)) {
        *why = tn >= 8 && !strncasecmp(t, "https://", 8)
               ? "an https:// URL without CONNECT (set https_proxy, which tunnels)"
               : "not a proxy request (CONNECT host:port, or an absolute http:// URL)";
        return -1;
    }
    const char *auth = t + 7, *path = auth;
    while (path < t + tn && *path != '/' && *path != '?' && *path != '#')
        path++;
    if (split_authority(auth, (size_t)(path - auth), r, 80, false, why) < 0)
        return -1;
    r->target_off = (size_t)(path - buf);
    r->target_len = (size_t)(t + tn - path);
    return 0;
}
