/*
 * test_sass.c: host/measure/sass (listing parser, census, join, the disassembler
 * subprocess) and the parts of host/measure/profile that need no GPU (the metric
 * table, CUPTI's offline chip tables, clean refusals without a driver).
 *
 * nvdisasm is not installed on the build machine: the subprocess path is
 * tested with stand-in scripts named through KLAB_NVDISASM.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "driver/cuda.h"
#include "measure/profile.h"
#include "measure/sass.h"

/* nvdisasm -c -hex style: a header, two functions, hex continuation lines,
 * labels, predicates and a directive that mentions .text. */
static const char NVDISASM[] =
    "\t.headerflags\t@\"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90\"\n"
    "\t.elftype\t@\"ET_EXEC\"\n"
    "\n"
    "//--------------------- .text.gemm             --------------------------\n"
    "\t.section\t.text.gemm,\"ax\",@progbits\n"
    "\t.sectioninfo\t@\"SHI_REGISTERS=168\"\n"
    "\t.align\t128\n"
    "        .global         gemm\n"
    "        .size           gemm,(.L_x_9 - gemm)\n"
    "gemm:\n"
    ".text.gemm:\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */\n"
    "                                                                          /* 0x000fe40000000800 */\n"
    "        /*0010*/                   S2R R0, SR_TID.X ;                     /* 0x0000000000007919 */\n"
    "                                                                          /* 0x000e220000002100 */\n"
    "        /*0020*/               @P0 BRA `(.L_x_1) ;                       /* 0x0000000000000947 */\n"
    "        /*0030*/                   UTMALDG.2D [UR8], [UR4] ;              /* 0x00000000040075b4 */\n"
    "        /*0040*/                   WARPGROUP.ARRIVE ;\n"
    ".L_x_1:\n"
    "        /*0050*/                   HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;\n"
    "        /*0060*/                   HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], R24 ;\n"
    "        /*0070*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;\n"
    "        /*0080*/              @!PT EXIT ;\n"
    "        /*0090*/                   BRA `(.L_x_2);\n"
    ".L_x_9:\n"
    "//--------------------- .text.helper           --------------------------\n"
    "\t.section\t.text.helper,\"ax\",@progbits\n"
    ".text.helper:\n"
    "        /*0000*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;\n"
    "        /*0010*/                   HMMA.16816.F32.BF16 R4, R8, R14, R4 ;\n"
    "        /*0020*/                   RET.REL.NODEC R2 `(gemm) ;\n";

/* cuobjdump -sass style, one function. */
static const char CUOBJDUMP[] =
    "\n"
    "Fatbin elf code:\n"
    "================\n"
    "arch = sm_90a\n"
    "code version = [1,8]\n"
    "\n"
    "\tcode for sm_90a\n"
    "\t\tFunction : naive\n"
    "\t.headerflags\t@\"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS\"\n"
    "        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;  /* 0x00000a00ff017624 */\n"
    "                                                                            /* 0x000fe400078e00ff */\n"
    "        /*0010*/                   FFMA R3, R4, R5, R3 ;\n"
    "        /*0020*/                   FFMA R3, R6, R7, R3 ;\n"
    "        /*0030*/                   EXIT ;\n"
    "        ..........\n";

