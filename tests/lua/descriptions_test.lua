-- The text a model is sent compiles as written: every kernel signature in
-- every task's description (each variant's), with an empty body, after
-- only the CUDA headers that declare CUDA's own element types. A type the
-- description invents (`bf16`) would cost the model a turn to klab's own
-- prompt. No GPU: NVRTC compiles for sm_90a; one translation unit per task
-- file, cached by content like every compile.
local task = require "klab.task"
local jit = require "klab.jit"

local T = {}

-- The headers of CUDA's element types (__nv_bfloat16, __half, __nv_fp8_*).
local HEADERS = "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <cuda_fp8.h>\n"

-- Every `extern "C" __global__ void NAME(...)` in text, through its
-- closing parenthesis (a signature may span lines): {name =, text =}.
local function signatures(text)
  local out = {}
  for start in text:gmatch('()extern "C" __global__ void ') do
    local open = text:find("(", start, true)
    local depth, i = 0, open
    while i <= #text do
      local c = text:sub(i, i)
      if c == "(" then depth = depth + 1 elseif c == ")" then depth = depth - 1 end
      if depth == 0 then break end
      i = i + 1
    end
    local sig = text:sub(start, i)
    out[#out + 1] = { name = sig:match("void%s+([%w_]+)"), text = sig }
  end
  return out
end

function T.signatures_are_found_across_lines(t)
  local s = signatures('Write\n  extern "C" __global__ void f(const float *X,\n      float *Y, unsigned n)\nlaunched '
    .. 'and extern "C" __global__ void g(int (*p)[2])')
  t.eq(#s, 2)
  t.eq(s[1].name, "f")
  t.eq(s[1].text, 'extern "C" __global__ void f(const float *X,\n      float *Y, unsigned n)')
  t.eq(s[2].text, 'extern "C" __global__ void g(int (*p)[2])')
end

function T.every_description_signature_compiles_as_written(t)
  local all, errs = task.list(task.path())
  t.eq(#errs, 0, table.concat(errs, "; "))
  -- Per task file, its variants' distinct signatures; a kernel name that
  -- comes with two signatures goes to a unit of its own.
  local files, order = {}, {}
  local total = 0
  for _, x in ipairs(all) do
    local f = files[x.file]
    if not f then
      f = { units = { {} }, seen = {} }
      files[x.file] = f
      order[#order + 1] = x.file
    end
    for _, sig in ipairs(signatures(task.describe(x))) do
      if not f.seen[sig.text] then
        f.seen[sig.text] = true
        total = total + 1
        local placed = false
        for _, u in ipairs(f.units) do
          if not u[sig.name] then
            u[sig.name] = sig.text
            u[#u + 1] = sig.text
            placed = true
            break
          end
        end
        if not placed then f.units[#f.units + 1] = { [sig.name] = sig.text, sig.text } end
      end
    end
  end
  t.ok(total >= 50, "signatures found: " .. total)
  for _, file in ipairs(order) do
    for _, u in ipairs(files[file].units) do
      if #u > 0 then
        local src = HEADERS .. table.concat(u, " {}\n") .. " {}\n"
        local res, err, _, partial = jit.compile { source = src, lang = "cuda", arch = "sm_90a", name = file }
        local log = partial and partial.log or err
        t.ok(res, ("%s: a description's signature does not compile: %s"):format(file,
          tostring(tostring(log):match("[^\n]*error[^\n]*") or log)))
      end
    end
  end
end

return T
