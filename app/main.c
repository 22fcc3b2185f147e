/*
 * main.c: the klab command line, in the manner of lua.c.
 *
 *   klab [options] [script [args...]]   run a Lua script (arg and ... as in lua)
 *   klab COMMAND [args...]              run scripts/klab/cli/COMMAND.lua
 *   klab --worker                       serve jobs for a supervisor (internal)
 *
 * Exit status: a command's main returns it; a script's is the integer it
 * returns (else 0). An error ends with 1 and its message on standard error,
 * one line (--verbose or KLAB_DEBUG=1 adds the traceback); klab.command's
 * error objects carry their own status (2 for a user's mistake, ...). A
 * missing script, an unknown command or option, and a script that does not
 * compile end with 2. The table: klab.command.EXIT, docs/rules.md.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lualib.h>

#include "runtime.h"
#include "base/redact.h"

static const char *progname = "klab";

/* Exit statuses, as klab.command.EXIT defines them. */
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

static void usage_short(void)
{
    fprintf(stderr, "usage: %s [options] [script [args]] | %s COMMAND [args]; try '%s --help'\n",
            progname, progname, progname);
}

/* Runs require(mod).fn(args...) where args are argv[first..argc-1], and turns
 * its return value into an exit status (a number is used as is; nil, true or
 * nothing is 0; false is 1). */
static int run_module_main(lua_State *L, const char *mod, const char *fn, int argc,
                           char **argv, int first)
{
    lua_getglobal(L, "require");
    lua_pushstring(L, mod);
    int status = rt_pcall(L, 1, 1);
    if (status != LUA_OK)
        return rt_exit_status(L, status);
    if (lua_getfield(L, -1, fn) != LUA_TFUNCTION) {
        fprintf(stderr, "%s: module %s has no function %s\n", progname, mod, fn);
        return 1;
    }
    lua_remove(L, -2);
    lua_createtable(L, argc - first, 0);
    for (int i = first; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - first + 1);
    }
    status = rt_pcall(L, 1, 1);
    if (status != LUA_OK)
        return rt_exit_status(L, status);
    int rc = 0;
    if (lua_isinteger(L, -1))
        rc = (int)lua_tointeger(L, -1);
    else if (lua_isboolean(L, -1))
        rc = lua_toboolean(L, -1) ? 0 : 1;
    lua_pop(L, 1);
    return rc;
}

/* A first argument names a command when it is a plain word (no '/', no
 * ".lua") and klab.cli.<word> exists; anything else is a script path. */
static int is_command(lua_State *L, const char *word)
{
    if (strchr(word, '/') || strchr(word, '.') || word[0] == '-')
        return 0;
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    lua_pushfstring(L, "klab.cli.%s", word);
    lua_gettable(L, -2);
    int found = !lua_isnil(L, -1);
    lua_pop(L, 3);
    return found;
}

/* The arg table, as lua.c makes it: arg[0] is the script, arg[1..] its
 * arguments, negative indices the interpreter and its options. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script)
{
    lua_createtable(L, argc - script - 1, script + 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");
}

/* A chunk that does not compile is the user's mistake (exit 2). */
static int do_chunk(lua_State *L, int status)
{
    if (status != LUA_OK) {
        rt_exit_status(L, status);
        return EXIT_USAGE;
    }
    return rt_exit_status(L, rt_pcall(L, 0, 0));
}

/* Runs a script file with its arguments; the exit status is an integer the
 * script returns, else 0, or the error's. A missing file or one that does
 * not compile gives 2. */
static int run_script(lua_State *L, char **argv, int argc, int script)
{
    const char *fname = argv[script];
    if (strcmp(fname, "-") == 0)
        fname = NULL; /* standard input */
    int status = luaL_loadfile(L, fname);
    if (status != LUA_OK) {
        rt_exit_status(L, status);
        return EXIT_USAGE;
    }
    int n = argc - script - 1;
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = script + 1; i < argc; i++)
        lua_pushstring(L, argv[i]);
    status = rt_pcall(L, n, 1);
    if (status != LUA_OK)
        return rt_exit_status(L, status);
    int rc = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : EXIT_OK;
    lua_pop(L, 1);
    return rc;
}