static void test_parse_nvdisasm(void)
{
    ks_status st;
    ks_clear(&st);
    sass_listing l;
    memset(&l, 0, sizeof l);
    CHECK(sass_parse(NVDISASM, strlen(NVDISASM), &l, &st) == KS_OK);
    CHECKF(l.n == 13, "rows %zu", l.n);
    CHECKF(l.nfuncs == 2, "functions %zu", l.nfuncs);
    if (l.nfuncs == 2) {
        CHECK(strcmp(l.funcs[0], "gemm") == 0);
        CHECK(strcmp(l.funcs[1], "helper") == 0);
    }
    if (l.n == 13) {
        CHECK(l.rows[0].offset == 0 && strcmp(l.rows[0].op, "LDC") == 0 && l.rows[0].func == 0);
        CHECK(l.rows[2].offset == 0x20 && strcmp(l.rows[2].op, "BRA") == 0 && l.rows[2].predicated);
        CHECK(!l.rows[1].predicated);
        CHECK(l.rows[5].offset == 0x50 && strcmp(l.rows[5].op, "HGMMA") == 0);
        CHECK(strcmp(l.rows[5].mnem, "HGMMA.64x8x16.F32.BF16") == 0);
        CHECK(strcmp(l.rows[4].op, "WARPGROUP") == 0 && strcmp(l.rows[4].mnem, "WARPGROUP.ARRIVE") == 0);
        CHECK(strcmp(l.rows[8].op, "EXIT") == 0 && l.rows[8].predicated);
        CHECK(l.rows[10].func == 1 && l.rows[10].offset == 0 && strcmp(l.rows[10].op, "HMMA") == 0);
    }

    sass_hist h;
    memset(&h, 0, sizeof h);
    CHECK(sass_census(&l, NULL, &h, &st) == KS_OK);
    CHECK(sass_hist_get(&h, "HGMMA") == 2);
    CHECK(sass_hist_get(&h, "HMMA") == 2);
    CHECK(sass_hist_get(&h, "WARPGROUP") == 2);
    CHECK(sass_hist_get(&h, "UTMALDG") == 1);
    CHECK(sass_hist_get(&h, "BRA") == 2);
    CHECK(sass_hist_get(&h, "NOP") == 0);
    uint64_t total = 0;
    for (size_t i = 0; i < h.n; i++)
        total += h.v[i].count;
    CHECK(total == 13);
    /* First appearance order. */
    CHECK(h.n > 0 && strcmp(h.v[0].op, "LDC") == 0);
    sass_hist_free(&h);

    /* One function only. */
    CHECK(sass_census(&l, "helper", &h, &st) == KS_OK);
    CHECK(h.n == 2 && sass_hist_get(&h, "HMMA") == 2 && sass_hist_get(&h, "RET") == 1);
    CHECK(sass_hist_get(&h, "HGMMA") == 0);
    sass_hist_free(&h);
    sass_listing_free(&l);
    CHECK(l.rows == NULL && l.n == 0);
}

static void test_parse_cuobjdump(void)
{
    ks_status st;
    ks_clear(&st);
    sass_listing l;
    memset(&l, 0, sizeof l);
    CHECK(sass_parse(CUOBJDUMP, strlen(CUOBJDUMP), &l, &st) == KS_OK);
    CHECKF(l.n == 4, "rows %zu", l.n);
    CHECK(l.nfuncs == 1 && strcmp(l.funcs[0], "naive") == 0);
    sass_hist h;
    memset(&h, 0, sizeof h);
    CHECK(sass_census(&l, NULL, &h, &st) == KS_OK);
    CHECK(sass_hist_get(&h, "FFMA") == 2 && sass_hist_get(&h, "IMAD") == 1 && sass_hist_get(&h, "EXIT") == 1);
    sass_hist_free(&h);
    sass_listing_free(&l);
}

static void test_parse_edges(void)
{
    ks_status st;
    ks_clear(&st);
    sass_listing l;
    memset(&l, 0, sizeof l);
    /* Not address rows: hex words, a lowercase word, no closing star-slash,
     * an empty comment. Rows with no header land in function "". No final
     * newline. */
    const char *t =
        "        /* 0x000fe40000000800 */\n"
        "        /*0010*/   lowercase r1 ;\n"
        "        /*0020   NOP ;\n"
        "        /**/ NOP ;\n"
        "/*00a0*/ FADD R1, R2, R3 ;\n"
        "  /*00B0*/\t{ DADD R4, R4, R6 ;\n"
        "        /*00c0*/                   NOP";
    CHECK(sass_parse(t, strlen(t), &l, &st) == KS_OK);
    CHECKF(l.n == 3, "rows %zu", l.n);
    if (l.n == 3) {
        CHECK(l.rows[0].offset == 0xa0 && strcmp(l.rows[0].op, "FADD") == 0);
        CHECK(l.rows[1].offset == 0xb0 && strcmp(l.rows[1].op, "DADD") == 0);
        CHECK(l.rows[2].offset == 0xc0 && strcmp(l.rows[2].op, "NOP") == 0);
    }
    CHECK(l.nfuncs == 1 && strcmp(l.funcs[0], "") == 0);
    sass_listing_free(&l);

    /* Length is honoured: only the first row is inside it. */
    const char *two = "/*0000*/ NOP ;\n/*0010*/ EXIT ;\n";
    CHECK(sass_parse(two, 15, &l, &st) == KS_OK);
    CHECK(l.n == 1);
    sass_listing_free(&l);

    /* Empty input. */
    CHECK(sass_parse("", 0, &l, &st) == KS_OK && l.n == 0);
    sass_listing_free(&l);

    /* A very long mnemonic is truncated, its opcode kept. */
    char longrow[256];
    snprintf(longrow, sizeof longrow, "/*0000*/ HGMMA.%s R0 ;\n",
             "64x256x16.F32.BF16.WITH.A.VERY.LONG.LIST.OF.MODIFIERS.THAT.GOES.ON.AND.ON.AND.ON");
    CHECK(sass_parse(longrow, strlen(longrow), &l, &st) == KS_OK);
    CHECK(l.n == 1 && strcmp(l.rows[0].op, "HGMMA") == 0 && strlen(l.rows[0].mnem) == SASS_MNEM_MAX - 1);
    sass_listing_free(&l);
}

