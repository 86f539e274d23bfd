/* The tile variants of the separable-network median (median_sep_var.cuh) that the bench times
 * side by side: registers and spills from ptxas (sm_90, CUDA 13.0), min/max per output word
 * (2 pixels) counted in the PTX. Plain calls take one only where median.cu's MED_SEP_VARIANT_R2
 * and MED_SEP_VARIANT_R3 name it (both -1 today: med_sep_kernel). */
#include "median_sep_var.cuh"

typedef int (*med_sepv_fn)(const med_args *a, cudaStream_t s);

typedef struct {
    int radius;
    const char *name;   /* tile in pixels (width x rows) and registers, as the bench rows say */
    med_sepv_fn launch;
} med_sepv_variant;

/* Per variant: tile in pixels (width x rows), registers, min/max an output word (2 pixels) in
 * the PTX ("shfl": column sorts shared between lanes, 30 of 32 lanes make outputs, so an output
 * word costs 32/30 of it). 5x5: 8x1 at 48 registers (10 blocks of 128 threads resident) and
 * 83.5; 8x1 shfl at 48 and 65.5; 16x1 shfl at 64 (8 blocks) and 65.5; 8x2 shfl (two rows share
 * the sorts of their 4 common rows) at 71 (7 blocks) and 60.5. 7x7: 8x1 at 80 (6 blocks) and
 * 199.5; 8x1 shfl at 80 and 151.5, or unbounded at 94 (5 blocks); 8x2 shfl at 121 (4 blocks)
 * and 143.5. Against them, med_sep_kernel (16x2): 139 registers (3 blocks) and 67 at 5x5; 255
 * with 44 bytes of spills (2 blocks) and 161.5 at 7x7. sm_90, CUDA 13.0; no variant spills
 * (the shfl pairs keep an 8-16 byte stack frame for the out-of-line gather's call). */
static const med_sepv_variant MED_SEPV[] = {
    {2, "8x1 tile, 48 regs", med_sepv_launch<2, 4, 1, 10>},
    {2, "8x1 shfl, 48 regs", med_sepx_launch<2, 4, 1, 10>},
    {2, "16x1 shfl, 64 regs", med_sepx_launch<2, 8, 1, 8>},
    {2, "8x2 shfl, 71 regs", med_sepx_launch<2, 4, 2, 7>},
    {3, "8x1 tile, 80 regs", med_sepv_launch<3, 4, 1, 6>},
    {3, "8x1 shfl, 80 regs", med_sepx_launch<3, 4, 1, 6>},
    {3, "8x1 shfl, 94 regs", med_sepx_launch<3, 4, 1, 1>},
    {3, "8x2 shfl, 121 regs", med_sepx_launch<3, 4, 2, 1>},
};
#define MED_SEPV_N ((int)(sizeof MED_SEPV / sizeof MED_SEPV[0]))

/* The table entry of the variant-th variant of `radius`, or NULL. */
static const med_sepv_variant *med_sepv_find(int radius, int variant)
{
    for (int i = 0, k = 0; i < MED_SEPV_N && variant >= 0; i++)
        if (MED_SEPV[i].radius == radius && k++ == variant) return &MED_SEPV[i];
    return NULL;
}

int med_sepv_run(const med_args *a, int variant, cudaStream_t s)
{
    const med_sepv_variant *v = med_sepv_find(a->radius, variant);
    return v ? v->launch(a, s) : IPK_EINVAL;
}

extern "C" const char *ipk_median_gpu_sep_variant_name(int radius, int variant)
{
    const med_sepv_variant *v = med_sepv_find(radius, variant);
    return v ? v->name : NULL;
}

static int med_sepv_image_ok(const ipk_img *im)
{
    return ipk_img_ok(im) && im->dtype == IPK_U8 && im->channels == 1 && (im->data || ipk_img_empty(im));
}

extern "C" int ipk_median_gpu_sep_variant(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                                          void *stream, int variant)
{
    if (!src || !dst || !med_sepv_image_ok(src) || !med_sepv_image_ok(dst) || !ipk_same_shape(src, dst))
        return IPK_EINVAL;
    if (border < IPK_REPLICATE || border > IPK_ZERO || !med_sepv_find(radius, variant)) return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    const med_args a = {(const char *)src->data, (char *)dst->data, src->stride, dst->stride,
                        src->width, src->height, 1, radius, (int)border};
    return med_sepv_run(&a, variant, (cudaStream_t)stream);
}
