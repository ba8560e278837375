#!/bin/bash
# Per-command overhead of a warm local session (bench/local.md has the
# figures): the first command of a session, `sbxsh -c true` and
# `sbx exec --keep -- true` in a session whose code directory holds N files,
# and a fresh sandbox per command, against bash on the host, in one run.
# These are rows of bench/speed.sh, which measures them (and the rest of
# issue 10's table) and prints the table; the options are its own.
#
#   bench/local-overhead.sh [--sizes 1000,10000,100000] [--runtimes bwrap,runsc] [--runs 30]
exec "$(dirname "$0")/speed.sh" --rows first,true,exec,fresh --runs 30 "$@"
