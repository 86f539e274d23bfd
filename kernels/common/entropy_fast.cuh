/* The entropy map's fast path (bins <= 16, radius <= 3), shared by kernels/gpu/entropy.cu and
 * the run-time fused kernel kernels/fused/fused_entropy.cu (NVRTC: no includes), so that both
 * compute from a tile of bin codes with the very same code. A block owns a strip ENTF_STRIP rows
 * by ENTF_BW columns; its tile holds one bin code (4 * bin) per source pixel, ENTF_EMPTY outside
 * the image; each thread owns ENTF_K adjacent output columns and walks the strip down, keeping
 * per column the window's vertical bin counts as 16 nibbles (counts <= 7) in two registers, so a
 * row update is two shifts and an add. Per output the window's counts (bytes, scaled by 4 to be
 * table offsets) slide across the thread's columns, and the sum of n log n is read from a table
 * of the CPU kernel's fixed-point values, split in two 24-bit halves so 16 terms add exactly in
 * 32 bits. */
#ifndef IPK_ENTROPY_FAST_CUH
#define IPK_ENTROPY_FAST_CUH

#define ENT_FIX_SCALE 1099511627776.0   /* 2^40, as the CPU kernel */
#define ENTF_K 8
#define ENTF_THREADS 128
#define ENTF_BW (ENTF_K * ENTF_THREADS)
#define ENTF_PAD 16
#define ENTF_ROW (ENTF_BW + 2 * ENTF_PAD)
#define ENTF_STRIP 32
#define ENTF_MAXR 3
#define ENTF_EMPTY 0xffu
#define ENTF_TAB 64

typedef struct {
    const char *src;
    char *dst;
    long long src_stride, dst_stride;
    int width, height, radius, levels, bins, strip;
    int dst_u8;
    double out_scale;
    unsigned *flag;
    const long long *t_n;       /* T(n) = llround(n log n 2^40), n = 0..nmax */
    const double *inv_n;        /* 1 / (n 2^40), n = 0..nmax */
    unsigned *hist;             /* global histograms, or NULL for shared ones */
    long long workers;          /* global mode: threads in the grid */
} ent_args;

/* A block's shared tables: T(n) in 24-bit halves and as float, and the u8 value -> bin code. */
typedef struct {
    unsigned tlo[ENTF_TAB], thi[ENTF_TAB];
    float tf[ENTF_TAB];
    unsigned char lut[256];
} entf_tables;

__device__ __forceinline__ void entf_fill_tables(const ent_args &a, int R, bool u8_lut, entf_tables *t)
{
    const int nmax = (2 * R + 1) * (2 * R + 1);
    for (int n = threadIdx.x; n < ENTF_TAB; n += blockDim.x) {
        long long v = n <= nmax ? a.t_n[n] : 0;
        t->tlo[n] = (unsigned)(v & 0xffffff);
        t->thi[n] = (unsigned)(v >> 24);
        t->tf[n] = (float)((double)v / ENT_FIX_SCALE);
    }
    if (u8_lut)
        for (int v = threadIdx.x; v < 256; v += blockDim.x) {
            unsigned c = v < a.levels ? v : a.levels - 1;
            t->lut[v] = (unsigned char)(4u * (c * (unsigned)a.bins / (unsigned)a.levels));
        }
}

__device__ __forceinline__ unsigned entf_shl(unsigned x, unsigned s)
{
    unsigned r;
    asm("shl.b32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(s));   /* PTX clamps s >= 32 to a zero result */
    return r;
}

/* 16 bin codes as the tile's 16 bytes at tile row ty, chunk c. */
__device__ __forceinline__ void entf_put_codes(unsigned char *tile, int ty, int c, const unsigned char code[16])
{
    uint4 o;
    o.x = code[0] | code[1] << 8 | code[2] << 16 | (unsigned)code[3] << 24;
    o.y = code[4] | code[5] << 8 | code[6] << 16 | (unsigned)code[7] << 24;
    o.z = code[8] | code[9] << 8 | code[10] << 16 | (unsigned)code[11] << 24;
    o.w = code[12] | code[13] << 8 | code[14] << 16 | (unsigned)code[15] << 24;
    *(uint4 *)(tile + ty * ENTF_ROW + 16 * c) = o;
}

/* The 16 nibble counts of one column as bytes scaled by 4 (even bins, odd bins of each half). */
__device__ __forceinline__ void entf_expand(unsigned lo, unsigned hi, unsigned x[4])
{
    const unsigned m = 0x3c3c3c3cu;
    x[0] = (lo << 2) & m;
    x[1] = (lo >> 2) & m;
    x[2] = (hi << 2) & m;
    x[3] = (hi >> 2) & m;
}

/* Sum over 16 bins of T(n), exact: the table holds T's low and high 24-bit halves. */
__device__ __forceinline__ long long entf_tsum(const unsigned h[4], const unsigned *tlo, const unsigned *thi)
{
    unsigned slo = 0, shi = 0;
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            unsigned off = __byte_perm(h[k], 0u, 0x4440u + (unsigned)j);
            slo += *(const unsigned *)((const char *)tlo + off);
            shi += *(const unsigned *)((const char *)thi + off);
        }
    return ((long long)shi << 24) + (long long)slo;
}

/* f32 output: the same sum from a float table of n ln n. The error stays below 7e-6 bits at
 * radius 3 (16 table entries and 15 additions, each off by at most 2^-24 of a sum <= 49 ln 49,
 * divided by n = 49), inside the f32 tolerance of 1e-5, and the table reads halve. */
__device__ __forceinline__ float entf_tsum_f(const unsigned h[4], const float *tf)
{
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int j = 0; j < 4; j++) s += *(const float *)((const char *)tf + __byte_perm(h[k], 0u, 0x4440u + (unsigned)j));
    return s;
}

