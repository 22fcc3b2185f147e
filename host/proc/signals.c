/*
 * signals.c: signals by name (see signals.h).
 */
#include "proc/signals.h"

#include <signal.h>
#include <string.h>

const char *signals_name(int sig)
{
    switch (sig) {
    case SIGHUP: return "HUP";
    case SIGINT: return "INT";
    case SIGQUIT: return "QUIT";
    case SIGILL: return "ILL";
    case SIGTRAP: return "TRAP";
    case SIGABRT: return "ABRT";
    case SIGBUS: return "BUS";
    case SIGFPE: return "FPE";
    case SIGKILL: return "KILL";
    case SIGUSR1: return "USR1";
    case SIGSEGV: return "SEGV";
    case SIGUSR2: return "USR2";
    case SIGPIPE: return "PIPE";
    case SIGALRM: return "ALRM";
    case SIGTERM: return "TERM";
    case SIGCHLD: return "CHLD";
    case SIGCONT: return "CONT";
    case SIGSTOP: return "STOP";
    case SIGTSTP: return "TSTP";
    case SIGTTIN: return "TTIN";
    case SIGTTOU: return "TTOU";
    case SIGURG: return "URG";
    case SIGXCPU: return "XCPU";
    case SIGXFSZ: return "XFSZ";
    case SIGVTALRM: return "VTALRM";
    case SIGPROF: return "PROF";
    case SIGWINCH: return "WINCH";
    case SIGIO: return "IO";
    case SIGPWR: return "PWR";
    case SIGSYS: return "SYS";
    }
    return NULL;
}

int signals_number(const char *name)
{
    if (!name)
        return 0;
    if (strncmp(name, "SIG", 3) == 0)
        name += 3;
    for (int s = 1; s < NSIG; s++) {
        const char *n = signals_name(s);
        if (n && strcmp(n, name) == 0)
            return s;
    }
    return 0;
}
