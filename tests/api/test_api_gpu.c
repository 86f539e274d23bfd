/* Device images through the C API on a GPU: input and output in cudaMalloc'd memory with strides,
 * ordered on the caller's stream; library-allocated device results; device in, host out; equal to
 * the same run on host memory on the CPU. Skipped (77) without a GPU. */
#include <cuda_runtime.h>
#include "api_check.h"

#define CUDA_OK(call) CHECK((call) == cudaSuccess, "%s", #call)

/* A host image copied into device memory with a stride of its own. */
static imgpipe_image to_device(const imgpipe_image *h, size_t pad)
{
    imgpipe_image d = *h;
    size_t row = (size_t)h->width * (size_t)h->channels * api_sample_size(h->sample);
    d.stride = row + pad;
    d.memory = IMGPIPE_CUDA_DEVICE;
    d.device = 0;
    CUDA_OK(cudaMalloc(&d.data, d.stride * (size_t)h->height));
    CUDA_OK(cudaMemcpy2D(d.data, d.stride, h->data, h->stride, row, (size_t)h->height, cudaMemcpyHostToDevice));
    return d;
}

static imgpipe_image to_host(const imgpipe_image *d, cudaStream_t s)
{
    imgpipe_image h = api_random_image(d->width, d->height, d->channels, d->sample, 0, 1);
    size_t row = (size_t)d->width * (size_t)d->channels * api_sample_size(d->sample);
    CUDA_OK(cudaMemcpy2DAsync(h.data, h.stride, d->data, d->stride, row, (size_t)d->height, cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    return h;
}

static void check_text(const char *text, int w, int h, int c, imgpipe_sample smp)
{
    imgpipe_pipeline *p;
    imgpipe_error e;
    if (imgpipe_pipeline_from_text(&p, text, &e) != IMGPIPE_OK) {
        CHECK(0, "%s", e.message);
        return;
    }
    imgpipe_image in = api_random_image(w, h, c, smp, 0, 11), want = { 0 };
    imgpipe_run_options cpu;
    imgpipe_run_options_init(&cpu);
    cpu.device = IMGPIPE_DEVICE_CPU;
    CHECK(imgpipe_run(p, &in, &want, &cpu, NULL, &e) == IMGPIPE_OK, "cpu: %s", e.message);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    imgpipe_image din = to_device(&in, 96);

    /* library-allocated device result, on the caller's stream */
    imgpipe_image dout = { 0 };
    dout.memory = IMGPIPE_CUDA_DEVICE;
    CHECK(imgpipe_run(p, &din, &dout, NULL, s, &e) == IMGPIPE_OK, "%s: %s", text, e.message);
    if (dout.data) {
        imgpipe_image got = to_host(&dout, s);
        CHECK(api_same(&got, &want, text), "device, library memory");
        free(got.data);
    }
    imgpipe_image_free(&dout);

    /* results freed in stream order go back to the pipeline's pool: the next call on the same
     * stream gets the same memory, with the right pixels in it */
    void *first = NULL;
    for (int i = 0; i < 3; i++) {
        imgpipe_image again = { 0 };
        again.memory = IMGPIPE_CUDA_DEVICE;
        CHECK(imgpipe_run(p, &din, &again, NULL, s, &e) == IMGPIPE_OK, "%s: %s", text, e.message);
        if (!again.data) continue;
        if (i == 0) first = again.data;
        else CHECK(again.data == first, "%s: call %d's result is not the pooled memory freed before it", text, i);
        imgpipe_image got = to_host(&again, s);
        CHECK(api_same(&got, &want, text), "device, pooled library memory, call %d", i);
        free(got.data);
        CHECK(imgpipe_image_free_async(&again, s, &e) == IMGPIPE_OK && !again.data, "free_async: %s", e.message);
    }

    /* caller's device memory with a stride */
    imgpipe_image shape = { 0 };
    CHECK(imgpipe_output_shape(p, &in, &shape, &e) == IMGPIPE_OK, "%s", e.message);
    imgpipe_image host_shape = api_random_image(shape.width, shape.height, shape.channels, shape.sample, 0, 1);
    imgpipe_image mine = to_device(&host_shape, 40);
    CHECK(imgpipe_run(p, &din, &mine, NULL, s, &e) == IMGPIPE_OK, "%s: %s", text, e.message);
    imgpipe_image got = to_host(&mine, s);
    CHECK(api_same(&got, &want, text), "device, caller memory");
    free(got.data);

    /* device in, host out; host in, device out */
    imgpipe_image hout = { 0 };
    CHECK(imgpipe_run(p, &din, &hout, NULL, s, &e) == IMGPIPE_OK, "%s: %s", text, e.message);
    if (hout.data) CHECK(api_same(&hout, &want, text), "device in, host out");
    imgpipe_image_free(&hout);
    CHECK(imgpipe_run(p, &in, &mine, NULL, s, &e) == IMGPIPE_OK, "%s: %s", text, e.message);
    got = to_host(&mine, s);
    CHECK(api_same(&got, &want, text), "host in, device out");
    free(got.data);

    /* device memory with IMGPIPE_DEVICE_CPU is refused with a reason */
    CHECK(imgpipe_run(p, &din, &mine, &cpu, s, &e) == IMGPIPE_EINVAL && strstr(e.message, "IMGPIPE_DEVICE_CPU"), "%s",
          e.message);
    CUDA_OK(cudaFree(mine.data));
    CUDA_OK(cudaFree(din.data));
    CUDA_OK(cudaStreamDestroy(s));
    free(host_shape.data);
    free(in.data);
    imgpipe_image_free(&want);
    imgpipe_pipeline_close(p);
}

/* A result may outlive its pipeline: the pool goes when its last result is freed. */
static void check_result_outlives_pipeline(void)
{
    imgpipe_pipeline *p;
    imgpipe_error e;
    CHECK(imgpipe_pipeline_from_text(&p, "median radius=1", &e) == IMGPIPE_OK, "%s", e.message);
    imgpipe_image in = api_random_image(64, 48, 1, IMGPIPE_U8, 0, 5), want = { 0 }, dout = { 0 };
    imgpipe_run_options cpu;
    imgpipe_run_options_init(&cpu);
    cpu.device = IMGPIPE_DEVICE_CPU;
    CHECK(imgpipe_run(p, &in, &want, &cpu, NULL, &e) == IMGPIPE_OK, "cpu: %s", e.message);
    imgpipe_image din = to_device(&in, 0);
    dout.memory = IMGPIPE_CUDA_DEVICE;
    CHECK(imgpipe_run(p, &din, &dout, NULL, NULL, &e) == IMGPIPE_OK, "%s", e.message);
    imgpipe_pipeline_close(p);
    if (dout.data) {
        imgpipe_image got = to_host(&dout, NULL);
        CHECK(api_same(&got, &want, "median radius=1"), "a result read after its pipeline was closed");
        free(got.data);
    }
    CHECK(imgpipe_image_free_async(&dout, NULL, &e) == IMGPIPE_OK, "free_async after close: %s", e.message);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaFree(din.data));
    free(in.data);
    imgpipe_image_free(&want);
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0 || !imgpipe_gpu_available()) {
        printf("skipped: no GPU here\n");
        return 77;
    }
    check_text("median radius=1", 37, 23, 3, IMGPIPE_U8);
    check_text("grayscale | median radius=1 | convolve kernel=sharpen", 257, 131, 3, IMGPIPE_U8);
    check_text("median", 1, 1, 1, IMGPIPE_U8);
    check_text("transpose", 61, 1, 2, IMGPIPE_U16);
    check_text("median radius=2", 129, 67, 1, IMGPIPE_F32);
    check_result_outlives_pipeline();
    if (api_failures) fprintf(stderr, "%d check(s) failed\n", api_failures);
    else printf("test_api_gpu: all checks passed\n");
    return api_failures ? 1 : 0;
}
