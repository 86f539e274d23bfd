#define _GNU_SOURCE
#include "batch/batch_mpi.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "batch/batch_mpi_internal.h"
#include "base/mono_clock.h"

#define DEFAULT_SILENCE_S 60.0

double batch_mpi_now(void) { return now_s(); }

void batch_mpi_nap(double seconds)
{
    struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&ts, NULL);
}

void batch_mpi_identity(wire_ask *a)
{
    struct stat st;
    a->pid = (uint32_t)getpid();
    a->pid_namespace = stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
    if (gethostname(a->host, sizeof a->host) != 0) snprintf(a->host, sizeof a->host, "?");
    a->host[sizeof a->host - 1] = '\0';
}

long batch_mpi_cores(const mpi_place *pl, long online)
{
    long share = online / (pl->local_size > 0 ? pl->local_size : 1);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < share) share = CPU_COUNT(&set);
    return share > 0 ? share : 1;
}

void batch_mpi_pick_gpu(const mpi_place *pl, batch_options *o)
{
    if (o->n_gpus < 1) return;
    o->gpu_ids[0] = o->gpu_ids[pl->local_rank % o->n_gpus];
    o->n_gpus = 1;
}

static double silence_limit(void)
{
    const char *text = getenv("IMGPIPE_MPI_TIMEOUT");
    char *end;
    double s = text ? strtod(text, &end) : 0;
    return text && *text && !*end && s > 0 ? s : DEFAULT_SILENCE_S;
}

int batch_mpi_open(batch_mpi **out, const mpi_place *pl, char *err, size_t errlen)
{
    batch_mpi *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m) return IP_ENOMEM;
    m->place = *pl;
    m->silence_s = silence_limit();
    int rc = mpi_lib_open(&m->lib, err, errlen);
    if (rc != IP_OK) {
        free(m);
        return rc;
    }
    *out = m;
    return IP_OK;
}

int batch_mpi_run(batch_mpi *m, const batch_options *o, const plan *p, const batch_callbacks *cb,
                  batch_progress *result, char *err, size_t errlen)
{
    memset(result, 0, sizeof *result);
    if (m->place.rank == 0) return batch_mpi_root_run(m, o, p, cb, result, err, errlen);
    return batch_mpi_rank_run(m, o, p, cb, err, errlen);
}

const batch_mpi_rank_stats *batch_mpi_stats(const batch_mpi *m, int *n)
{
    *n = m->stats ? m->place.size : 0;
    return m->stats;
}

void batch_mpi_close(batch_mpi *m)
{
    if (!m) return;
    mpi_lib_close(m->lib, !m->skip_finalize);
    free(m->stats);
    free(m);
}
