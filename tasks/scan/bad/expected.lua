-- Known-bad scan kernels and the verdict klab must give each one (each
-- names a folder next to this file; they run on the task's "small"
-- variant with its default plan).
return {
  { name = "reverse_scans_forward", task = "cumsum_reverse_f32", verdict = "incorrect",
    why = "scans from the row's start: a plain cumsum where the sums run from the end" },
}