static void test_join(void)
{
    ks_status st;
    ks_clear(&st);
    sass_listing l;
    memset(&l, 0, sizeof l);
    CHECK(sass_parse(NVDISASM, strlen(NVDISASM), &l, &st) == KS_OK);
    /* 132 CTAs x 4 warps: each HGMMA row 528 times; helper's HMMA at 0x0;
     * one record at an offset that does not exist; one for an unknown
     * function. */
    sass_record recs[] = {
        {"gemm", 0x50, 528}, {"gemm", 0x60, 528}, {"gemm", 0x30, 132}, {"gemm", 0x00, 528},
        {"helper", 0x00, 64}, {"gemm", 0x54, 7}, {"other", 0x50, 9}, {NULL, 0x10, 528},
    };
    sass_hist h;
    memset(&h, 0, sizeof h);
    size_t un = 99;
    uint64_t unc = 99;
    CHECK(sass_join(&l, recs, sizeof recs / sizeof recs[0], &h, &un, &unc, &st) == KS_OK);
    CHECK(sass_hist_get(&h, "HGMMA") == 1056);
    CHECK(sass_hist_get(&h, "UTMALDG") == 132);
    /* gemm's LDC at 0 (528), not helper's HMMA at 0. */
    CHECK(sass_hist_get(&h, "LDC") == 528);
    CHECK(sass_hist_get(&h, "HMMA") == 64);
    /* A nameless record matches by offset in the first function with it. */
    CHECK(sass_hist_get(&h, "S2R") == 528);
    CHECKF(un == 2 && unc == 16, "unmatched %zu (%llu)", un, (unsigned long long)unc);
    sass_hist_free(&h);
    sass_listing_free(&l);

    /* One function: offsets alone decide, whatever name the record has
     * (CUPTI may report a different spelling). */
    CHECK(sass_parse(CUOBJDUMP, strlen(CUOBJDUMP), &l, &st) == KS_OK);
    sass_record r2[] = {{"_Z5naivev", 0x10, 100}, {"naive", 0x20, 100}, {NULL, 0x30, 5}};
    CHECK(sass_join(&l, r2, 3, &h, NULL, NULL, &st) == KS_OK);
    CHECK(sass_hist_get(&h, "FFMA") == 200 && sass_hist_get(&h, "EXIT") == 5);
    sass_hist_free(&h);
    sass_listing_free(&l);
}

/* ---- the subprocess, with stand-in tools ---- */

static char tmpdir[256];

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static int write_script(const char *name, const char *body, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("#!/bin/sh\n", f);
    fputs(body, f);
    fclose(f);
    return chmod(path, 0755);
}

