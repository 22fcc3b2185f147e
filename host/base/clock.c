/* clock.c: see clock.h. */
#include <time.h>

#include "base/clock.h"

static double seconds_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double clock_now(void)
{
    return seconds_of(CLOCK_MONOTONIC);
}

double clock_wall(void)
{
    return seconds_of(CLOCK_REALTIME);
}
