#ifndef IPK_THREADS_H
#define IPK_THREADS_H
#include <omp.h>
/* threads <= 0 means OpenMP's default. */
static inline int ipk_threads(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }
#endif