static void test_disassemble(void)
{
    ks_status st;
    ks_clear(&st);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/klab-test-sass-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        SKIP("cannot make a temporary directory");
        return;
    }
    char good[512], bad[512], slow[512], listing[512];
    snprintf(listing, sizeof listing, "%s/listing.txt", tmpdir);
    FILE *f = fopen(listing, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(NVDISASM, f);
    fclose(f);
    /* The stand-in checks its arguments: -c -hex and a file holding the
     * cubin's bytes. */
    char body[1024];
    snprintf(body, sizeof body,
             "[ \"$1\" = -c ] && [ \"$2\" = -hex ] || { echo \"bad args $*\" >&2; exit 2; }\n"
             "[ \"$(cat \"$3\")\" = FAKECUBIN ] || { echo 'wrong cubin' >&2; exit 3; }\n"
             "cat '%s'\n", listing);
    CHECK(write_script("nvdisasm-good", body, good, sizeof good) == 0);
    CHECK(write_script("nvdisasm-bad", "echo 'nvdisasm fatal : not a cubin' >&2\nexit 4\n", bad, sizeof bad) ==
          0);
    CHECK(write_script("nvdisasm-slow", "exec sleep 30\n", slow, sizeof slow) == 0);

    char *text = NULL;
    size_t len = 0;
    char tool[512];
    setenv("KLAB_NVDISASM", good, 1);
    int kind = 0;
    char path[512];
    CHECK(sass_find_tool(path, sizeof path, &kind, &st) == KS_OK && kind == SASS_TOOL_NVDISASM);
    CHECK(strcmp(path, good) == 0);
    int rc = sass_disassemble("FAKECUBIN", 9, 10, &text, &len, tool, sizeof tool, &st);
    CHECKF(rc == KS_OK, "%s", st.msg);
    CHECK(strcmp(tool, good) == 0);
    CHECK(text && len == strlen(NVDISASM) && memcmp(text, NVDISASM, len) == 0);
    if (text) {
        sass_listing l;
        memset(&l, 0, sizeof l);
        CHECK(sass_parse(text, len, &l, &st) == KS_OK && l.n == 13);
        sass_listing_free(&l);
    }
    free(text);

    setenv("KLAB_NVDISASM", bad, 1);
    rc = sass_disassemble("FAKECUBIN", 9, 10, &text, &len, NULL, 0, &st);
    CHECKF(rc == KS_ECHILD && strstr(st.msg, "status 4") && strstr(st.msg, "not a cubin"), "%d %s", rc, st.msg);
    CHECK(text == NULL);

    setenv("KLAB_NVDISASM", slow, 1);
    rc = sass_disassemble("FAKECUBIN", 9, 0.3, &text, &len, NULL, 0, &st);
    CHECKF(rc == KS_ETIMEOUT, "%d %s", rc, st.msg);

    /* An explicit tool that does not exist falls through to cuobjdump and
     * the CUDA_HOME/PATH search; with nothing anywhere, ENOTFOUND. */
    setenv("KLAB_NVDISASM", "/nonexistent/nvdisasm", 1);
    setenv("KLAB_CUOBJDUMP", "/nonexistent/cuobjdump", 1);
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char *old_home = getenv("CUDA_HOME") ? strdup(getenv("CUDA_HOME")) : NULL;
    setenv("PATH", tmpdir, 1);
    setenv("CUDA_HOME", tmpdir, 1);
    rc = sass_find_tool(path, sizeof path, &kind, &st);
    CHECKF(rc == KS_ENOTFOUND && strstr(st.msg, "nvdisasm not found"), "%d %s", rc, st.msg);
    rc = sass_disassemble("FAKECUBIN", 9, 1, &text, &len, NULL, 0, &st);
    CHECK(rc == KS_ENOTFOUND);
    /* Found by PATH under its own name. */
    unsetenv("KLAB_NVDISASM");
    char named[512];
    CHECK(write_script("nvdisasm", body, named, sizeof named) == 0);
    rc = sass_find_tool(path, sizeof path, &kind, &st);
    CHECKF(rc == KS_OK && strcmp(path, named) == 0, "%d %s", rc, path);
    unlink(named);
    if (old_path)
        setenv("PATH", old_path, 1);
    if (old_home)
        setenv("CUDA_HOME", old_home, 1);
    else
        unsetenv("CUDA_HOME");
    free(old_path);
    free(old_home);
    unsetenv("KLAB_NVDISASM");
    unsetenv("KLAB_CUOBJDUMP");

    CHECK(sass_disassemble("", 0, 1, &text, &len, NULL, 0, &st) == KS_EINVAL);

    /* Two halves: start returns while the tool still runs (it waits for a
     * file that only appears after start returned), finish collects. */
    char gate[512], waiting[512], scratch[512], wbody[2048];
    snprintf(gate, sizeof gate, "%s/go", tmpdir);
    snprintf(scratch, sizeof scratch, "%s/scratch", tmpdir);
    CHECK(mkdir(scratch, 0700) == 0);
    snprintf(wbody, sizeof wbody, "while [ ! -e '%s' ]; do sleep 0.01; done\n%s", gate, body);
    CHECK(write_script("nvdisasm-waiting", wbody, waiting, sizeof waiting) == 0);
    char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", scratch, 1); /* to see that every temporary file goes */
    setenv("KLAB_NVDISASM", waiting, 1);
    sass_disasm *d = NULL;
    rc = sass_disasm_start("FAKECUBIN", 9, &d, &st);
    CHECKF(rc == KS_OK && d, "%d %s", rc, st.msg);
    CHECK(strcmp(sass_disasm_tool(d), waiting) == 0);
    CHECK(count_entries(scratch) == 1); /* one folder: the cubin, its listing, its stderr */
    FILE *g = fopen(gate, "w");
    CHECK(g != NULL);
    if (g)
        fclose(g);
    rc = sass_disasm_finish(d, 10, &text, &len, &st);
    CHECKF(rc == KS_OK && text && len == strlen(NVDISASM) && memcmp(text, NVDISASM, len) == 0, "%d %s", rc,
           st.msg);
    free(text);
    CHECK(sass_disasm_finish(d, 10, &text, &len, &st) == KS_EINVAL && text == NULL);
    sass_disasm_free(d);
    CHECK(count_entries(scratch) == 0);
    /* Freed while the tool runs: killed, reaped, files gone. */
    unlink(gate);
    d = NULL;
    CHECK(sass_disasm_start("FAKECUBIN", 9, &d, &st) == KS_OK && d);
    sass_disasm_free(d);
    CHECK(count_entries(scratch) == 0);
    CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD); /* no child left behind */
    /* Past its time: killed, ETIMEOUT. */
    CHECK(sass_disasm_start("FAKECUBIN", 9, &d, &st) == KS_OK && d);
    rc = sass_disasm_finish(d, 0.2, &text, &len, &st);
    CHECKF(rc == KS_ETIMEOUT && strstr(st.msg, "did not finish"), "%d %s", rc, st.msg);
    sass_disasm_free(d);
    CHECK(count_entries(scratch) == 0);
    sass_disasm_free(NULL);
    if (old_tmp)
        setenv("TMPDIR", old_tmp, 1);
    else
        unsetenv("TMPDIR");
    free(old_tmp);
    unsetenv("KLAB_NVDISASM");
    rmdir(scratch);
    unlink(waiting);

    unlink(good);
    unlink(bad);
    unlink(slow);
    unlink(listing);
    rmdir(tmpdir);
}

