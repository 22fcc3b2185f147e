/*
 * signals.h: the names of signals, as a supervisor reports how a child
 * ended and as a user names one. Shared by spawn and worker, which neither
 * needs the other for it.
 */
#ifndef KLAB_SIGNALS_H
#define KLAB_SIGNALS_H

/* Name of a signal ("SEGV", "KILL", ...), or NULL for an unknown number. */
const char *signals_name(int sig);

/* The number of a signal named with or without "SIG" ("SEGV", "SIGTERM"),
 * or 0 for an unknown name. */
int signals_number(const char *name);

#endif
