/* Until the GPU PNG encoder lands: nothing is encodable, and the run writes PNG on the CPU. */
#include "io/png_gpu.h"
#include <stdio.h>

int png_gpu_encodable(const ip_image *dev_out, const io_options *opt)
{
    (void)dev_out, (void)opt;
    return 0;
}

int png_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                  char *err, size_t errlen)
{
    (void)c, (void)dev_out, (void)path, (void)opt;
    snprintf(err, errlen, "PNG on the GPU is not built yet");
    return IP_EUNSUPPORTED;
}
