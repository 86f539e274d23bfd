/* imgpipe from a C program (docs/API.md): open a pipeline once, run it on an image in memory, on
 * a file, and show what a mistake in the pipeline text reports.
 *
 *   api_example                      runs on a synthetic image in memory
 *   api_example IN.png OUT.png       also runs the pipeline file to file
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <imgpipe/imgpipe.h>

/* A 640x480 RGB test card: a gradient with a bright dot every 16 pixels (salt noise). */
static imgpipe_image make_card(void)
{
    imgpipe_image im = { 0 };
    im.width = 640;
    im.height = 480;
    im.channels = 3;
    im.sample = IMGPIPE_U8;
    im.stride = (size_t)im.width * 3;
    im.memory = IMGPIPE_HOST;
    im.data = malloc(im.stride * (size_t)im.height);
    if (!im.data) return im;
    for (int y = 0; y < im.height; y++) {
        uint8_t *row = (uint8_t *)im.data + (size_t)y * im.stride;
        for (int x = 0; x < im.width; x++) {
            int dot = x % 16 == 0 && y % 16 == 0;
            row[3 * x + 0] = dot ? 255 : (uint8_t)(x * 255 / im.width);
            row[3 * x + 1] = dot ? 255 : (uint8_t)(y * 255 / im.height);
            row[3 * x + 2] = dot ? 255 : 128;
        }
    }
    return im;
}

static int report(const char *what, const imgpipe_error *err)
{
    fprintf(stderr, "%s: %s (%s)\n", what, err->message, imgpipe_status_text(err->code));
    return err->code;
}

int main(int argc, char **argv)
{
    printf("imgpipe %s (header %d, library %d)\n", imgpipe_version(), IMGPIPE_VERSION, imgpipe_version_number());
    imgpipe_error err;
    imgpipe_pipeline *p;

    /* A misspelt stage: the error says where and what was probably meant. */
    if (imgpipe_pipeline_from_text(&p, "grayscale | medain radius=1", &err) == IMGPIPE_EPIPELINE)
        printf("a typo is reported at %s:%d:%d, suggesting '%s'\n", err.file, err.line, err.column, err.suggestion);

    if (imgpipe_pipeline_from_text(&p, "grayscale | median radius=1", &err) != IMGPIPE_OK)
        return report("pipeline", &err);

    /* An image in memory; the result in memory the library allocates. */
    imgpipe_image in = make_card(), out = { 0 };
    if (!in.data) return 1;
    imgpipe_run_options o;
    imgpipe_run_options_init(&o);
    o.device = IMGPIPE_DEVICE_AUTO;   /* as the command line: the CPU for small work, else the GPU */
    if (imgpipe_run(p, &in, &out, &o, NULL, &err) != IMGPIPE_OK) return report("run", &err);
    const uint8_t *px = out.data;
    printf("in memory: %dx%d %d-channel in, %dx%d %d-channel out; pixel (1,1) = %d (a dot removed)\n", in.width,
           in.height, in.channels, out.width, out.height, out.channels, px[out.stride + 1]);
    imgpipe_image_free(&out);

    /* The same into the caller's memory: ask for the shape first. */
    imgpipe_image mine = { 0 };
    if (imgpipe_output_shape(p, &in, &mine, &err) != IMGPIPE_OK) return report("shape", &err);
    mine.stride = (size_t)mine.width + 64;   /* rows may be padded */
    mine.data = malloc(mine.stride * (size_t)mine.height);
    if (!mine.data) return 1;
    int rc = imgpipe_run(p, &in, &mine, &o, NULL, &err);
    if (rc == IMGPIPE_OK) printf("into caller memory: ok\n");
    free(mine.data);
    free(in.data);
    if (rc != IMGPIPE_OK) return report("run", &err);

    if (argc == 3 && imgpipe_run_file(p, argv[1], argv[2], &o, &err) != IMGPIPE_OK) return report("file", &err);
    if (argc == 3) printf("wrote %s\n", argv[2]);

    imgpipe_stage_info median;
    if (imgpipe_stage_find("median", &median, &err) == IMGPIPE_OK)
        printf("median: %s; %d parameters, the first '%s' (%s, default %s)\n", median.summary, median.n_params,
               median.params[0].name, median.params[0].type, median.params[0].default_value);
    imgpipe_pipeline_close(p);
    return 0;
}
