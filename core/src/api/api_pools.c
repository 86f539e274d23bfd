/* The memory pools device results are allocated from: one per device for the process, made on
 * first use and kept to its end. A pool per pipeline was tried: destroying one while its results
 * were still out (a result may outlive its pipeline) crashed the process at a later free on the
 * H100, so the pools stay, beside the plugin registry as the only other process-wide state. Up to
 * KEEP_BYTES of freed results a pool keeps for the next calls; the rest goes back to the driver at
 * the next synchronisation. */
#include <pthread.h>
#include <stdint.h>
#include "api/api_internal.h"
#include "gpu/gpu.h"

enum { MAX_DEVICES = 64 };
#define KEEP_BYTES ((uint64_t)2 << 30)

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pools[MAX_DEVICES];

int api_result_pool(int device, void **pool, imgpipe_error *err)
{
    if (device < 0 || device >= MAX_DEVICES)
        return api_fail(err, IMGPIPE_EUNSUPPORTED, "device results are allocated on CUDA devices 0 to %d (asked: %d)",
                        MAX_DEVICES - 1, device);
    char msg[512];
    int rc = IP_OK;
    pthread_mutex_lock(&pools_lock);
    if (!pools[device]) rc = gpu_pool_create(&pools[device], device, KEEP_BYTES, msg, sizeof msg);
    *pool = pools[device];
    pthread_mutex_unlock(&pools_lock);
    return rc == IP_OK ? IP_OK : api_fail_from(err, rc, msg, NULL);
}
