/* A CMYK ICC profile made with lcms2 for the tests (the unit test of color_icc and the
 * cmyk_profile_write tool): version 2, output class, an AToB0 table holding the plain formula
 * R = (1 - C)(1 - K) (G from M, B from Y) in Lab, or the same with red and blue exchanged. */
#ifndef IMGPIPE_TESTS_ICC_MAKE_H
#define IMGPIPE_TESTS_ICC_MAKE_H
#include <stdlib.h>
#include <lcms2.h>

typedef struct {
    cmsHTRANSFORM rgb_to_lab;
    int swap_red_blue;
} sampler_cargo;

/* CMYK (16-bit grid point) -> the Lab of the plain formula's sRGB colour, PCS-encoded. */
static inline cmsInt32Number sample(const cmsUInt16Number in[], cmsUInt16Number out[], void *user)
{
    const sampler_cargo *c = user;
    double k = in[3] / 65535.0, rgb[3];
    for (int i = 0; i < 3; i++) rgb[i] = (1 - in[i] / 65535.0) * (1 - k);
    if (c->swap_red_blue) {
        double t = rgb[0];
        rgb[0] = rgb[2];
        rgb[2] = t;
    }
    cmsCIELab lab;
    cmsDoTransform(c->rgb_to_lab, rgb, &lab, 1);
    cmsFloat2LabEncodedV2(out, &lab);
    return 1;
}

static inline unsigned char *make_cmyk_profile(int swap_red_blue, size_t *len)
{
    cmsHPROFILE srgb = cmsCreate_sRGBProfile(), lab = cmsCreateLab4Profile(NULL);
    sampler_cargo cargo = { cmsCreateTransform(srgb, TYPE_RGB_DBL, lab, TYPE_Lab_DBL, INTENT_PERCEPTUAL, 0),
                            swap_red_blue };
    cmsHPROFILE p = cmsCreateProfilePlaceholder(NULL);
    cmsSetProfileVersion(p, 2.1);
    cmsSetDeviceClass(p, cmsSigOutputClass);
    cmsSetColorSpace(p, cmsSigCmykData);
    cmsSetPCS(p, cmsSigLabData);
    cmsPipeline *lut = cmsPipelineAlloc(NULL, 4, 3);
    cmsStage *clut = cmsStageAllocCLut16bit(NULL, 17, 4, 3, NULL);
    cmsStageSampleCLut16bit(clut, sample, &cargo, 0);
    /* lutAtoBType wants A curves, the table, B curves: identity curves around it. */
    cmsPipelineInsertStage(lut, cmsAT_END, cmsStageAllocToneCurves(NULL, 4, NULL));
    cmsPipelineInsertStage(lut, cmsAT_END, clut);
    cmsPipelineInsertStage(lut, cmsAT_END, cmsStageAllocToneCurves(NULL, 3, NULL));
    cmsWriteTag(p, cmsSigAToB0Tag, lut);
    cmsWriteTag(p, cmsSigMediaWhitePointTag, cmsD50_XYZ());
    cmsUInt32Number n = 0;
    cmsSaveProfileToMem(p, NULL, &n);
    unsigned char *bytes = malloc(n);
    cmsSaveProfileToMem(p, bytes, &n);
    *len = n;
    cmsPipelineFree(lut);
    cmsCloseProfile(p);
    cmsDeleteTransform(cargo.rgb_to_lab);
    cmsCloseProfile(srgb);
    cmsCloseProfile(lab);
    return bytes;
}

#endif
