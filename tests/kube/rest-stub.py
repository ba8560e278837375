#!/usr/bin/python3
"""A scripted HTTPS stand-in for the Kubernetes API server, for tests/kube/t-client.c.

    rest-stub.py DIR

Makes its certificates in DIR with the openssl CLI (a CA, a server certificate for
kube.test, localhost and 127.0.0.1, a client certificate with CN sbx-user, and a second,
unrelated CA), listens on 127.0.0.1 (a free port for HTTPS and one for plain HTTP, printed
on stdout as "HTTPS_PORT HTTP_PORT"), and answers as the scripts below say. The plain port
is also an HTTP proxy for CONNECT (logged as "CONNECT host:port -"). Python's standard library only. Each request is logged to
DIR/requests.log as "METHOD PATH IDENTITY" (IDENTITY "-" when no credential came,
"refused" for one that is not accepted). Bearer tokens are accepted when listed in
DIR/tokens (read at every request, so a test can rotate them); a client certificate
signed by the CA is accepted as cert:CN.

Scripts, by path (namespace ns unless said):
  GET  .../pods/whoami          200, the identity seen
  GET  /stats                   200, {"connections": TLS connections accepted so far}
  POST .../namespaces/locked/sandboxclaims   403 Forbidden, as RBAC says it
  POST .../namespaces/ns/sandboxclaims       201, the body back
  GET  .../pods/missing         404 NotFound
  GET  .../pods/busy            429 with Retry-After: 1 the first time, then 200
  GET  .../pods/storm           503 every time
  GET  .../pods/slow            answers after 5 s
  GET  .../pods?watch=1&fieldSelector=metadata.name%3DNAME:
       cut         no resourceVersion: ADDED rv 10, MODIFIED rv 11, then half an event and
                   the connection cut; from rv 11: MODIFIED 12, BOOKMARK 13, DELETED 14;
                   any other rv: 400 saying which was expected
       gone        410 Gone
       gone-event  200, then an ERROR event with code 410
       quiet       200, then nothing until timeoutSeconds
       garbage     200, then bytes that are not JSON
       flaky       503 the first time, then ADDED rv 1 and DELETED rv 2
       error-500   an ERROR event with code 500 the first time, then as flaky's second
"""
import http.server
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

