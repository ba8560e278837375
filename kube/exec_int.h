/*
 * exec.c's insides, for the tests and for exec_open.c: the exec over a transport that is
 * not a kube_client's (a plain socket, a CONNECT_ONLY curl handle made by hand), and the
 * request path it builds.
 */
#ifndef SBX_KUBE_EXEC_INT_H
#define SBX_KUBE_EXEC_INT_H

#include "kube/exec.h"

/* The subprotocols offered, in order of preference (NULL-terminated). */
extern const char *const kube_exec_protocols[];

/* "/api/v1/namespaces/NS/pods/POD/exec?command=..&container=..&stdin=true&stdout=true
 * &stderr=true&tty=true" (each part percent-encoded; false flags left out). Malloc'd. */
char *kube_exec_path(const char *ns, const char *pod, const char *container,
                     const char *const *argv, const kube_exec_opts *o);

/* The upgrade (GET path, Host: host, headers[] added) over a connected socket or pipe fd
 * (made non-blocking; owned by the exec from then on, closed by kube_exec_free or on
 * failure), then the exec as kube_exec_open() returns it. */
int kube_exec_over_fd(int fd, const char *host, const char *path, const char *const *headers,
                      const kube_exec_opts *o, kube_exec **out, sbx_err *err);

/* The same over a connected CURLOPT_CONNECT_ONLY easy handle (a CURL *, owned from then on:
 * curl_easy_cleanup()ed by kube_exec_free or on failure); Host comes from its URL. When the
 * upgrade is answered with another status than 101, *http_status (if not NULL) says which
 * (kube_exec_open tries new credentials after a 401). */
int kube_exec_over_curl(void *curl, const char *path, const char *const *headers,
                        const kube_exec_opts *o, kube_exec **out, int *http_status,
                        sbx_err *err);

#endif
