/*
 * ddl.h: the SQL that makes a store, written from tables.c's description
 * (ddl.c, floor 1 of host/store: see db.h).
 */
#ifndef KLAB_HOST_STORE_DDL_H
#define KLAB_HOST_STORE_DDL_H

#include "base/status.h"
#include "store/tables.h"

/* The SQL of schema version `version`: what it makes (tables, their
 * indexes, triggers) and adds to older tables (ALTER TABLE ... ADD COLUMN),
 * as one text of statements; version 0 is the schema_version table, made
 * before the first. *out is malloc'ed; the caller frees it. */
int ddl_version(int version, char **out, ks_status *st);

#endif