DIR = sys.argv[1]
lock = threading.Lock()
counts = {}
connections = 0


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, cwd=DIR,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs():
    if os.path.exists(os.path.join(DIR, "client.crt")):
        return
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "rogue"):
        openssl("req", "-x509", *ec, "-keyout", ca + ".key", "-out", ca + ".crt",
                "-days", "2", "-subj", "/CN=%s-test-ca" % ca)
    with open(os.path.join(DIR, "srv.ext"), "w") as f:
        f.write("subjectAltName=DNS:kube.test,DNS:localhost,IP:127.0.0.1\n")
    with open(os.path.join(DIR, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for name, cn, ext in (("srv", "kube.test", "srv.ext"), ("client", "sbx-user", "client.ext")):
        openssl("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", name + ".crt", "-extfile", ext)


def status(code, reason, message, **details):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def pod(name, rv, **extra):
    o = {"kind": "Pod", "apiVersion": "v1",
         "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}}
    o.update(extra)
    return o


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def identity(self):
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            try:
                with open(os.path.join(DIR, "tokens")) as f:
                    ok = auth[7:] in f.read().split()
            except OSError:
                ok = False
            return ("token:" + auth[7:]) if ok else None
        peer = getattr(self.connection, "getpeercert", None)
        cert = peer() if peer else None
        if cert:
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return "cert:" + v
        return None

    def send_json(self, code, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, typ, obj):
        self.chunk(json.dumps({"type": typ, "object": obj}) + "\n")

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def do_CONNECT(self):
        with lock:
            with open(os.path.join(DIR, "requests.log"), "a") as f:
                f.write("CONNECT %s -\n" % self.path)
        host, port = self.path.rsplit(":", 1)
        try:
            up = socket.create_connection((host, int(port)), timeout=10)
        except OSError:
            self.send_error(502)
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        down = self.connection
        up.settimeout(None)

        def pump(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
            except OSError:
                pass
            for x in (a, b):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        t = threading.Thread(target=pump, args=(up, down), daemon=True)
        t.start()
        pump(down, up)
        t.join()
        self.close_connection = True

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def handle_any(self, method):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(length) if length else b""
        who = self.identity()
        with lock:
            with open(os.path.join(DIR, "requests.log"), "a") as f:
                f.write("%s %s %s\n" % (method, self.path, who or (
                    "refused" if self.headers.get("Authorization") else "-")))
        if u.path == "/stats":
            return self.send_json(200, {"connections": connections})
        if not who:
            return self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        p = u.path
        if q.get("watch", ["0"])[0] not in ("0", "false"):
            return self.watch(q)
        if p.endswith("/pods/whoami"):
            return self.send_json(200, pod("whoami", 5, user=who))
        if p.endswith("/namespaces/locked/sandboxclaims") and method == "POST":
            return self.send_json(403, status(
                403, "Forbidden",
                'sandboxclaims.extensions.agents.x-k8s.io is forbidden: User "%s" cannot '
                'create resource "sandboxclaims" in API group "extensions.agents.x-k8s.io" '
                'in the namespace "locked"' % who.split(":", 1)[1],
                group="extensions.agents.x-k8s.io", kind="sandboxclaims"))
        if p.endswith("/namespaces/ns/sandboxclaims") and method == "POST":
            obj = json.loads(body)
            obj.setdefault("metadata", {})["resourceVersion"] = "7"
            return self.send_json(201, obj)
        if p.endswith("/pods/missing"):
            return self.send_json(404, status(404, "NotFound", 'pods "missing" not found',
                                              name="missing", kind="pods"))
        if p.endswith("/pods/busy"):
            with lock:
                n = counts[p] = counts.get(p, 0) + 1
            if n == 1:
                return self.send_json(429, status(429, "TooManyRequests", "slow down"),
                                      [("Retry-After", "1")])
            return self.send_json(200, pod("busy", 6, attempts=n))
        if p.endswith("/pods/storm"):
            return self.send_json(503, status(503, "ServiceUnavailable", "the storm goes on"))
        if p.endswith("/pods/slow"):
            time.sleep(5)
            return self.send_json(200, pod("slow", 8))
        return self.send_json(404, status(404, "NotFound", "no script for " + p))

    def watch(self, q):
        fs = q.get("fieldSelector", [""])[0]
        name = fs.split("=", 1)[1] if fs.startswith("metadata.name=") else ""
        rv = q.get("resourceVersion", [""])[0]
        if name == "cut":
            if rv == "":
                self.start_stream()
                self.event("ADDED", pod("cut", 10))
                self.event("MODIFIED", pod("cut", 11))
                self.chunk('{"type":"MODIFIED","object":{"kind":"Po')
                # Cut: no last chunk, the TCP connection just goes.
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if rv != "11":
                return self.send_json(400, status(400, "BadRequest",
                                                  "expected resourceVersion 11, got %r" % rv))
            self.start_stream()
            self.event("MODIFIED", pod("cut", 12))
            self.event("BOOKMARK", {"kind": "Pod", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": "13"}})
            self.event("DELETED", pod("cut", 14))
            self.chunk("")
            return
        if name == "gone":
            return self.send_json(410, status(410, "Expired",
                                              "too old resource version: %s (20)" % rv))
        if name == "gone-event":
            self.start_stream()
            self.event("ERROR", status(410, "Expired", "too old resource version: %s (20)" % rv))
            self.chunk("")
            return
        if name == "quiet":
            self.start_stream()
            end = time.time() + int(q.get("timeoutSeconds", ["1"])[0])
            while time.time() < end:
                time.sleep(0.05)
            self.chunk("")
            return
        if name in ("flaky", "error-500"):
            with lock:
                n = counts[name] = counts.get(name, 0) + 1
            if n == 1 and name == "flaky":
                return self.send_json(503, status(503, "ServiceUnavailable", "starting"))
            self.start_stream()
            if n == 1:
                self.event("ERROR", status(500, "InternalError", "etcd hiccup"))
            else:
                self.event("ADDED", pod(name, 1))
                self.event("DELETED", pod(name, 2))
            self.chunk("")
            return
        if name == "garbage":
            self.start_stream()
            self.chunk("this is not json\n")
            self.chunk("")
            return
        return self.send_json(404, status(404, "NotFound", "no watch script for %r" % name))


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    ctx = None

    def finish_request(self, request, client_address):
        global connections
        if not self.ctx:
            return super().finish_request(request, client_address)
        # The handshake runs in the connection's own thread: a client that gives up on
        # our certificate fails only its own connection.
        try:
            tls = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        with lock:
            connections += 1
        try:
            self.RequestHandlerClass(tls, client_address, self)
        except (ssl.SSLError, OSError):
            pass


def main():
    make_certs()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(DIR, "srv.crt"), os.path.join(DIR, "srv.key"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.load_verify_locations(os.path.join(DIR, "ca.crt"))
    ctx.set_alpn_protocols(["http/1.1"])
    srv = Server(("127.0.0.1", 0), Handler)
    srv.ctx = ctx
    plain = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    print(srv.server_address[1], plain.server_address[1], flush=True)
    srv.serve_forever()


main()
