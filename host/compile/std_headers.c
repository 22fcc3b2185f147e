/* std_headers.c: klab's in-memory standard headers for NVRTC (see std_headers.h). */
#include "compile/std_headers.h"

#include <string.h>

/* NVRTC declares printf, assert and the CUDA math library itself. */
#define DECLARED_BY_NVRTC "#pragma once\n/* klab: NVRTC declares what this header would. */\n"

/* IEEE-754 binary32 and binary64, as <float.h> gives them on every CUDA
 * host compiler. */
#define FLOAT_H                                                                                         \
    "#pragma once\n"                                                                                    \
    "/* klab: the IEEE-754 binary32 and binary64 parameters. */\n"                                      \
    "#define FLT_RADIX 2\n"                                                                             \
    "#define FLT_MANT_DIG 24\n#define DBL_MANT_DIG 53\n"                                                 \
    "#define FLT_DIG 6\n#define DBL_DIG 15\n"                                                            \
    "#define FLT_DECIMAL_DIG 9\n#define DBL_DECIMAL_DIG 17\n#define DECIMAL_DIG 17\n"                   \
    "#define FLT_MIN_EXP (-125)\n#define DBL_MIN_EXP (-1021)\n"                                          \
    "#define FLT_MAX_EXP 128\n#define DBL_MAX_EXP 1024\n"                                                \
    "#define FLT_MIN_10_EXP (-37)\n#define DBL_MIN_10_EXP (-307)\n"                                     \
    "#define FLT_MAX_10_EXP 38\n#define DBL_MAX_10_EXP 308\n"                                            \
    "#define FLT_MAX 0x1.fffffep+127F\n#define DBL_MAX 0x1.fffffffffffffp+1023\n"                        \
    "#define FLT_MIN 0x1p-126F\n#define DBL_MIN 0x1p-1022\n"                                             \
    "#define FLT_TRUE_MIN 0x1p-149F\n#define DBL_TRUE_MIN 0x1p-1074\n"                                   \
    "#define FLT_EPSILON 0x1p-23F\n#define DBL_EPSILON 0x1p-52\n"                                         \
    "#define FLT_EVAL_METHOD 0\n"

#define FROM_LIBCUDACXX(h) "#pragma once\n#include <cuda/std/" h ">\n"

static const char *const NAMES[] = {
    "stdio.h",  "cstdio",  "assert.h", "cassert", "math.h",  "cmath",   "stdint.h",
    "cstdint",  "limits.h", "climits", "stddef.h", "cstddef", "float.h", "cfloat",
};

static const char *const TEXTS[] = {
    DECLARED_BY_NVRTC,          DECLARED_BY_NVRTC,          DECLARED_BY_NVRTC,
    DECLARED_BY_NVRTC,          DECLARED_BY_NVRTC,          DECLARED_BY_NVRTC,
    FROM_LIBCUDACXX("cstdint"), FROM_LIBCUDACXX("cstdint"), FROM_LIBCUDACXX("climits"),
    FROM_LIBCUDACXX("climits"), FROM_LIBCUDACXX("cstddef"), FROM_LIBCUDACXX("cstddef"),
    FLOAT_H,                    FLOAT_H,
};

#define COUNT ((int)(sizeof NAMES / sizeof NAMES[0]))

void std_headers(const char *const **names, const char *const **texts, int *n)
{
    *names = NAMES;
    *texts = TEXTS;
    *n = COUNT;
}

int std_header_known(const char *name, size_t len)
{
    for (int i = 0; i < COUNT; i++)
        if (strlen(NAMES[i]) == len && memcmp(NAMES[i], name, len) == 0)
            return 1;
    return 0;
}
