-- experiments/quickstart_spec.lua: the sweep that experiments/quickstart.lua
-- replays, which the sharding and Slurm tests run too, as a function of the
-- fields to add or change:
--
--   local spec = dofile("experiments/quickstart_spec.lua") { db = "results/q.db" }
--
-- Not a script to run by itself. One "model" over the small bf16 GEMM
-- shapes, 2 prompt tags x 2 replicas x 3 turns, replayed from the sample
-- replies in experiments/responses/quickstart (a path relative to the
-- working directory unless responses_dir is given).
return function(fields)
  local spec = {
    name = "quickstart",
    mode = "replay",
    responses_dir = "experiments/responses/quickstart",
    -- Never contacted: replay mode answers from the store and the shipped files only.
    models = { { name = "klab-sample", provider = "openai", model = "klab-sample", base_url = "http://127.0.0.1:9/v1" } },
    tasks = { { name = "gemm_bf16_small", workloads = { "gemm_bf16/128x4096x4096", "gemm_bf16/16x7168x5120" } } },
    tags = { "none", "hopper" },
    replicas = 2,
    turns = 3,
    target_speedup = 1.2,
    select = "fastest_correct",
    progress = false,
  }
  for k, v in pairs(fields or {}) do spec[k] = v end
  return spec
end
