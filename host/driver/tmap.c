/* tmap.c: encoding tensor maps for TMA (see tmap.h). */
#include "driver/tmap.h"

#include <string.h>

#include <cudaTypedefs.h>

#include "driver/devkern.h"

static int tmap_dtype(int dt, CUtensorMapDataType *out)
{
    switch (dt) {
    case KD_F32: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; return 1;
    case KD_F16: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; return 1;
    case KD_BF16: *out = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; return 1;
    case KD_F64: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; return 1;
    case KD_I32: *out = CU_TENSOR_MAP_DATA_TYPE_INT32; return 1;
    case KD_I64: *out = CU_TENSOR_MAP_DATA_TYPE_INT64; return 1;
    /* fp8 travels as bytes: TMA only moves them. */
    case KD_E4M3: case KD_E5M2: case KD_U8: case KD_I8:
        *out = CU_TENSOR_MAP_DATA_TYPE_UINT8; return 1;
    }
    return 0;
}

int tmap_check(CUdeviceptr base, const tmap_desc *d, ks_status *st)
{
    CUtensorMapDataType t;
    size_t esz = kd_dtype_size(d->dtype);
    if (!tmap_dtype(d->dtype, &t) || esz == 0)
        return ks_fail(st, KS_EINVAL, 0, "tensor map: element type %s cannot be used with TMA",
                       kd_dtype_name(d->dtype));
    if (d->rank < 1 || d->rank > TMAP_MAX_RANK)
        return ks_fail(st, KS_EINVAL, 0, "tensor map: rank %d is outside 1..%d", d->rank, TMAP_MAX_RANK);
    if (base % 16)
        return ks_fail(st, KS_EINVAL, 0, "tensor map: the buffer address must be 16-byte aligned");
    for (int i = 0; i < d->rank; i++) {
        if (d->dims[i] < 1 || d->dims[i] > (1ULL << 32))
            return ks_fail(st, KS_EINVAL, 0, "tensor map: dims[%d] = %llu is outside 1..2^32", i + 1,
                           (unsigned long long)d->dims[i]);
        if (d->box[i] < 1 || d->box[i] > 256)
            return ks_fail(st, KS_EINVAL, 0, "tensor map: box[%d] = %u is outside 1..256", i + 1, d->box[i]);
        uint32_t es = d->elem_strides[i] ? d->elem_strides[i] : 1;
        if (es > 8)
            return ks_fail(st, KS_EINVAL, 0, "tensor map: element stride %u is above 8", es);
    }
    if ((d->box[0] * esz) % 16)
        return ks_fail(st, KS_EINVAL, 0,
                       "tensor map: the inner box dimension (%u elements of %zu bytes) must span a multiple "
                       "of 16 bytes", d->box[0], esz);
    uint64_t packed = d->dims[0] * esz;
    for (int i = 1; i < d->rank; i++) {
        uint64_t s = d->strides[i] ? d->strides[i] : packed;
        if (s % 16)
            return ks_fail(st, KS_EINVAL, 0,
                           "tensor map: the stride of dimension %d is %llu bytes, not a multiple of 16 "
                           "(for a row-major matrix: the row length in bytes)", i + 1, (unsigned long long)s);
        if (s >= (1ULL << 40))
            return ks_fail(st, KS_EINVAL, 0, "tensor map: stride %llu is too large", (unsigned long long)s);
        packed = s * d->dims[i];
    }
    switch (d->swizzle) {
    case 0: break;
    case 32: case 64: case 128:
        if (d->box[0] * esz > (size_t)d->swizzle)
            return ks_fail(st, KS_EINVAL, 0,
                           "tensor map: with %d-byte swizzle the inner box may span at most %d bytes, "
                           "but %u elements of %zu bytes span %zu", d->swizzle, d->swizzle, d->box[0], esz,
                           (size_t)d->box[0] * esz);
        break;
    default:
        return ks_fail(st, KS_EINVAL, 0, "tensor map: swizzle must be none, 32B, 64B or 128B");
    }
    switch (d->l2_promotion) {
    case 0: case 64: case 128: case 256: break;
    default:
        return ks_fail(st, KS_EINVAL, 0, "tensor map: L2 promotion must be none, 64B, 128B or 256B");
    }
    if (d->oob_nan && (d->dtype == KD_I32 || d->dtype == KD_I64 || d->dtype == KD_U8 || d->dtype == KD_I8 ||
                       d->dtype == KD_E4M3 || d->dtype == KD_E5M2))
        return ks_fail(st, KS_EINVAL, 0, "tensor map: NaN fill needs a floating-point element type");
    return KS_OK;
}

int tmap_encode(CUdeviceptr base, const tmap_desc *d, unsigned char out[TMAP_BYTES], ks_status *st)
{
    int rc = tmap_check(base, d, st);
    if (rc != KS_OK)
        return rc;
    static PFN_cuTensorMapEncodeTiled_v12000 encode;
    if (!encode) {
        void *fn = NULL;
        rc = cuda_proc("cuTensorMapEncodeTiled", 12000, &fn, st);
        if (rc != KS_OK)
            return rc;
        encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    }
    CUtensorMapDataType t;
    tmap_dtype(d->dtype, &t);
    size_t esz = kd_dtype_size(d->dtype);
    cuuint64_t dims[TMAP_MAX_RANK], strides[TMAP_MAX_RANK];
    cuuint32_t box[TMAP_MAX_RANK], es[TMAP_MAX_RANK];
    uint64_t packed = d->dims[0] * esz;
    for (int i = 0; i < d->rank; i++) {
        dims[i] = d->dims[i];
        box[i] = d->box[i];
        es[i] = d->elem_strides[i] ? d->elem_strides[i] : 1;
        if (i > 0) {
            strides[i - 1] = d->strides[i] ? d->strides[i] : packed;
            packed = strides[i - 1] * d->dims[i];
        }
    }
    CUtensorMapSwizzle sw = d->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                          : d->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                          : d->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                             : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUtensorMapL2promotion l2 = d->l2_promotion == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                              : d->l2_promotion == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                              : d->l2_promotion == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                                      : CU_TENSOR_MAP_L2_PROMOTION_NONE;
    CUtensorMap map;
    memset(&map, 0, sizeof map);
    CUresult r = encode(&map, t, (cuuint32_t)d->rank, (void *)(uintptr_t)base, dims, strides, box, es,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, sw, l2,
                        d->oob_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                   : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "cuTensorMapEncodeTiled");
    memcpy(out, &map, TMAP_BYTES);
    return KS_OK;
}
