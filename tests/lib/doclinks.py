#!/usr/bin/env python3
"""References between the project's documents, checked (tests/integration/docs-links.t).

    doclinks.py links TOP FILE.md...  each relative Markdown link of FILE.md leads to a file
                                      that exists, and its #anchor to a heading there
    doclinks.py refs TOP FILE...      each written reference of FILE in the project's style,
                                      `sync/README.md, "Spawning"` (or `README, "..."`),
                                      names a file that exists and holds the quoted words

Prints one line per broken reference (FILE:LINE: what), nothing when all hold. Why: the
README was split into docs/ and its sections moved; a link or a comment that still points
at the old place sends a reader nowhere, and nothing else would notice.
"""
import os
import re
import sys


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as '-'."""
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(path):
    """The anchors of a Markdown file's headings (outside code blocks), with GitHub's
    -1, -2 suffixes for repeated ones."""
    seen, out, fenced = {}, set(), False
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            if line.startswith('```'):
                fenced = not fenced
                continue
            m = None if fenced else re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                out.add(base if n == 0 else f'{base}-{n}')
    return out


def check_links(top, path):
    here = os.path.dirname(path)
    fenced = False
    with open(path, encoding='utf-8', errors='replace') as f:
        for no, line in enumerate(f, 1):
            if line.startswith('```'):
                fenced = not fenced
                continue
            if fenced or line.startswith('    '):
                continue
            text = re.sub(r'`[^`]*`', '', line)     # inline code is not a link
            for m in re.finditer(r'\[[^\]]*\]\(([^)\s]+)\)', text):
                url = m.group(1)
                if re.match(r'[a-z][a-z0-9+.-]*:', url):
                    continue                         # http:, https:, mailto:
                target, _, anchor = url.partition('#')
                dest = os.path.normpath(os.path.join(here, target)) if target else path
                rel = os.path.relpath(path, top)
                if not os.path.exists(dest):
                    print(f'{rel}:{no}: {url}: no such file')
                elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                    print(f'{rel}:{no}: {url}: no heading #{anchor} in '
                          f'{os.path.relpath(dest, top)}')


REF = re.compile(r'((?:[\w.-]+/)*[\w.-]+\.md|\bREADME\b)(?:\]\(([^)\s#]*)[^)\s]*\))?,\s+"([^"\n]*)')


def check_refs(top, path):
    here = os.path.dirname(path)
    rel = os.path.relpath(path, top)
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = f.read().split('\n')
    for no, line in enumerate(lines, 1):
        for m in REF.finditer(line):
            name, url, quote = m.group(1), m.group(2), m.group(3).rstrip(' *').strip()
            if name == 'README':
                name = 'README.md'
            if len(quote) < 4:
                continue
            # A link's target is relative to its file; a path written out, in a page or a
            # comment, names it from the top of the tree.
            if url:
                name, order = url, [here]
            else:
                order = [top, here]
            dest = next((os.path.join(d, name) for d in order
                         if os.path.exists(os.path.join(d, name))), None)
            if dest is None:
                print(f'{rel}:{no}: {name}: no such file')
                continue
            with open(dest, encoding='utf-8', errors='replace') as f:
                body = re.sub(r'\s+', ' ', f.read())
            if re.sub(r'\s+', ' ', quote) not in body:
                print(f'{rel}:{no}: {name}, "{quote}": not in {os.path.relpath(dest, top)}')


if __name__ == '__main__':
    mode, top = sys.argv[1], os.path.abspath(sys.argv[2])
    for p in sys.argv[3:]:
        p = os.path.abspath(os.path.join(top, p))
        (check_links if mode == 'links' else check_refs)(top, p)
