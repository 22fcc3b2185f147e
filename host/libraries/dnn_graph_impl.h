/*
 * dnn_graph_impl.h: what the description (dnn_graph_desc.c) and the cuDNN
 * side (dnn_graph.c) of dnn_graph share (not an interface).
 */
#ifndef KLAB_DNN_GRAPH_IMPL_H
#define KLAB_DNN_GRAPH_IMPL_H

#include <stddef.h>

#include <cudnn.h>

#include "libraries/dnn_graph.h"

/* The roles of each kind's tensors, by position. */
enum { PW_X = 0, PW_B, PW_T, PW_Y };
enum { RD_X = 0, RD_Y };
enum { MM_A = 0, MM_B, MM_C };
enum { CV_IN = 0, CV_W, CV_OUT };   /* conv_fwd: x, w, y; conv_bwd_data: dy, w, dx */
enum { RS_X = 0, RS_Y, RS_IDX };
enum { NM_X = 0, NM_SCALE, NM_BIAS, NM_EPS, NM_MEAN, NM_INVVAR, NM_Y };

/* A mode: its name, cuDNN value and (pointwise) the inputs it takes:
 * 1 = x, 2 = x and b, 3 = x, b and t (BINARY_SELECT's mask), 0 = x and an
 * axis (GEN_INDEX). */
typedef struct mode_def {
    const char *name;
    int value;
    int arity;
} mode_def;

/* The mode of kind whose cuDNN value is mode, or NULL. */
const mode_def *dnn_graph_mode_find(int kind, int mode);

/* cuDNN's data type for a DNN_DT_* type. */
cudnnDataType_t dnn_graph_cu_dtype(int dtype);

/* The label of op i in messages: "op 2 (pointwise ADD)". */
void dnn_graph_op_label(const dnn_g_op *op, int i, char *buf, size_t n);

#endif
