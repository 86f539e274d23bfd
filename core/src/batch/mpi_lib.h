/* The message transport of folder runs under mpirun: Open MPI's libmpi.so.40, opened at run time
 * and only under mpirun, so a plain run neither loads nor needs it, and the library always comes
 * from the machine that runs (never from a bundle made elsewhere). One thread calls it. */
#ifndef IMGPIPE_MPI_LIB_H
#define IMGPIPE_MPI_LIB_H
#include <stddef.h>

/* Where this process sits in the job, as Open MPI's mpirun says in the environment. */
typedef struct {
    int size, rank;              /* ranks in the job; this one, 0 to size-1 */
    int local_size, local_rank;  /* ranks on this host; this one among them */
} mpi_place;

/* 1 when started by mpirun with more than one rank (*pl filled), else 0. Reads the environment
 * only: nothing of MPI is loaded. */
int mpi_lib_place(mpi_place *pl);

/* Whether this build can take part in an MPI job (-DIMGPIPE_MPI). */
int mpi_lib_built(void);

typedef struct mpi_lib mpi_lib;

/* Opens libmpi (IMGPIPE_MPI_LIB names another file) and initialises MPI for the calling thread. */
int mpi_lib_open(mpi_lib **m, char *err, size_t errlen);

/* Whether to stop waiting for a send to complete (the receiver died or went silent). */
typedef int (*mpi_give_up)(void *user);

/* Sends a copy of len bytes to rank dest and waits until it is delivered or give_up (may be NULL)
 * says to stop waiting: then *abandoned is set and the copy is kept until mpi_lib_close, since
 * MPI may still read it. A send to a rank that died could otherwise block for ever. */
int mpi_lib_send(mpi_lib *m, int dest, int tag, const void *data, size_t len, mpi_give_up give_up, void *user,
                 int *abandoned, char *err, size_t errlen);

/* Whether a message is waiting (from any rank, any tag): *ready, and its source, tag and length. */
int mpi_lib_probe(mpi_lib *m, int *ready, int *source, int *tag, size_t *len, char *err, size_t errlen);

/* Receives the waiting message that mpi_lib_probe described into data (len bytes). */
int mpi_lib_recv(mpi_lib *m, int source, int tag, void *data, size_t len, char *err, size_t errlen);

/* Frees m, with a finalize of MPI, or without one (the process is about to exit): Open MPI's
 * finalize waits for every rank and hangs once one has died. */
void mpi_lib_close(mpi_lib *m, int finalize);
#endif
