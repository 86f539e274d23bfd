/* io: a JPEG of a coding process libjpeg-turbo does not decode (lossless, hierarchical, their
 * arithmetic-coded forms) is refused by the whole-image and the streamed reader with a message
 * naming the process, not as a damaged file. The files are a baseline JPEG whose SOF0 marker is
 * given another process's number: libjpeg-turbo refuses at the marker, before reading the frame. */
#include "test_io_helpers.h"
#include "io/io_stream.h"
#include "jpeg_make.h"

static char err[512];

/* A small baseline JPEG with its SOF0 marker renamed sof; *len its size. */
static unsigned char *jpeg_with_frame(int sof, size_t *len)
{
    enum { W = 19, H = 11 };
    unsigned char pixels[W * H * 3];
    for (size_t i = 0; i < sizeof pixels; i++) pixels[i] = (unsigned char)(i * 7);
    jm_settings s = { .quality = 90, .sampling = JM_420 };
    unsigned char *data = jm_encode(pixels, W * 3, W, H, 3, &s, len);
    for (size_t i = 2; data && i + 1 < *len; i++)
        if (data[i] == 0xFF && data[i + 1] == 0xC0) {
            data[i + 1] = (unsigned char)sof;
            return data;
        }
    free(data);
    return NULL;
}

static void expect_refused(int sof, const char *want)
{
    size_t len = 0;
    unsigned char *data = jpeg_with_frame(sof, &len);
    CHECK(data != NULL, "no SOF0 marker in the baseline file");
    if (!data) return;
    const char *path = tio_path("process.jpg");
    CHECK(tio_spit(path, data, len) == 0, "cannot write %s", path);
    free(data);
    io_options opt;
    io_default_options(&opt);
    ip_image img = { 0 };
    int rc = io_read(path, &opt, &img, err, sizeof err);
    CHECK(rc == IP_EFORMAT && strcmp(err, want) == 0, "SOF%d, whole: status %d, '%s', want '%s'", sof - 0xC0, rc,
          err, want);
    if (rc == IP_OK) img_free(&img);
    io_stream_reader *r = NULL;
    ip_shape shape;
    err[0] = 0;
    rc = io_stream_open(path, &opt, 0, &r, &shape, err, sizeof err);
    CHECK(rc == IP_EFORMAT && strcmp(err, want) == 0, "SOF%d, streamed: status %d, '%s', want '%s'", sof - 0xC0, rc,
          err, want);
    if (rc == IP_OK) io_stream_close(r);
}

int main(void)
{
    expect_refused(0xC3, "lossless JPEG (SOF3) is not supported");
    expect_refused(0xC5, "hierarchical JPEG (SOF5) is not supported");
    expect_refused(0xC6, "hierarchical JPEG (SOF6) is not supported");
    expect_refused(0xC7, "hierarchical JPEG (SOF7) is not supported");
    expect_refused(0xCB, "lossless arithmetic-coded JPEG (SOF11) is not supported");
    expect_refused(0xCD, "hierarchical arithmetic-coded JPEG (SOF13) is not supported");
    expect_refused(0xCE, "hierarchical arithmetic-coded JPEG (SOF14) is not supported");
    expect_refused(0xCF, "hierarchical arithmetic-coded JPEG (SOF15) is not supported");
    return tu_finish();
}
