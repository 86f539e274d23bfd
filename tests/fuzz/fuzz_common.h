/* Shared by the fuzz harnesses: the limits a run has, scaled for a fuzzer's memory budget. */
#ifndef IMGPIPE_FUZZ_COMMON_H
#define IMGPIPE_FUZZ_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include "io/io.h"

/* 4 Mpixel, as --max-pixels would set it: every decoder's pixel limit is exercised, a 4-channel
 * float image stays far within libFuzzer's -rss_limit_mb=2048, and a header claiming a large image
 * costs little time (16 Mpixel held the TIFF harness to 15 inputs a second). */
#define FUZZ_MAX_PIXELS ((uint64_t)1 << 22)

static inline io_options fuzz_io_options(void)
{
    io_options opt;
    io_default_options(&opt);
    opt.max_pixels = FUZZ_MAX_PIXELS;
    opt.threads = 2;   /* the parallel TIFF and PNG paths, with fewer threads than blocks */
    return opt;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif
