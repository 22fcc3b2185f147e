# klab's Triton driver: the part of the Python child's program
# (host/lang/pychild.py comes first, with the filter, serve and the errors)
# that compiles a Triton kernel.py to PTX.
#
# REQUEST (JSON): {"name": its name for messages, "kernel": the function (or null: the only
# @triton.jit one), "signature": the types of its other parameters in
# order, "constexprs": {name: value}, "num_warps", "num_stages", "cc",
# "cuda": the CUDA version klab's ptxas has (the PTX ISA follows from it)}.
# It stops at PTX: Triton never runs ptxas. The answer: {"ptx", "name",
# "num_warps", "shared", "global_scratch", "profile_scratch"}.

# Triton's cache, in the scratch folder, before the candidate imports triton.
os.environ["TRITON_CACHE_DIR"] = os.path.join(SCRATCH, ".triton")


def pick(req, mod):
    from triton.runtime.jit import JITFunction
    fns = {k: v for k, v in vars(mod).items() if isinstance(v, JITFunction) and v.__module__ == "kernel"}
    if req["kernel"]:
        if req["kernel"] not in fns:
            raise LookupError("no @triton.jit function named %s (it has: %s)" %
                              (req["kernel"], ", ".join(sorted(fns)) or "none"))
        return fns[req["kernel"]]
    if len(fns) != 1:
        raise LookupError("%d @triton.jit functions (%s): the plan must name one as its launch's kernel" %
                          (len(fns), ", ".join(sorted(fns))))
    return next(iter(fns.values()))


def compile_ptx(req, fn):
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import ptx_get_version
    from triton.compiler.compiler import ASTSource, make_backend
    from triton._C.libtriton import ir
    constexprs = req["constexprs"] or {}     # an empty table arrives as []
    for k in constexprs:
        if k not in fn.arg_names:
            raise LookupError("the plan sets constexpr %s, which %s does not take" % (k, fn.__name__))
    params = [a for a in fn.arg_names if a not in constexprs]
    types = req["signature"]
    if len(types) != len(params):
        raise ValueError("%s takes %d arguments besides its constexprs (%s), the plan passes %d" %
                         (fn.__name__, len(params), ", ".join(params), len(types)))
    signature = dict(zip(params, types))
    for k in constexprs:
        signature[k] = "constexpr"
    # Positions (1-based among the parameters) that klab vouches are
    # multiples of 16; Triton keys its hints by position in the whole list.
    attrs = {}
    for p in req.get("divisible_by_16") or []:
        if not (isinstance(p, int) and 1 <= p <= len(params)):
            raise ValueError("divisible_by_16 names no parameter at position %r" % (p,))
        attrs[(fn.arg_names.index(params[p - 1]),)] = [["tt.divisibility", 16]]
    src = ASTSource(fn, signature, constexprs, attrs)
    target = GPUTarget("cuda", req["cc"], 32)
    backend = make_backend(target)
    options = backend.parse_options({"num_warps": req["num_warps"], "num_stages": req["num_stages"],
                                     "ptx_version": ptx_get_version(req["cuda"])})
    stages = {}
    backend.add_stages(stages, options, src.language)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                         context)
    metadata = {"target": target, **options.__dict__}
    for ext, step in stages.items():
        module = step(module, metadata)
        if ext == "ptx":    # klab's own ptxas assembles it
            break
    return {"ptx": module, "name": metadata["name"], "num_warps": options.num_warps,
            "shared": metadata.get("shared", 0), "global_scratch": metadata.get("global_scratch_size", 0),
            "profile_scratch": metadata.get("profile_scratch_size", 0)}


serve(lambda req, mod: compile_ptx(req, pick(req, mod)))
