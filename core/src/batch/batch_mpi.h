/* Folders across the ranks of an Open MPI job (mpirun -n N imgpipe run PIPE IN_DIR OUT_DIR):
 * rank 0 lists the input and hands the images out a few at a time as ranks ask for them, so a
 * slow rank never holds the others back; every rank (rank 0 too) runs batch.c's workers on what
 * it gets; rank 0 gathers the results and keeps, for every image, the rank it was handed to, so
 * the images a dead rank had in flight are reported as lost. */
#ifndef IMGPIPE_BATCH_MPI_H
#define IMGPIPE_BATCH_MPI_H
#include "batch/batch.h"
#include "batch/mpi_lib.h"

typedef struct batch_mpi batch_mpi;

typedef struct {
    char host[64];
    int done, failed, resumed;
    double seconds;         /* from the start until its last result */
    int lost;               /* it died or stopped answering: its images in flight counted failed */
} batch_mpi_rank_stats;

/* The cores this rank should use: those it may run on, at most its share of the host's among the
 * ranks placed there (mpirun binds ranks to cores or sockets by default). */
long batch_mpi_cores(const mpi_place *pl, long online);

/* This rank's GPU: its local rank's among o->gpu_ids (all GPUs, or --gpus), modulo their count. */
void batch_mpi_pick_gpu(const mpi_place *pl, batch_options *o);

/* Starts MPI for this process (libmpi is opened only here). */
int batch_mpi_open(batch_mpi **m, const mpi_place *pl, char *err, size_t errlen);

/* Runs the folder job. On rank 0: *result and cb as batch_run gives them for the whole job; on the
 * other ranks *result stays empty and cb is used for nothing but notes. */
int batch_mpi_run(batch_mpi *m, const batch_options *o, const plan *p, const batch_callbacks *cb,
                  batch_progress *result, char *err, size_t errlen);

/* On rank 0 after the run: one entry per rank. */
const batch_mpi_rank_stats *batch_mpi_stats(const batch_mpi *m, int *n);

/* Ends MPI (without a finalize, which would hang, when a rank was lost) and frees m. */
void batch_mpi_close(batch_mpi *m);
#endif
