/* Under mpirun: the place read from Open MPI's environment, each rank's GPU (its local rank's,
 * modulo the GPUs), and its share of the cores. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "batch/batch_mpi.h"
#include "testutil.h"

static void set_env(const char *size, const char *rank, const char *local_size, const char *local_rank)
{
    const char *names[] = { "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                            "OMPI_COMM_WORLD_LOCAL_RANK" };
    const char *values[] = { size, rank, local_size, local_rank };
    for (int i = 0; i < 4; i++) {
        if (values[i]) setenv(names[i], values[i], 1);
        else unsetenv(names[i]);
    }
}

static void check_place(void)
{
    mpi_place pl;
    set_env(NULL, NULL, NULL, NULL);
    CHECK(!mpi_lib_place(&pl), "no mpirun");
    set_env("1", "0", "1", "0");
    CHECK(!mpi_lib_place(&pl), "one rank is a plain run");
    set_env("6", "5", "3", "2");
    CHECK(mpi_lib_place(&pl) && pl.size == 6 && pl.rank == 5 && pl.local_size == 3 && pl.local_rank == 2,
          "6 ranks: got %d %d %d %d", pl.size, pl.rank, pl.local_size, pl.local_rank);
    set_env("4", "0", NULL, NULL);
    CHECK(mpi_lib_place(&pl) && pl.local_size == 1 && pl.local_rank == 0, "no local variables");
    set_env("4", "4", "4", "0");
    CHECK(!mpi_lib_place(&pl), "rank out of range");
    set_env("4x", "1", "4", "1");
    CHECK(!mpi_lib_place(&pl), "size not a number");
    set_env("4", "-1", "4", "1");
    CHECK(!mpi_lib_place(&pl), "negative rank");
    set_env(NULL, NULL, NULL, NULL);
}

static int gpu_of(int local_rank, const int *ids, int n)
{
    mpi_place pl = { 8, local_rank, 8, local_rank };
    batch_options o;
    memset(&o, 0, sizeof o);
    memcpy(o.gpu_ids, ids, (size_t)n * sizeof *ids);
    o.n_gpus = n;
    batch_mpi_pick_gpu(&pl, &o);
    CHECK(o.n_gpus == (n > 0), "one GPU per rank, or none: %d", o.n_gpus);
    return o.n_gpus ? o.gpu_ids[0] : -1;
}

static void check_gpus(void)
{
    const int all4[] = { 0, 1, 2, 3 }, listed[] = { 2, 5 };
    for (int r = 0; r < 8; r++) CHECK(gpu_of(r, all4, 4) == r % 4, "local rank %d of 4 GPUs: %d", r, gpu_of(r, all4, 4));
    CHECK(gpu_of(0, listed, 2) == 2 && gpu_of(1, listed, 2) == 5 && gpu_of(2, listed, 2) == 2, "--gpus 2,5");
    CHECK(gpu_of(3, all4, 1) == 0, "one GPU shared by every rank");
    CHECK(gpu_of(3, all4, 0) == -1, "no GPU: the CPU");
}

static void check_cores(void)
{
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "affinity");
    long bound = CPU_COUNT(&set);
    mpi_place four = { 4, 1, 4, 1 }, many = { 64, 1, 64, 1 }, one = { 4, 0, 1, 0 };
    long want = bound < 4 ? bound : 4;
    CHECK(batch_mpi_cores(&four, 16) == want, "16 cores, 4 ranks here, %ld allowed: %ld", bound,
          batch_mpi_cores(&four, 16));
    CHECK(batch_mpi_cores(&many, 16) == 1, "more ranks than cores: one each");
    CHECK(batch_mpi_cores(&one, bound) == bound, "alone on its host: every core it may use");
}

int main(void)
{
    check_place();
    check_gpus();
    check_cores();
    return tu_finish();
}
