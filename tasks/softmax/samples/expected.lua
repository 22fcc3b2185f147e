-- Sample solutions and the verdict each must get (each names a folder next
-- to this file). Memory-bound tasks have no target instruction family, so a
-- correct sample passes.
return {
  { name = "naive", task = "softmax_bf16", verdict = "passed",
    why = "a block per row, three passes, fp32: correct and plain" },
  { name = "naive_logsoftmax", task = "logsoftmax_bf16", verdict = "passed",
    why = "a block per row, three passes, fp32, output x - max - log(sum): correct and plain" },
  { name = "triton", task = "softmax_bf16", verdict = "passed",
    why = "Triton: a program per row, three passes in fp32 BLOCK columns at a time, bf16 out: correct and plain" },
  { name = "cute", task = "softmax_bf16", verdict = "passed",
    why = "CuTe: a block per row, the row divided among 256 threads by local_partition and predicated through an "
       .. "identity tensor, three passes in fp32: correct and plain" },
}
