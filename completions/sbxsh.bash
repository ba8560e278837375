# bash completion for sbxsh and sbx                        -*- shell-script -*-
# Installed as $(DATADIR)/bash-completion/completions/sbxsh (and a link named sbx).

_sbxsh_sessions()
{
    sbx ls 2>/dev/null | awk 'NR > 1 {print $1}'
}

_sbxsh()
{
    local cur prev
    _init_completion 2>/dev/null || {
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
    }
    case $prev in
    -o | +o)
        COMPREPLY=($(compgen -W "allexport braceexpand emacs errexit errtrace functrace
            hashall histexpand history ignoreeof interactive-comments keyword monitor
            noclobber noexec noglob nolog notify nounset onecmd physical pipefail posix
            privileged verbose vi xtrace" -- "$cur"))
        return ;;
    -O | +O)
        COMPREPLY=($(compgen -A shopt -- "$cur"))
        return ;;
    --session)
        COMPREPLY=($(compgen -W "$(_sbxsh_sessions)" -- "$cur"))
        return ;;
    --rcfile | --init-file)
        COMPREPLY=($(compgen -f -- "$cur"))
        return ;;
    -c)
        return ;;
    esac
    if [[ $cur == -* || $cur == +* ]]; then
        COMPREPLY=($(compgen -W "--ast --route --json --session --help --version --login
            --noprofile --norc --posix --rcfile --restricted --verbose
            -c -i -l -s -n -e -u -x -v -f -o +o -O +O" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _sbxsh sbxsh

_sbx()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local cmd=${COMP_WORDS[1]}
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "exec release status ls doctor policy render-pool mcp log undo --help --version" -- "$cur"))
        return
    fi
    if [[ $prev == --session ]]; then
        COMPREPLY=($(compgen -W "$(_sbxsh_sessions)" -- "$cur"))
        return
    fi
    case $cmd in
    exec)
        local i
        for ((i = 2; i < COMP_CWORD; i++)); do
            # after -- or the command name: complete the command's own words
            if [[ ${COMP_WORDS[i]} == -- || ${COMP_WORDS[i]} != -* && ${COMP_WORDS[i - 1]} != --session ]]; then
                COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
                return
            fi
        done
        COMPREPLY=($(compgen -W "--session --keep --tty --help --" -- "$cur")) ;;
    release) COMPREPLY=($(compgen -W "--session --timeout --force --help" -- "$cur")) ;;
    status) COMPREPLY=($(compgen -W "--session --json --help" -- "$cur")) ;;
    ls) COMPREPLY=($(compgen -W "--json --help" -- "$cur")) ;;
    doctor) COMPREPLY=($(compgen -W "--help" -- "$cur")) ;;
    policy)
        if ((COMP_CWORD == 2)); then
            COMPREPLY=($(compgen -W "show check --help" -- "$cur"))
        elif [[ ${COMP_WORDS[2]} == check ]] && ((COMP_CWORD == 3)); then
            COMPREPLY=($(compgen -f -- "$cur"))
        fi ;;
    mcp)
        if [[ $prev == --cwd ]]; then
            COMPREPLY=($(compgen -d -- "$cur"))
        elif [[ $prev != --output-limit ]]; then
            COMPREPLY=($(compgen -W "--session --cwd --output-limit --help --version" -- "$cur"))
        fi ;;
    log) COMPREPLY=($(compgen -W "--session --json --host -n --help" -- "$cur")) ;;
    undo) COMPREPLY=($(compgen -W "--session --to --force --yes --help" -- "$cur")) ;;
    render-pool)
        # after an option that takes a value: the value (only --runtime's are known)
        if [[ $prev == --runtime ]]; then
            COMPREPLY=($(compgen -W "gvisor kata" -- "$cur"))
        elif ! [[ $prev =~ ^--(tenant|image|replicas|cache-mount|egress-cidr|cpu|memory|disk|namespace)$ ]]; then
            COMPREPLY=($(compgen -W "--tenant --image --runtime --replicas --cache-mount --egress-cidr --dns --router-ingress --cpu --memory --disk --namespace --pool-only --help" -- "$cur"))
        fi ;;
    esac
}
complete -F _sbx sbx
