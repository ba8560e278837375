#!/usr/bin/python3
"""ws-exec.py: a small pods/exec WebSocket client for tests/kube/fake.t, to check what kubectl
cannot show (it offers only v5.channel.k8s.io): the v4 and channel.k8s.io subprotocols, the
first message, pings, the CLOSE signal of v5, the Close frame, a dropped stream.

    ws-exec.py URL CA TOKEN PROTOCOL [--stdin DATA] [--close-stdin] [--ping] -- ARGV...

Prints one JSON object: {"protocol", "status" (the 101 or other HTTP status), "first" (the
first message, hex), "stdout", "stderr", "error" (channel 3), "pong", "close" (the Close
frame's code, or null when the connection ended without one)}.
"""
import base64
import json
import os
import socket
import ssl
import struct
import sys
import urllib.parse


def main():
    argv = sys.argv[1:]
    dd = argv.index('--')
    opts, cmd = argv[:dd], argv[dd + 1:]
    url, ca, token, proto = opts[:4]
    rest = opts[4:]
    stdin = None
    if '--stdin' in rest:
        stdin = rest[rest.index('--stdin') + 1].encode()
    close_stdin, ping = '--close-stdin' in rest, '--ping' in rest
    u = urllib.parse.urlsplit(url)
    q = [('command', c) for c in cmd] + [('stdout', 'true'), ('stderr', 'true')]
    if stdin is not None:
        q.append(('stdin', 'true'))
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(['http/1.1'])
    raw = socket.create_connection((u.hostname, u.port), timeout=60)
    s = ctx.wrap_socket(raw, server_hostname=u.hostname)
    key = base64.b64encode(os.urandom(16)).decode()
    req = ('GET %s?%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\n'
           'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n'
           % (u.path, urllib.parse.urlencode(q), u.netloc, token, key))
    if proto:
        req += 'Sec-WebSocket-Protocol: %s\r\n' % proto
    s.sendall((req + '\r\n').encode())
    buf = b''
    while b'\r\n\r\n' not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    head, _, buf = buf.partition(b'\r\n\r\n')
    lines = head.decode().split('\r\n')
    out = {'status': int(lines[0].split()[1]), 'protocol': None, 'first': None, 'stdout': '',
           'stderr': '', 'error': '', 'pong': False, 'close': None}
    for ln in lines[1:]:
        k, _, v = ln.partition(':')
        if k.lower() == 'sec-websocket-protocol':
            out['protocol'] = v.strip()
    if out['status'] != 101:
        n = next((int(ln.split(':', 1)[1]) for ln in lines[1:]
                  if ln.lower().startswith('content-length:')), 0)
        while len(buf) < n:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        out['body'] = buf.decode(errors='replace')
        print(json.dumps(out))
        return

    def send(op, payload):
        mask = os.urandom(4)
        n = len(payload)
        hdr = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else
                                   bytes([0x80 | 126]) + struct.pack('!H', n) if n < 65536 else
                                   bytes([0x80 | 127]) + struct.pack('!Q', n))
        s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    if ping:
        send(9, b'hi')
    if stdin is not None:
        send(2, b'\x00' + stdin)
        if close_stdin:
            send(2, b'\xff\x00')

    def frames():
        nonlocal buf
        while True:
            while len(buf) < 2 or len(buf) < need(buf):
                d = s.recv(65536)
                if not d:
                    return
                buf += d
            n, i = buf[1] & 0x7f, 2
            if n == 126:
                n, i = struct.unpack('!H', buf[2:4])[0], 4
            elif n == 127:
                n, i = struct.unpack('!Q', buf[2:10])[0], 10
            yield buf[0] & 0x0f, buf[i:i + n]
            buf = buf[i + n:]

    def need(b):
        n = b[1] & 0x7f
        if n == 126:
            return 4 if len(b) < 4 else 4 + struct.unpack('!H', b[2:4])[0]
        if n == 127:
            return 10 if len(b) < 10 else 10 + struct.unpack('!Q', b[2:10])[0]
        return 2 + n
    names = {1: 'stdout', 2: 'stderr', 3: 'error'}
    try:
        for op, payload in frames():
            if op == 10:
                out['pong'] = True
            elif op == 8:
                out['close'] = struct.unpack('!H', payload[:2])[0] if len(payload) >= 2 else 1005
                send(8, payload[:2])
                break
            elif op == 2:
                if out['first'] is None:
                    out['first'] = payload.hex()
                    if len(payload) == 1:
                        continue
                if payload and payload[0] in names:
                    out[names[payload[0]]] += payload[1:].decode(errors='replace')
    except (OSError, ssl.SSLError):
        pass
    print(json.dumps(out))


main()