/* A word that could only name a command (no '/', no '.') but names none,
 * and is no file either: the user mistyped a command. */
static int unknown_command(const char *word)
{
    struct stat sb;
    if (strchr(word, '/') || strchr(word, '.') || word[0] == '-')
        return 0;
    return stat(word, &sb) != 0 && errno == ENOENT;
}

int main(int argc, char **argv)
{
    /* Before anything runs: the values of *_KEY and *_TOKEN variables are
     * kept out of everything klab writes (base/redact.h). */
    redact_scan_environ();
    /* A write past the file-size limit (ulimit -f) fails with EFBIG, said
     * by whoever wrote, naming the file, instead of killing klab silently. */
    signal(SIGXFSZ, SIG_IGN);
    lua_State *L = rt_new();
    if (L == NULL) {
        fprintf(stderr, "%s: cannot create Lua state: not enough memory\n", progname);
        return 1;
    }
    int rc = 0;

    /* Options, handled in order like lua.c; the first non-option ends them. */
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0)
            break;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            rc = run_module_main(L, "klab.cli.help", "main", argc, argv, i + 1);
            goto done;
        }
        if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) {
            rc = run_module_main(L, "klab.cli.version", "main", argc, argv, i + 1);
            goto done;
        }
        if (strcmp(a, "--verbose") == 0) {
            /* Through the environment too: Lua code that keeps a
             * traceback of its own and child processes see it. */
            setenv("KLAB_DEBUG", "1", 1);
            rt_set_verbose(1);
            continue;
        }
        if (strcmp(a, "--worker") == 0) {
            rc = run_module_main(L, "klab.proc.serve", "run", argc, argv, i + 1);
            goto done;
        }
        if (strcmp(a, "-e") == 0 || strcmp(a, "-l") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: option '%s' needs an argument\n", progname, a);
                usage_short();
                rc = 2;
                goto done;
            }
            const char *v = argv[++i];
            if (a[1] == 'e') {
                create_arg_table(L, argv, argc, i);
                rc = do_chunk(L, luaL_loadbuffer(L, v, strlen(v), "=(command line)"));
                if (rc != EXIT_OK)
                    goto done;
            } else {
                lua_getglobal(L, "require");
                lua_pushstring(L, v);
                int status = rt_pcall(L, 1, 1);
                if (status != LUA_OK) {
                    rc = rt_exit_status(L, status);
                    goto done;
                }
                /* -l mod sets global mod (the part after the last dot). */
                const char *g = strrchr(v, '.');
                lua_setglobal(L, g ? g + 1 : v);
            }
            continue;
        }
        fprintf(stderr, "%s: unknown option '%s'\n", progname, a);
        usage_short();
        rc = 2;
        goto done;
    }

    if (i >= argc) {
        /* Nothing to run: fine after -e or -l, a usage error otherwise. */
        int had_chunk = 0;
        for (int j = 1; j < argc; j++)
            if (strcmp(argv[j], "-e") == 0 || strcmp(argv[j], "-l") == 0)
                had_chunk = 1;
        if (!had_chunk) {
            usage_short();
            rc = 2;
        }
        goto done;
    }
    if (is_command(L, argv[i])) {
        char mod[256];
        snprintf(mod, sizeof mod, "klab.cli.%s", argv[i]);
        create_arg_table(L, argv, argc, i);
        rc = run_module_main(L, mod, "main", argc, argv, i + 1);
        goto done;
    }
    if (unknown_command(argv[i])) {
        /* Said by klab.cli.help, which knows the commands' names (a near
         * one is suggested); exit 2. */
        rc = run_module_main(L, "klab.cli.help", "unknown_command", argc, argv, i);
        goto done;
    }
    create_arg_table(L, argv, argc, i);
    rc = run_script(L, argv, argc, i);

done:
    lua_close(L);
    return rc;
}
