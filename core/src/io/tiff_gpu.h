/* TIFF on the GPU: deflate (Adobe and old-style) and zstd strips or tiles inflated by nvCOMP in
 * one batch straight into device memory, the horizontal predictor undone there; and a device
 * image written as deflate or zstd strips compressed on the card (zlib's header and adler32
 * made right), read back equal by libtiff, Pillow and tifffile. LZW and the rest stay on the
 * CPU (io_read / io_write). */
#ifndef IMGPIPE_TIFF_GPU_H
#define IMGPIPE_TIFF_GPU_H
#include "io/codec_gpu.h"
#include "io/io.h"
#include "io/jpeg_route.h"

/* Decodes the opened TIFF's image (opt->page) into the target's device memory (opt->on_shape
 * first, the same limits as the CPU reader). IP_EUNSUPPORTED, with why: read it on the CPU
 * instead; so is a file the GPU does not take (found from its header and directory, before
 * anything is allocated: a strip or tile over nvCOMP's chunk, decoded or compressed, too) and a
 * strip or tile that inflates past or short of its size (libtiff ignores the surplus, and decides
 * on a short one). A strip or tile that neither nvCOMP nor libtiff inflates is IP_EFORMAT with
 * one line naming it, as the CPU reader words it. */
int tiff_gpu_decode(const io_gpu_codecs *c, const jpeg_route_target *target, io_input *in, const io_options *opt,
                    ip_image *dev_in, char *err, size_t errlen);
/* Whether opt's TIFF output of an image of this shape (compression, predictor) can be
 * compressed on the GPU. */
int tiff_gpu_encodable(const ip_shape *shape, const io_options *opt);
/* nvCOMP's deflate algorithm for a --tiff-level (0 or out of range: the default, 6). */
int tiff_gpu_deflate_algorithm(int level);
/* The pieces the card deflates a strip in, joined after into the strip's one stream:
 * TIFF_GPU_CHUNK_KB (IMGPIPE_TIFF_GPU_CHUNK_KB overrides it, for the bench). nvCOMP deflates a
 * chunk serially and the chunks in parallel, so small pieces keep more of the card at work: in a
 * folder of 12-MP TIFFs whole 256 KiB strips ran 14.5 images/s, 64 KiB ones 30-33, 16 KiB pieces
 * 41-46 (bench/RESULTS.md); 8 KiB pieces made the files 3% larger. */
#define TIFF_GPU_CHUNK_KB 16
size_t tiff_gpu_chunk_bytes(void);
/* A strip of len bytes in the fewest pieces of at most max_piece (> 0), cut evenly so that no
 * strip ends in a sliver, which would compress poorly: how many; *each, every piece's length but
 * the last's, which holds the rest. */
uint32_t tiff_gpu_pieces(size_t len, size_t max_piece, size_t *each);
/* The most a piece holds for a codec's strips of strip_bytes: tiff_gpu_chunk_bytes for deflate,
 * the whole strip for zstd (its frames do not join). */
size_t tiff_gpu_piece_bytes(nvcomp_codec codec, size_t strip_bytes);
/* Strip src's len bytes as nvCOMP's chunks[first ..], cut as tiff_gpu_pieces cuts them: piece p
 * compresses into slots' p-th slot of slot bytes, NVCOMP_CHUNK_ALIGN into it (room for zlib's
 * header before it and the join's spare after). How many pieces. */
uint32_t tiff_gpu_strip_chunks(const unsigned char *src, size_t len, size_t max_piece, unsigned char *slots,
                               size_t slot, uint32_t first, nvcomp_chunk *chunks);
/* The time to deflate an image of this shape at a --tiff-level (0: 6), in ms: on one core
 * (libdeflate), and on the whole card with many images in flight (nvCOMP): the rates the share
 * is balanced on, which auto's estimate uses too. */
double tiff_gpu_core_deflate_ms(const ip_shape *shape, int level);
double tiff_gpu_card_deflate_ms(const ip_shape *shape);
/* The share of a device image's strips the card compresses while the image's own threads (opt's)
 * compress the rest on the CPU at libdeflate's cores_level (0: the asked one), balancing the
 * card's deflate against the cores': 1 when forced (--codecs gpu); 0 (the cores alone) for zstd,
 * or where the cores would be done at the asked level before the card's first strip. cards: the
 * GPUs the machine's cores are shared among. IMGPIPE_TIFF_GPU_SHARE (percent) overrides it for
 * deflate, for the bench. */
double tiff_gpu_card_share(const ip_shape *shape, const io_options *opt, int forced, int cards, int cores_level);
/* libdeflate's level the cores write their share at beside the card, for zlib's level: c's
 * faster level while its check keeps it; with no codecs yet (auto's estimates), the level codecs
 * open with. */
int tiff_gpu_cores_level(const io_gpu_codecs *c, int zlib_level);
/* Writes the device image to path atomically with opt's metadata, as io_write would, in the CPU
 * writer's strips: the last card_share of them (0 to 1) compressed on the card in pieces, the
 * others on the CPU by opt's threads while the card works, at c's faster level while its check
 * keeps it (tiff_gpu_cores_level). The pixels never depend on the share; the bytes do (none on the
 * card: the CPU writer's bytes). */
int tiff_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                   double card_share, char *err, size_t errlen);
#endif