/* Output row y for the thread's ENTF_K columns: the window's counts slide across the columns
 * (one column enters, one leaves), then the values go out in 16-byte stores where aligned. */
template <int R, bool F32>
__device__ __forceinline__ void entf_store_row(const ent_args &a, int y, int x0, const unsigned vlo[ENTF_K + 2 * R],
                                               const unsigned vhi[ENTF_K + 2 * R], const entf_tables *t)
{
    const int rows = min(y + R, a.height - 1) - max(y - R, 0) + 1, nfull = rows * (2 * R + 1);
    const long long tfull = __ldg(a.t_n + nfull);
    const double ifull = __ldg(a.inv_n + nfull);
    const float scale_f = (float)a.out_scale, tfull_f = t->tf[nfull];
    unsigned h[4] = {0, 0, 0, 0};
#pragma unroll
    for (int c = 0; c < 2 * R + 1; c++) {
        unsigned x[4];
        entf_expand(vlo[c], vhi[c], x);
#pragma unroll
        for (int k = 0; k < 4; k++) h[k] += x[k];
    }
    float vf[ENTF_K];
    unsigned char vu[ENTF_K];
#pragma unroll
    for (int i = 0; i < ENTF_K; i++) {
        if (i > 0) {
            unsigned xin[4], xout[4];
            entf_expand(vlo[i + 2 * R], vhi[i + 2 * R], xin);
            entf_expand(vlo[i - 1], vhi[i - 1], xout);
#pragma unroll
            for (int k = 0; k < 4; k++) h[k] = h[k] + xin[k] - xout[k];
        }
        /* columns beyond the image take the last one's count, so the table reads stay in range */
        const int x = min(x0 + i, a.width - 1), cols = min(x + R, a.width - 1) - max(x - R, 0) + 1;
        const bool full = cols == 2 * R + 1;
        const int n = rows * cols;
        if (F32) {
            float tn = full ? tfull_f : t->tf[n];
            vf[i] = (tn - entf_tsum_f(h, t->tf)) * (scale_f / (float)n);
        } else {
            long long tn = full ? tfull : __ldg(a.t_n + n);
            double in = full ? ifull : __ldg(a.inv_n + n);
            double v = __dmul_rn(__dmul_rn((double)(tn - entf_tsum(h, t->tlo, t->thi)), in), a.out_scale);
            vu[i] = (unsigned char)(v >= 255.0 ? 255 : (int)__dadd_rn(v, 0.5));
        }
    }
    char *row = a.dst + (long long)y * a.dst_stride;
    if (F32) {
        float *o = (float *)row + x0;
        if (x0 + ENTF_K <= a.width && ((size_t)o & 15) == 0) {
            ((float4 *)o)[0] = make_float4(vf[0], vf[1], vf[2], vf[3]);
            ((float4 *)o)[1] = make_float4(vf[4], vf[5], vf[6], vf[7]);
        } else
#pragma unroll
            for (int i = 0; i < ENTF_K; i++)
                if (x0 + i < a.width) o[i] = vf[i];
    } else {
        unsigned char *o = (unsigned char *)row + x0;
        if (x0 + ENTF_K <= a.width && ((size_t)o & 7) == 0) {
            *(uint2 *)o = make_uint2(vu[0] | vu[1] << 8 | vu[2] << 16 | (unsigned)vu[3] << 24,
                                     vu[4] | vu[5] << 8 | vu[6] << 16 | (unsigned)vu[7] << 24);
        } else
#pragma unroll
            for (int i = 0; i < ENTF_K; i++)
                if (x0 + i < a.width) o[i] = vu[i];
    }
}

/* The block's strip from its tile (tile row 0 = source row y0 - R, trows rows loaded). */
template <int R, bool F32>
__device__ __forceinline__ void entf_walk_tile(const ent_args &a, const unsigned char *tile, const entf_tables *t,
                                               int bx0, int y0, int trows)
{
    const int tid = threadIdx.x, x0 = bx0 + ENTF_K * tid;
    if (x0 >= a.width) return;
    constexpr int NC = ENTF_K + 2 * R;
    unsigned vlo[NC], vhi[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) vlo[c] = vhi[c] = 0;
    /* the thread's columns x0 - R .. x0 + K - 1 + R start at byte 12 + 4 - R of its 16-byte view */
    const unsigned char *col = tile + ENTF_PAD - 4 + ENTF_K * tid;
    for (int ty = 0; ty < trows; ty++) {
        const unsigned *win = (const unsigned *)(col + ty * ENTF_ROW);
        unsigned w[4] = {win[0], win[1], win[2], win[3]};
        const bool drop = ty > 2 * R;
        unsigned u[4] = {0, 0, 0, 0};
        if (drop) {
            const unsigned *wout = (const unsigned *)(col + (ty - 2 * R - 1) * ENTF_ROW);
            u[0] = wout[0], u[1] = wout[1], u[2] = wout[2], u[3] = wout[3];
        }
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int b = 4 - R + c;
            unsigned e = (w[b >> 2] >> (8 * (b & 3))) & 255u;
            unsigned add_lo = entf_shl(1u, e), add_hi = entf_shl(1u, e - 32u);
            unsigned f = drop ? (u[b >> 2] >> (8 * (b & 3))) & 255u : ENTF_EMPTY;
            unsigned sub_lo = entf_shl(1u, f), sub_hi = entf_shl(1u, f - 32u);
            vlo[c] = vlo[c] + add_lo - sub_lo;
            vhi[c] = vhi[c] + add_hi - sub_hi;
        }
        if (ty >= 2 * R) entf_store_row<R, F32>(a, y0 + ty - 2 * R, x0, vlo, vhi, t);
    }
}

#endif
