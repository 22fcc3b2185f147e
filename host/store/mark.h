/*
 * mark.h: the mark of the machine that wrote an evaluation (mark.c, floor 1
 * of host/store: see db.h), for records.c.
 */
#ifndef KLAB_HOST_STORE_MARK_H
#define KLAB_HOST_STORE_MARK_H

#include "store/db.h"

/* Marks evaluation id as written by this machine's user: an HMAC of its
 * content under the user's key, or NULL without a key. */
int mark_evaluation(store *db, int64_t id, ks_status *st);

#endif
