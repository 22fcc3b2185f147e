-- klab.experiment.extract: from a model's reply to a candidate.
--
--   extract.blocks(text)            -> list of {lang=, info=, code=, line=, closed=}
--   extract.candidate(text [, opts]) -> {code=, lang="cuda"|"ptx"|"triton", plan=, kernel_block=, plan_block=,
--                                        blocks=}  or  nil, reason
--       opts.languages: the candidate languages the reply is read for
--       ("cuda", "ptx", "triton"); default CUDA C++ and PTX
--   extract.verdict(reason)         -> {verdict="extraction_error", reason=...}
--
-- A reply carries device code in fenced code blocks (``` or ~~~, three or
-- more, with an info string naming the language) and, optionally, a launch
-- plan in a ```lua block. The rules, in order:
--
--   1. Device code is a block tagged cuda, cu, cuh, c++, cpp, cxx, cc, c or
--      h (CUDA C++) or ptx; for a Triton study, python or py. An untagged
--      block counts when its text shows the language: ".entry"/".visible"
--      with ".target" is PTX, "__global__" is CUDA, "@triton.jit" Triton.
--   2. Among device-code blocks, those that define a kernel (__global__ in
--      CUDA, .entry in PTX) win over those that do not (snippets, helpers);
--      among those, the LAST one is the candidate (models revise as they
--      write; PTXBench asks for the reply to end in the code). opts.pick =
--      "first" takes the first one instead.
--   3. The plan is the last ```lua block that returns something ("return").
--   4. A block that is never closed (a reply cut off at max_tokens) is used
--      only when no closed block qualifies, and then it is an error: the code
--      is incomplete.
--
-- No qualifying block is an extraction_error whose reason says what was
-- found instead; it is fed back to the model like any other verdict.

local M = {}

local CUDA_TAGS = { cuda = true, cu = true, cuh = true, ["c++"] = true, cpp = true, cxx = true, cc = true,
                    c = true, h = true, hpp = true }

-- The language of a block and its tag (the info string's first word).
local function lang_of(info, code)
  local tag = (info or ""):match("^%s*([%w_%+%-%.]+)")
  tag = tag and tag:lower() or ""
  if CUDA_TAGS[tag] then return "cuda", tag end
  if tag == "ptx" then return "ptx", tag end
  if tag == "lua" then return "lua", tag end
  if tag == "python" or tag == "py" then return "triton", tag end
  if tag == "" then
    if code:find("%.target%s") and (code:find("%.entry") or code:find("%.visible")) then return "ptx", tag end
    if code:find("__global__") then return "cuda", tag end
    if code:find("@triton%.jit") then return "triton", tag end
    if code:find("^%s*%-%-") and code:find("launches") then return "lua", tag end
  end
  return nil, tag
end

-- Every fenced block, in order. A fence is a line whose first non-blank
-- characters are three or more backticks or tildes; it closes with a line of
-- the same character, at least as long, and nothing else.
function M.blocks(text)
  assert(type(text) == "string", "extract.blocks expects a string")
  local out = {}
  local cur
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    line = line:gsub("\r$", "")
    if not cur then
      local indent, fence, info = line:match("^(%s*)([`~][`~][`~]+)(.*)$")
      if fence and not fence:find(fence:sub(1, 1) == "`" and "~" or "`", 1, true)
          and not (fence:sub(1, 1) == "`" and info:find("`", 1, true)) then
        cur = { fence = fence, info = info:gsub("^%s+", ""):gsub("%s+$", ""), lines = {}, line = n + 1,
                indent = #indent }
      end
    else
      local close = line:match("^%s*([`~]+)%s*$")
      if close and close:sub(1, 1) == cur.fence:sub(1, 1) and #close >= #cur.fence
          and not close:find(cur.fence:sub(1, 1) == "`" and "~" or "`", 1, true) then
        cur.closed = true
        out[#out + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = line
      end
    end
  end
  if cur then
    -- The text ended inside a block; drop the empty line our "\n" added.
    if cur.lines[#cur.lines] == "" then cur.lines[#cur.lines] = nil end
    cur.closed = false
    out[#out + 1] = cur
  end
  for _, b in ipairs(out) do
    b.code = table.concat(b.lines, "\n")
    if b.code ~= "" then b.code = b.code .. "\n" end
    b.lines, b.fence, b.indent = nil, nil, nil
    local lang, tag = lang_of(b.info, b.code)
    b.lang, b.tag = lang, tag
  end
  return out
end

local function defines_kernel(b)
  if b.lang == "cuda" then return b.code:find("__global__") ~= nil end
  if b.lang == "ptx" then return b.code:find("%.entry") ~= nil end
  if b.lang == "triton" then return b.code:find("@triton%.jit") ~= nil end
  return false
end

function M.verdict(reason)
  return require("klab.eval.verdict").make("extraction_error", { message = reason })
end

-- The words of a reason, by language: its block's tag, the tags looked
-- for, and what defines a kernel in it.
local WORDS = {
  cuda = { fence = "cuda", looked = "cuda, cu, c++, cpp", kernel = "a __global__ function in CUDA" },
  ptx = { fence = "ptx", looked = "ptx", kernel = "an .entry in PTX" },
  triton = { fence = "python", looked = "python, py", kernel = "a @triton.jit function in Triton" },
}

-- The words of a reason for the languages read.
local function words_of(langs)
  local fences, looked, kernel = {}, {}, {}
  for i, n in ipairs(langs) do
    local w = WORDS[n] or error("extract.candidate: no language " .. tostring(n), 3)
    fences[i], looked[i], kernel[i] = "```" .. w.fence, w.looked, w.kernel
  end
  return { put = "a " .. fences[1] .. (#fences > 1 and (" (or " .. table.concat(fences, ", ", 2) .. ")") or "")
    .. " block", looked = table.concat(looked, " or "), kernel = table.concat(kernel, ", ") }
end

function M.candidate(text, opts)
  opts = opts or {}
  local read = {}
  for _, n in ipairs(opts.languages or { "cuda", "ptx" }) do read[n] = true end
  local words = words_of(opts.languages or { "cuda", "ptx" })
  if type(text) ~= "string" or text:find("^%s*$") then
    return nil, "the reply is empty"
  end
  local blocks = M.blocks(text)
  if #blocks == 0 then
    return nil, "the reply has no fenced code block; put the kernel in " .. words.put
  end
  local code_blocks, kernels, plans, others = {}, {}, {}, {}
  for i, b in ipairs(blocks) do
    b.index = i
    if read[b.lang] then
      code_blocks[#code_blocks + 1] = b
      if defines_kernel(b) then kernels[#kernels + 1] = b end
    elseif b.lang == "lua" then
      if b.code:find("return") and b.closed then plans[#plans + 1] = b end
    else
      others[#others + 1] = b.tag ~= "" and b.tag or "untagged"
    end
  end
  if #code_blocks == 0 then
    local seen = #others > 0 and (" (found: " .. table.concat(others, ", ") .. ")") or ""
    return nil, "no code block in " .. words.looked .. seen .. "; put the kernel in " .. words.put
  end
  if #kernels == 0 then
    return nil, "no code block defines a kernel (" .. words.kernel .. ")"
  end
  local closed = {}
  for _, b in ipairs(kernels) do if b.closed then closed[#closed + 1] = b end end
  if #closed == 0 then
    return nil, "the reply ends inside its ```" .. (kernels[#kernels].info ~= "" and kernels[#kernels].info or "")
      .. " code block (it was cut off, perhaps at max_tokens); the code is incomplete"
  end
  local k = opts.pick == "first" and closed[1] or closed[#closed]
  local plan = plans[#plans]
  return {
    code = k.code, lang = k.lang, plan = plan and plan.code or nil,
    kernel_block = k.index, plan_block = plan and plan.index or nil, blocks = #blocks,
  }
end

return M
