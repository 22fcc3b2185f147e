/* ddl.c: the SQL that makes a store, written from the description of its
 * tables (tables.c). Floor 1 of host/store (db.h): text only, no database.
 *
 * The text is what SQLite keeps in sqlite_master and what klab's check
 * compares a store against (schema.c), so it is written the way klab always
 * wrote it: "CREATE TABLE t ( a INTEGER PRIMARY KEY, b TEXT NOT NULL, ...)".
 * A store made by an older klab holds that text; changing how a column is
 * written here would make every existing store look tampered with. */
#include "store/ddl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct text {
    char *p;
    size_t n, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            t->oom = 1;
            return;
        }
        if (t->p && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        size_t cap = (t->cap ? t->cap * 2 : 1024) + (size_t)k;
        char *q = realloc(t->p, cap);
        if (!q) {
            t->oom = 1;
            return;
        }
        t->p = q;
        t->cap = cap;
    }
}

static size_t key_len(const store_table *tb)
{
    size_t n = 0;
    while (tb->key && tb->key[n])
        n++;
    return n;
}

/* "name TYPE [PRIMARY KEY] [NOT NULL] [DEFAULT d] [UNIQUE] [CHECK (c)]
 * [REFERENCES t(id) [ON DELETE CASCADE]]". A one-column key that is not the
 * primary key is the column's UNIQUE. */
static void put_column(text *t, const store_table *tb, const store_column *c)
{
    put(t, "%s %s", c->name, c->type);
    if (c->primary_key)
        put(t, " PRIMARY KEY");
    if (c->not_null)
        put(t, " NOT NULL");
    if (c->dflt)
        put(t, " DEFAULT %s", c->dflt);
    if (key_len(tb) == 1 && !c->primary_key && strcmp(tb->key[0], c->name) == 0)
        put(t, " UNIQUE");
    if (c->check)
        put(t, " CHECK (%s)", c->check);
    if (c->references)
        put(t, " REFERENCES %s(id)%s", c->references, c->on_delete_cascade ? " ON DELETE CASCADE" : "");
}

/* The table as version made it: its columns of then, a key of several
 * columns as UNIQUE (...), and its CHECK. */
static void put_table(text *t, const store_table *tb)
{
    put(t, "CREATE TABLE %s%s (", tb->if_missing ? "IF NOT EXISTS " : "", tb->name);
    const char *sep = "";
    for (size_t i = 0; i < tb->ncolumns; i++) {
        if (tb->columns[i].since > 0)
            continue;
        put(t, "%s ", sep);
        put_column(t, tb, &tb->columns[i]);
        sep = ",";
    }
    size_t nk = key_len(tb);
    if (nk > 1) {
        put(t, ", UNIQUE (");
        for (size_t i = 0; i < nk; i++)
            put(t, "%s%s", i ? ", " : "", tb->key[i]);
        put(t, ")");
    }
    if (tb->check)
        put(t, ", CHECK (%s)", tb->check);
    put(t, ");");
}

static void put_index(text *t, const store_table *tb, const store_index *ix)
{
    put(t, "CREATE INDEX %s%s ON %s(%s)", tb->if_missing ? "IF NOT EXISTS " : "", ix->name, tb->name, ix->columns);
    if (ix->where)
        put(t, " WHERE %s", ix->where);
    put(t, ";");
}

/* A column whose value must be a key of another table, where a foreign key
 * cannot be declared (the column is older than that table): one trigger
 * for inserts, one for updates of the column. */
static void put_listed_triggers(text *t, const store_table *tb, const store_column *c)
{
    const store_table *to = store_table_named(c->listed_in);
    const char *key = to && to->key ? to->key[0] : "name";
    static const char *const when[] = {"INSERT", "UPDATE OF "};
    static const char *const suffix[] = {"insert", "update"};
    for (int k = 0; k < 2; k++) {
        put(t, "CREATE TRIGGER %s_%s_%s BEFORE %s%s ON %s WHEN ", tb->name, c->name, suffix[k], when[k],
            k ? c->name : "", tb->name);
        if (!c->not_null)
            put(t, "NEW.%s IS NOT NULL AND ", c->name);
        put(t,
            "NOT EXISTS (SELECT 1 FROM %s WHERE %s = NEW.%s)"
            " BEGIN SELECT RAISE(ABORT, 'unknown %s (not in the %s table)'); END;",
            c->listed_in, key, c->name, c->name, c->listed_in);
    }
}

int ddl_version(int version, char **out, ks_status *st)
{
    *out = NULL;
    size_t nt;
    const store_table *tables = store_tables(&nt);
    text t = {0};
    for (size_t i = 0; i < nt; i++) {
        const store_table *tb = &tables[i];
        if (tb->since == version) {
            put_table(&t, tb);
        } else if (tb->since < version) {
            for (size_t c = 0; c < tb->ncolumns; c++) {
                if (tb->columns[c].since != version)
                    continue;
                put(&t, "ALTER TABLE %s ADD COLUMN ", tb->name);
                put_column(&t, tb, &tb->columns[c]);
                put(&t, ";");
            }
        }
        if (tb->since <= version)
            for (size_t x = 0; x < tb->nindexes; x++)
                if ((tb->indexes[x].since ? tb->indexes[x].since : tb->since) == version)
                    put_index(&t, tb, &tb->indexes[x]);
    }
    for (size_t i = 0; i < nt; i++)
        for (size_t c = 0; c < tables[i].ncolumns; c++)
            if (tables[i].columns[c].listed_in && tables[i].columns[c].listed_since == version)
                put_listed_triggers(&t, &tables[i], &tables[i].columns[c]);
    if (t.oom) {
        free(t.p);
        return ks_fail(st, KS_ENOMEM, 0, "store: out of memory");
    }
    if (!t.p)
        return ks_fail(st, KS_EINVAL, 0, "store: schema version %d adds nothing", version);
    *out = t.p;
    return KS_OK;
}
