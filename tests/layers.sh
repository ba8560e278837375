#!/bin/bash
# The layering, checked: every `#include "..."` in the program's folders points down
# (HACKING.md, "The layers"), and the session layer names no backend (below). Exits 1
# listing each include that points against it and each place that names a backend.
#
#   tests/layers.sh [TOP [BUILD]]   TOP: the tree to check (default: this one); BUILD: its
#                                   objects (default TOP/build; none there: names unchecked)
#
# Each folder may include its own headers and those of the folders (or single headers)
# listed after it. tests/ and bench/ may include anything; a folder with C files that is
# not listed fails, so that a new one gets a place in the picture.
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
build=${2:-$top/build}

declare -A allowed=(
    [common]="common"
    [shell]="shell common"
    [router]="router shell common"
    [sync]="sync common"
    [session]="session sync common"
    # a backend sees the session layer only through its interface (and the config
    # the interface's factory is given)
    [local]="local session/backend.h session/config.h common"
    # (and sync/resume.h: the resumable stream whose pod-side end is sbx-agent's)
    [kube]="kube session/backend.h session/config.h sync/resume.h common"
    [cli]="cli router shell session common"
    # libsbxsh runs lines with the sbxsh program and links nothing of the other layers
    [lib]="lib"
    # doc/'s example is a user's program: <sbxsh.h>, installed, and nothing of the tree
    [doc]="doc"
    # sbx mcp: a front end on libsbxsh's public header
    [mcp]="mcp lib/sbxsh.h common"
)
skip=" tests bench build build-asan build-clang build-fuzz "

# The names each folder exports (its objects' global functions and variables, as nm lists
# them) begin with one of its own prefixes, so that a name says where it is defined: sbx_
# is common/'s alone, the parser's sh_ is shell/'s. No prefix belongs to two folders or
# begins another folder's. (HACKING.md lists them; types and macros are not linker names.)
declare -A prefixes=(
    [common]="sbx_ strbuf_ strvec_ arena_ framebuf_ urlcred_ read_ write_ set_ now_ x"
    [shell]="sh_ lx_ px_ wb_ wd_"
    [router]="route_"
    [sync]="sync_ agent_ apply_ conn_ delta_ dns_ dnsstub_ gh_ git_ gitconfig_ gitcred_
            gitindex_ jnl_ fsm_ ign_ mf_ rc_ RC_ rs_ sf_ wire_ wildmatch has_glob"
    [session]="session_ proto_"
    [local]="local_"
    [kube]="kube_ kt_ kwatch_ ws_"
    [cli]="cli_ interactive_ line_ prompt_ startup_ view_"
    [lib]="sbxsh_"
    [mcp]="mcp_"
)

