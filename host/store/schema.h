/*
 * schema.h: the schema's versions, migrations and check (schema.c, floor 2
 * of host/store: see db.h), for store.c's open.
 */
#ifndef KLAB_HOST_STORE_SCHEMA_H
#define KLAB_HOST_STORE_SCHEMA_H

#include "store/db.h"

/* The version a database holds (0: none, KS_EINVAL when it is an SQLite
 * database but not a klab store); creating or migrating it in one write
 * transaction; and the check that the schema of the database named schema
 * ("main", or an attached one) is the one klab writes at version
 * (store_check_schema in store.h says what it refuses). */
int read_version(store *db, int *version, ks_status *st);
int migrate(store *db, ks_status *st);
int check_schema(store *db, const char *schema, int version, ks_status *st);

/* The experiment tables as the experiment library made them before
 * migration 2 owned them: a store from then keeps this text. */
extern const char legacy_experiment_tables[];

#endif
