/* Warnings of the readers: damage a decoder can go past, kept for the command line to report. */
#include "io/io.h"
#include <stdio.h>

void io_warnings_add(io_warnings *w, int count, const char *message)
{
    if (!w || count <= 0) return;
    /* Codec threads of one image may warn at once. */
#pragma omp critical(io_warnings_add)
    {
        if (w->count == 0) snprintf(w->first, sizeof w->first, "%s", message);
        w->count += count;
    }
}

int io_warn(const io_options *opt, int count, const char *message, char *err, size_t errlen)
{
    if (opt->fail_on == IO_FAIL_ON_WARNING) {
        snprintf(err, errlen, "%s (refused: --fail-on warning)", message);
        return IP_EFORMAT;
    }
    io_warnings_add(opt->warnings, count, message);
    return IP_OK;
}
