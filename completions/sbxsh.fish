# fish completion for sbxsh and sbx. Installed into fish's vendor_completions.d
# as sbxsh.fish and sbx.fish.

function __sbxsh_sessions
    sbx ls 2>/dev/null | awk 'NR > 1 {print $1}'
end

# sbxsh
complete -c sbxsh -l ast -d 'Print the syntax tree as JSON, run nothing'
complete -c sbxsh -l route -d 'Print host or sandbox for each part, run nothing'
complete -c sbxsh -l json -d 'With --route: one JSON object'
complete -c sbxsh -l session -x -a '(__sbxsh_sessions)' -d 'The session'
complete -c sbxsh -l help -d 'Show help'
complete -c sbxsh -l version -d 'Show the version'
complete -c sbxsh -l login -d 'Act as a login shell'
complete -c sbxsh -l noprofile -d 'No host profile files'
complete -c sbxsh -l norc -d 'No ~/.sbxshrc, no sandbox ~/.bashrc'
complete -c sbxsh -l posix -d 'POSIX mode'
complete -c sbxsh -l rcfile -r -d 'Run FILE instead of ~/.sbxshrc'
complete -c sbxsh -s c -x -d 'Run a command string'
complete -c sbxsh -s i -d 'Interactive'
complete -c sbxsh -s l -d 'Login shell'
complete -c sbxsh -s s -d 'Read commands from stdin'
complete -c sbxsh -s n -d 'Check syntax only'
complete -c sbxsh -s e -d 'Exit on error'
complete -c sbxsh -s u -d 'Unset variables are errors'
complete -c sbxsh -s x -d 'Trace commands'
complete -c sbxsh -s o -x -a 'allexport braceexpand emacs errexit errtrace functrace hashall histexpand history ignoreeof interactive-comments keyword monitor noclobber noexec noglob nolog notify nounset onecmd physical pipefail posix privileged verbose vi xtrace' -d 'Set option'
complete -c sbxsh -s O -x -a 'autocd cdspell checkwinsize dotglob expand_aliases extglob failglob globstar inherit_errexit lastpipe nocaseglob nocasematch nullglob xpg_echo' -d 'shopt option'

# sbx
set -l sbx_cmds exec release status ls doctor policy render-pool mcp log undo
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a exec -d 'Run a command in a sandbox'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a release -d 'Pull the last changes, stop and delete the sandbox'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a status -d 'Show a session'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a ls -d 'List the sessions'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a doctor -d 'Check what sbxsh needs here'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a policy -d 'Show or check the host-command policy'
complete -c sbx -f -n "__fish_seen_subcommand_from policy; and not __fish_seen_subcommand_from show check" -a 'show check' -d 'sbx policy'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a render-pool -d 'Print a Kubernetes warm pool'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a mcp -d 'Serve the Model Context Protocol on stdio'
complete -c sbx -n "__fish_seen_subcommand_from mcp" -l session -x -a '(__sbxsh_sessions)' -d 'The session'
complete -c sbx -n "__fish_seen_subcommand_from mcp" -l cwd -x -a '(__fish_complete_directories)' -d 'Where commands run'
complete -c sbx -n "__fish_seen_subcommand_from mcp" -l output-limit -x -d 'Characters kept of each stream'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l tenant -x -d 'The tenant'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l image -x -d 'The runtime image'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l runtime -x -a 'gvisor kata' -d 'The runtime class'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l replicas -x -d 'Warm sandboxes kept ready'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l cache-mount -x -d "Where the tenant's package cache is mounted"
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l egress-cidr -x -d 'Allow TCP to CIDR:PORT'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l dns -d 'Allow the cluster DNS'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l router-ingress -d 'Keep the sandbox-router ingress rule'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l cpu -x -d 'CPU limit'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l memory -x -d 'Memory limit'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l disk -x -d 'Ephemeral storage limit'
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l namespace -x -d "The tenant's namespace"
complete -c sbx -n "__fish_seen_subcommand_from render-pool" -l pool-only -d 'Only the template and the pool'
complete -c sbx -n "__fish_seen_subcommand_from exec release status" -l session -x -a '(__sbxsh_sessions)' -d 'The session'
complete -c sbx -n "__fish_seen_subcommand_from release" -l timeout -x -d 'How long to wait for the holder'
complete -c sbx -n "__fish_seen_subcommand_from release" -l force -d 'Kill the holder and the sandbox, pull nothing'
complete -c sbx -n "__fish_seen_subcommand_from exec" -l keep -d "Keep the session's sandbox"
complete -c sbx -n "__fish_seen_subcommand_from exec" -l tty -d 'Run on a terminal'
complete -c sbx -n "__fish_seen_subcommand_from status ls" -l json -d 'JSON output'
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a log -d "The session's commands and the files each changed"
complete -c sbx -f -n "not __fish_seen_subcommand_from $sbx_cmds" -a undo -d 'Put back what sandbox commands changed on the host'
complete -c sbx -n "__fish_seen_subcommand_from log undo" -l session -x -a '(__sbxsh_sessions)' -d 'The session'
complete -c sbx -n "__fish_seen_subcommand_from log" -l json -d 'JSON output'
complete -c sbx -n "__fish_seen_subcommand_from log" -l host -d 'What ran on the host'
complete -c sbx -n "__fish_seen_subcommand_from log" -s n -x -d 'The newest N only'
complete -c sbx -n "__fish_seen_subcommand_from undo" -l to -x -d 'Undo back to this journal id'
complete -c sbx -n "__fish_seen_subcommand_from undo" -l force -d 'Undo files the host changed too'
complete -c sbx -n "__fish_seen_subcommand_from undo" -l yes -d 'Do not ask'
complete -c sbx -l help -d 'Show help'
complete -c sbx -n __fish_use_subcommand -l version -d 'Show the version'
