/* The benchmark's reference: the least a program can do to make the same thumbnails with libvips.
 *
 *   reference THREADS OUTDIR LISTFILE
 *
 * LISTFILE holds one input path a line. THREADS pthreads take the next index from a shared atomic
 * counter; each makes OUTDIR/<stem>.jpg with
 *     vips_thumbnail(file, &out, 256, "height", 256, NULL)          (fit inside, shrink-on-load)
 *     vips_jpegsave(out, outfile, "Q", 80, "strip", TRUE, NULL)
 * with one libvips worker thread per image (vips_concurrency_set(1)) and the operation cache off
 * (vips_cache_set_max(0)), so parallelism comes only from the THREADS images in flight.
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

static char *output_path(const char *input) {
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    size_t size = strlen(outdir) + 1 + stem + sizeof(".jpg");
    char *path = malloc(size);
    if (!path) abort();
    snprintf(path, size, "%s/%.*s.jpg", outdir, (int)stem, base);
    return path;
}

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        size_t index = atomic_fetch_add(&next_index, 1);
        if (index >= file_count) break;
        const char *input = files[index];
        char *output = output_path(input);
        VipsImage *thumb = NULL;
        if (vips_thumbnail(input, &thumb, 256, "height", 256, NULL) ||
            vips_jpegsave(thumb, output, "Q", 80, "strip", TRUE, NULL)) {
            fprintf(stderr, "reference: %s: %s\n", input, vips_error_buffer());
            vips_error_clear();
            atomic_fetch_add(&failures, 1);
        }
        if (thumb) g_object_unref(thumb);
        free(output);
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

int main(int argc, char **argv) {
    if (argc != 4 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: %s THREADS OUTDIR LISTFILE\n", argv[0]);
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
