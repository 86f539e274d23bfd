#include "io/color_icc.h"
#include <stdio.h>
#include <string.h>
#ifdef IMGPIPE_HAVE_LCMS2
#include <lcms2.h>
#endif

int color_icc_available(void)
{
#ifdef IMGPIPE_HAVE_LCMS2
    return 1;
#else
    return 0;
#endif
}

static int check_arguments(const unsigned char *icc, size_t icc_len, ip_dtype dtype, const void *cmyk, void *rgb,
                           int width, int height, char *err, size_t errlen)
{
    if (!cmyk || !rgb || width <= 0 || height <= 0 || (dtype != IP_U8 && dtype != IP_U16)) {
        snprintf(err, errlen, "CMYK conversion: bad arguments");
        return IP_EINVAL;
    }
    if (!icc || icc_len < 128 || icc_len > UINT32_MAX || memcmp(icc + 16, "CMYK", 4)) {
        snprintf(err, errlen, "the embedded ICC profile is not a CMYK profile");
        return IP_EFORMAT;
    }
    return IP_OK;
}

#ifdef IMGPIPE_HAVE_LCMS2
/* lcms2 reports through a handler of the context it was given, so nothing global is touched. */
typedef struct {
    char text[256];
    int have;
} lcms_log;

static void on_lcms_error(cmsContext ctx, cmsUInt32Number code, const char *text)
{
    (void)code;
    lcms_log *log = cmsGetContextUserData(ctx);
    if (log && !log->have) {
        snprintf(log->text, sizeof log->text, "%s", text);
        log->have = 1;
    }
}

/* No cache: the transform is then only read, so threads may share it (lcms2's documentation). */
static cmsHTRANSFORM make_transform(cmsContext ctx, const unsigned char *icc, size_t icc_len, ip_dtype dtype,
                                    int inverted)
{
    cmsHPROFILE in = cmsOpenProfileFromMemTHR(ctx, icc, (cmsUInt32Number)icc_len);
    cmsHPROFILE out = in ? cmsCreate_sRGBProfileTHR(ctx) : NULL;
    cmsHTRANSFORM xf = NULL;
    if (in && out && cmsGetColorSpace(in) == cmsSigCmykData) {
        cmsUInt32Number in_fmt = dtype == IP_U8 ? (inverted ? TYPE_CMYK_8_REV : TYPE_CMYK_8)
                                                : (inverted ? TYPE_CMYK_16_REV : TYPE_CMYK_16);
        cmsUInt32Number out_fmt = dtype == IP_U8 ? TYPE_RGB_8 : TYPE_RGB_16;
        xf = cmsCreateTransformTHR(ctx, in, in_fmt, out, out_fmt, INTENT_PERCEPTUAL, cmsFLAGS_NOCACHE);
    }
    if (in) cmsCloseProfile(in);
    if (out) cmsCloseProfile(out);
    return xf;
}
#endif

int color_icc_cmyk_to_rgb(const unsigned char *icc, size_t icc_len, ip_dtype dtype, int inverted,
                          const void *cmyk, ptrdiff_t cmyk_stride, void *rgb, ptrdiff_t rgb_stride, int width,
                          int height, int threads, char *err, size_t errlen)
{
#ifdef IMGPIPE_HAVE_LCMS2
    int rc = check_arguments(icc, icc_len, dtype, cmyk, rgb, width, height, err, errlen);
    if (rc) return rc;
    lcms_log log = { "", 0 };
    cmsContext ctx = cmsCreateContext(NULL, &log);
    if (!ctx) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    cmsSetLogErrorHandlerTHR(ctx, on_lcms_error);
    cmsHTRANSFORM xf = make_transform(ctx, icc, icc_len, dtype, inverted);
    if (!xf) {
        snprintf(err, errlen, "cannot use the embedded CMYK ICC profile%s%s", log.have ? ": " : "", log.text);
        cmsDeleteContext(ctx);
        return IP_EFORMAT;
    }
    if (threads < 1) threads = 1;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int y = 0; y < height; y++)
        cmsDoTransform(xf, (const char *)cmyk + (ptrdiff_t)y * cmyk_stride, (char *)rgb + (ptrdiff_t)y * rgb_stride,
                       (cmsUInt32Number)width);
    cmsDeleteTransform(xf);
    cmsDeleteContext(ctx);
    return IP_OK;
#else
    (void)icc, (void)icc_len, (void)dtype, (void)inverted, (void)cmyk, (void)cmyk_stride, (void)rgb, (void)rgb_stride;
    (void)width, (void)height, (void)threads, (void)check_arguments;
    snprintf(err, errlen, "imgpipe was built without lcms2: CMYK converted without its ICC profile");
    return IP_EUNSUPPORTED;
#endif
}
