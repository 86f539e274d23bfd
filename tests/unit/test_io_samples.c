/* io: the shared sample images decode to the shapes and values OpenCV 4.6 / PIL report
 * (taken once with /usr/bin/python3 and written here as constants). */
#include "test_io_helpers.h"

static char err[512];

typedef struct { int x, y; unsigned v[3]; } probe;

static void check_sample(const char *dir, const char *file, int w, int h, int c, ip_dtype t,
                         const probe *probes, int n_probes, uint64_t sum)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    ip_image img;
    int rc = io_read(path, NULL, &img, err, sizeof err);
    CHECK(rc == IP_OK, "%s: %s", file, err);
    if (rc) return;
    CHECK(tio_same_shape(&img, w, h, c, t), "%s: %dx%dx%d dtype %d", file, img.shape.width, img.shape.height,
          img.shape.channels, img.shape.dtype);
    if (tio_same_shape(&img, w, h, c, t)) {
        for (int i = 0; i < n_probes; i++)
            for (int k = 0; k < c; k++)
                CHECK(tio_get(&img, probes[i].x, probes[i].y, k) == probes[i].v[k], "%s (%d,%d,%d) = %g, want %u",
                      file, probes[i].x, probes[i].y, k, tio_get(&img, probes[i].x, probes[i].y, k), probes[i].v[k]);
        uint64_t total = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < c; k++) total += (uint64_t)tio_get(&img, x, y, k);
        CHECK(total == sum, "%s: sum %llu, want %llu", file, (unsigned long long)total, (unsigned long long)sum);
    }
    img_free(&img);
}

int main(void)
{
    const char *dir = getenv("IMGPIPE_SAMPLES");
    char probe_path[1024];
    snprintf(probe_path, sizeof probe_path, "%s/camera.png", dir ? dir : "");
    if (!dir || !tio_exists(probe_path)) tu_skip("IMGPIPE_SAMPLES does not hold the sample images");

    static const probe camera[] = { { 0, 0, { 200 } }, { 511, 511, { 149 } }, { 256, 170, { 218 } }, { 17, 101, { 213 } } };
    check_sample(dir, "camera.png", 512, 512, 1, IP_U8, camera, 4, 33832495);
    static const probe astronaut[] = { { 0, 0, { 154, 147, 151 } }, { 511, 511, { 0, 0, 0 } },
                                       { 256, 170, { 213, 201, 201 } }, { 17, 101, { 38, 26, 80 } } };
    check_sample(dir, "astronaut.png", 512, 512, 3, IP_U8, astronaut, 4, 90124324);
    static const probe hubble[] = { { 0, 0, { 15, 7, 4 } }, { 999, 871, { 7, 18, 12 } }, { 500, 290, { 14, 16, 15 } },
                                    { 17, 101, { 5, 9, 8 } } };
    check_sample(dir, "hubble_deep_field.jpg", 1000, 872, 3, IP_U8, hubble, 4, 50108051);
    static const probe chess[] = { { 0, 0, { 255 } }, { 26, 0, { 0 } }, { 30, 150, { 50 } }, { 150, 30, { 50 } },
                                   { 100, 66, { 205 } } };
    check_sample(dir, "chessboard_GRAY_U16.tif", 200, 200, 1, IP_U16, chess, 5, 5100000);
    return tu_finish();
}