/* ---- profile: the table and CUPTI's offline tables ---- */

static void test_table(void)
{
    size_t n = 0;
    const profile_metric *t = profile_metric_table(&n);
    CHECK(t && n > 20);
    size_t gh = 0, gb = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(t[i].name && strchr(t[i].name, '.') && t[i].role && strchr(t[i].role, '.'));
        gh += strcmp(t[i].chip, "GH100") == 0;
        gb += strcmp(t[i].chip, "GB100") == 0;
    }
    CHECK(gh + gb == n);
    size_t m = 0;
    const profile_metric *r = profile_metrics_for("GH100", &m);
    CHECK(r && m == gh);
    for (size_t i = 0; r && i < m; i++)
        CHECK(strcmp(r[i].chip, "GH100") == 0);
    r = profile_metrics_for("GB110", &m);
    CHECK(r && m == gb && strcmp(r[0].chip, "GB100") == 0);
    CHECK(profile_metrics_for("GA100", &m) == NULL && m == 0);
    CHECK(profile_table_chip(NULL) == NULL);
    CHECK(strcmp(profile_table_chip("GB102"), "GB100") == 0);
    /* The H200-verified Hopper metrics are marked so; Blackwell's are not. */
    int verified_gh = 0, verified_gb = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].verified && strcmp(t[i].chip, "GH100") == 0)
            verified_gh++;
        if (t[i].verified && strcmp(t[i].chip, "GB100") == 0)
            verified_gb++;
    }
    CHECK(verified_gh >= 3 && verified_gb == 0);
}

