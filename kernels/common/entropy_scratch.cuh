/* Layout of the scratch buffer of ipk_entropy_gpu that a caller may read back (plain C).
 * The GPU kernel cannot return IPK_ERANGE (it only enqueues work), so a value >= levels is
 * clamped to levels - 1 and recorded here; the call zeroes both words first. */
#ifndef IPK_ENTROPY_SCRATCH_CUH
#define IPK_ENTROPY_SCRATCH_CUH

/* uint32 at byte 0: nonzero when some source value was >= levels. */
#define IPK_ENTROPY_GPU_FLAG_OFFSET 0
/* uint32 at byte 4: the largest such value (the CPU kernel reports the first in raster order). */
#define IPK_ENTROPY_GPU_BAD_VALUE_OFFSET 4
/* Bytes reserved for the two words; the kernel's tables follow. */
#define IPK_ENTROPY_GPU_HEADER_BYTES 16

#endif
