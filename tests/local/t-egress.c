/* The egress allowlist's policy and the proxy's request parser (local/egress.h). */
#include "tests/lib/tap.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "local/egress.h"

static bool addr_ok(const local_egress_policy *p, const char *a, const char **why)
{
    struct sockaddr_in s4 = { .sin_family = AF_INET };
    struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
    *why = "";
    if (inet_pton(AF_INET, a, &s4.sin_addr) == 1)
        return local_egress_addr_allowed(p, (struct sockaddr *)&s4, why);
    if (inet_pton(AF_INET6, a, &s6.sin6_addr) == 1)
        return local_egress_addr_allowed(p, (struct sockaddr *)&s6, why);
    abort();
}

static int parse(const char *req, local_egress_req *r, const char **why)
{
    return local_egress_parse_request(req, strlen(req), r, why);
}

int main(void)
{
    local_egress_policy p, q;
    sbx_err err;
    local_egress_req r;
    const char *why;

    ok(local_egress_parse(" Registry.NPMjs.org , *.pythonhosted.org,h.test:8080,10.1.0.0/16,fd00::/8",
                        &p, &err) == 0, "a list of names, a wildcard, a port and two ranges parses");
    ok(local_egress_host_allowed(&p, "registry.npmjs.org", 443), "a listed name on 443");
    ok(local_egress_host_allowed(&p, "registry.npmjs.org", 80), "...and 80");
    ok(!local_egress_host_allowed(&p, "registry.npmjs.org", 8080), "...not on another port");
    ok(!local_egress_host_allowed(&p, "evil-registry.npmjs.org", 443), "a longer name is not the listed one");
    ok(!local_egress_host_allowed(&p, "registry.npmjs.org.evil.com", 443), "nor is one that starts with it");
    ok(local_egress_host_allowed(&p, "files.pythonhosted.org", 443), "*.domain admits a name below it");
    ok(!local_egress_host_allowed(&p, "pythonhosted.org", 443), "...not the domain itself");
    ok(!local_egress_host_allowed(&p, "xpythonhosted.org", 443), "...nor a name that merely ends like it");
    ok(local_egress_host_allowed(&p, "h.test", 8080) && local_egress_host_allowed(&p, "h.test", 443),
       "host:port adds that port to 443 and 80");
    ok(!local_egress_host_allowed(&p, "10.1.2.3", 443), "an IP literal is never a listed host");

    ok(addr_ok(&p, "93.184.215.14", &why), "a public address is allowed");
    ok(!addr_ok(&p, "127.0.0.1", &why) && strstr(why, "loopback"), "loopback is refused: %s", why);
    ok(!addr_ok(&p, "192.168.1.1", &why) && strstr(why, "private"), "192.168/16 is refused: %s", why);
    ok(!addr_ok(&p, "172.31.255.255", &why), "172.16/12 is refused");
    ok(addr_ok(&p, "172.32.0.1", &why), "172.32.0.1 is not in 172.16/12");
    ok(!addr_ok(&p, "169.254.169.254", &why) && strstr(why, "link-local"), "the metadata address is refused: %s", why);
    ok(!addr_ok(&p, "224.0.0.1", &why), "multicast is refused");
    ok(!addr_ok(&p, "0.0.0.0", &why), "0.0.0.0 is refused");
    ok(addr_ok(&p, "10.1.200.3", &why), "a listed range is allowed");
    ok(!addr_ok(&p, "10.2.0.1", &why), "...only that range of 10/8");
    ok(!addr_ok(&p, "::1", &why), "::1 is refused");
    ok(!addr_ok(&p, "::ffff:127.0.0.1", &why) && strstr(why, "loopback"), "an IPv4-mapped loopback is refused as loopback");
    ok(addr_ok(&p, "::ffff:10.1.0.9", &why), "...and a mapped address in a listed range allowed");
    ok(!addr_ok(&p, "::127.0.0.1", &why), "an IPv4-compatible address is refused");
    ok(!addr_ok(&p, "fe80::1", &why) && !addr_ok(&p, "ff02::1", &why), "link-local and multicast IPv6 are refused");
    ok(addr_ok(&p, "fd12::1", &why), "a listed IPv6 range is allowed");
    ok(addr_ok(&p, "2606:4700::1", &why), "a public IPv6 address is allowed");
    ok(!addr_ok(&p, "64:ff9b::7f00:1", &why), "NAT64 is refused");

    static const char *const bad[] = { "10.0.0.1", "::1", "[::1]", "a..b", "-", "x y", "127.1",
                                       "0x7f.1", "2130706433", "h:0", "h:65536", "h:x", "1.2.3.4/33",
                                       "10.0.0.0/", "*.", "a/8", "example.123" };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        int rc = local_egress_parse(bad[i], &q, &err);
        ok(rc < 0 && strstr(err.msg, "AGENT_SANDBOX_EGRESS"), "'%s' is refused: %s", bad[i],
           rc < 0 ? err.msg : "accepted");
        if (rc == 0)
            local_egress_policy_free(&q);
    }
    ok(local_egress_parse("10.0.0.0/8", &q, &err) < 0 && strstr(err.msg, "names no host"),
       "a list of ranges only names no host");

    ok(parse("CONNECT Registry.npmjs.org:443 HTTP/1.1\r\nHost: x\r\n\r\n", &r, &why) == 0 &&
       r.connect && !strcmp(r.host, "registry.npmjs.org") && r.port == 443, "CONNECT host:port");
    ok(parse("CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: x\r\n", &r, &why) == 1,
       "an incomplete head asks for more");
    ok(parse("GET http://h.test:8080/a?b HTTP/1.1\r\n\r\n", &r, &why) == 0 && !r.connect &&
       r.port == 8080 && r.target_len == 4, "an absolute http:// URL");
    ok(parse("GET http://h.test HTTP/1.0\r\n\r\n", &r, &why) == 0 && r.port == 80 && r.target_len == 0,
       "...on port 80 by default, without a path");
    static const char *const refused[] = {
        "CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", "CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
        "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", "CONNECT 0x7f.1:443 HTTP/1.1\r\n\r\n",
        "CONNECT h.test HTTP/1.1\r\n\r\n", "CONNECT h.test:0 HTTP/1.1\r\n\r\n",
        "GET http://user@h.test/ HTTP/1.1\r\n\r\n", "GET https://h.test/ HTTP/1.1\r\n\r\n",
        "GET /local HTTP/1.1\r\n\r\n", "GET http://h.test/ HTTP/2\r\n\r\n",
        "GET  http://h.test/ HTTP/1.1\r\n\r\n", "G(T http://h.test/ HTTP/1.1\r\n\r\n",
        "GET http://h.test/\x01 HTTP/1.1\r\n\r\n",
    };
    for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
        ok(parse(refused[i], &r, &why) < 0 && why, "refused: %.*s (%s)",
           (int)strcspn(refused[i], "\r"), refused[i], why ? why : "no reason");
    {
        char big[SBX_EGRESS_HEAD_MAX + 10];
        memset(big, 'a', sizeof(big));
        ok(local_egress_parse_request(big, sizeof(big), &r, &why) < 0, "a head past 8 KiB is refused");
    }
    local_egress_policy_free(&p);
    return done_testing();
}
