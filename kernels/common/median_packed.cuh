/* Sorting-network pieces on 4 packed 8-bit pixels (one per byte): __vminu4/__vmaxu4 do
 * 4 compare-exchanges in one instruction. */
#ifndef IPK_MEDIAN_PACKED_CUH
#define IPK_MEDIAN_PACKED_CUH

__device__ __forceinline__ void med_sort2(unsigned &a, unsigned &b)
{
    unsigned lo = __vminu4(a, b);
    b = __vmaxu4(a, b);
    a = lo;
}

/* a <= b <= c per byte afterwards. */
__device__ __forceinline__ void med_sort3(unsigned &a, unsigned &b, unsigned &c)
{
    med_sort2(a, b);
    med_sort2(b, c);
    med_sort2(a, b);
}

__device__ __forceinline__ unsigned med_med3(unsigned a, unsigned b, unsigned c)
{
    return __vmaxu4(__vminu4(a, b), __vminu4(__vmaxu4(a, b), c));
}

/* Columns x-1..x+2 from columns x..x+3 and the value of column x-1 (in the low byte). */
__device__ __forceinline__ unsigned med_shift_left(unsigned centre, unsigned left)
{
    return (centre << 8) | (left & 0xffu);
}

/* Columns x+1..x+4 from columns x..x+3 and the value of column x+4 (in the low byte). */
__device__ __forceinline__ unsigned med_shift_right(unsigned centre, unsigned right)
{
    return (centre >> 8) | ((right & 0xffu) << 24);
}

#endif
