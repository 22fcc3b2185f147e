/*
 * tables.h: every table of a klab store, described once, as data
 * (tables.c). The SQL that makes and migrates a store is written from it
 * (ddl.c), klab's check of a store compares against what that SQL makes
 * (schema.c), and the Lua library reads the same description through
 * klab.store.schema() (merge, the typed reads of klab.store.records).
 *
 * A table or column added later says so in since: the schema version
 * whose migration adds it. Nothing here is ever edited in a way that
 * changes what an applied version made; a change is a new version
 * (docs/store.md, "Changing the schema").
 */
#ifndef KLAB_HOST_STORE_TABLES_H
#define KLAB_HOST_STORE_TABLES_H

#include <stddef.h>

typedef struct store_column {
    const char *name;
    const char *type;       /* "INTEGER", "REAL", "TEXT" or "BLOB" */
    int not_null;
    int primary_key;        /* the table's PRIMARY KEY (one column) */
    const char *dflt;       /* DEFAULT's SQL expression; NULL: none */
    const char *check;      /* a CHECK on the column, SQL; NULL: none */
    const char *references; /* the table whose id it holds (a foreign key); NULL: none */
    int on_delete_cascade;  /* its rows go with the row it references */
    const char *listed_in;  /* its value must be a key of this table (checked by triggers, from listed_since) */
    int listed_since;
    int since;              /* the version that added it to an older table; 0: with the table */
} store_column;

typedef struct store_index {
    const char *name;
    const char *columns;    /* "task, arch, verdict" */
    const char *where;      /* a partial index's condition; NULL: none */
    int since;              /* 0: with the table */
} store_index;

/* Who writes a table's rows. */
#define STORE_OWNER_C "c"     /* host/store/records.c (and schema.c's versions) */
#define STORE_OWNER_LUA "lua" /* klab.store.records */

typedef struct store_table {
    const char *name;
    const char *owner;      /* STORE_OWNER_C or STORE_OWNER_LUA */
    const char *purpose;    /* one line */
    int since;              /* the version that made it; 0: before any (schema_version) */
    int if_missing;         /* made only where missing (an older klab made it outside the migrations) */
    int per_store;          /* a store's own bookkeeping: never merged from another store */
    const char *const *key; /* the columns that identify a row across stores, NULL-ended; NULL: none */
    const char *check;      /* a CHECK over the row, SQL; NULL: none */
    const store_column *columns;
    size_t ncolumns;
    const store_index *indexes;
    size_t nindexes;
} store_table;

typedef struct store_version {
    int version;
    const char *description;
} store_version;

/* The tables, each after the tables it references (the order a merge
 * copies them in), and the versions with what each one added. */
const store_table *store_tables(size_t *n);
const store_version *store_versions(size_t *n);

/* The table named name, or NULL. */
const store_table *store_table_named(const char *name);

#endif
