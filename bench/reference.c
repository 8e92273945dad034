/* The benchmark's reference: the least a program can do to make the same thumbnails with libvips.
 *
 *   reference THREADS OUTDIR LISTFILE [WIDTH:FORMAT:Q ...]
 *
 * LISTFILE holds one input path a line. THREADS pthreads take the next index from a shared atomic
 * counter; without output specs each makes OUTDIR/<stem>.jpg with
 *     vips_thumbnail(file, &out, 256, "height", 256, NULL)          (fit inside, shrink-on-load)
 *     vips_jpegsave(out, outfile, "Q", 80, "strip", TRUE, NULL)
 * With output specs (the responsive set: e.g. 1920:webp:80 1280:webp:80 1280:jpeg:82 640:webp:80
 * 320:webp:80), each image makes OUTDIR/<stem>-WIDTH.FORMAT for every spec, decoding once:
 *     vips_thumbnail(file, &big, WIDEST, "height", VIPS_MAX_COORD, "size", VIPS_SIZE_DOWN, NULL)
 * rendered to memory (vips_image_copy_memory) when more than one output reads it; every narrower
 * width is vips_thumbnail_image of that memory image (rendered to memory too when two formats
 * share the width); then vips_webpsave / vips_jpegsave with "Q" and "strip".
 * Either way with one libvips worker thread per image (vips_concurrency_set(1)) and the operation
 * cache off (vips_cache_set_max(0)), so parallelism comes only from the THREADS images in flight.
 * Exits 0 when every file was written, 1 when any failed (each failure is printed), 2 on bad usage.
 *
 * Build: cc -O2 -o reference reference.c $(pkg-config --cflags --libs vips) -lpthread
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

static char **files;
static size_t file_count;
static const char *outdir;
static atomic_size_t next_index;
static atomic_size_t failures;

/* One output of the responsive mode: WIDTH:FORMAT:Q. */
struct spec {
    int width;
    int webp; /* else JPEG */
    int quality;
};
static struct spec *specs;
static int spec_count;

/* OUTDIR/<stem><suffix>, where suffix is ".jpg" or "-WIDTH.webp" and the like. */
static char *output_path(const char *input, const char *suffix) {
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    size_t size = strlen(outdir) + 1 + stem + strlen(suffix) + 1;
    char *path = malloc(size);
    if (!path) abort();
    snprintf(path, size, "%s/%.*s%s", outdir, (int)stem, base, suffix);
    return path;
}

static int save(VipsImage *image, const struct spec *spec, const char *input) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-%d.%s", spec->width, spec->webp ? "webp" : "jpg");
    char *output = output_path(input, suffix);
    int status = spec->webp ? vips_webpsave(image, output, "Q", spec->quality, "strip", TRUE, NULL)
                            : vips_jpegsave(image, output, "Q", spec->quality, "strip", TRUE, NULL);
    free(output);
    return status;
}

/* Every spec of one source from a single decode at the widest width. */
static int responsive(const char *input) {
    int widest = 0;
    for (int i = 0; i < spec_count; i++)
        if (specs[i].width > widest) widest = specs[i].width;
    VipsImage *big = NULL;
    if (vips_thumbnail(input, &big, widest, "height", VIPS_MAX_COORD, "size", VIPS_SIZE_DOWN, NULL)) return -1;
    if (spec_count > 1) {
        VipsImage *memory = vips_image_copy_memory(big);
        g_object_unref(big);
        if (!(big = memory)) return -1;
    }
    int status = 0;
    for (int i = 0; i < spec_count && !status; i++) {
        int width = specs[i].width, seen = 0, sharing = 0;
        for (int j = 0; j < i; j++) seen |= specs[j].width == width;
        if (seen) continue; /* made with the first spec of this width */
        for (int j = i + 1; j < spec_count; j++) sharing |= specs[j].width == width;
        VipsImage *image = NULL;
        if (width == widest) {
            image = big;
            g_object_ref(image);
        } else if (vips_thumbnail_image(big, &image, width, "height", VIPS_MAX_COORD, "size", VIPS_SIZE_DOWN, NULL)) {
            status = -1;
            break;
        } else if (sharing) {
            VipsImage *memory = vips_image_copy_memory(image);
            g_object_unref(image);
            if (!(image = memory)) {
                status = -1;
                break;
            }
        }
        for (int j = i; j < spec_count && !status; j++)
            if (specs[j].width == width) status = save(image, &specs[j], input);
        g_object_unref(image);
    }
    g_object_unref(big);
    return status;
}

static int thumbnail(const char *input) {
    char *output = output_path(input, ".jpg");
    VipsImage *thumb = NULL;
    int status = vips_thumbnail(input, &thumb, 256, "height", 256, NULL) ||
                 vips_jpegsave(thumb, output, "Q", 80, "strip", TRUE, NULL);
    if (thumb) g_object_unref(thumb);
    free(output);
    return status;
}

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        size_t index = atomic_fetch_add(&next_index, 1);
        if (index >= file_count) break;
        const char *input = files[index];
        if (spec_count ? responsive(input) : thumbnail(input)) {
            fprintf(stderr, "reference: %s: %s\n", input, vips_error_buffer());
            vips_error_clear();
            atomic_fetch_add(&failures, 1);
        }
    }
    vips_thread_shutdown();
    return NULL;
}

static int read_list(const char *listfile) {
    FILE *list = fopen(listfile, "r");
    if (!list) {
        fprintf(stderr, "reference: %s: %s\n", listfile, strerror(errno));
        return -1;
    }
    size_t capacity = 1024;
    files = malloc(capacity * sizeof *files);
    char *line = NULL;
    size_t length = 0;
    ssize_t got;
    while ((got = getline(&line, &length, list)) != -1) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        if (got == 0) continue;
        if (file_count == capacity) files = realloc(files, (capacity *= 2) * sizeof *files);
        if (!files) abort();
        files[file_count++] = strdup(line);
    }
    free(line);
    fclose(list);
    return 0;
}

static int parse_specs(int count, char **texts) {
    specs = calloc((size_t)count + 1, sizeof *specs);
    for (int i = 0; i < count; i++) {
        char format[8];
        if (sscanf(texts[i], "%d:%7[a-z]:%d", &specs[i].width, format, &specs[i].quality) != 3 ||
            specs[i].width < 1 || (strcmp(format, "webp") && strcmp(format, "jpeg"))) {
            fprintf(stderr, "reference: bad output spec '%s' (WIDTH:webp|jpeg:Q)\n", texts[i]);
            return -1;
        }
        specs[i].webp = !strcmp(format, "webp");
    }
    spec_count = count;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4 || atoi(argv[1]) < 1 || parse_specs(argc - 4, argv + 4)) {
        fprintf(stderr, "usage: %s THREADS OUTDIR LISTFILE [WIDTH:webp|jpeg:Q ...]\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]);
    outdir = argv[2];
    if (VIPS_INIT(argv[0])) vips_error_exit(NULL);
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    if (read_list(argv[3])) return 2;

    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&ids[i], NULL, worker, NULL)) {
            fprintf(stderr, "reference: cannot start thread %d\n", i);
            return 1;
        }
    }
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);

    size_t failed = atomic_load(&failures);
    fprintf(stderr, "reference: %zu done, %zu failed, %d threads\n", file_count - failed, failed, threads);
    vips_shutdown();
    return failed ? 1 : 0;
}
