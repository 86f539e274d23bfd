#include "plan/suggest.h"
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int min3(int a, int b, int c)
{
    int m = a < b ? a : b;
    return m < c ? m : c;
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions),
 * three rolling rows of len(b)+1 cells. INT_MAX when memory runs out. */
int suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > INT_MAX / 2 || lb > INT_MAX / 2 || lb + 1 > SIZE_MAX / (3 * sizeof(int))) return INT_MAX;
    int *cells = malloc(3 * (lb + 1) * sizeof *cells);
    if (!cells) return INT_MAX;
    int *prev2 = cells, *prev = cells + lb + 1, *cur = cells + 2 * (lb + 1);
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        int *oldest = prev2;
        prev2 = prev;
        prev = cur;
        cur = oldest;
    }
    int d = prev[lb];
    free(cells);
    return d;
}

/* Close enough to suggest: distance at most a third of the typed word, and at least 1. */
static size_t suggest_threshold(size_t word_len)
{
    size_t t = word_len / 3;
    return t < 1 ? 1 : t;
}

const char *suggest_nearest(const char *word, const char *const *candidates, size_t n)
{
    if (!word || !candidates) return NULL;
    size_t wl = strlen(word), limit = suggest_threshold(wl);
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t k = 0; k < n; k++) {
        const char *c = candidates[k];
        if (!c) continue;
        size_t cl = strlen(c);
        /* The length difference bounds the distance from below: skip hopeless ones cheaply. */
        if ((cl > wl ? cl - wl : wl - cl) > limit) continue;
        int d = suggest_distance(word, c);
        if (d == INT_MAX || (size_t)d > limit) continue;
        if ((size_t)d < best_d) {
            best_d = (size_t)d;
            best = c;
        }
    }
    return best;
}
