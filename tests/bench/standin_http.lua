-- tests/bench/standin_http.lua: a stand-in klab.http client for the
-- benchmarks that drive the sweep pipeline without a model server: every
-- request is answered at once, with `reply` as an OpenAI-style completion
-- (1,000 tokens in, 800 out).
--
--   local http = dofile("tests/bench/standin_http.lua")(reply)
return function(reply)
  local done, n = {}, 0
  local body = require("klab.json").encode { choices = { { message = { content = reply }, finish_reason = "stop" } },
    usage = { prompt_tokens = 1000, completion_tokens = 800 } }
  return {
    submit = function() n = n + 1 done[#done + 1] = { id = n, status = 200, body = body, attempts = { { status = 200 } }, elapsed = 0 } return n end,
    poll = function() local out = done done = {} return out end,
    free = function() end,
  }
end
