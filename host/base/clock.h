/*
 * clock.h: klab's clocks, in seconds as doubles.
 *
 *   clock_now()  monotonic (CLOCK_MONOTONIC): durations and deadlines; the
 *                time base of every deadline in host/ and bindings/
 *   clock_wall() wall clock (CLOCK_REALTIME, Unix time): timestamps
 */
#ifndef KLAB_HOST_CLOCK_H
#define KLAB_HOST_CLOCK_H

double clock_now(void);
double clock_wall(void);

#endif
