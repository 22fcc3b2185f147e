/*
 * redact.h: the values of secrets, kept out of everything klab writes.
 *
 * A process-wide set of (name, value) pairs: filled at start from every
 * environment variable whose name looks secret (it holds KEY, TOKEN,
 * SECRET, PASS, CREDENTIAL, AUTH, COOKIE, DSN, WEBHOOK or PRIVATE, or ends
 * in PAT, in any case) or whose value is a URL with a password in it
 * (scheme://user:password@host, whatever the name), and by redact_add_env
 * for each variable an experiment names (api_key_env) and each variable an
 * HTTP header is read from. A URL's password is kept on its own too (as
 * written and percent-decoded), and so is user:password. Values shorter
 * than REDACT_MIN_LEN are not kept (they would match ordinary text).
 *
 * redact_apply replaces every occurrence of a value with "[redacted NAME]",
 * in each spelling the value travels in: as is, JSON-escaped (\" \\ \n
 * \u00XX ...), URL-encoded (%XX in either case, + for a space) or a mix of
 * these, and base64 (standard and URL-safe, alone or at any of the three
 * alignments inside a longer encoded string, as in Basic auth), where the
 * characters that hold any of the value's bits are replaced.
 *
 * It is a second wall, behind the rule that keys never become Lua strings:
 * what a server echoes, a compiler quotes or a kernel prints still cannot
 * carry a key into the store, a log or a model's next prompt. The store
 * binds text and blobs through it; the experiment log, feedback and every
 * request body sent go through it too.
 *
 * Thread-safe.
 */
#ifndef KLAB_HOST_REDACT_H
#define KLAB_HOST_REDACT_H

#include <stddef.h>

#define REDACT_MIN_LEN 8

/* Adds every environment variable whose name looks secret (above). */
void redact_scan_environ(void);

/* Adds the value of environment variable name under that name (when set
 * and at least REDACT_MIN_LEN bytes). Returns 1 when a value is kept. */
int redact_add_env(const char *name);

/* Adds value under name (tests, and values that do not live in the
 * environment). Returns 1 when kept. */
int redact_add(const char *name, const char *value, size_t len);

/* How many values are kept. */
size_t redact_count(void);

/* A malloc'd copy of text[0..len) with every secret replaced, NUL-terminated,
 * its length in *out_len; NULL when there is nothing to replace (or no
 * memory: then the text is returned whole only if it holds no secret, which
 * is why a NULL with *out_len == (size_t)-1 means "could not check"). */
char *redact_apply(const char *text, size_t len, size_t *out_len);

/* Whether JSON text has an object key that names a credential
 * ("Authorization", "api_key", "x-api-key", ...; case-insensitive), as a
 * request that carried a key in its body would: such a request is never
 * stored. */
int redact_has_credential(const char *json);

#endif
