/* Shared by the in-tree plugins: ABI images to kernel views, and the border choices. */
#ifndef IMGPIPE_PLUGIN_ADAPT_H
#define IMGPIPE_PLUGIN_ADAPT_H
#include <stdio.h>
#include "imgpipe/plugin.h"
#include "ipk.h"

/* In the order of ipk_border's values, so a choice index is the border code. */
#define ADAPT_BORDER_CHOICES "replicate|reflect101|zero|shrink"

static inline ipk_img adapt_img(const ip_image *im)
{
    ipk_img k = { im->data, im->stride, im->shape.width, im->shape.height, im->shape.channels,
                  (ipk_dtype)im->shape.dtype };
    return k;
}

/* Turns a kernel status into the stage's error return with a message. */
static inline int adapt_status(int rc, const char *stage, const ip_exec *ex)
{
    if (rc == IPK_OK) return IP_OK;
    const char *what = rc == IPK_EINVAL ? "invalid image for this stage"
                     : rc == IPK_ENOMEM ? "out of memory"
                     : rc == IPK_ECUDA  ? "CUDA kernel launch failed"
                                        : "kernel failed";
    if (ex->err && ex->errlen) snprintf(ex->err, ex->errlen, "%s: %s", stage, what);
    return rc == IPK_ENOMEM ? IP_ENOMEM : rc == IPK_ECUDA ? IP_ECUDA : IP_EINVAL;
}

static inline const char *adapt_dtype_name(ip_dtype t)
{
    return t == IP_U8 ? "8-bit" : t == IP_U16 ? "16-bit" : "32-bit float";
}
#endif
