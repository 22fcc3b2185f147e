-- klab.report.cost: what each condition cost, from the turns' own records
-- (the tokens, latency and dollars stored with every reply).
--
--   cost.table_rows(trajs, {limit}) -> rows, one per arch x model (the
--   condition): {arch, model, requests (turns that asked the model: from the
--   network, the cache or files), network (those that went to the server),
--   input_tokens, output_tokens, cost_usd (nil when no turn has a price),
--   priced (turns with a cost), latency_median_ms, latency_mean_ms (of the
--   turns a server answered, nil when none did: replies read from files
--   have no latency), correct, verified (trajectories with a correct /
--   verified turn within the limit), per_correct, per_verified (cost_usd
--   divided by those; nil when either is missing)}.

local metrics = require "klab.report.metrics"

local M = {}

function M.table_rows(trajs, opts)
  opts = opts or {}
  local limit = opts.limit or metrics.max_turns(trajs)
  local rows = {}
  for _, g in ipairs(metrics.group(trajs, { "arch", "model" })) do
    local r = { arch = g.arch, model = g.model, requests = 0, network = 0, input_tokens = 0, output_tokens = 0,
      priced = 0, correct = 0, verified = 0 }
    local cost, lat = 0, {}
    for _, tr in ipairs(g.items) do
      if metrics.correct(tr, limit) then r.correct = r.correct + 1 end
      if metrics.correct(tr, limit, true) then r.verified = r.verified + 1 end
      for _, tu in ipairs(tr.turns) do
        if tu.source then
          r.requests = r.requests + 1
          if tu.source == "network" then r.network = r.network + 1 end
        end
        r.input_tokens = r.input_tokens + (tu.input_tokens or 0)
        r.output_tokens = r.output_tokens + (tu.output_tokens or 0)
        if tu.cost_usd then cost, r.priced = cost + tu.cost_usd, r.priced + 1 end
        -- A reply read from a file took no server time: its stored 0 is no
        -- latency (the response cache keeps the server's time, and counts).
        if tu.latency_ms and tu.source ~= "files" then lat[#lat + 1] = tu.latency_ms end
      end
    end
    table.sort(lat)
    if #lat > 0 then
      local m = #lat
      r.latency_median_ms = m % 2 == 1 and lat[(m + 1) // 2] or (lat[m // 2] + lat[m // 2 + 1]) / 2
      r.latency_mean_ms = metrics.mean(lat)
    end
    if r.priced > 0 then
      r.cost_usd = cost
      r.per_correct = r.correct > 0 and cost / r.correct or nil
      r.per_verified = r.verified > 0 and cost / r.verified or nil
    end
    rows[#rows + 1] = r
  end
  return rows
end

return M
