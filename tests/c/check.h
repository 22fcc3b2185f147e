/*
 * check.h: the C unit-test harness for host/ (no Lua).
 *
 * Each tests/c/test_<area>.c is its own program. It calls CHECK and SKIP
 * and ends with `return check_done();`, which prints one line
 *   "ctest <program>: N passed, N failed, N skipped"
 * that tests/run.sh adds up.
 */
#ifndef KLAB_TESTS_CHECK_H
#define KLAB_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed, check_skipped;
static const char *check_prog = "ctest";

#define CHECK(cond) do { \
    if (cond) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

/* CHECK with a message printed on failure (printf-style). */
#define CHECKF(cond, ...) do { \
    if (cond) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
           fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)

#define SKIP(reason) do { check_skipped++; fprintf(stderr, "skip %s:%d: %s\n", __FILE__, __LINE__, reason); } while (0)

static inline int check_done(void)
{
    printf("ctest %s: %d passed, %d failed, %d skipped\n", check_prog, check_passed, check_failed, check_skipped);
    return check_failed ? 1 : 0;
}

#endif
