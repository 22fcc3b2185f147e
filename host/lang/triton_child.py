# klab's Triton child: turns a candidate's kernel.py into PTX, nothing more.
#
# klab runs this text with `PYTHON -I -S -B -c TEXT FILTER SITE REQUEST`
# in a confined child (host/lang/triton.h). Its first act, before any byte
# of the candidate is read, is to install FILTER, a seccomp program klab
# built (hex): from then on no program can be run, whatever the candidate
# does. Until then only the interpreter's own start-up has run (-I -S: no
# environment, no site, no .pth file, no user folder).
#
# The candidate's file is kernel.py in the scratch folder, the working one.
# REQUEST (JSON): {"name": its name for messages, "kernel": the function (or null: the only
# @triton.jit one), "signature": the types of its other parameters in
# order, "constexprs": {name: value}, "num_warps", "num_stages", "cc",
# "cuda": the CUDA version klab's ptxas has (the PTX ISA follows from it)}.
# It stops at PTX: Triton never runs ptxas. The answer is one JSON object
# on the first descriptor, written at the end: {"ptx", "name", "num_warps",
# "shared", "global_scratch", "profile_scratch"} or {"error": one line}.
# What the candidate prints goes to the second descriptor.
import sys


def install_filter(hexprog):
    import ctypes
    prog = bytes.fromhex(hexprog)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(prog, len(prog))
    fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fp), 0, 0) != 0:
        raise SystemExit("klab's Triton child: the seccomp filter could not be installed (errno %d)" % ctypes.get_errno())


install_filter(sys.argv[1])

import json
import os

answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)                   # the candidate's prints are its log
sys.stdout = sys.stderr
sys.path.append(sys.argv[2])


def reply(obj):
    answer.write(json.dumps(obj))
    answer.flush()


def where(req, exc):
    """The candidate's line an exception came from, as "NAME:LINE"."""
    import traceback
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    for fr in traceback.extract_tb(exc.__traceback__):
        if fr.filename == req["file"]:
            line = fr.lineno
    return "%s:%s" % (req["name"], line) if line else req["name"]


def one_line(exc):
    text = str(exc).strip().splitlines()
    text = [t for t in text if t.strip()]
    return (type(exc).__name__ + (": " + text[-1].strip() if text else ""))[:300]


def load(req):
    import importlib.util
    spec = importlib.util.spec_from_file_location("kernel", req["file"])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kernel"] = mod
    spec.loader.exec_module(mod)
    return mod


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


def main():
    req = json.loads(sys.argv[3])
    req["file"] = os.path.join(os.getcwd(), "kernel.py")
    try:
        mod = load(req)
    except BaseException as e:
        reply({"error": "%s: %s" % (where(req, e), one_line(e))})
        return 1
    try:
        reply(compile_ptx(req, pick(req, mod)))
        return 0
    except BaseException as e:
        reply({"error": "%s: %s" % (where(req, e), one_line(e))})
        return 1


sys.exit(main())
