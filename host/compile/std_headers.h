/*
 * std_headers.h: the C and C++ standard headers a CUDA source may include
 * although NVRTC has none of them.
 *
 * Kernels written for nvcc include <cstdint>, <stdio.h>, <cfloat> and the
 * like out of habit; NVRTC ships no standard library, so each would be a
 * compile error that says nothing about the kernel. klab gives NVRTC a
 * small in-memory header for each of these names, made of what the
 * toolkit already has: the fixed-width integers, limits and sizes from
 * libcu++ (cuda/std/...), the IEEE-754 constants of <float.h>, and nothing
 * for the headers whose functions NVRTC declares itself (printf, assert,
 * the math library).
 */
#ifndef KLAB_HOST_STD_HEADERS_H
#define KLAB_HOST_STD_HEADERS_H

#include <stddef.h>

/* The names (as written between <> or "") and their texts, n of each. */
void std_headers(const char *const **names, const char *const **texts, int *n);

/* Whether name[0..len) is one of them. */
int std_header_known(const char *name, size_t len);

#endif
