/*
 * The sandbox's DNS stub (sync/dnsstub.c): its own names answered as /etc/hosts would
 * (hostname -f, Python's socket.getfqdn(), Java's InetAddress.getLocalHost() need them
 * offline), every other name NXDOMAIN, and only NXDOMAIN makes the no-network notice apply.
 */
#include "sync/dnsstub.h"
#include "tests/lib/tap.h"

#include <string.h>

/* A standard query (RD set) for name, of type qtype, class IN. */
static size_t query(uint8_t *q, const char *name, unsigned qtype)
{
    size_t n = 12;
    memset(q, 0, 12);
    q[0] = 0x12;
    q[1] = 0x34;
    q[2] = 0x01;
    q[5] = 1;
    for (const char *p = name; *p;) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        q[n++] = (uint8_t)l;
        memcpy(q + n, p, l);
        n += l;
        p += l + (dot != NULL);
    }
    q[n++] = 0;
    q[n++] = (uint8_t)(qtype >> 8);
    q[n++] = (uint8_t)qtype;
    q[n++] = 0;
    q[n++] = 1;
    return n;
}

int main(void)
{
    uint8_t q[512], r[DNS_MAX_ANSWER];
    char name[DNS_MAX_NAME + 1];
    size_t ql, rl;

    ql = query(q, "example.com", 1);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok(rl == ql && (r[3] & 0xf) == 3, "another name: NXDOMAIN, the question echoed");
    ok(dns_answer_refused(r, rl), "...which the notice is for");
    is_str(name, "example.com", "...naming it");
    ok(r[0] == 0x12 && r[1] == 0x34 && (r[2] & 0x80), "...with the query's id, QR set");

    ql = query(q, "SBX", 1);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok((r[3] & 0xf) == 0 && !dns_answer_refused(r, rl), "the host name (any case): NOERROR");
    is_int(r[7], 1, "...one answer");
    is_int((int)rl, (int)ql + 16, "...an A record after the question");
    ok(rl == ql + 16 && r[ql] == 0xc0 && r[ql + 1] == 12 && r[ql + 3] == 1 && r[ql + 5] == 1 &&
       r[ql + 11] == 4 && !memcmp(r + ql + 12, "\x7f\0\0\x01", 4),
       "...the question's name by pointer, type A, class IN, 127.0.0.1");

    ql = query(q, "sbx", 28);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok(rl == ql + 28 && r[7] == 1 && r[ql + 3] == 28 && r[ql + 11] == 16 &&
       r[ql + 12 + 15] == 1, "AAAA for the host name: ::1");

    ql = query(q, "sbx", 15);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok(rl == ql && (r[3] & 0xf) == 0 && r[7] == 0, "MX for the host name: NOERROR, no record");

    ql = query(q, "localhost", 1);
    rl = dns_answer(q, ql, NULL, r, sizeof(r), name, sizeof(name));
    ok(rl == ql + 16 && (r[3] & 0xf) == 0, "localhost: 127.0.0.1, with no host name known");

    ql = query(q, "sbx.example.com", 1);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok((r[3] & 0xf) == 3, "a name that only starts with the host name: NXDOMAIN");
    ql = query(q, "sb", 1);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok((r[3] & 0xf) == 3, "a prefix of the host name: NXDOMAIN");
    ql = query(q, "sbx", 1);
    rl = dns_answer(q, ql, "", r, sizeof(r), name, sizeof(name));
    ok((r[3] & 0xf) == 3, "no host name: every name but localhost is NXDOMAIN");

    ql = query(q, "1.0.0.127.in-addr.arpa", 12);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok(rl == ql && (r[3] & 0xf) == 0 && r[7] == 0, "PTR of 127.0.0.1: NOERROR, no record");
    ql = query(q, "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa", 12);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok(rl == ql && (r[3] & 0xf) == 0, "PTR of ::1: NOERROR, no record");
    ql = query(q, "4.3.2.1.in-addr.arpa", 12);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok((r[3] & 0xf) == 3, "PTR of another address: NXDOMAIN");
    ok(dns_name_is_reverse(name), "...a reverse name, which the notice is not for");
    ok(!dns_name_is_reverse("arpa.example.com") && !dns_name_is_reverse("registry.npmjs.org"),
       "a forward name is not a reverse one");
    ql = query(q, "1.0.0.1127.in-addr.arpa", 12);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok((r[3] & 0xf) == 3, "1127.in-addr.arpa is not loopback: NXDOMAIN");

    ql = query(q, "sbx", 1);
    q[2] = 0x01 | (2 << 3);
    rl = dns_answer(q, ql, "sbx", r, sizeof(r), name, sizeof(name));
    ok((r[3] & 0xf) == 4 && r[7] == 0, "another opcode: NOTIMP, even for the host name");
    ok(dns_answer(q, ql, "sbx", r, DNS_MAX_ANSWER - 1, name, sizeof(name)) == 0,
       "an output buffer under DNS_MAX_ANSWER: no answer");
    return done_testing();
}
