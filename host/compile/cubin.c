/*
 * cubin.c: a bounds-checked reader for CUDA ELF files (see cubin.h).
 *
 * .nv.info sections are sequences of EIATTR records: byte 0 is the format
 * (1 = no value, 2 = 8-bit value, 3 = 16-bit value, 4 = a 16-bit size
 * followed by that many payload bytes), byte 1 the attribute id. The
 * global .nv.info keys per-function figures by symbol index; the per-kernel
 * .nv.info.<name> holds the kernel's own attributes.
 */
#include "compile/cubin.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

enum {
    EIATTR_FRAME_SIZE = 0x11,
    EIATTR_MIN_STACK_SIZE = 0x12,
    EIATTR_KPARAM_INFO = 0x17,
    EIATTR_CBANK_PARAM_SIZE = 0x19,
    EIATTR_MAXREG_COUNT = 0x1b,
    EIATTR_MAX_STACK_SIZE = 0x23,
    EIATTR_REGCOUNT = 0x2f,
    EIATTR_NUM_MBARRIERS = 0x38,
    EIATTR_TCGEN05_1CTA_USED = 0x51,
    EIATTR_TCGEN05_2CTA_USED = 0x52,
    EIATTR_REG_RECONFIG = 0x54,
};

typedef struct reader {
    const unsigned char *p;
    size_t n;
} reader;

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* 1 when [off, off+len) lies inside the file. */
static int inside(const reader *r, uint64_t off, uint64_t len)
{
    return off <= r->n && len <= r->n - off;
}

