/* Session configuration: code directories, session names, durations. */
#include "tests/lib/tap.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/config.h"

static char tmp[PATH_MAX];
static char base[256];

static char *mk(const char *rel)
{
    static char p[PATH_MAX + 300];
    snprintf(p, sizeof(p), "%s/%s", tmp, rel);
    return p;
}

int main(void)
{
    strvec dirs = STRVEC_INIT;
    sbx_err err;
    unsigned secs;
    char *name;

    snprintf(base, sizeof(base), "%.200s/sbx-t-config.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(base) || !realpath(base, tmp))
        return 1;
    mkdir(mk("repo"), 0755);
    mkdir(mk("repo/.git"), 0755);
    mkdir(mk("repo/src"), 0755);
    mkdir(mk("repo/src/deep"), 0755);
    mkdir(mk("plain"), 0755);
    mkdir(mk("wt"), 0755);
    FILE *f = fopen(mk("wt/.git"), "w");
    fputs("gitdir: /elsewhere\n", f);
    fclose(f);
    char target[PATH_MAX + 300];
    snprintf(target, sizeof(target), "%s", mk("repo"));
    if (symlink(target, mk("link")) < 0)
        return 1;

    ok(session_resolve_code_dirs(NULL, mk("repo/src/deep"), &dirs, &err) == 0, "resolve in a repo");
    is_str(dirs.n ? dirs.v[0] : "", mk("repo"), "the git top level");
    strvec_clear(&dirs);
    ok(session_resolve_code_dirs("", mk("wt"), &dirs, &err) == 0, "resolve in a worktree");
    is_str(dirs.n ? dirs.v[0] : "", mk("wt"), "a gitfile marks the top level");
    strvec_clear(&dirs);
    ok(session_resolve_code_dirs(NULL, mk("link/src"), &dirs, &err) == 0, "through a symlink");
    is_str(dirs.n ? dirs.v[0] : "", mk("repo"), "the real path");
    strvec_clear(&dirs);

    /* Directories that are not projects are never synced whole: no code directory. */
    mkdir(mk("home"), 0755);
    mkdir(mk("home/proj"), 0755);
    mkdir(mk("home/proj/.git"), 0755);
    mkdir(mk("home/notes"), 0755);
    setenv("HOME", mk("home"), 1);
    unsetenv("AGENT_SANDBOX_STATE_DIR");
    unsetenv("XDG_STATE_HOME");
    ok(session_resolve_code_dirs(NULL, mk("home"), &dirs, &err) == 0 && dirs.n == 0,
       "the home directory: no code directory");
    is_str(session_no_code_dir_reason(mk("home")), "the home directory", "...and why");
    ok(session_resolve_code_dirs(NULL, tmp, &dirs, &err) == 0 && dirs.n == 0,
       "a directory above the home directory: none");
    ok(session_resolve_code_dirs(NULL, "/tmp", &dirs, &err) == 0 && dirs.n == 0, "/tmp: none");
    ok(session_resolve_code_dirs(NULL, "/", &dirs, &err) == 0 && dirs.n == 0, "/: none");
    ok(session_resolve_code_dirs(NULL, "/usr/share", &dirs, &err) == 0 && dirs.n == 1,
       "a directory below a system directory is a directory like any other");
    strvec_clear(&dirs);
    ok(session_resolve_code_dirs(NULL, mk("home/proj"), &dirs, &err) == 0 && dirs.n == 1 &&
       !strcmp(dirs.v[0], mk("home/proj")), "a repository in the home directory is a project");
    strvec_clear(&dirs);
    ok(session_resolve_code_dirs(NULL, mk("home/notes"), &dirs, &err) == 0 && dirs.n == 1,
       "a plain directory in the home directory is one too");
    strvec_clear(&dirs);
    mkdir(mk("home/.git"), 0755);
    ok(session_resolve_code_dirs(NULL, mk("home/notes"), &dirs, &err) == 0 && dirs.n == 0,
       "a dotfiles repository at ~ does not make ~ a project");
    rmdir(mk("home/.git"));
    setenv("AGENT_SANDBOX_STATE_DIR", mk("home/notes/state"), 1);
    ok(session_resolve_code_dirs(NULL, mk("home/notes"), &dirs, &err) == 0 && dirs.n == 0,
       "the directory holding the state directory: none");
    is_str(session_no_code_dir_reason(mk("home/notes")), "the directory holding sbxsh's state",
           "...and why");
    unsetenv("AGENT_SANDBOX_STATE_DIR");
    ok(session_resolve_code_dirs(mk("home"), mk("wt"), &dirs, &err) == 0 && dirs.n == 1,
       "AGENT_SANDBOX_CODE_DIRS may still name the home directory");
    strvec_clear(&dirs);

    char env[3 * PATH_MAX];
    snprintf(target, sizeof(target), "%s", mk("plain"));
    snprintf(env, sizeof(env), "%s:%s", target, mk("link"));
    ok(session_resolve_code_dirs(env, mk("wt"), &dirs, &err) == 0, "AGENT_SANDBOX_CODE_DIRS wins");
    is_int(dirs.n, 2, "two directories");
    is_str(dirs.n > 1 ? dirs.v[1] : "", mk("repo"), "made real");
    strvec_clear(&dirs);
    snprintf(target, sizeof(target), "%s", mk("repo"));
    snprintf(env, sizeof(env), "%s:%s", target, mk("repo/src"));
    ok(session_resolve_code_dirs(env, "/", &dirs, &err) < 0, "nested code directories refused");
    ok(strstr(err.msg, "overlap") != NULL, "message says they overlap");
    strvec_clear(&dirs);
    ok(session_resolve_code_dirs("relative/dir", "/", &dirs, &err) < 0, "relative path refused");
    strvec_clear(&dirs);
    ok(session_resolve_code_dirs("/", "/", &dirs, &err) < 0, "/ refused");
    strvec_clear(&dirs);
    ok(session_resolve_code_dirs(mk("missing"), "/", &dirs, &err) < 0, "missing directory refused");
    strvec_clear(&dirs);

    strvec_push(&dirs, "/home/me/My Project!");
    name = session_name_derive(&dirs, "/home/me/.local/state/sbxsh");
    ok(session_name_check(name, NULL) == 0, "derived name is valid: %s", name);
    ok(!strncmp(name, "My_Project_-", 12), "readable part from the basename: %s", name);
    char *name2;
    char *again = session_name_derive(&dirs, "/home/me/.local/state/sbxsh");
    is_str(again, name, "derivation is stable");
    strvec_clear(&dirs);
    strvec_push(&dirs, "/other/My Project!");
    char *other = session_name_derive(&dirs, "/home/me/.local/state/sbxsh");
    ok(strcmp(other, name) != 0, "another path, another name");
    free(other);
    strvec_clear(&dirs);
    strvec_push(&dirs, "/home/me/My Project!");
    other = session_name_derive(&dirs, "/home/task-2/.local/state/sbxsh");
    ok(strcmp(other, name) != 0, "another state directory (another HOME), another name");
    free(other);
    strvec_clear(&dirs);
    name2 = session_name_derive(&dirs, "/home/me/.local/state/sbxsh");
    other = session_name_derive(&dirs, "/home/task-2/.local/state/sbxsh");
    ok(!strncmp(name2, "scratch-", 8), "no code directory: a scratch session: %s", name2);
    ok(strcmp(other, name2) != 0, "scratch sessions of two HOMEs differ: %s, %s", name2, other);
    free(name2);
    free(name);
    free(again);
    free(other);

    ok(session_name_check("ok-name_1.2", NULL) == 0, "valid name");
    ok(session_name_check("", &err) < 0, "empty name refused");
    ok(session_name_check("-x", &err) < 0, "leading dash refused");
    ok(session_name_check("a/b", &err) < 0, "slash refused");
    ok(session_name_check("..", &err) < 0, "dots refused");
    ok(session_name_check("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &err) < 0,
       "65 characters refused");

    ok(session_parse_duration("90", &secs, &err) == 0 && secs == 90, "seconds");
    ok(session_parse_duration("30m", &secs, &err) == 0 && secs == 1800, "minutes");
    ok(session_parse_duration("2h", &secs, &err) == 0 && secs == 7200, "hours");
    ok(session_parse_duration("0", &secs, &err) == 0 && secs == 0, "zero");
    ok(session_parse_duration("-1", &secs, &err) < 0, "negative refused");
    ok(session_parse_duration("5x", &secs, &err) < 0, "unknown unit refused");
    ok(session_parse_duration("99999999999h", &secs, &err) < 0, "overflow refused");

    unsigned long long sz;
    unsigned milli;
    ok(session_parse_size("1048576", 0, &sz, &err) == 0 && sz == 1048576, "size in bytes");
    ok(session_parse_size("256M", 0, &sz, &err) == 0 && sz == 256ULL << 20, "size in M");
    ok(session_parse_size("10GiB", 0, &sz, &err) == 0 && sz == 10ULL << 30, "size in GiB");
    ok(session_parse_size("2t", 0, &sz, &err) == 0 && sz == 2ULL << 40, "size in t");
    ok(session_parse_size("25%", 1000, &sz, &err) == 0 && sz == 250, "a share of memory");
    ok(session_parse_size("25%", 0, &sz, &err) < 0, "a share where none is meant is refused");
    ok(session_parse_size("101%", 1000, &sz, &err) < 0, "over 100%% refused");
    ok(session_parse_size("-1M", 0, &sz, &err) < 0, "negative size refused");
    ok(session_parse_size("5X", 0, &sz, &err) < 0, "unknown size unit refused");
    ok(session_parse_size("99999999999T", 0, &sz, &err) < 0, "size overflow refused");
    ok(session_parse_cpus("2", &milli, &err) == 0 && milli == 2000, "whole CPUs");
    ok(session_parse_cpus("0.5", &milli, &err) == 0 && milli == 500, "half a CPU");
    ok(session_parse_cpus("1.25", &milli, &err) == 0 && milli == 1250, "fraction of CPUs");
    ok(session_parse_cpus("0", &milli, &err) < 0, "zero CPUs refused");
    ok(session_parse_cpus("1.", &milli, &err) < 0, "a bare point refused");
    ok(session_parse_cpus("x", &milli, &err) < 0, "not a number refused");

    /* session_config_load reads the environment. */
    sbx_config cfg;
    setenv("AGENT_SANDBOX_CODE_DIRS", mk("repo"), 1);
    setenv("AGENT_SANDBOX_SESSION", "named", 1);
    setenv("AGENT_SANDBOX_LOCAL_RUNTIME", "bwrap", 1);
    setenv("AGENT_SANDBOX_IDLE_TIMEOUT", "5m", 1);
    setenv("AGENT_SANDBOX_STATE_DIR", mk("state"), 1);
    setenv("XDG_RUNTIME_DIR", mk("run"), 1);
    setenv("HOME", mk("home"), 1);
    ok(session_config_load(&cfg, NULL, &err) == 0, "config loads");
    is_str(cfg.session, "named", "AGENT_SANDBOX_SESSION");
    char *fp = session_config_fingerprint(&cfg);
    ok(strstr(fp, "runtime=bwrap ") != NULL, "the local backend's runtime, in the session's "
       "shape: %s", fp);
    free(fp);
    is_int(cfg.idle_timeout, 300, "idle timeout");
    is_int(cfg.pids_max, SBX_PIDS_MAX_DEFAULT, "pids limit by default");
    ok(cfg.memory_max > 0, "a memory limit by default");
    ok(cfg.disk_max == SBX_DISK_MAX_DEFAULT, "disk limit by default");
    ok(cfg.files_max == 1000000, "an entry limit of 1,000,000 by default");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_PIDS_MAX", "100", 1);
    setenv("AGENT_SANDBOX_MEMORY_MAX", "256M", 1);
    setenv("AGENT_SANDBOX_CPUS", "1.5", 1);
    setenv("AGENT_SANDBOX_DISK_MAX", "50M", 1);
    setenv("AGENT_SANDBOX_FILES_MAX", "5000", 1);
    ok(session_config_load(&cfg, NULL, &err) == 0, "config with limits loads");
    is_int(cfg.pids_max, 100, "AGENT_SANDBOX_PIDS_MAX");
    ok(cfg.memory_max == 256ULL << 20, "AGENT_SANDBOX_MEMORY_MAX");
    is_int(cfg.cpus_milli, 1500, "AGENT_SANDBOX_CPUS");
    ok(cfg.disk_max == 50ULL << 20, "AGENT_SANDBOX_DISK_MAX");
    ok(cfg.files_max == 5000, "AGENT_SANDBOX_FILES_MAX");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_FILES_MAX", "10M", 1);
    ok(session_config_load(&cfg, NULL, &err) < 0 && strstr(err.msg, "AGENT_SANDBOX_FILES_MAX") &&
       strstr(err.msg, "give a number of files"),
       "an entry limit with a unit refused, naming the variable: %s", err.msg);
    unsetenv("AGENT_SANDBOX_FILES_MAX");
    ok(session_config_load(&cfg, NULL, &err) == 0 && cfg.git_fsmonitor,
       "AGENT_SANDBOX_GIT_FSMONITOR: on by default");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_GIT_FSMONITOR", "0", 1);
    ok(session_config_load(&cfg, NULL, &err) == 0 && !cfg.git_fsmonitor, "AGENT_SANDBOX_GIT_FSMONITOR=0: off");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_GIT_FSMONITOR", "off", 1);
    ok(session_config_load(&cfg, NULL, &err) == 0 && !cfg.git_fsmonitor, "AGENT_SANDBOX_GIT_FSMONITOR=off: off");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_GIT_FSMONITOR", "1", 1);
    ok(session_config_load(&cfg, NULL, &err) == 0 && cfg.git_fsmonitor, "AGENT_SANDBOX_GIT_FSMONITOR=1");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_GIT_FSMONITOR", "yes please", 1);
    ok(session_config_load(&cfg, NULL, &err) < 0 && strstr(err.msg, "AGENT_SANDBOX_GIT_FSMONITOR"),
       "AGENT_SANDBOX_GIT_FSMONITOR: anything but 0 and 1 refused, naming it: %s", err.msg);
    unsetenv("AGENT_SANDBOX_GIT_FSMONITOR");
    setenv("AGENT_SANDBOX_PIDS_MAX", "10k", 1);
    ok(session_config_load(&cfg, NULL, &err) < 0 && strstr(err.msg, "AGENT_SANDBOX_PIDS_MAX"),
       "a pids limit with a unit refused, naming the variable");
    setenv("AGENT_SANDBOX_PIDS_MAX", "100", 1);
    setenv("AGENT_SANDBOX_MEMORY_MAX", "lots", 1);
    ok(session_config_load(&cfg, NULL, &err) < 0 && strstr(err.msg, "AGENT_SANDBOX_MEMORY_MAX"),
       "a bad memory limit refused, naming the variable");
    unsetenv("AGENT_SANDBOX_PIDS_MAX");
    unsetenv("AGENT_SANDBOX_MEMORY_MAX");
    unsetenv("AGENT_SANDBOX_CPUS");
    unsetenv("AGENT_SANDBOX_DISK_MAX");
    ok(session_config_load(&cfg, NULL, &err) == 0, "config loads again");
    is_str(cfg.run_dir, mk("run/sbxsh"), "run dir under XDG_RUNTIME_DIR");
    session_config_free(&cfg);
    sbx_config_opts o = { .session = "opt" };
    ok(session_config_load(&cfg, &o, &err) == 0 && !strcmp(cfg.session, "opt"), "--session wins");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_LOCAL_RUNTIME", "docker", 1);
    ok(session_config_load(&cfg, NULL, &err) < 0, "unknown runtime refused");
    setenv("AGENT_SANDBOX_LOCAL_RUNTIME", "runsc", 1);
    setenv("AGENT_SANDBOX_STATE_DIR", mk("repo/state"), 1);
    ok(session_config_load(&cfg, NULL, &err) < 0, "state dir inside a code dir refused");

    /* A code directory holding the home directory never syncs its credentials. */
    setenv("AGENT_SANDBOX_CODE_DIRS", mk("home"), 1);
    setenv("AGENT_SANDBOX_STATE_DIR", mk("state"), 1);
    setenv("HOME", mk("home"), 1);
    ok(session_config_load(&cfg, NULL, &err) == 0, "config with ~ as the code directory loads");
    bool ssh = false, aws = false;
    for (size_t i = 0; i < cfg.excludes.n; i++) {
        ssh |= !strcmp(cfg.excludes.v[i], "/.ssh");
        aws |= !strcmp(cfg.excludes.v[i], "/.aws");
    }
    ok(ssh && aws, "~/.ssh and ~/.aws are excluded from the sync");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_CODE_DIRS", tmp, 1);
    setenv("AGENT_SANDBOX_STATE_DIR", "/nonexistent-sbx-t-config-state", 1);
    ok(session_config_load(&cfg, NULL, &err) == 0, "config with a directory above ~ loads");
    ssh = false;
    for (size_t i = 0; i < cfg.excludes.n; i++)
        ssh |= !strcmp(cfg.excludes.v[i], "/home/.ssh");
    ok(ssh, "...and ~/.ssh is excluded below it");
    session_config_free(&cfg);
    setenv("AGENT_SANDBOX_CODE_DIRS", mk("repo"), 1);
    setenv("AGENT_SANDBOX_STATE_DIR", mk("state"), 1);
    ok(session_config_load(&cfg, NULL, &err) == 0 && cfg.excludes.n == 0,
       "a project directory gets no extra excludes");
    session_config_free(&cfg);

    ok(session_private_dir(mk("priv/a/b"), &err) == 0, "private dir created with parents");
    struct stat st;
    ok(stat(mk("priv/a/b"), &st) == 0 && (st.st_mode & 0777) == 0700, "mode 0700");
    chmod(mk("priv/a/b"), 0755);
    ok(session_private_dir(mk("priv/a/b"), &err) == 0 && stat(mk("priv/a/b"), &st) == 0 &&
       (st.st_mode & 0777) == 0700, "a loosened mode is tightened");
    snprintf(target, sizeof(target), "%s", mk("priv"));
    if (symlink(target, mk("privlink")) < 0)
        return 1;
    ok(session_private_dir(mk("privlink"), &err) < 0, "a symlink is refused");

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp);
    return done_testing();
}
