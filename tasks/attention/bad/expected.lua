-- Known-bad attention candidates and the verdict klab must give each one.
-- Each entry names a folder next to this file (kernel.cu + plan.lua) and the
-- kind of task it must be judged on (fwd/bwd, causal or not);
-- docs/attention.md explains each kernel and what catches it.
return {
  { name = "fwd_no_causal_mask", task = "attn_fwd_causal", verdict = "incorrect",
    why = "the naive forward attending to every key on a causal task: O and LSE of every row but the last are wrong" },
  { name = "fwd_no_lse", task = "attn_fwd", verdict = "incorrect",
    why = "returns O but never writes LSE, which keeps the host's poison" },
  { name = "bwd_no_dk", task = "attn_bwd", verdict = "incorrect",
    why = "the naive backward that never writes dK (poison left in place)" },
  { name = "bwd_racy", task = "attn_bwd", verdict = "nondeterministic",
    why = "two warps per query row race to store dQ (one rounds to nearest, one toward zero) after clock-drawn " ..
      "delays; each value is within tolerance, but two runs on the same inputs differ bitwise" },
}
