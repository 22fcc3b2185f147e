/*
 * dynlib.c: run-time loading of the CUDA libraries (see dynlib.h).
 */
#include "driver/dynlib.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KLAB_CUDA_HOME
#define KLAB_CUDA_HOME "/usr/local/cuda"
#endif

/* ---- versions ----------------------------------------------------------- */

static int nvrtc_version(const dynlib *lib, char *buf, size_t n, ks_status *st)
{
    int (*fn)(int *, int *);
    int major = 0, minor = 0;
    if (dynlib_sym(lib, "nvrtcVersion", (void **)&fn, st))
        return st->code;
    int rc = fn(&major, &minor);
    if (rc != 0)
        return ks_fail(st, KS_ENOLIB, rc, "nvrtcVersion failed (nvrtcResult %d)", rc);
    snprintf(buf, n, "%d.%d", major, minor);
    return KS_OK;
}

static int cupti_version(const dynlib *lib, char *buf, size_t n, ks_status *st)
{
    int (*fn)(uint32_t *);
    uint32_t v = 0;
    if (dynlib_sym(lib, "cuptiGetVersion", (void **)&fn, st))
        return st->code;
    int rc = fn(&v);
    if (rc != 0)
        return ks_fail(st, KS_ENOLIB, rc, "cuptiGetVersion failed (CUptiResult %d)", rc);
    /* CUPTI's API version is an integer (e.g. 130001), not a release number. */
    snprintf(buf, n, "API %u", (unsigned)v);
    return KS_OK;
}

/* cuBLASLt and cuDNN 9 encode major*10000 + minor*100 + patch. */
static void dotted(char *buf, size_t n, size_t v)
{
    snprintf(buf, n, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}

static int cublaslt_version(const dynlib *lib, char *buf, size_t n, ks_status *st)
{
    size_t (*fn)(void);
    if (dynlib_sym(lib, "cublasLtGetVersion", (void **)&fn, st))
        return st->code;
    dotted(buf, n, fn());
    return KS_OK;
}

static int cudnn_version(const dynlib *lib, char *buf, size_t n, ks_status *st)
{
    size_t (*fn)(void);
    if (dynlib_sym(lib, "cudnnGetVersion", (void **)&fn, st))
        return st->code;
    dotted(buf, n, fn());
    return KS_OK;
}

/* ---- descriptors -------------------------------------------------------- */

static const char *const nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so", NULL};
static const char *const cupti_names[] = {"libcupti.so.13", "libcupti.so", NULL};
static const char *const cublaslt_names[] = {"libcublasLt.so.13", "libcublasLt.so", NULL};
static const char *const cudnn_names[] = {"libcudnn.so.9", "libcudnn.so", NULL};

const dynlib_desc dynlib_nvrtc = {"nvrtc", "KLAB_NVRTC", nvrtc_names, nvrtc_version};
const dynlib_desc dynlib_cupti = {"cupti", "KLAB_CUPTI", cupti_names, cupti_version};
const dynlib_desc dynlib_cublaslt = {"cublasLt", "KLAB_CUBLASLT", cublaslt_names, cublaslt_version};
const dynlib_desc dynlib_cudnn = {"cudnn", "KLAB_CUDNN", cudnn_names, cudnn_version};

/* ---- opening ------------------------------------------------------------ */

const char *dynlib_cuda_home(void)
{
    const char *h = getenv("CUDA_HOME");
    if (h && *h)
        return h;
    return KLAB_CUDA_HOME[0] ? KLAB_CUDA_HOME : "/usr/local/cuda";
}

/* Appends "; <what>: <why>" to the attempt list, truncating quietly. */
static void note(char *tried, size_t n, const char *what, const char *why)
{
    size_t used = strlen(tried);
    if (used + 1 >= n)
        return;
    snprintf(tried + used, n - used, "%s%s (%s)", used ? "; " : "", what, why ? why : "failed");
}

/* dlopen one candidate; on success fill out, on failure add to tried. */
static int try_open(const char *file, const char *how, dynlib *out, char *tried, size_t n)
{
    dlerror();
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        /* dlerror repeats the file name; keep only the reason after it. */
        const char *why = e ? strrchr(e, ':') : NULL;
        why = why ? why + 1 : e;
        while (why && *why == ' ')
            why++;
        note(tried, n, file, why);
        return 0;
    }
    out->handle = h;
    snprintf(out->how, sizeof out->how, "%s", how);
    /* Record the real file: for a soname search only the loader knows it. */
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
        snprintf(out->path, sizeof out->path, "%s", lm->l_name);
    else
        snprintf(out->path, sizeof out->path, "%s", file);
    return 1;
}

