/* The shuffle kernel of median_sep_warp.cuh in the two instantiations plain calls run: 8x2 pixels a
 * thread (two rows share the sorts of their common rows), at 71 registers for 5x5 (7 blocks of 128
 * threads resident; 60.5 min/max an output word of 2 pixels in the PTX) and 121 for 7x7 (4 blocks;
 * 143.5), no spills (sm_90, CUDA 13.0). Timed fastest of the tile variants on the H100
 * (2026-11-25): 0.203 ms against med_sep_kernel's 0.472 at 5x5, 0.442 against 1.098 at 7x7. */
#include "median_sep_warp.cuh"

int med_sepx_run(const med_args *a, cudaStream_t s)
{
    if (a->radius == 2) return med_sepx_launch<2, 4, 2, 7>(a, s);
    if (a->radius == 3) return med_sepx_launch<3, 4, 2, 1>(a, s);
    return IPK_EINVAL;
}
