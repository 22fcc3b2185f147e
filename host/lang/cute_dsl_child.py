# klab's CuTe DSL driver: the part of the Python child's program
# (host/lang/pychild.py comes first, with the filter, serve and the errors)
# that compiles a CuTe DSL kernel.py (nvidia-cutlass-dsl) to PTX.
#
# REQUEST (JSON): {"name": its name for messages, "kernel": the @cute.jit
# function to compile (or null: the only one), "arch": "sm_90a", "args":
# the plan's arguments in order, each {"tensor": {"dtype": a cutlass type's
# name, "shape": [...], "strides": [...]}} (a fake tensor: no memory, the
# shape and strides compiled in) or {"scalar": {"type": a cutlass type's
# name, "value": v}} (a run-time value, a kernel parameter)}.
#
# The function is compiled with cute.compile for that architecture, the
# DSL's artifacts kept in the scratch folder; it must launch exactly one
# @cute.kernel. Its PTX entry (the DSL names it after the kernel and the
# argument types) is renamed to the @cute.jit function's name, which the
# plan launches. It stops at PTX: klab's own ptxas assembles it. The answer:
# {"ptx", "name", "block": [x, y, z] from the entry's .reqntid, or null}.
import re

# The DSL reads its settings when it is imported, which the candidate does:
# they go first, all inside the scratch folder.
os.environ["CUTE_DSL_CACHE_DIR"] = os.path.join(SCRATCH, ".cute_dsl")
os.environ["CUTE_DSL_DISABLE_FILE_CACHING"] = "1"
os.environ["CUTE_DSL_DUMP_DIR"] = os.path.join(SCRATCH, "dump")
os.environ["CUTE_DSL_KEEP"] = "ptx"
os.environ["CUTE_DSL_ARCH"] = json.loads(sys.argv[3])["arch"]
os.makedirs(os.environ["CUTE_DSL_DUMP_DIR"])


def dsl_path():
    # What the package's .pth file would do, which -S does not run: its
    # Python packages live in a folder of their own.
    import nvidia_cutlass_dsl
    sys.path.insert(0, os.path.join(nvidia_cutlass_dsl.__path__[0], "dsl_packages"))


def pick(req, mod):
    fns = {k: v for k, v in vars(mod).items()
           if callable(v) and getattr(v, "_decorator_kind", None) == "jit"
           and getattr(getattr(v, "__wrapped__", None), "__module__", None) == "kernel"}
    if req["kernel"]:
        if req["kernel"] not in fns:
            raise LookupError("no @cute.jit function named %s (it has: %s)" %
                              (req["kernel"], ", ".join(sorted(fns)) or "none"))
        return req["kernel"], fns[req["kernel"]]
    if len(fns) != 1:
        raise LookupError("%d @cute.jit functions (%s): the plan must name one as its launch's kernel" %
                          (len(fns), ", ".join(sorted(fns))))
    return next(iter(fns.items()))


def arguments(req):
    import cutlass
    from cutlass.cute.runtime import make_fake_tensor
    out = []
    for a in req["args"]:
        if "tensor" in a:
            t = a["tensor"]
            out.append(make_fake_tensor(getattr(cutlass, t["dtype"]), tuple(t["shape"]), tuple(t["strides"])))
        else:
            s = a["scalar"]
            out.append(getattr(cutlass, s["type"])(s["value"]))
    return out


ENTRY = re.compile(r"^\.visible\s+\.entry\s+([A-Za-z_$][\w$]*)\s*\(", re.M)


def compile_ptx(req, mod):
    import cutlass.cute as cute
    name, fn = pick(req, mod)
    compiled = cute.compile(fn, *arguments(req))
    ptx = compiled.artifacts.PTX
    if not isinstance(ptx, str) or not ptx:
        raise RuntimeError("the CuTe DSL gave no PTX for %s" % name)
    entries = ENTRY.findall(ptx)
    if len(entries) != 1:
        raise ValueError("%s launches %d kernels (%s): a CuTe DSL candidate launches exactly one @cute.kernel" %
                         (name, len(entries), ", ".join(entries)))
    entry = entries[0]
    if re.search(r"(?<![\w$])%s(?![\w$])" % re.escape(name), ptx):
        raise ValueError("the PTX already has a symbol named %s: name the @cute.jit function otherwise" % name)
    # The DSL's name for the entry is unique in the text (its parameters
    # are ENTRY_param_N): every occurrence is the entry's.
    ptx = ptx.replace(entry, name)
    block = None
    m = re.search(r"\.entry\s+%s\s*\((?:[^)]*)\)\s*((?:\.\w+[^{]*?)*)\{" % re.escape(name), ptx)
    if m:
        r = re.search(r"\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", m.group(1))
        if r:
            block = [int(r.group(i) or 1) for i in (1, 2, 3)]
    return {"ptx": ptx, "name": name, "block": block}


dsl_path()
serve(compile_ptx)
