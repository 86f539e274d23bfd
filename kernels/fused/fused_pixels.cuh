/* Loading pixels through the chain, shared by the fused kernels (the kernels/fused sources): the
 * core puts before them IP_T, IP_IN_CH, IP_OUT_CH and ip_chain(). Compiled by NVRTC only. */
#ifndef IPF_FUSED_PIXELS_CUH
#define IPF_FUSED_PIXELS_CUH

/* The chain's output for the pixel at column x of row. */
__device__ __forceinline__ void ipf_chain_at(const char *row, int x, IP_T *out)
{
    const IP_T *p = (const IP_T *)row + (size_t)x * IP_IN_CH;
    IP_T in[IP_IN_CH];
#pragma unroll
    for (int c = 0; c < IP_IN_CH; c++) in[c] = __ldg(p + c);
    ip_chain(in, out);
}

/* The chain's first output channel for 16 8-bit pixels from their IP_IN_CH loaded 16-byte words
 * (w: 4 * IP_IN_CH words, little-endian). */
__device__ __forceinline__ void ipf_chain_words(const unsigned *w, unsigned *first)
{
#pragma unroll
    for (int i = 0; i < 16; i++) {
        IP_T in[IP_IN_CH], out[IP_OUT_CH];
#pragma unroll
        for (int c = 0; c < IP_IN_CH; c++) {
            const int k = i * IP_IN_CH + c;
            in[c] = (IP_T)((w[k >> 2] >> ((k & 3) * 8)) & 0xffu);
        }
        ip_chain(in, out);
        first[i] = out[0];
    }
}

/* The chain's first output channel for the 8-bit pixels gx..gx+15 of row, which lie in the image
 * and start 16-byte aligned: IP_IN_CH 16-byte loads. */
__device__ __forceinline__ void ipf_chain16(const char *row, int gx, unsigned *first)
{
    const uint4 *s = (const uint4 *)(row + (size_t)gx * IP_IN_CH);
    unsigned w[4 * IP_IN_CH];
#pragma unroll
    for (int v = 0; v < IP_IN_CH; v++) {
        uint4 q = __ldg(s + v);
        w[4 * v] = q.x; w[4 * v + 1] = q.y; w[4 * v + 2] = q.z; w[4 * v + 3] = q.w;
    }
    ipf_chain_words(w, first);
}
#endif
