# klab's Python child, what every Python language shares: the first part of
# the program that turns a candidate's kernel.py into PTX, nothing more.
#
# klab runs this text followed by the language's driver
# (host/lang/LANG_child.py) with `PYTHON -I -S -B -c TEXT FILTER SITE REQUEST`
# in a confined child (host/lang/pychild.h). Its first act, before any byte
# of the candidate is read, is to install FILTER, a seccomp program klab
# built (hex): from then on no program can be run, whatever the candidate
# does. Until then only the interpreter's own start-up has run (-I -S: no
# environment, no site, no .pth file, no user folder).
#
# The candidate's file is kernel.py in the scratch folder, the working one.
# REQUEST is JSON, the driver's own, with "name": the file's name for
# messages. The driver calls serve(build), where build(req, module)
# returns the answer; the answer is one JSON object on the first
# descriptor, written at the end: build's, or {"error": one line}. What the
# candidate prints goes to the second descriptor.
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
        raise SystemExit("klab's Python child: the seccomp filter could not be installed (errno %d)" %
                         ctypes.get_errno())


install_filter(sys.argv[1])

import json
import os

answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)                   # the candidate's prints are its log
sys.stdout = sys.stderr
sys.path.append(sys.argv[2])
SCRATCH = os.getcwd()


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


def serve(build):
    """Loads the candidate and answers build(req, module), or the error."""
    req = json.loads(sys.argv[3])
    req["file"] = os.path.join(SCRATCH, "kernel.py")
    try:
        mod = load(req)
        reply(build(req, mod))
        code = 0
    except BaseException as e:
        reply({"error": "%s: %s" % (where(req, e), one_line(e))})
        code = 1
    sys.exit(code)
