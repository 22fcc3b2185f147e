/*
 * tmap.h: tensor maps (CUtensorMap) over task buffers, for TMA kernels.
 *
 * A plan asks for a tensor map by buffer, element type, dimensions and box;
 * the host encodes it with cuTensorMapEncodeTiled (through the driver loaded
 * at run time) and passes the 128 bytes as a __grid_constant__ parameter.
 * The checks the driver makes are repeated here first, so that a bad request
 * gets a reason a model can act on instead of CUDA_ERROR_INVALID_VALUE.
 */
#ifndef KLAB_HOST_TMAP_H
#define KLAB_HOST_TMAP_H

#include <stddef.h>
#include <stdint.h>

#include "driver/cuda.h"
#include "base/status.h"

#define TMAP_BYTES 128
#define TMAP_MAX_RANK 5

typedef struct tmap_desc {
    int dtype;                          /* KD_* of devkern.h */
    int rank;                           /* 1..5 */
    uint64_t dims[TMAP_MAX_RANK];       /* elements, innermost first */
    uint64_t strides[TMAP_MAX_RANK];    /* bytes between rows of dims 1..rank-1
                                           (strides[0] unused); 0: packed */
    uint32_t box[TMAP_MAX_RANK];        /* elements per dimension, each 1..256 */
    uint32_t elem_strides[TMAP_MAX_RANK]; /* 0 means 1 */
    int swizzle;                        /* bytes: 0 (none), 32, 64 or 128 */
    int l2_promotion;                   /* bytes: 0, 64, 128 or 256 */
    int oob_nan;                        /* out-of-bounds elements read as NaN, not 0 */
} tmap_desc;

/* Encodes a tiled tensor map over the memory at base into out. KS_EINVAL
 * with the reason when the request breaks a TMA rule (alignment, stride,
 * box size, swizzle span); KS_ECUDA when the driver refuses it anyway. */
int tmap_encode(CUdeviceptr base, const tmap_desc *d, unsigned char out[TMAP_BYTES], ks_status *st);

/* The checks alone (no driver needed): KS_OK or KS_EINVAL with the reason. */
int tmap_check(CUdeviceptr base, const tmap_desc *d, ks_status *st);

#endif
