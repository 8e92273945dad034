/* What runner's worker does per image, in C, with the per-image cuts bench/fixedcost.py suggests
 * switchable, so each cut can be measured (callgrind instructions, perf task-clock) before anyone
 * changes runner.
 *
 *   probe OUTDIR LISTFILE WIDTH [CUT ...]
 *
 * One thread, one image at a time, vips_concurrency_set(1), operation cache off, as runner's
 * worker. Per image, the baseline follows ImagePipeline.render for a chain that starts with
 * `thumbnail` (fit inside WIDTH, never enlarged) and a JPEG q80 output:
 *   vips_source_new_from_file                           (VipsSourceHandle)
 *   vips_image_new_from_source(access sequential)       (the header: ImagePipeline.open)
 *   vips_thumbnail_source(..., option_string fail_on)   (Thumbnail.load)
 *   strip-by-strip vips_region_prepare into a memory image (VipsImageHandle.copiedToMemory)
 *   vips_jpegsave_buffer(Q 80, strip) and a write() of the bytes  (JPEGEncoder, AtomicFile.stage)
 * Cuts (any combination):
 *   novector   vips_vector_set_enabled(FALSE): no orc program compiled per reduce
 *   direct     no loader sniffing: the header from vips_jpegload_source, the thumbnail from
 *              vips_jpegload_source(shrink) + vips_thumbnail_image (JPEG sources only)
 *   noheader   no separate header open: the thumbnail's own header is used (saves one sniff + parse)
 *   noslide    vips_operation_block_set("VipsForeignLoadOpenslide", TRUE) before the first image
 *   copymem    vips_image_copy_memory instead of the strip loop (a pool thread per image)
 *   fdsource   the VipsSource made from an open descriptor, not the file name: loaders that sniff
 *              by file name only (OpenSlide opens the file as SQLite, among others) are skipped
 *
 * Build: cc -O2 -o probe probe.c $(pkg-config --cflags --libs vips)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vips/vips.h>

void vips_vector_set_enabled(gboolean enabled); /* libvips 8.14 exports it; vips.h does not declare it */

static int cut_direct, cut_noheader, cut_copymem, cut_fdsource;

static VipsImage *render(VipsImage *in) {
    if (cut_copymem) return vips_image_copy_memory(in);
    VipsImage *memory = vips_image_new_memory();
    if (vips__image_copy_fields_array(memory, (VipsImage *[]){in, NULL}) || vips_image_write_prepare(memory)) {
        g_object_unref(memory);
        return NULL;
    }
    VipsRegion *region = vips_region_new(in);
    int tw, th, strip;
    vips_get_tile_size(in, &tw, &th, &strip);
    size_t line = VIPS_IMAGE_SIZEOF_LINE(in);
    for (int top = 0; top < in->Ysize; top += strip) {
        VipsRect r = {0, top, in->Xsize, VIPS_MIN(strip, in->Ysize - top)};
        if (vips_region_prepare(region, &r)) {
            g_object_unref(region);
            g_object_unref(memory);
            return NULL;
        }
        for (int y = r.top; y < r.top + r.height; y++)
            memcpy(VIPS_IMAGE_ADDR(memory, 0, y), VIPS_REGION_ADDR(region, 0, y), line);
    }
    g_object_unref(region);
    return memory;
}

/* libvips 8.14's rule (vips_thumbnail_find_jpegshrink): leave at least 2x for the resize. */
static int jpeg_shrink(int width, int target) {
    double factor = (double)width / target;
    return factor >= 16 ? 8 : factor >= 8 ? 4 : factor >= 4 ? 2 : 1;
}

static int one(const char *input, const char *outdir, int width) {
    VipsSource *source;
    if (cut_fdsource) {
        int fd = open(input, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -1;
        source = vips_source_new_from_descriptor(fd); /* dups it */
        close(fd);
    } else {
        source = vips_source_new_from_file(input);
    }
    if (!source) return -1;
    VipsImage *header = NULL, *thumb = NULL, *memory = NULL;
    int status = -1;
    if (!cut_noheader) {
        header = cut_direct
            ? (vips_jpegload_source(source, &header, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, NULL) ? NULL : header)
            : vips_image_new_from_source(source, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, NULL);
        if (!header) goto done;
    }
    if (cut_direct) {
        int source_width = header ? header->Xsize : 0;
        if (!header) {
            VipsImage *peek = NULL;
            if (vips_jpegload_source(source, &peek, "access", VIPS_ACCESS_SEQUENTIAL, NULL)) goto done;
            source_width = peek->Xsize;
            g_object_unref(peek);
        }
        VipsImage *loaded = NULL;
        if (vips_jpegload_source(source, &loaded, "shrink", jpeg_shrink(source_width, width),
                                 "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, NULL)) goto done;
        int failed = vips_thumbnail_image(loaded, &thumb, width, "height", VIPS_MAX_COORD, "size", VIPS_SIZE_DOWN, NULL);
        g_object_unref(loaded);
        if (failed) goto done;
    } else if (vips_thumbnail_source(source, &thumb, width, "height", VIPS_MAX_COORD, "size", VIPS_SIZE_DOWN,
                                     "crop", VIPS_INTERESTING_NONE, "no_rotate", FALSE, "fail_on", VIPS_FAIL_ON_ERROR,
                                     "option_string", "fail_on=error", NULL)) goto done;
    if (!(memory = render(thumb))) goto done;
    void *buffer = NULL;
    size_t length = 0;
    if (vips_jpegsave_buffer(memory, &buffer, &length, "Q", 80, "strip", TRUE, NULL)) goto done;
    const char *base = strrchr(input, '/');
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", outdir, base ? base + 1 : input);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        status = write(fd, buffer, length) == (ssize_t)length ? 0 : -1;
        close(fd);
    }
    g_free(buffer);
done:
    if (memory) g_object_unref(memory);
    if (thumb) g_object_unref(thumb);
    if (header) g_object_unref(header);
    g_object_unref(source);
    return status;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s OUTDIR LISTFILE WIDTH [novector|direct|noheader|noslide|copymem|fdsource ...]\n", argv[0]);
        return 2;
    }
    if (VIPS_INIT(argv[0])) vips_error_exit(NULL);
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "novector")) vips_vector_set_enabled(FALSE);
        else if (!strcmp(argv[i], "direct")) cut_direct = 1;
        else if (!strcmp(argv[i], "noheader")) cut_noheader = 1;
        else if (!strcmp(argv[i], "noslide")) vips_operation_block_set("VipsForeignLoadOpenslide", TRUE);
        else if (!strcmp(argv[i], "copymem")) cut_copymem = 1;
        else if (!strcmp(argv[i], "fdsource")) cut_fdsource = 1;
        else {
            fprintf(stderr, "probe: unknown cut %s\n", argv[i]);
            return 2;
        }
    }
    FILE *list = fopen(argv[2], "r");
    if (!list) return 2;
    char line[4096];
    int failed = 0, done = 0;
    while (fgets(line, sizeof line, list)) {
        line[strcspn(line, "\n")] = 0;
        if (!*line) continue;
        if (one(line, argv[1], atoi(argv[3]))) {
            fprintf(stderr, "probe: %s: %s\n", line, vips_error_buffer());
            vips_error_clear();
            failed++;
        } else {
            done++;
        }
    }
    fclose(list);
    fprintf(stderr, "probe: %d done, %d failed\n", done, failed);
    vips_shutdown();
    return failed ? 1 : 0;
}
