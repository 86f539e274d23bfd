#include <cuda_runtime.h>
#include "ipk.h"
#include "ipk_codec.h"

/* A thread's tables live in shared memory (local memory would be reserved for every thread the
 * card can hold): a 9-bit first lookup keeps them to 5.4 KB, eight threads a block. */
#define DW_FAST_BITS 9
#include "deflate_walk_steps.h"

#define WALK_THREADS 8
#define BAD_WALK 0xFFFFFFFFFFFFFFFFull

__global__ void deflate_walk_kernel(const uint8_t *data, size_t slot, const unsigned long long *len, size_t n,
                                    unsigned long long *walks)
{
    __shared__ dw_tables tables[WALK_THREADS];
    size_t k = (size_t)blockIdx.x * WALK_THREADS + threadIdx.x;
    if (k >= n) return;
    uint64_t final_start, end;
    if (dw_walk(data + k * slot, len[k], &tables[threadIdx.x], &final_start, &end)) final_start = end = BAD_WALK;
    walks[2 * k] = final_start;
    walks[2 * k + 1] = end;
}

extern "C" int ipk_deflate_walk(const uint8_t *data, size_t slot, const unsigned long long *len, size_t n,
                                unsigned long long *walks, void *stream)
{
    if (n == 0) return IPK_OK;
    if (!data || !len || !walks || n > 0x7fffffffu) return IPK_EINVAL;
    unsigned blocks = (unsigned)((n + WALK_THREADS - 1) / WALK_THREADS);
    deflate_walk_kernel<<<blocks, WALK_THREADS, 0, (cudaStream_t)stream>>>(data, slot, len, n, walks);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
