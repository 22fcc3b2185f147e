/*
 * random.h: unpredictable bytes from the operating system.
 *
 * Every random choice of an evaluation (the inputs of its trials and timed
 * runs, the shifts, the checked positions) derives from one 64-bit seed
 * drawn here when the evaluation starts: a kernel that knows klab's source
 * still cannot know what will be checked.
 */
#ifndef KLAB_HOST_RANDOM_H
#define KLAB_HOST_RANDOM_H

#include <stddef.h>

#include "base/status.h"

/* Fills buf[0..n) from getrandom(2) (or /dev/urandom where the call is
 * missing); KS_EIO when neither gives the bytes. */
int random_bytes(void *buf, size_t n, ks_status *st);

#endif
