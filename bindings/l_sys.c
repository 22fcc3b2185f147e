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
 *   sys.cpu_count() -> integer           the CPUs this process may run on
 *                                        (its affinity mask: a Slurm or
 *                                        cgroup allocation, not the machine's)
 *   sys.exe() -> path | nil, msg, code   this program (/proc/self/exe)
 *   sys.signal_name(n) -> "SEGV" | nil   sys.signal_number("SEGV") -> 11 | nil
 *   sys.lock(path) -> Lock | nil, msg, code   waits for an exclusive flock on
 *                                       the file; lock:free(), __close, __gc
 *   sys.mkdir(path) -> true | nil, msg, code
 *       creates path and its missing parents (mode 0777 less the umask);
 *       an existing folder is fine
 *   sys.remove_tree(path) -> true | nil, msg, code
 *       removes path and, for a folder, everything under it; symbolic links
 *       are removed, never followed; a missing path is fine
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lhost.h"
#include "proc/worker.h"

static int signal_number(const char *name)
{
    if (strncmp(name, "SIG", 3) == 0)
        name += 3;
    for (int s = 1; s < NSIG; s++) {
        const char *n = worker_signal_name(s);
        if (n && strcmp(n, name) == 0)
            return s;
    }
    return 0;
}

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
        sig = signal_number(lua_tostring(L, 2));
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

static lua_Number clock_seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9;
}

static int l_now(lua_State *L)
{
    lua_pushnumber(L, clock_seconds(CLOCK_MONOTONIC));
    return 1;
}

static int l_time(lua_State *L)
{
    lua_pushnumber(L, clock_seconds(CLOCK_REALTIME));
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
    const char *name = n > 0 && n < NSIG ? worker_signal_name((int)n) : NULL;
    if (name)
        lua_pushstring(L, name);
    else
        luaL_pushfail(L);
    return 1;
}

static int l_signal_number(lua_State *L)
{
    int s = signal_number(luaL_checkstring(L, 1));
    if (s)
        lua_pushinteger(L, s);
    else
        luaL_pushfail(L);
    return 1;
}

static int push_errno(lua_State *L, int err, const char *what, const char *path)
{
    ks_status st;
    ks_fail(&st, err == ENOENT ? KS_ENOTFOUND : KS_EIO, err, "%s %s: %s", what, path, strerror(err));
    return lh_pushfail(L, &st);
}

/* sys.mkdir(path): mkdir -p, without a shell. */
static int l_mkdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return luaL_argerror(L, 1, "empty path or path too long");
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        struct stat sb;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return push_errno(L, errno, "cannot create", buf);
        if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return push_errno(L, ENOTDIR, "cannot create", buf);
        *p = c;
        if (c == '\0')
            break;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
    return rc != 0 && errno != ENOENT ? errno : 0;
}

/* sys.remove_tree(path): rm -rf, without a shell; never follows links. */
static int l_remove_tree(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT) {
            lua_pushboolean(L, 1);
            return 1;
        }
        return push_errno(L, errno, "cannot remove", path);
    }
    int err = nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    if (err != 0)
        return push_errno(L, err > 0 ? err : errno, "cannot remove", path);
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- exclusive locks (flock) ---- */

#define LOCK_T "klab.sys.Lock"

typedef struct {
    int fd; /* -1 once released */
} llock;

static int lock_release(lua_State *L)
{
    llock *k = luaL_checkudata(L, 1, LOCK_T);
    int was = k->fd >= 0;
    if (was) {
        flock(k->fd, LOCK_UN);
        close(k->fd);
        k->fd = -1;
    }
    lua_pushboolean(L, was);
    return 1;
}

/* sys.lock(path) -> Lock | nil, msg, code: waits for an exclusive lock on
 * the file (created if missing); released by lock:free(), __close or __gc,
 * and by the process's death. */
static int l_lock(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    llock *k = lua_newuserdatauv(L, sizeof *k, 0);
    k->fd = -1;
    if (luaL_newmetatable(L, LOCK_T)) {
        lua_pushcfunction(L, lock_release);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, lock_release);
        lua_setfield(L, -2, "__close");
        lua_newtable(L);
        lua_pushcfunction(L, lock_release);
        lua_setfield(L, -2, "free");
        lua_setfield(L, -2, "__index");
    }
    lua_setmetatable(L, -2);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        luaL_pushfail(L);
        lua_pushfstring(L, "cannot open lock file %s: %s", path, strerror(e));
        lua_pushstring(L, "EIO");
        return 3;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        int e = errno;
        close(fd);
        luaL_pushfail(L);
        lua_pushfstring(L, "cannot lock %s: %s", path, strerror(e));
        lua_pushstring(L, "EIO");
        return 3;
    }
    k->fd = fd;
    return 1;
}

static const luaL_Reg sys_funcs[] = {
    {"getpid", l_getpid},
    {"getppid", l_getppid},
    {"kill", l_kill},
    {"sleep", l_sleep},
    {"now", l_now},
    {"time", l_time},
    {"hostname", l_hostname},
    {"cpu_count", l_cpu_count},
    {"exe", l_exe},
    {"signal_name", l_signal_name},
    {"signal_number", l_signal_number},
    {"mkdir", l_mkdir},
    {"remove_tree", l_remove_tree},
    {"lock", l_lock},
    {NULL, NULL},
};

int luaopen_klab_sys(lua_State *L)
{
    luaL_newlib(L, sys_funcs);
    return 1;
}
