/* The faster level's size check beside a card (tiff_fast_check.h). */
#include "io/tiff_fast_check.h"
#include <stdlib.h>
#include <string.h>
#include "io/io_tiff_strip_cpu.h"

#define SAMPLES_MIN 4
#define EARLY_EVERY 4     /* the first SAMPLES_MIN samples come soon: a folder worker's image is 20-30 strips */
#define SAMPLE_EVERY 32   /* a sample costs the cores 2-3 strips' time at the faster level */
#define HALVE_EVERY 16

void tiff_fast_check_init(tiff_fast_check *c, int (*level_for)(int zlib_level))
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->level_for = level_for;
}

void tiff_fast_check_destroy(tiff_fast_check *c)
{
    pthread_mutex_destroy(&c->mu);
}

int tiff_fast_check_level(tiff_fast_check *c, int zlib_level)
{
    pthread_mutex_lock(&c->mu);
    if (!c->asked) {
        c->asked = tiff_libdeflate_level(zlib_level);
        c->level = c->level_for(zlib_level);
    }
    int level = c->level;
    pthread_mutex_unlock(&c->mu);
    return level;
}

int tiff_fast_check_next(tiff_fast_check *c, int *level)
{
    pthread_mutex_lock(&c->mu);
    uint32_t n = c->strips++;
    *level = c->level;
    pthread_mutex_unlock(&c->mu);
    return n < SAMPLES_MIN * EARLY_EVERY ? n % EARLY_EVERY == 0 : n % SAMPLE_EVERY == 0;
}

/* The next level up, sampled from scratch; the asked one for good past the middle. */
static void step_up(tiff_fast_check *c)
{
    if (c->level < TIFF_FAST_MIDDLE_LEVEL && TIFF_FAST_MIDDLE_LEVEL < c->asked) c->level = TIFF_FAST_MIDDLE_LEVEL;
    else c->level = c->asked;
    c->strips = c->samples = 0;
    c->sampled_fast = c->sampled_asked = 0;
}

void tiff_fast_check_add(tiff_fast_check *c, int level, size_t fast_len, size_t asked_len)
{
    pthread_mutex_lock(&c->mu);
    if (level != c->level) {   /* a level left meanwhile, for a faster one or the asked one */
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->samples++;
    c->sampled_fast += fast_len;
    c->sampled_asked += asked_len;
    if (c->samples >= SAMPLES_MIN && c->sampled_fast * 100 > c->sampled_asked * (100 + TIFF_FAST_MAX_GROWTH_PCT))
        step_up(c);
    else if (c->samples >= 2 * HALVE_EVERY && c->samples % HALVE_EVERY == 0) {
        c->sampled_fast /= 2;
        c->sampled_asked /= 2;
    }
    pthread_mutex_unlock(&c->mu);
}

int tiff_fast_wanted(void)
{
    const char *v = getenv("IMGPIPE_TIFF_STRIP_FAST");
    return !(v && strcmp(v, "0") == 0);
}
