/*
 * The sandbox's network helper, run by sbx-agent when the sandbox has no network of its own
 * (AGENT_SANDBOX_LOCAL_NETWORK=none or allowlist):
 *
 *   - a DNS stub on the sandbox's own loopback (127.0.0.1:53, UDP and TCP; the sandbox's
 *     /etc/resolv.conf points there) that answers every query at once with NXDOMAIN, so that
 *     resolvers fail fast instead of timing out, and tells the agent the first names looked
 *     up, so the agent can say on the running commands' stderr that the sandbox has no
 *     network and how to allow it;
 *   - with an egress proxy (allowlist): a TCP relay on 127.0.0.1:PORT that joins each
 *     connection to the host-side proxy's Unix socket bound into the sandbox. The sandbox's
 *     commands get http_proxy/https_proxy pointing at it.
 *
 * The sockets are bound by the agent process (gVisor lets it bind port 53 without a
 * capability) or passed to it bound already (bubblewrap: see local/README.md, Network); the
 * agent then drops any capability it has before it runs anything, and a forked helper
 * process serves them.
 */
#ifndef SBX_SYNC_DNSSTUB_H
#define SBX_SYNC_DNSSTUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A DNS message's most we read (UDP: 512 classic, larger with EDNS; TCP: its length field). */
#define DNS_MAX_MSG 4096
#define DNS_MAX_NAME 253

/* The most a response of dns_answer() takes: the header, the echoed question, and one answer
 * record (a pointer to the question's name, type, class, TTL, length, an IPv6 address). */
#define DNS_MAX_ANSWER (12 + DNS_MAX_NAME + 6 + 28)

/* Answers the DNS query q (untrusted bytes): writes a response into out and returns its
 * length, or 0 when q is not worth an answer (too short for a header, or a response).
 * The sandbox's own names are answered, as /etc/hosts answers them on a machine: the host
 * name self (lower-case; NULL or "" for none) and "localhost", each with one A record
 * (127.0.0.1) or AAAA record (::1), or no record for another type (NOERROR); the reverse
 * names of loopback addresses get no record (NOERROR), as getfqdn() needs. Every other
 * standard query gets NXDOMAIN, another opcode NOTIMP, a malformed question FORMERR.
 * name (namesz >= DNS_MAX_NAME + 1) gets the first question's name, lower-cased, with any
 * byte outside [a-z0-9._-] shown as '?', or "" when there is none. outsz must be at least
 * DNS_MAX_ANSWER. */
size_t dns_answer(const uint8_t *q, size_t qlen, const char *self, uint8_t *out, size_t outsz,
                  char *name, size_t namesz);

/* Whether a response dns_answer() wrote says the name does not exist here (so the
 * sandbox's notice about its network applies): any answer but NOERROR. */
/* Whether name (as dns_answer() gives it) is a reverse lookup (in-addr.arpa, ip6.arpa): an
 * address's name, which says nothing of a host the sandbox wanted to reach, so the notice
 * is not for it. */
bool dns_name_is_reverse(const char *name);

static inline bool dns_answer_refused(const uint8_t *resp, size_t len)
{
    return len >= 12 && (resp[3] & 0xf) != 0;
}

typedef struct dnsstub_opts {
    bool dns;                   /* serve 127.0.0.1:53 */
    int dns_fds[2];             /* > 0: that UDP and TCP socket, bound already (bwrap) */
    const char *notice_mode;    /* "none" or "allowlist": which notice to give */
    int relay_port;             /* > 0: relay 127.0.0.1:relay_port to relay_socket */
    const char *relay_socket;
} dnsstub_opts;

/* The notice for a lookup of name, one line with its newline. */
void dnsstub_notice(const char *mode, const char *name, char *out, size_t outsz);

/* Binds what o asks for, drops every capability, and forks the helper that serves it.
 * Returns the read end of a non-blocking pipe on which the helper writes one notice line
 * per lookup (at most a few per second), or -1 when there is nothing to serve. A socket
 * that cannot be bound is said on stderr (the sandbox's log) and left out. */
int dnsstub_start(const dnsstub_opts *o);

#endif
