/*
 * includes.h: what a candidate's CUDA source may include, checked before
 * the compiler reads anything.
 *
 * A candidate may include only the CUDA toolkit's own headers, and the
 * standard headers klab gives NVRTC itself (compile/std_headers.h). The source
 * is lexed as the preprocessor would see it: backslash-newlines spliced,
 * comments removed (string, character and raw string literals respected,
 * digit separators in numbers too), then every preprocessing directive is
 * examined, whether introduced by '#' or by the digraph '%:'. For
 * #include, #include_next and #import, and for every __has_include and
 * __has_include_next, the header name must be written out ("name" or
 * <name>; a macro is refused: a computed include could name anything), be
 * a relative path without "..", and resolve to a regular file under one of
 * the allowed roots (the toolkit's include folder and its cccl/ subtree),
 * the resolved file staying under that root. #embed is refused, and so are
 * trigraphs (a '??/' or '??=' could splice or start a line the checker and
 * the compiler would read differently).
 *
 * Where the lexer and a compiler could disagree (a block comment spanning
 * lines, for example) it errs towards examining more, never less.
 */
#ifndef KLAB_HOST_INCLUDES_H
#define KLAB_HOST_INCLUDES_H

#include <stddef.h>

#include "base/status.h"

/* The roots: $CUDA_HOME/include and, when present, $CUDA_HOME/include/cccl,
 * resolved. Fills roots[0..*n) (each at most 4096 bytes). */
#define INCLUDES_MAX_ROOTS 2
void includes_toolkit_roots(char roots[][4096], int *n);

/* Checks src[0..len) (name is the file name for messages). KS_OK, or
 * KS_ECOMPILE with "NAME:LINE: #include \"x\" is not allowed: candidates
 * may include only the CUDA toolkit's headers" (or the reason for another
 * refusal) in st. roots: as includes_toolkit_roots fills them. */
int includes_check(const char *src, size_t len, const char *name, char roots[][4096], int nroots,
                   ks_status *st);

#endif