bad=0
cd "$top" || exit 2
for dir in */; do
    dir=${dir%/}
    case "$skip" in *" $dir "*) continue ;; esac
    files=$(find "$dir" -name '*.[ch]' -type f | sort)
    [ -n "$files" ] || continue
    if [ -z "${allowed[$dir]+x}" ]; then
        echo "$dir/: C files in a folder that has no layer (add it to tests/layers.sh)"
        bad=1
        continue
    fi
    # one awk per folder: FILE:LINE: includes "X": ... for each include not allowed
    # shellcheck disable=SC2086 # the tree's C file names (no spaces), one argument each
    report=$(awk -v dir="$dir" -v allow="${allowed[$dir]}" '
        BEGIN { n = split(allow, a, " ") }
        match($0, /^[ \t]*#[ \t]*include[ \t]*"[^"]*"/) {
            inc = substr($0, RSTART, RLENGTH)
            sub(/^[^"]*"/, "", inc); sub(/"$/, "", inc)
            if (index(inc, "/") == 0) next      # a header beside the file
            ok = 0
            top = inc; sub(/\/.*/, "", top)
            for (i = 1; i <= n; i++)
                if (inc == a[i] || top == a[i]) ok = 1
            if (inc ~ /(^|\/)\.\.\//) ok = 0
            if (!ok)
                printf "%s:%d: includes \"%s\": %s/ may include only: %s\n", FILENAME, FNR, inc, dir, allow
        }' $files)
    if [ -n "$report" ]; then
        echo "$report"
        bad=1
    fi
done

# Prefixes: no two folders share one (nor does one begin another folder's).
for a in "${!prefixes[@]}"; do
    for b in "${!prefixes[@]}"; do
        [ "$a" != "$b" ] || continue
        for p in ${prefixes[$a]}; do
            for q in ${prefixes[$b]}; do
                case $q in "$p"*)
                    echo "tests/layers.sh: prefix $q of $b/ begins with $a/'s $p: a name would not say its folder"
                    bad=1 ;;
                esac
            done
        done
    done
done
# Each object of a folder's C file in BUILD (and the registry the Makefile generates):
# every name it exports begins with one of its folder's prefixes.
if [ -d "$build" ]; then
    for dir in "${!prefixes[@]}"; do
        [ -d "$dir" ] || continue
        objs=()
        for c in "$dir"/*.c; do
            o=$build/${c%.c}.o
            [ -f "$o" ] && objs+=("$o")
            # the library's position-independent objects (lib/lib.mk)
            o=$build/pic/${c%.c}.o
            [ -f "$o" ] && objs+=("$o")
        done
        [ "$dir" = session ] && [ -f "$build/session/backends.o" ] && objs+=("$build/session/backends.o")
        [ ${#objs[@]} -gt 0 ] || continue
        # shellcheck disable=SC2086 # the prefixes, one word each
        report=$(nm -A -g --defined-only "${objs[@]}" 2>/dev/null |
                 awk -v dir="$dir" -v build="$build/" -v pre="${prefixes[$dir]}" '
            BEGIN { gsub(/[ \t\n]+/, " ", pre); n = split(pre, p, " ") }
            NF == 3 {
                obj = $1; sub(/:[0-9a-fA-F]*$/, "", obj)
                if (index(obj, build) == 1) obj = substr(obj, length(build) + 1)
                # main, and what the compiler adds (reserved __ names; ASan makes __odr_asan.X)
                if ($3 == "main" || $3 ~ /^__/ || index($3, ".")) next
                for (i = 1; i <= n; i++)
                    if (index($3, p[i]) == 1) next
                printf "%s: exports %s: names of %s/ begin with %s\n", obj, $3, dir, pre
            }')
        if [ -n "$report" ]; then
            echo "$report"
            bad=1
        fi
    done
fi

# The session layer names no backend (HACKING.md, "Adding a backend"): a backend is its
# folder, whose fragment says `BACKENDS += NAME`, plus that line; its settings are a section
# of its own that the session layer keeps opaque. So session/'s code (comments and string
# literals aside: help text may name them) has no identifier with a backend's name as one of
# its words (`cfg->local`, `kube_settings`, `LOCAL_RUNTIME_AUTO`), and reads none of the
# variables a backend reads (`getenv("AGENT_SANDBOX_POOL")`).
backends=$(sed -n 's/^[[:space:]]*BACKENDS[[:space:]]*+=[[:space:]]*\([A-Za-z0-9_]*\).*/\1/p' \
               ./*/*.mk 2>/dev/null | sort -u)
if [ -n "$backends" ] && [ -d session ]; then
    # every AGENT_SANDBOX_* a backend reads by name (getenv, env_nonempty)
    vars=$(for b in $backends; do
               cat "$b"/*.c 2>/dev/null
           done | grep -oE '(getenv|env_nonempty)\("AGENT_SANDBOX_[A-Z0-9_]+"' |
           sed 's/.*("//; s/"$//' | sort -u | tr '\n' ' ')
    for f in session/*.[ch]; do
        [ -f "$f" ] || continue
        # comments and literals blanked, lines kept; then each identifier and each
        # getenv of a backend's variable, with its line
        report=$(perl -e '
            my ($file, $names, $vars) = @ARGV[0 .. 2];
            my %var = map { $_ => 1 } split " ", $vars;
            my $re = join "|", map { quotemeta } split " ", $names;
            open my $fh, "<", $file or die "$file: $!\n";
            local $/; my $src = <$fh>;
            my $line = 0;
            for my $l (split /\n/, $src, -1) {
                $line++;
                while ($l =~ /(?:getenv|env_nonempty)\("(AGENT_SANDBOX_[A-Z0-9_]+)"/g) {
                    print "$file:$line: reads $1, a backend'"'"'s setting: only its backend may\n"
                        if $var{$1};
                }
            }
            $src =~ s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'"'"'(?:\\.|[^'"'"'\\\n])*'"'"'}{
                my $m = $&; $m =~ /^["'"'"']/ ? "\"\"" : ("\n" x ($m =~ tr/\n//)) . " " }gse;
            $line = 0;
            for my $l (split /\n/, $src, -1) {
                $line++;
                while ($l =~ /([A-Za-z_][A-Za-z0-9_]*)/g) {
                    my $id = $1;
                    print "$file:$line: names the backend \"$2\" ($id): the session layer names no backend\n"
                        if $id =~ /(^|_)($re)(_|$)/i;
                }
            }' "$f" "$backends" "$vars")
        if [ -n "$report" ]; then
            echo "$report"
            bad=1
        fi
    done
fi
exit $bad
