/* Which of a folder's workers take the GPU and which the CPU, image by image, from one queue.
 * Every worker holds a role: GPU workers run an image whole on their GPU (file bytes to file
 * bytes), CPU workers run it on the cores. An arrangement is how many workers take the GPU:
 * none (cpu only), all (gpu only) or some (gpu + cpu workers). Under --device auto the scheduler
 * measures the arrangements' rates over windows of images and settles on the fastest. Plain data
 * and pure functions: the caller holds its lock and hands in the clock. */
#ifndef IMGPIPE_BATCH_SCHED_H
#define IMGPIPE_BATCH_SCHED_H

typedef enum { SCHED_ROLE_CPU = 0, SCHED_ROLE_GPU } sched_role;
typedef enum { SCHED_CPU_ONLY = 0, SCHED_GPU_ONLY, SCHED_MIXED } sched_arrangement;

typedef struct {
    int workers;             /* worker threads, all of them */
    int gpu_workers;         /* in the mixed arrangement, workers 0..gpu_workers-1 take the GPU */
    int measure;             /* compare the arrangements over windows of images, then settle */
    int cpu_while_starting;  /* until the GPU is ready, every worker takes CPU images */
    int n_images;            /* in the queue; 0 when not known (fed by MPI): then no measuring */
} sched_options;

/* Images/s measured over a window, whole process, file to file. */
typedef struct {
    double mixed_gpu, mixed_cpu;   /* the mixed arrangement: what its GPU and CPU workers did */
    double gpu_only;               /* every worker on the GPU */
    int workers, mixed_cpu_workers;
} sched_rates;

/* The fastest arrangement for the rates: CPU only's rate is the mixed window's CPU workers'
 * scaled to every worker (each holds its own cores); a more involved arrangement must win by
 * SCHED_MARGIN. *expected: its rate (images/s). */
#define SCHED_MARGIN 0.03
sched_arrangement sched_choose(const sched_rates *r, double *expected);

typedef enum { SCHED_STARTING, SCHED_WARMING, SCHED_WINDOW_MIXED, SCHED_WINDOW_GPU, SCHED_SETTLED } sched_phase;

typedef struct {
    sched_options o;
    sched_phase phase;
    int gpu_role_workers;    /* workers 0..this-1 now take the GPU */
    int epoch;               /* a phase's images: only those taken in it count towards it */
    int counted, counted_gpu, counted_cpu;
    int untimed;             /* images of the phase still to pass before its timing starts */
    double t_phase;
    int window;              /* images a window counts */
    sched_rates rates;
    sched_arrangement chosen;
    int measured;            /* chosen from rates (else the arrangement asked for) */
    int gpu_failed;
} sched;

void sched_init(sched *s, const sched_options *o, double now);
/* Whether a folder of n_images is enough to measure the arrangements with this many workers
 * (a warm-up, two windows and a window more). */
int sched_measurable(int workers, int n_images);
/* The role of worker i for its next image. */
sched_role sched_role_of(const sched *s, int worker);
/* Called as a worker takes an image; returns the ticket sched_finished wants (the arrangement's
 * epoch: an image taken before a change of arrangement is not timed). */
int sched_taken(const sched *s);
/* An image taken with ticket, in role, is done (or failed) at now. Returns 1 when this settled
 * the arrangement (the caller then says which, with sched_describe). */
int sched_finished(sched *s, sched_role role, int ticket, double now);
/* The GPU's start-up ended: GPU workers take their images from now on. */
void sched_gpu_ready(sched *s, double now);
/* The GPU cannot be used: CPU workers take everything from now on (cpu only). Returns 1 when this
 * changed the arrangement. */
int sched_gpu_failed(sched *s);
/* The arrangement now, and the line that says what was chosen and why ("gpu + 6 CPU workers
 * (measured ...)"). */
sched_arrangement sched_current(const sched *s);
void sched_describe(const sched *s, char *buf, unsigned len);
#endif
