/* The input probed once: one open of the file, its format from its first bytes and its metadata
 * (for the output, and for the orientation that decides whether it can stream), handed on. */
#include <stdio.h>
#include <string.h>
#include "run/run_internal.h"

int run_probe_input(const run_source *in, const run_options *o, run_probe *pr, char *err, size_t errlen)
{
    memset(pr, 0, sizeof *pr);
    meta_init(&pr->meta);
    if (!in->path) return IP_OK;
    int rc = io_input_open(in->path, &pr->input, err, errlen);
    if (rc != IP_OK) return rc;
    pr->format = pr->input.format;
    if (fseek(pr->input.file, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot read: cannot go back to the file's start");
        return IP_EIO;
    }
    if (meta_read(pr->input.file, pr->format, o->io.page, &pr->meta) != IP_OK) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    pr->turned = o->io.autorotate && pr->meta.orientation != 1;
    return IP_OK;
}

void run_probe_clear(run_probe *pr)
{
    io_input_close(&pr->input);
    meta_clear(&pr->meta);
}
