/*
 * l_sys.c: require "klab.sys", small operating-system facts and actions.
 *
 *   sys.getpid() -> integer              sys.getppid() -> integer
 *   sys.kill(pid, sig) -> true | nil, msg, code
 *       sig: a name ("SEGV", "SIGKILL", "TERM", ...) or a number; a
 *       negative pid signals a process group, as kill(2) does
 *   sys.sleep(seconds)                   (fractions allowed; resumes after signals)
 *   sys.now() -> seconds                 monotonic clock, float
 *   sys.time() -> seconds                wall clock (Unix time), float
 *   sys.hostname() -> string
 *   sys.random_seed() -> integer         64 bits from the operating system's generator
 *   sys.cpu_count() -> integer           the CPUs this process may run on
 *                                        (its affinity mask: a Slurm or
 *                                        cgroup allocation, not the machine's)
 *   sys.exe() -> path | nil, msg, code   this program (/proc/self/exe)
 *   sys.landlock_abi() -> integer        the kernel's Landlock ABI version, 0 without
 *                                        it (klab's compiler child reads only the
 *                                        toolkit and system libraries with it)
 *   sys.signal_name(n) -> "SEGV" | nil   sys.signal_number("SEGV") -> 11 | nil
 *   sys.mkdir(path) -> true | nil, msg, code
 *       creates path and its missing parents (mode 0777 less the umask);
 *       an existing folder is fine
 *   sys.remove_tree(path) -> true | nil, msg, code
 *       removes path and, for a folder, everything under it; symbolic links
 *       are removed, never followed; a missing path is fine
 *       (both are klab.fs's mkdirs and remove_tree: host/base/fs.c)
 *   sys.isatty(fd) -> boolean            (0, 1, 2: stdin, stdout, stderr)
 *   sys.trap(name, ...) -> true          catch these signals ("INT", "TERM"): the
 *                                        first is recorded for sys.trapped(); a
 *                                        second one ends the process at once, as
 *                                        that signal would without the trap
 *   sys.trapped() -> "INT" | nil         the first signal caught since sys.trap
 *   sys.untrap()                         the dispositions from before sys.trap
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "lhost.h"
#include "base/fs.h"
#include "base/random.h"
#include "proc/landlock.h"
#include "proc/signals.h"

static int l_getpid(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)getpid());
    return 1;
}

static int l_getppid(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)getppid());
    return 1;
}

static int l_kill(lua_State *L)
{
    lua_Integer pid = luaL_checkinteger(L, 1);
    int sig;
    if (lua_type(L, 2) == LUA_TSTRING) {
        sig = signals_number(lua_tostring(L, 2));
        if (sig == 0)
            return luaL_argerror(L, 2, "unknown signal name");
    } else {
        lua_Integer n = luaL_checkinteger(L, 2);
        if (n < 0 || n >= NSIG)
            return luaL_argerror(L, 2, "signal number out of range");
        sig = (int)n;
    }
    if (pid == 0 || pid == -1)
        return luaL_argerror(L, 1, "pid 0 and -1 (every process) are refused");
    if (kill((pid_t)pid, sig) != 0) {
        ks_status st;
        int err = errno;
        ks_fail(&st, err == ESRCH ? KS_ENOTFOUND : KS_EIO, err, "kill(%lld, %d): %s",
                (long long)pid, sig, strerror(err));
        return lh_pushfail(L, &st);
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_sleep(lua_State *L)
{
    lua_Number s = luaL_checknumber(L, 1);
    if (!(s >= 0) || s > 1e9)
        return luaL_argerror(L, 1, "seconds must be between 0 and 1e9");
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (lua_Number)ts.tv_sec) * 1e9);
    if (ts.tv_nsec > 999999999L)
        ts.tv_nsec = 999999999L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return 0;
}

static int l_now(lua_State *L)
{
    lua_pushnumber(L, clock_now());
    return 1;
}

static int l_time(lua_State *L)
{
    lua_pushnumber(L, clock_wall());
    return 1;
}

static int l_random_seed(lua_State *L)
{
    uint64_t v = 0;
    ks_status st;
    if (random_bytes(&v, sizeof v, &st) != KS_OK)
        return lh_raise(L, &st);
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
}

static int l_hostname(lua_State *L)
{
    char buf[HOST_NAME_MAX + 1];
    if (gethostname(buf, sizeof buf) != 0)
        buf[0] = '\0';
    buf[sizeof buf - 1] = '\0';
    lua_pushstring(L, buf);
    return 1;
}

static int l_cpu_count(lua_State *L)
{
    cpu_set_t set;
    long n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    lua_pushinteger(L, n > 0 ? n : 1);
    return 1;
}

static int l_landlock_abi(lua_State *L)
{
    lua_pushinteger(L, landlock_abi());
    return 1;
}

static int l_exe(lua_State *L)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0) {
        ks_status st;
        ks_fail(&st, KS_EIO, errno, "readlink /proc/self/exe: %s", strerror(errno));
        return lh_pushfail(L, &st);
    }
    lua_pushlstring(L, buf, (size_t)n);
    return 1;
}

static int l_signal_name(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    const char *name = n > 0 && n < NSIG ? signals_name((int)n) : NULL;
    if (name)
        lua_pushstring(L, name);
    else
        luaL_pushfail(L);
    return 1;
}

static int l_signal_number(lua_State *L)
{
    int s = signals_number(luaL_checkstring(L, 1));
    if (s)
        lua_pushinteger(L, s);
    else
        luaL_pushfail(L);
    return 1;
}

/* sys.mkdir(path): mkdir -p, without a shell (fs_mkdirs). */
static int l_mkdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    if (!*path)
        return luaL_argerror(L, 1, "empty path");
    ks_status st;
    if (fs_mkdirs(path, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

/* sys.remove_tree(path): rm -rf, without a shell; never follows links
 * (fs_remove_tree). */
static int l_remove_tree(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    if (!*path || !strcmp(path, "/"))
        return luaL_argerror(L, 1, "refusing to remove an empty path or /");
    ks_status st;
    if (fs_remove_tree(path, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_isatty(lua_State *L)
{
    lua_Integer fd = luaL_checkinteger(L, 1);
    lua_pushboolean(L, fd >= 0 && fd <= INT_MAX && isatty((int)fd));
    return 1;
}

/* ---- signal traps ---- */

static volatile sig_atomic_t trap_got;   /* the first signal caught, 0 before */
static struct sigaction trap_old[NSIG];
static unsigned char trap_set[NSIG];

/* The first signal is recorded for the program to act on (drain, store,
 * exit); a second means "now": the default disposition, raised again. */
static void trap_handler(int sig)
{
    if (trap_got) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    trap_got = sig;
}

static void untrap_all(void)
{
    for (int s = 1; s < NSIG; s++)
        if (trap_set[s]) {
            sigaction(s, &trap_old[s], NULL);
            trap_set[s] = 0;
        }
}

static int l_trap(lua_State *L)
{
    int n = lua_gettop(L);
    int sigs[16];
    if (n < 1 || n > 16)
        return luaL_error(L, "sys.trap: name 1 to 16 signals");
    for (int i = 1; i <= n; i++) {
        int s = signals_number(luaL_checkstring(L, i));
        if (s == 0 || s == SIGKILL || s == SIGSTOP)
            return luaL_argerror(L, i, "a signal that can be caught (\"INT\", \"TERM\", ...)");
        sigs[i - 1] = s;
    }
    trap_got = 0;
    for (int i = 0; i < n; i++) {
        int s = sigs[i];
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = trap_handler;
        sigemptyset(&sa.sa_mask);
        /* No SA_RESTART: a blocking wait returns, and the loop looks. */
        struct sigaction old;
        if (sigaction(s, &sa, &old) != 0)
            return luaL_error(L, "sys.trap: sigaction: %s", strerror(errno));
        if (!trap_set[s]) {
            trap_old[s] = old;
            trap_set[s] = 1;
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_trapped(lua_State *L)
{
    int s = trap_got;
    const char *name = s ? signals_name(s) : NULL;
    if (name)
        lua_pushstring(L, name);
    else if (s)
        lua_pushinteger(L, s);
    else
        lua_pushnil(L);
    return 1;
}

static int l_untrap(lua_State *L)
{
    (void)L;
    untrap_all();
    trap_got = 0;
    return 0;
}

static const luaL_Reg sys_funcs[] = {
    {"getpid", l_getpid},
    {"getppid", l_getppid},
    {"kill", l_kill},
    {"sleep", l_sleep},
    {"now", l_now},
    {"time", l_time},
    {"hostname", l_hostname},
    {"random_seed", l_random_seed},
    {"cpu_count", l_cpu_count},
    {"exe", l_exe},
    {"landlock_abi", l_landlock_abi},
    {"signal_name", l_signal_name},
    {"signal_number", l_signal_number},
    {"mkdir", l_mkdir},
    {"remove_tree", l_remove_tree},
    {"isatty", l_isatty},
    {"trap", l_trap},
    {"trapped", l_trapped},
    {"untrap", l_untrap},
    {NULL, NULL},
};

int luaopen_klab_sys(lua_State *L)
{
    luaL_newlib(L, sys_funcs);
    return 1;
}
