/*
 * cubin.h: reads what klab needs from a CUDA cubin (an ELF file with
 * e_machine 190, EM_CUDA) without a GPU: the entry kernels with their
 * registers, stack frame, static shared memory and EIATTR hints, the
 * symbols (to reject device-side launches and unresolved code), the ELF
 * type and the SM the cubin was built for. See notes/cuda.md 5.3.
 *
 * Every read is bounds-checked: a truncated or hostile file gives
 * KS_EPROTO, never a crash.
 */
#ifndef KLAB_HOST_CUBIN_H
#define KLAB_HOST_CUBIN_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define CUBIN_EM_CUDA 190
#define CUBIN_STO_ENTRY 0x10        /* st_other bit of a kernel entry symbol */

/* One kernel parameter as EIATTR_KPARAM_INFO gives it: its place in the
 * parameter list and its bytes in the parameter space. */
typedef struct cubin_param {
    int ordinal;                    /* 0 for the first parameter */
    long offset;                    /* bytes from the start of the parameters */
    long size;                      /* bytes */
} cubin_param;

typedef struct cubin_kernel {
    char *name;
    int sym;                        /* index in .symtab */
    int registers;                  /* EIATTR_REGCOUNT; -1 when absent */
    long frame_bytes;               /* EIATTR_FRAME_SIZE: stack frame per thread */
    long max_stack;                 /* EIATTR_MAX_STACK_SIZE; -1 when absent */
    long shared_section;            /* size of .nv.shared.<name>; on sm_90 and later
                                       this includes the 1 KiB the system reserves */
    long text_bytes;                /* size of .text.<name> */
    long param_bytes;               /* EIATTR_CBANK_PARAM_SIZE; -1 when absent */
    int nparams;                    /* number of EIATTR_KPARAM_INFO records read */
    cubin_param *params;            /* those records, in the cubin's order */
    int params_unread;              /* a record of a form this reader does not know */
    int max_reg_count;              /* EIATTR_MAXREG_COUNT; -1 when absent */
    int tcgen05;                    /* 0, 1 (EIATTR_TCGEN05_1CTA_USED) or 2 (_2CTA_USED) */
    int reg_reconfig;               /* EIATTR_REG_RECONFIG present (setmaxnreg) */
    int mbarriers;                  /* EIATTR_NUM_MBARRIERS value; 0 when absent */
} cubin_kernel;

typedef struct cubin_symbol {
    char *name;
    unsigned char bind;             /* STB_LOCAL, STB_GLOBAL, STB_WEAK */
    unsigned char type;             /* STT_FUNC, STT_OBJECT, ... */
    unsigned char other;
    int undefined;                  /* st_shndx == SHN_UNDEF */
    unsigned shndx;                 /* section index (st_shndx) */
} cubin_symbol;

/* A module global: a defined data object in a writable global section
 * (.nv.global, zero-initialised; .nv.global.init, initialised), which a
 * kernel can write and which keeps its contents from launch to launch. */
typedef struct cubin_global {
    char *name;
    const char *section;            /* ".nv.global" or ".nv.global.init" (static strings) */
    uint64_t offset;                /* st_value: offset in the section */
    uint64_t bytes;                 /* st_size */
    uint64_t section_bytes;         /* the whole section's size */
    unsigned char bind;             /* STB_LOCAL (static), STB_GLOBAL, STB_WEAK */
} cubin_global;

typedef struct cubin_info {
    int elf_type;                   /* ET_EXEC (2) for a loadable cubin, ET_REL (1) relocatable */
    int sm;                         /* e_flags bits 8..15, e.g. 90 or 100 */
    unsigned e_flags;
    cubin_kernel *kernels;
    int nkernels;
    cubin_symbol *symbols;
    int nsymbols;
    int reserved_smem;              /* the cubin has .nv.reservedSmem.* symbols */
    cubin_global *globals;          /* writable module globals */
    int nglobals;
} cubin_info;

/* Parses data[0..size). On success *out owns allocations freed by
 * cubin_free. KS_EPROTO when it is not a well-formed CUDA ELF,
 * KS_ENOMEM on allocation failure. */
int cubin_parse(const void *data, size_t size, cubin_info *out, ks_status *st);

/* Frees what cubin_parse allocated; idempotent, leaves *ci zeroed. */
void cubin_free(cubin_info *ci);

/* The kernel named name, or NULL. */
const cubin_kernel *cubin_find_kernel(const cubin_info *ci, const char *name);

#endif