static void test_offline_tables(void)
{
    ks_status st;
    ks_clear(&st);
    int rc = profile_load(&st);
    if (rc == KS_ENOLIB || rc == KS_ENOTFOUND || rc == KS_EUNSUPPORTED) {
        SKIP(st.msg);
        return;
    }
    CHECKF(rc == KS_OK, "%s", st.msg);
    const char *const *chips = NULL;
    size_t nc = 0;
    CHECKF(profile_chips(&chips, &nc, &st) == KS_OK, "%s", st.msg);
    int has_gh = 0, has_gb = 0;
    for (size_t i = 0; i < nc; i++) {
        has_gh |= strcmp(chips[i], "GH100") == 0;
        has_gb |= strcmp(chips[i], "GB100") == 0;
    }
    CHECK(has_gh && has_gb);

    const char *chip_names[] = {"GH100", "GB100"};
    for (int c = 0; c < 2; c++) {
        size_t m = 0;
        const profile_metric *r = profile_metrics_for(chip_names[c], &m);
        const char *names[64];
        int known[64];
        CHECK(m <= 64);
        for (size_t i = 0; i < m && i < 64; i++)
            names[i] = r[i].name;
        CHECKF(profile_check_metrics(chip_names[c], names, m, known, &st) == KS_OK, "%s", st.msg);
        for (size_t i = 0; i < m && i < 64; i++)
            CHECKF(known[i], "%s is not a metric of %s", names[i], chip_names[c]);
    }
    /* GB100 has no wgmma metrics; a made-up name exists nowhere. */
    const char *odd[] = {"sm__inst_executed_pipe_tensor_op_gmma.sum", "klab__no_such_metric.sum",
                         "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"};
    int known[3] = {7, 7, 7};
    CHECK(profile_check_metrics("GB100", odd, 3, known, &st) == KS_OK);
    CHECK(known[0] == 0 && known[1] == 0 && known[2] == 0);
    CHECK(profile_check_metrics("GH100", odd, 3, known, &st) == KS_OK);
    CHECK(known[0] == 1 && known[1] == 0 && known[2] == 1);
    /* An unknown chip is refused with CUPTI's error named. */
    rc = profile_check_metrics("GZ999", odd, 3, known, &st);
    CHECKF(rc == KS_EUNSUPPORTED && strstr(st.msg, "CUPTI_ERROR"), "%d %s", rc, st.msg);
    CHECK(profile_check_metrics(NULL, odd, 3, known, &st) == KS_EINVAL);
}

static void test_no_driver(void)
{
    ks_status st;
    ks_clear(&st);
    profile_session *s = (profile_session *)1;
    CHECK(profile_session_create(NULL, NULL, 0, &s, &st) == KS_EINVAL && s == NULL);
    CHECK(profile_session_measure(NULL, NULL, NULL, NULL, NULL, &st) == KS_EINVAL);
    profile_session_destroy(NULL);
    CHECK(profile_session_count(NULL) == 0 && isnan(profile_session_value(NULL, 0)));
    CHECK(sass_metrics_setup(NULL, &st) == KS_EINVAL);
    sass_record *recs = NULL;
    size_t nrec = 7;
    CHECK(sass_metrics_collect(NULL, NULL, NULL, &recs, &nrec, &st) == KS_EINVAL && nrec == 0);
    if (cuda_available(NULL, 0)) {
        SKIP("a driver is present: the no-driver refusals are not reachable");
        return;
    }
    char chip[64] = "x";
    int rc = profile_chip_name(0, chip, sizeof chip, &st);
    CHECKF(rc == KS_ENODRIVER && chip[0] == '\0', "%d %s", rc, st.msg);
    CHECK(profile_ready(&st) == KS_ENODRIVER);
    CHECK(profile_device_supported(0, &st) == KS_ENODRIVER);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = "test_sass";
    (void)argv;
    test_parse_nvdisasm();
    test_parse_cuobjdump();
    test_parse_edges();
    test_join();
    test_disassemble();
    test_table();
    test_offline_tables();
    test_no_driver();
    return check_done();
}
