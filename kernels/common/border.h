/* Border addressing shared by the CPU and GPU kernels. */
#ifndef IPK_BORDER_H
#define IPK_BORDER_H

#ifdef __CUDACC__
#define IPK_HD __host__ __device__ __forceinline__
#else
#define IPK_HD static inline
#endif

/* Maps coordinate i (possibly outside 0..n-1) to an in-image coordinate, or -1 when the
 * border contributes nothing (IPK_ZERO: a zero value; IPK_SHRINK: not counted).
 * Border codes are ipk_border's values. Reflect101 loops like OpenCV's
 * borderInterpolate, so any radius works on any size. */
IPK_HD int ipk_border_index(int i, int n, int border)
{
    if (i >= 0 && i < n) return i;
    if (border == 0) return i < 0 ? 0 : n - 1;
    if (border == 1) {
        if (n == 1) return 0;
        int period = 2 * n - 2;
        int m = i % period;
        if (m < 0) m += period;
        return m < n ? m : period - m;
    }
    return -1;
}

#endif
