#!/usr/bin/python3
"""controls.py FILE...: lists what in FILEs a terminal reads as a control, one line each
(file, offset, what); exits 1 when there is any, 0 when there is none.

A control: a C0 byte but newline (ESC, BEL, ENQ, CR, tab...), DEL, a C1 control encoded in
UTF-8 (U+0080..U+009F), or a byte that is not part of valid UTF-8 (a bare 0x9b is an 8-bit
CSI to a terminal that takes 8-bit controls). What sbxsh prints of its own must hold none
(common/report.h); the tests that feed it hostile text check its stderr and logs with this.
"""
import sys


def controls(data):
    i = 0
    while i < len(data):
        c = data[i]
        if c < 0x20 and c != 0x0a or c == 0x7f:
            yield i, 'C0 control 0x%02x' % c
            i += 1
            continue
        if c < 0x80:
            i += 1
            continue
        n = 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else 4 if 0xf0 <= c <= 0xf4 else 0
        try:
            ch = data[i:i + n].decode('utf-8') if n else None
        except UnicodeDecodeError:
            ch = None
        if ch is None or len(ch) != 1:
            yield i, 'byte 0x%02x outside valid UTF-8' % c
            i += 1
            continue
        if 0x80 <= ord(ch) <= 0x9f:
            yield i, 'C1 control U+%04X in UTF-8' % ord(ch)
        i += n


found = 0
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        for off, what in controls(f.read()):
            print('%s: offset %d: %s' % (path, off, what))
            found += 1
sys.exit(1 if found else 0)
