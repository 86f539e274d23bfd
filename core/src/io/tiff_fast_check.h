/* The cores' deflate at a faster level than asked while a card deflates a file's other strips,
 * checked on samples of their own strips: a sampled strip is deflated at the asked level too, the
 * smaller bytes kept, and where the faster level's samples come out more than
 * TIFF_FAST_MAX_GROWTH_PCT larger, the check steps to TIFF_FAST_MIDDLE_LEVEL and samples afresh,
 * then to the asked level from then on. One check is shared by a streamed writer's threads, or by
 * every image a folder worker writes, so that it decides on enough strips either way. */
#ifndef IMGPIPE_TIFF_FAST_CHECK_H
#define IMGPIPE_TIFF_FAST_CHECK_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define TIFF_FAST_MAX_GROWTH_PCT 5
/* Smooth rows (eight 15x15 medians of photographs) lose 7.2% at level 2 but 1.9% at 5, which
 * deflates them 1.7x as fast as 6 (bench/RESULTS.md); photographs keep 2. */
#define TIFF_FAST_MIDDLE_LEVEL 5

typedef struct tiff_fast_check {
    pthread_mutex_t mu;
    int (*level_for)(int zlib_level);   /* libdeflate's faster level for an asked zlib level */
    int level, asked;          /* libdeflate's: the level now (the asked one once given up), the asked one
                                  (0 until a state opens) */
    uint32_t strips, samples;  /* counted from the level's start */
    uint64_t sampled_fast, sampled_asked;
} tiff_fast_check;

void tiff_fast_check_init(tiff_fast_check *c, int (*level_for)(int zlib_level));
void tiff_fast_check_destroy(tiff_fast_check *c);
/* The libdeflate level a state opening now compresses at: the faster one, or the asked one
 * (tiff_libdeflate_level) once given up. The first call fixes the asked level: a check serves
 * one file, or one folder's images, all at one --tiff-level. */
int tiff_fast_check_level(tiff_fast_check *c, int zlib_level);
/* Counts the strip about to be compressed at the faster level: whether to sample it (every 4th
 * of the level's first 16, then every 32nd), and in *level the level to compress it at (the
 * asked one once given up). */
int tiff_fast_check_next(tiff_fast_check *c, int *level);
/* A sample's sizes at the faster level `level` and the asked one (a sample of a level left
 * meanwhile counts for nothing). Where the level's samples so far (their sums halved every 16
 * samples from the 32nd, so that later images weigh as much as the first) show it more than
 * TIFF_FAST_MAX_GROWTH_PCT larger, from its 4th sample on, the check steps up: to
 * TIFF_FAST_MIDDLE_LEVEL where that is between the two, else to the asked level for good. */
void tiff_fast_check_add(tiff_fast_check *c, int level, size_t fast_len, size_t asked_len);
/* IMGPIPE_TIFF_STRIP_FAST=0 keeps the asked level everywhere, for the bench. */
int tiff_fast_wanted(void);
#endif
