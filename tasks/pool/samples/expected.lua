-- Sample solutions of the pooling tasks and the verdict each must get (each
-- names a folder next to this file; samples run on the task's first "main"
-- variant with its default plan). Pooling is memory-bound and targets no
-- instruction family, so a correct sample passes.
return {
  { name = "naive_maxpool", task = "maxpool2d_bf16", verdict = "passed",
    why = "one thread per output element, taps outside the image skipped: the exact maximum" },
  { name = "naive_avgpool", task = "avgpool2d_f32", verdict = "passed",
    why = "one thread per output element, the window's sum in fp32 divided by 9" },
  { name = "naive_pool_nchw", task = "maxpool2d_nchw_f32", verdict = "passed",
    why = "NCHW, one thread per output element, taps in the padding skipped: the exact maximum" },
  { name = "naive_pool_nchw", task = "avgpool2d_nchw_f32", verdict = "passed",
    why = "NCHW, one thread per output element, the 11 x 11 window's sum in fp32 divided by 121" },
}