int dynlib_open(const dynlib_desc *d, dynlib *out, ks_status *st)
{
    char tried[KS_MSG_MAX];
    char file[DYNLIB_PATH_MAX];
    tried[0] = '\0';
    memset(out, 0, sizeof *out);
    out->desc = d;
    if (!d || !d->name || !d->sonames)
        return ks_fail(st, KS_EINVAL, 0, "dynlib_open: bad library descriptor");

    const char *env = d->env ? getenv(d->env) : NULL;
    if (env && *env) {
        if (try_open(env, "env", out, tried, sizeof tried))
            return KS_OK;
        return ks_fail(st, KS_ENOLIB, 0, "cannot load %s from %s=%s: %s", d->name, d->env, env,
                       tried);
    }

    const char *home = dynlib_cuda_home();
    for (const char *const *s = d->sonames; *s; s++) {
        snprintf(file, sizeof file, "%s/lib64/%s", home, *s);
        if (try_open(file, "CUDA_HOME", out, tried, sizeof tried))
            return KS_OK;
    }
    for (const char *const *s = d->sonames; *s; s++)
        if (try_open(*s, "soname", out, tried, sizeof tried))
            return KS_OK;

    return ks_fail(st, KS_ENOLIB, 0, "cannot load %s (set %s to its full path or CUDA_HOME); tried: %s",
                   d->name, d->env ? d->env : "CUDA_HOME", tried);
}

void dynlib_close(dynlib *lib)
{
    if (lib && lib->handle) {
        void *h = lib->handle;
        lib->handle = NULL;
        dlclose(h);
    }
}

int dynlib_sym(const dynlib *lib, const char *symbol, void **out, ks_status *st)
{
    *out = NULL;
    if (!lib || !lib->handle)
        return ks_fail(st, KS_EINVAL, 0, "dynlib_sym(%s): library not open", symbol);
    dlerror();
    void *p = dlsym(lib->handle, symbol);
    const char *e = dlerror();
    if (!p || e)
        return ks_fail(st, KS_ENOTFOUND, 0, "symbol %s not found in %s (%s)", symbol, lib->path,
                       lib->desc ? lib->desc->name : "?");
    *out = p;
    return KS_OK;
}

int dynlib_bind(const dynlib *lib, const dynlib_symbol *syms, size_t n, ks_status *st)
{
    if (!lib)
        return st->code ? st->code : ks_fail(st, KS_ENOLIB, 0, "dynlib_bind: no library");
    for (size_t i = 0; i < n; i++) {
        ks_status ignore;
        ks_clear(&ignore);
        if (dynlib_sym(lib, syms[i].name, syms[i].slot, syms[i].optional ? &ignore : st) != KS_OK &&
            !syms[i].optional) {
            for (size_t k = 0; k < n; k++)
                *syms[k].slot = NULL;
            return st->code;
        }
    }
    return KS_OK;
}

/* ---- process-wide handles ----------------------------------------------- */

#define DYNLIB_SLOTS 16

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static dynlib *slots[DYNLIB_SLOTS];

const dynlib *dynlib_get(const dynlib_desc *d, ks_status *st)
{
    const dynlib *found = NULL;
    pthread_mutex_lock(&slots_mu);
    int free_slot = -1;
    for (int i = 0; i < DYNLIB_SLOTS; i++) {
        if (slots[i] && slots[i]->desc == d) {
            found = slots[i];
            break;
        }
        if (!slots[i] && free_slot < 0)
            free_slot = i;
    }
    if (!found) {
        dynlib *lib = calloc(1, sizeof *lib);
        if (!lib)
            ks_fail(st, KS_ENOMEM, 0, "out of memory loading %s", d->name);
        else if (free_slot < 0) {
            free(lib);
            ks_fail(st, KS_ENOMEM, 0, "too many libraries for dynlib_get (%d)", DYNLIB_SLOTS);
        } else if (dynlib_open(d, lib, st) == KS_OK) {
            slots[free_slot] = lib;
            found = lib;
        } else
            free(lib);
    }
    pthread_mutex_unlock(&slots_mu);
    return found;
}

int dynlib_version(const dynlib_desc *d, char *buf, size_t n, ks_status *st)
{
    if (n)
        buf[0] = '\0';
    const dynlib *lib = dynlib_get(d, st);
    if (!lib)
        return st->code;
    if (!d->version)
        return ks_fail(st, KS_EUNSUPPORTED, 0, "%s has no version call", d->name);
    int rc = d->version(lib, buf, n, st);
    if (rc && n)
        buf[0] = '\0';
    return rc;
}
