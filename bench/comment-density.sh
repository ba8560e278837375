#!/bin/bash
# Comment density of C files: for each FILE, its comment lines (lines that hold only a
# comment, or a part of one), its code lines (lines with code, a trailing comment or not;
# blank lines count as neither, as cloc counts) and their ratio; then the total. Issue 26's
# anchors (git, curl, Redis, dash, SQLite, bubblewrap) are 0.12-0.38.
#
#   bench/comment-density.sh FILE...
#
# E.g. the trusted core as SECURITY.md lists it:
#   bench/comment-density.sh sync/hostwrite.c sync/safefs.c router/*.c session/termfilter.c
set -u
[ $# -ge 1 ] || { sed -n '/^#   bench/p' "$0" | sed 's/^# *//' >&2; exit 2; }
awk '
function flush() {
    if (FILENAME_prev != "") {
        printf "%-36s %6d %6d %6.2f\n", FILENAME_prev, com, code, code ? com / code : 0
        tcom += com; tcode += code
    }
    com = code = 0; inblock = 0
}
FNR == 1 { flush(); FILENAME_prev = FILENAME }
{
    line = $0; hascode = 0; hascom = 0
    while (length(line)) {
        if (inblock) {
            hascom = 1
            e = index(line, "*/")
            if (!e) { line = ""; break }
            line = substr(line, e + 2); inblock = 0
            continue
        }
        sub(/^[ \t]+/, "", line)
        if (line == "") break
        if (substr(line, 1, 2) == "//") { hascom = 1; break }
        if (substr(line, 1, 2) == "/*") { inblock = 1; hascom = 1; line = substr(line, 3); continue }
        # code up to the next comment opener outside a string literal
        hascode = 1
        n = length(line); q = 0; cut = 0
        for (i = 1; i <= n; i++) {
            c = substr(line, i, 1)
            if (q) { if (c == "\\") i++; else if (c == q) q = 0; continue }
            if (c == "\"" || c == "\x27") { q = c; continue }
            if (c == "/" && (substr(line, i + 1, 1) == "*" || substr(line, i + 1, 1) == "/")) { cut = i; break }
        }
        if (!cut) break
        line = substr(line, cut)
    }
    if (hascode) code++
    else if (hascom) com++
}
END {
    flush()
    printf "%-36s %6d %6d %6.2f\n", "total", tcom, tcode, tcode ? tcom / tcode : 0
}' "$@" | { printf "%-36s %6s %6s %6s\n" file comment code ratio; cat; }
