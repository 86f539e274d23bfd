/* "Did you mean": the nearest candidate by edit distance. */
#ifndef IMGPIPE_SUGGEST_H
#define IMGPIPE_SUGGEST_H
#include <stddef.h>
int suggest_distance(const char *a, const char *b);
/* The candidate nearest to word, or NULL when none is close enough to suggest. */
const char *suggest_nearest(const char *word, const char *const *candidates, size_t n);
#endif