/* A NUL-terminated string at offset off of a string table, or NULL. */
static const char *str_at(const reader *r, const Elf64_Shdr *tab, uint64_t off)
{
    if (!tab || off >= tab->sh_size || !inside(r, tab->sh_offset, tab->sh_size))
        return NULL;
    const char *s = (const char *)r->p + tab->sh_offset + off;
    if (!memchr(s, '\0', tab->sh_size - off))
        return NULL;
    return s;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

void cubin_free(cubin_info *ci)
{
    if (!ci)
        return;
    for (int i = 0; i < ci->nkernels; i++) {
        free(ci->kernels[i].name);
        free(ci->kernels[i].params);
    }
    for (int i = 0; i < ci->nsymbols; i++)
        free(ci->symbols[i].name);
    for (int i = 0; i < ci->nglobals; i++)
        free(ci->globals[i].name);
    free(ci->globals);
    free(ci->kernels);
    free(ci->symbols);
    memset(ci, 0, sizeof *ci);
}

const cubin_kernel *cubin_find_kernel(const cubin_info *ci, const char *name)
{
    for (int i = 0; i < ci->nkernels; i++)
        if (strcmp(ci->kernels[i].name, name) == 0)
            return &ci->kernels[i];
    return NULL;
}

static cubin_kernel *kernel_by_sym(cubin_info *ci, uint32_t sym)
{
    for (int i = 0; i < ci->nkernels; i++)
        if ((uint32_t)ci->kernels[i].sym == sym)
            return &ci->kernels[i];
    return NULL;
}

/* Walks the EIATTR records of one .nv.info section. k is the kernel of a
 * per-kernel section, NULL for the global one. KS_EPROTO if malformed. */
static int walk_info(const unsigned char *p, size_t n, cubin_info *ci, cubin_kernel *k,
                     ks_status *st, const char *secname)
{
    size_t i = 0;
    while (i + 4 <= n) {
        unsigned fmt = p[i], attr = p[i + 1];
        size_t len = 0;
        const unsigned char *val = p + i + 2;   /* 16-bit value or size */
        if (fmt == 4) {
            len = rd16(p + i + 2);
            if (len > n - i - 4)
                return ks_fail(st, KS_EPROTO, 0, "cubin: EIATTR 0x%02x overruns %s", attr, secname);
        } else if (fmt < 1 || fmt > 3) {
            return ks_fail(st, KS_EPROTO, 0, "cubin: bad EIATTR format %u in %s", fmt, secname);
        }
        const unsigned char *pay = p + i + 4;
        if (!k) {
            /* Global records: {symbol index, value}. */
            if (fmt == 4 && len >= 8) {
                cubin_kernel *t = kernel_by_sym(ci, rd32(pay));
                uint32_t v = rd32(pay + 4);
                if (t) {
                    if (attr == EIATTR_REGCOUNT)
                        t->registers = (int)v;
                    else if (attr == EIATTR_FRAME_SIZE)
                        t->frame_bytes = v;
                    else if (attr == EIATTR_MAX_STACK_SIZE)
                        t->max_stack = v;
                }
            }
        } else {
            switch (attr) {
            case EIATTR_CBANK_PARAM_SIZE:
                if (fmt == 3)
                    k->param_bytes = rd16(val);
                break;
            case EIATTR_KPARAM_INFO:
                /* {u32 index, u16 ordinal, u16 offset, u32 flags}; the
                 * parameter's size is the flags' bits 18..31. */
                if (fmt == 4 && len >= 12) {
                    cubin_param *grown = realloc(k->params, sizeof *grown * (size_t)(k->nparams + 1));
                    if (!grown)
                        return ks_fail(st, KS_ENOMEM, 0, "cubin: out of memory");
                    k->params = grown;
                    grown[k->nparams].ordinal = rd16(pay + 4);
                    grown[k->nparams].offset = rd16(pay + 6);
                    grown[k->nparams].size = rd32(pay + 8) >> 18;
                    k->nparams++;
                } else {
                    k->params_unread = 1;
                }
                break;
            case EIATTR_MAXREG_COUNT:
                if (fmt == 3)
                    k->max_reg_count = rd16(val);
                break;
            case EIATTR_NUM_MBARRIERS:
                if (fmt == 4 && len >= 4)
                    k->mbarriers = (int)rd32(pay);
                else if (fmt == 3)
                    k->mbarriers = rd16(val);
                else
                    k->mbarriers = k->mbarriers ? k->mbarriers : 1;
                break;
            case EIATTR_TCGEN05_1CTA_USED:
                if (k->tcgen05 < 1)
                    k->tcgen05 = 1;
                break;
            case EIATTR_TCGEN05_2CTA_USED:
                k->tcgen05 = 2;
                break;
            case EIATTR_REG_RECONFIG:
                k->reg_reconfig = 1;
                break;
            default:
                break;
            }
        }
        i += 4 + len;
    }
    return KS_OK;
}

int cubin_parse(const void *data, size_t size, cubin_info *ci, ks_status *st)
{
    memset(ci, 0, sizeof *ci);
    reader r = {data, size};
    Elf64_Ehdr eh;
    if (size < sizeof eh)
        return ks_fail(st, KS_EPROTO, 0, "cubin: %zu bytes is too short for an ELF header", size);
    memcpy(&eh, data, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
        return ks_fail(st, KS_EPROTO, 0, "cubin: not an ELF file");
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
        return ks_fail(st, KS_EPROTO, 0, "cubin: not a 64-bit little-endian ELF");
    if (eh.e_machine != CUBIN_EM_CUDA)
        return ks_fail(st, KS_EPROTO, 0, "cubin: e_machine is %u, not %d (EM_CUDA)",
                       (unsigned)eh.e_machine, CUBIN_EM_CUDA);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
        !inside(&r, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)) ||
        eh.e_shstrndx >= eh.e_shnum)
        return ks_fail(st, KS_EPROTO, 0, "cubin: bad section header table");
    ci->elf_type = eh.e_type;
    ci->e_flags = eh.e_flags;
    ci->sm = (int)((eh.e_flags >> 8) & 0xff);

    int nsec = eh.e_shnum;
    Elf64_Shdr *sh = malloc(sizeof *sh * (size_t)nsec);
    if (!sh)
        return ks_fail(st, KS_ENOMEM, 0, "cubin: out of memory");
    memcpy(sh, r.p + eh.e_shoff, sizeof *sh * (size_t)nsec);
    const Elf64_Shdr *shstr = &sh[eh.e_shstrndx];
    int rc = KS_OK;

    /* Symbols. */
    int symsec = -1;
    for (int i = 0; i < nsec; i++)
        if (sh[i].sh_type == SHT_SYMTAB) {
            symsec = i;
            break;
        }
    if (symsec >= 0) {
        const Elf64_Shdr *s = &sh[symsec];
        if (s->sh_entsize != sizeof(Elf64_Sym) || !inside(&r, s->sh_offset, s->sh_size) ||
            s->sh_link >= (unsigned)nsec) {
            rc = ks_fail(st, KS_EPROTO, 0, "cubin: bad .symtab");
            goto out;
        }
        const Elf64_Shdr *strtab = &sh[s->sh_link];
        size_t nsym = s->sh_size / sizeof(Elf64_Sym);
        ci->symbols = calloc(nsym ? nsym : 1, sizeof *ci->symbols);
        ci->kernels = calloc(nsym ? nsym : 1, sizeof *ci->kernels);
        if (!ci->symbols || !ci->kernels) {
            rc = ks_fail(st, KS_ENOMEM, 0, "cubin: out of memory");
            goto out;
        }
        for (size_t i = 0; i < nsym; i++) {
            Elf64_Sym sym;
            memcpy(&sym, r.p + s->sh_offset + i * sizeof sym, sizeof sym);
            const char *name = str_at(&r, strtab, sym.st_name);
            if (!name) {
                rc = ks_fail(st, KS_EPROTO, 0, "cubin: symbol %zu has a bad name", i);
                goto out;
            }
            cubin_symbol *cs = &ci->symbols[ci->nsymbols];
            if (!(cs->name = dup_str(name))) {
                rc = ks_fail(st, KS_ENOMEM, 0, "cubin: out of memory");
                goto out;
            }
            ci->nsymbols++;
            cs->bind = ELF64_ST_BIND(sym.st_info);
            cs->type = ELF64_ST_TYPE(sym.st_info);
            cs->other = sym.st_other;
            cs->undefined = sym.st_shndx == SHN_UNDEF;
            cs->shndx = sym.st_shndx;
            if (strncmp(name, ".nv.reservedSmem", 16) == 0)
                ci->reserved_smem = 1;
            if (cs->type == STT_FUNC && !cs->undefined && (cs->other & CUBIN_STO_ENTRY)) {
                cubin_kernel *k = &ci->kernels[ci->nkernels];
                if (!(k->name = dup_str(name))) {
                    rc = ks_fail(st, KS_ENOMEM, 0, "cubin: out of memory");
                    goto out;
                }
                ci->nkernels++;
                k->sym = (int)i;
                k->registers = -1;
                k->max_stack = -1;
                k->param_bytes = -1;
                k->max_reg_count = -1;
            }
        }
    }

    /* Writable globals: data objects defined in .nv.global(.init). */
    if (symsec >= 0) {
        const Elf64_Shdr *s = &sh[symsec];
        size_t nsym = s->sh_size / sizeof(Elf64_Sym);
        ci->globals = calloc(nsym ? nsym : 1, sizeof *ci->globals);
        if (!ci->globals) {
            rc = ks_fail(st, KS_ENOMEM, 0, "cubin: out of memory");
            goto out;
        }
        for (size_t i = 0; i < nsym; i++) {
            Elf64_Sym sym;
            memcpy(&sym, r.p + s->sh_offset + i * sizeof sym, sizeof sym);
            if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF ||
                sym.st_shndx >= (unsigned)nsec)
                continue;
            const char *sec = str_at(&r, shstr, sh[sym.st_shndx].sh_name);
            const char *which = NULL;
            if (sec && strcmp(sec, ".nv.global") == 0)
                which = ".nv.global";
            else if (sec && strcmp(sec, ".nv.global.init") == 0)
                which = ".nv.global.init";
            if (!which)
                continue;
            cubin_global *g = &ci->globals[ci->nglobals];
            if (!(g->name = dup_str(ci->symbols[i].name))) {
                rc = ks_fail(st, KS_ENOMEM, 0, "cubin: out of memory");
                goto out;
            }
            ci->nglobals++;
            g->section = which;
            g->offset = sym.st_value;
            g->bytes = sym.st_size;
            g->section_bytes = sh[sym.st_shndx].sh_size;
            g->bind = ELF64_ST_BIND(sym.st_info);
        }
    }

    /* Sections: .nv.info (global), .nv.info.<k>, .nv.shared.<k>, .text.<k>. */
    for (int i = 0; i < nsec; i++) {
        const char *name = str_at(&r, shstr, sh[i].sh_name);
        if (!name)
            continue;
        uint64_t secsize = sh[i].sh_size;
        if (strncmp(name, ".nv.shared.", 11) == 0) {
            cubin_kernel *k = (cubin_kernel *)cubin_find_kernel(ci, name + 11);
            if (k)
                k->shared_section = (long)secsize;   /* NOBITS: no file bytes */
            continue;
        }
        if (strncmp(name, ".text.", 6) == 0) {
            cubin_kernel *k = (cubin_kernel *)cubin_find_kernel(ci, name + 6);
            if (k)
                k->text_bytes = (long)secsize;
            continue;
        }
        if (strncmp(name, ".nv.info", 8) != 0 || (name[8] != '\0' && name[8] != '.'))
            continue;
        if (!inside(&r, sh[i].sh_offset, secsize)) {
            rc = ks_fail(st, KS_EPROTO, 0, "cubin: section %s overruns the file", name);
            goto out;
        }
        cubin_kernel *k = NULL;
        if (name[8] == '.') {
            k = (cubin_kernel *)cubin_find_kernel(ci, name + 9);
            if (!k)
                continue;       /* info for a non-entry function */
        }
        rc = walk_info(r.p + sh[i].sh_offset, secsize, ci, k, st, name);
        if (rc)
            goto out;
    }

out:
    free(sh);
    if (rc)
        cubin_free(ci);
    return rc;
}
