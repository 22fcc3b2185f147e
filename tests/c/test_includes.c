/*
 * test_includes.c: host/compile/includes.c, what a candidate's CUDA source
 * may include. Every directive is examined however it is spelled
 * (digraphs, splices, comments between '#' and its name), comments and
 * literals are respected where they matter (a '/' '*' inside a string,
 * a raw string or after a digit separator must not hide the next line),
 * and only relative names of toolkit headers pass.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "compile/includes.h"

static char roots[INCLUDES_MAX_ROOTS][4096];
static int nroots;

static int check(const char *src, ks_status *st)
{
    return includes_check(src, strlen(src), "DIR/kernel.cu", roots, nroots, st);
}

#define REFUSED(src, want)                                                                              \
    do {                                                                                                \
        ks_status st_;                                                                                  \
        int rc_ = check(src, &st_);                                                                     \
        CHECKF(rc_ == KS_ECOMPILE && strstr(st_.msg, want), "%s -> %d %s", src, rc_, st_.msg);         \
    } while (0)

#define ALLOWED(src)                                                                                    \
    do {                                                                                                \
        ks_status st_;                                                                                  \
        int rc_ = check(src, &st_);                                                                     \
        CHECKF(rc_ == KS_OK, "%s -> %d %s", src, rc_, st_.msg);                                         \
    } while (0)

int main(void)
{
    check_prog = "test_includes";
    includes_toolkit_roots(roots, &nroots);
    if (nroots == 0) {
        SKIP("no CUDA toolkit include folder (CUDA_HOME)");
        return check_done();
    }
    const char *msg = "is not allowed: candidates may include only the CUDA toolkit's headers";

    /* The toolkit's headers pass, in both spellings. */
    ALLOWED("#include <cuda_fp16.h>\n#include \"cuda_bf16.h\"\nint x;\n");
    ALLOWED("  #  include <cuda_fp8.h>   // a comment\n");
    ALLOWED("#if __has_include(<cuda_fp16.h>)\n#endif\n");
    ALLOWED("const char *s = \"#include </etc/passwd>\";\n");
    ALLOWED("// #include \"/etc/passwd\"\n/* #include \"/etc/passwd\" */ int x;\n");
    ALLOWED("int a = 1'000'000; const char *s = \"/*\";\n");
    /* The standard headers klab gives NVRTC (std_headers.h), in both spellings. */
    ALLOWED("#include <cstdint>\n#include \"stdio.h\"\n#include <cfloat>\n#include <assert.h>\n");
    ALLOWED("#if __has_include(<climits>)\n#endif\n");
    REFUSED("#include <iostream>\n", msg);               /* not one of them */
    REFUSED("#include <cstdint/../../etc/passwd>\n", msg);

    /* The attack of the issue, and its relatives. */
    REFUSED("#include \"/proc/self/environ\"\n", "DIR/kernel.cu:1: #include \"/proc/self/environ\" is not allowed");
    REFUSED("int x;\n\n#include </etc/passwd>\n", "DIR/kernel.cu:3: #include </etc/passwd> ");
    REFUSED("#include \"../../etc/passwd\"\n", msg);
    REFUSED("#include <cuda/../../../../etc/passwd>\n", msg);
    REFUSED("#include \"plan.lua\"\n", msg);             /* beside the candidate */
    REFUSED("#include \"kernel.cu\"\n", msg);
    REFUSED("#include \"nonexistent_header.h\"\n", msg);
    REFUSED("#include_next <cuda_fp16.h/../../../../../../etc/passwd>\n", msg);
    REFUSED("#import \"/etc/passwd\"\n", "#import \"/etc/passwd\" is not allowed");
    REFUSED("#embed \"/etc/passwd\"\n", "#embed is not allowed");
    REFUSED("%:include \"/etc/passwd\"\n", msg);         /* digraph */
    REFUSED("%: include \"/etc/passwd\"\n", msg);
    REFUSED("#define F \"/etc/passwd\"\n#include F\n", "DIR/kernel.cu:2: #include with a computed");
    REFUSED("#if __has_include(\"/etc/shadow\")\n#endif\n", "__has_include(\"/etc/shadow\") is not allowed");
    REFUSED("#if __has_include_next(</etc/shadow>)\n#endif\n", "__has_include_next(</etc/shadow>)");
    REFUSED("#if __has_include(F)\n#endif\n", "computed");
    /* Splices, comments and literals must not hide a directive. */
    REFUSED("#inc\\\nlude \"/etc/passwd\"\n", msg);
    REFUSED("#\\\ninclude \"/etc/\\\npasswd\"\n", msg);
    REFUSED("int x;\\\n\n#include \"/etc/passwd\"\n", "DIR/kernel.cu:3:");
    REFUSED("#/* c */include \"/etc/passwd\"\n", msg);
    REFUSED("/* a\n comment */ #include \"/etc/passwd\"\n", msg);
    REFUSED("int x = 1'0 + \"a'/*\";\n#include \"/etc/passwd\"\n// */\n", "DIR/kernel.cu:2:");
    REFUSED("const char *s = R\"x(/*)x\";\n#include \"/etc/passwd\"\n// */\n", "DIR/kernel.cu:2:");
    REFUSED("const char *s = R\"(\")\"; /*\n*/\n#include \"/etc/passwd\"\n", msg);
    REFUSED("char c = '\"'; \n#include \"/etc/passwd\"\n", msg);
    REFUSED("int x;\r#include \"/etc/passwd\"\n", msg);   /* a lone CR ends a line too */
    REFUSED("?\?=include \"/etc/passwd\"\n", "the trigraph ?\?= is not allowed");
    REFUSED("// x ?\?/\n#include <cuda_fp16.h>\n", "the trigraph ?\?/ is not allowed");
    REFUSED("#\\u0069nclude \"/etc/passwd\"\n", "universal character names");
    REFUSED("const char *s = R\"x(never ends\n#include \"/etc/passwd\"\n", "unterminated raw string");
    REFUSED("#include \"/etc/passwd\n", "unterminated header name");
    /* Messages follow #line, as the compiler's do (klab's prelude before a
     * task's reference.cu). */
    REFUSED("int x;\n#line 10 \"tasks/x/reference.cu\"\nint y;\n#include \"/etc/passwd\"\n",
            "tasks/x/reference.cu:11: #include \"/etc/passwd\" is not allowed");
    REFUSED("#line 5\n#include \"/etc/passwd\"\n", "DIR/kernel.cu:5: ");
    return check_done();
}
