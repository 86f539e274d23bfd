/* Shared by rank 0's side (batch_mpi_root.c) and the other ranks' side (batch_mpi_rank.c). */
#ifndef IMGPIPE_BATCH_MPI_INTERNAL_H
#define IMGPIPE_BATCH_MPI_INTERNAL_H
#include "batch/batch_mpi.h"
#include "batch/batch_mpi_wire.h"

struct batch_mpi {
    mpi_lib *lib;
    mpi_place place;
    batch_mpi_rank_stats *stats;   /* rank 0: one per rank */
    double silence_s;              /* a rank silent this long is counted lost (IMGPIPE_MPI_TIMEOUT) */
    int skip_finalize;             /* a rank was lost or the exchange failed: end without finalize */
};

/* A rank that has asked for nothing for this long still sends, so rank 0 hears it is alive. */
#define MPI_HEARTBEAT_S 1.0
/* A finished rank asks this often whether the job is over (and how to end). */
#define MPI_RELEASE_POLL_S 0.1

/* Who this process is: pid, pid namespace and host, as sent in every request. */
void batch_mpi_identity(wire_ask *a);

double batch_mpi_now(void);
void batch_mpi_nap(double seconds);

int batch_mpi_root_run(batch_mpi *m, const batch_options *o, const plan *p, const batch_callbacks *cb,
                       batch_progress *result, char *err, size_t errlen);
int batch_mpi_rank_run(batch_mpi *m, const batch_options *o, const plan *p, const batch_callbacks *cb,
                       char *err, size_t errlen);
#endif
