/* status.c: the status object shared by every host/ module. */
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ks_clear(ks_status *st)
{
    st->code = KS_OK;
    st->sub = 0;
    st->msg[0] = '\0';
}

int ks_fail(ks_status *st, int code, int sub, const char *fmt, ...)
{
    va_list ap;
    st->code = code;
    st->sub = sub;
    va_start(ap, fmt);
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    /* Messages are one line: a model or a log reader sees them as such. */
    for (char *p = st->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return code;
}

const char *ks_code_name(int code)
{
    switch (code) {
    case KS_OK: return "OK";
    case KS_EINVAL: return "EINVAL";
    case KS_ENOMEM: return "ENOMEM";
    case KS_EIO: return "EIO";
    case KS_ENODRIVER: return "ENODRIVER";
    case KS_ENOLIB: return "ENOLIB";
    case KS_ECUDA: return "ECUDA";
    case KS_ECOMPILE: return "ECOMPILE";
    case KS_EREJECT: return "EREJECT";
    case KS_ETIMEOUT: return "ETIMEOUT";
    case KS_ECHILD: return "ECHILD";
    case KS_EPROTO: return "EPROTO";
    case KS_ENOTFOUND: return "ENOTFOUND";
    case KS_EUNSUPPORTED: return "EUNSUPPORTED";
    case KS_EAGAIN: return "EAGAIN";
    }
    return "EUNKNOWN";
}
