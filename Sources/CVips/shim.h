// One-line, non-variadic wrappers for the libvips calls runner makes.
// Swift cannot call C varargs functions, so every optional argument a call
// needs is a positional parameter here; NULL ends each list.
#ifndef RUNNER_CVIPS_SHIM_H
#define RUNNER_CVIPS_SHIM_H

#include <malloc.h>
#include <vips/vips.h>

// MARK: - Start-up and errors

// The largest image side or offset runner hands libvips: 8.14's VIPS_MAX_COORD (8.16 made that a
// call, with a default ten times larger), so a job file means the same on both.
#define CVIPS_MAX_COORD 10000000

// A libvips installed privately beside runner (/usr/lib/runner in the Debian package, PREFIX/lib/runner
// with `make install`) keeps its modules (HEIF/AVIF, JPEG XL, PDF, ...) in lib/vips-modules-X.Y below its
// own folder. libvips loads them from VIPSHOME/lib, or else from its configure-time libdir (the build
// folder, absent where the package is installed), so VIPSHOME becomes the folder libvips.so was loaded
// from when that folder holds them and VIPSHOME is unset. The build folder's libvips and Debian's
// (no lib/vips-modules-X.Y below their folder) keep finding theirs as before.
typedef struct { const char *fname; void *fbase; const char *sname; void *saddr; } cvips_dl_info;
extern int cvips_dladdr(const void *address, cvips_dl_info *info) __asm__("dladdr");
static inline void cvips_use_private_modules(void) {
    cvips_dl_info info;
    if (g_getenv("VIPSHOME") || !cvips_dladdr((const void *) vips_init, &info) || !info.fname) return;
    char *folder = g_path_get_dirname(info.fname);
    char *modules = g_strdup_printf("%s/lib/vips-modules-%d.%d", folder, VIPS_MAJOR_VERSION, VIPS_MINOR_VERSION);
    if (g_file_test(modules, G_FILE_TEST_IS_DIR)) g_setenv("VIPSHOME", folder, FALSE);
    g_free(modules);
    g_free(folder);
}

static inline int cvips_init(const char *argv0) {
    cvips_use_private_modules();
    return vips_init(argv0);
}

static inline int cvips_operation_exists(const char *nickname) { return vips_type_find("VipsOperation", nickname) != 0; }
// Whether libvips marks the operation untrusted (`vips_block_untrusted_set` blocks it).
static inline int cvips_operation_untrusted(const char *nickname) {
    GType type = vips_type_find("VipsOperation", nickname);
    if (!type) return 0;
    VipsOperationClass *class = VIPS_OPERATION_CLASS(g_type_class_ref(type));
    int untrusted = (class->flags & VIPS_OPERATION_UNTRUSTED) != 0;
    g_type_class_unref(class);
    return untrusted;
}

// A source loader, trusted or untrusted as asked, blocked or not, whose sniffer claims `source`'s
// first bytes: after a failed load, whether a loader runner lets run claims the file (then the
// failure is the decoder's) or only an untrusted one does (which, say). vips_foreign_map and
// vips_foreign_find_load_source skip blocked loaders, so this walks every class, rewinding the
// source before each sniff as libvips does.
typedef struct { VipsSource *source; int untrusted; } CVipsClaim;
static void *cvips_claim(VipsObjectClass *object_class, void *a) {
    CVipsClaim *claim = (CVipsClaim *) a;
    size_t length = strlen(object_class->nickname);
    if (G_TYPE_IS_ABSTRACT(G_TYPE_FROM_CLASS(object_class))) return NULL;
    if (length < 7 || strcmp(object_class->nickname + length - 7, "_source") != 0) return NULL;
    if (((VIPS_OPERATION_CLASS(object_class)->flags & VIPS_OPERATION_UNTRUSTED) != 0) != claim->untrusted) return NULL;
    VipsForeignLoadClass *load_class = VIPS_FOREIGN_LOAD_CLASS(object_class);
    if (!load_class->is_a_source || vips_source_rewind(claim->source)) return NULL;
    return load_class->is_a_source(claim->source) ? (void *) object_class->nickname : NULL;
}
static inline const char *cvips_claiming_loader(VipsSource *source, int untrusted) {
    CVipsClaim claim = { source, untrusted };
    const char *nickname = (const char *) vips_class_map_all(g_type_from_name("VipsForeignLoad"), cvips_claim, &claim);
    vips_source_rewind(source);
    return nickname;
}

// Whether a 16x16 image saved by heifsave with `compression` reads back: libvips has heifload and
// heifsave whichever codecs libheif was built with (HEIC needs libde265 and x265, AVIF aom or dav1d).
static inline int cvips_heif_round_trips(VipsForeignHeifCompression compression) {
    VipsImage *black = NULL, *image = NULL, *back = NULL;
    void *buf = NULL;
    size_t len = 0;
    double average;
    int ok = !vips_black(&black, 16, 16, "bands", 3, NULL)
        && !vips_copy(black, &image, "interpretation", VIPS_INTERPRETATION_sRGB, NULL)
        && !vips_heifsave_buffer(image, &buf, &len, "compression", compression, NULL)
        && (back = vips_image_new_from_buffer(buf, len, "", NULL)) && !vips_avg(back, &average, NULL);
    if (black) g_object_unref(black);
    if (image) g_object_unref(image);
    if (back) g_object_unref(back);
    g_free(buf);
    vips_error_clear();
    return ok;
}

static inline void cvips_keep_freed_memory(int mmap_threshold, int trim_threshold) {
    mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    mallopt(M_TRIM_THRESHOLD, trim_threshold);
}

// Copies and clears the shared error buffer; the caller frees with g_free.
static inline char *cvips_error_take(void) { return vips_error_buffer_copy(); }

// MARK: - Loading

static inline VipsImage *cvips_new_from_buffer(const void *buf, size_t len, VipsAccess access, VipsFailOn fail_on) {
    return vips_image_new_from_buffer(buf, len, "", "access", access, "fail_on", fail_on, NULL);
}

// A source file is opened once as a VipsSource that every decode of it shares: libvips streams
// it (a large original is never copied whole into memory) and the loader sniffing and file opens
// happen once per source, not once per decode. The caller owns the source (g_object_unref).
static inline VipsSource *cvips_source(const char *name) { return vips_source_new_from_file(name); }
// By descriptor (libvips dups it): the sniff then runs only the loaders that test bytes.
static inline VipsSource *cvips_source_descriptor(int descriptor) { return vips_source_new_from_descriptor(descriptor); }
static inline VipsImage *cvips_open(VipsSource *source, VipsAccess access, VipsFailOn fail_on) {
    return vips_image_new_from_source(source, "", "access", access, "fail_on", fail_on, NULL);
}
static inline VipsImage *cvips_open_pages(VipsSource *source, VipsAccess access, VipsFailOn fail_on) {
    return vips_image_new_from_source(source, "", "access", access, "fail_on", fail_on, "n", -1, NULL);
}
// export_profile may be NULL: no colour transform beyond what libvips does for CMYK. fail_on
// also travels in the loader's option string: 8.14's thumbnail_buffer ignores the argument.
static inline int cvips_thumbnail_source(VipsSource *source, VipsImage **out, int width, int height, VipsSize size,
                                         VipsInteresting crop, int no_rotate, VipsFailOn fail_on,
                                         const char *loader_options, const char *export_profile) {
    if (export_profile)
        return vips_thumbnail_source(source, out, width, "height", height, "size", size, "crop", crop,
                                     "no_rotate", no_rotate, "fail_on", fail_on, "option_string", loader_options,
                                     "export_profile", export_profile, NULL);
    return vips_thumbnail_source(source, out, width, "height", height, "size", size, "crop", crop,
                                 "no_rotate", no_rotate, "fail_on", fail_on, "option_string", loader_options, NULL);
}

// Shrink-on-load: the decoder itself skips the pixels the thumbnail does not need.
// For a thumbnail step that is not first in its chain (the image is already decoded).
static inline int cvips_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height,
                                        VipsSize size, VipsInteresting crop) {
    return vips_thumbnail_image(in, out, width, "height", height, "size", size, "crop", crop, "no_rotate", TRUE, NULL);
}

static inline int cvips_remove(VipsImage *image, const char *name) { return vips_image_remove(image, name); }

static inline int cvips_image_has(VipsImage *image, const char *name) {
    return vips_image_get_typeof(image, name) != 0;
}
static inline int cvips_copy(VipsImage *in, VipsImage **out) { return vips_copy(in, out, NULL); }

// MARK: - Transforms

static inline int cvips_autorot(VipsImage *in, VipsImage **out) { return vips_autorot(in, out, NULL); }
static inline int cvips_rot(VipsImage *in, VipsImage **out, VipsAngle angle) { return vips_rot(in, out, angle, NULL); }
static inline int cvips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
    return vips_extract_area(in, out, left, top, width, height, NULL);
}
static inline int cvips_smartcrop(VipsImage *in, VipsImage **out, int width, int height, VipsInteresting interesting) {
    return vips_smartcrop(in, out, width, height, "interesting", interesting, NULL);
}
// The attention crop's centre too (libvips' own estimate of where the interest is), for a focal point.
static inline int cvips_smartcrop_centre(VipsImage *in, VipsImage **out, int width, int height, int *x, int *y) {
    return vips_smartcrop(in, out, width, height, "interesting", VIPS_INTERESTING_ATTENTION,
                          "attention_x", x, "attention_y", y, NULL);
}
static inline int cvips_gaussblur(VipsImage *in, VipsImage **out, double sigma) {
    return vips_gaussblur(in, out, sigma, NULL);
}
static inline int cvips_sharpen(VipsImage *in, VipsImage **out, double sigma, double m1, double m2) {
    return vips_sharpen(in, out, "sigma", sigma, "m1", m1, "m2", m2, NULL);
}
static inline int cvips_colourspace(VipsImage *in, VipsImage **out, VipsInterpretation space) {
    return vips_colourspace(in, out, space, NULL);
}
static inline int cvips_icc_to_srgb(VipsImage *in, VipsImage **out, int depth) {
    return vips_icc_transform(in, out, "srgb", "embedded", TRUE, "intent", VIPS_INTENT_RELATIVE, "depth", depth, NULL);
}
static inline int cvips_resize(VipsImage *in, VipsImage **out, double hscale, double vscale, VipsKernel kernel) {
    return vips_resize(in, out, hscale, "vscale", vscale, "kernel", kernel, NULL);
}
static inline int cvips_flatten(VipsImage *in, VipsImage **out, const double *background, int n) {
    VipsArrayDouble *bg = vips_array_double_new(background, n);
    int result = vips_flatten(in, out, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    return result;
}
static inline int cvips_cast(VipsImage *in, VipsImage **out, VipsBandFormat format) {
    return vips_cast(in, out, format, NULL);
}
static inline int cvips_flip(VipsImage *in, VipsImage **out, VipsDirection direction) { return vips_flip(in, out, direction, NULL); }
static inline int cvips_rotate(VipsImage *in, VipsImage **out, double angle, const double *background, int n) {
    VipsArrayDouble *bg = vips_array_double_new(background, n);
    int result = vips_rotate(in, out, angle, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    return result;
}
static inline int cvips_embed(VipsImage *in, VipsImage **out, int x, int y, int width, int height,
                              const double *background, int n) {
    VipsArrayDouble *bg = vips_array_double_new(background, n);
    int result = vips_embed(in, out, x, y, width, height, "extend", VIPS_EXTEND_BACKGROUND, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    return result;
}
static inline int cvips_insert(VipsImage *main, VipsImage *sub, VipsImage **out, int x, int y) {
    return vips_insert(main, sub, out, x, y, NULL);
}
static inline int cvips_find_trim(VipsImage *in, int *left, int *top, int *width, int *height, double threshold,
                                  const double *background, int n) {
    VipsArrayDouble *bg = vips_array_double_new(background, n);
    int result = vips_find_trim(in, left, top, width, height, "threshold", threshold, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    return result;
}
// Stacks frames top to bottom (an animation's strip).
static inline int cvips_arrayjoin_vertical(VipsImage **in, VipsImage **out, int n) {
    return vips_arrayjoin(in, out, n, "across", 1, NULL);
}
static inline int cvips_composite2(VipsImage *base, VipsImage *overlay, VipsImage **out, VipsBlendMode mode, int x, int y) {
    return vips_composite2(base, overlay, out, mode, "x", x, "y", y, NULL);
}

// MARK: - Bands and arithmetic

static inline int cvips_extract_bands(VipsImage *in, VipsImage **out, int first, int n) {
    return vips_extract_band(in, out, first, "n", n, NULL);
}
static inline int cvips_bandjoin2(VipsImage *left, VipsImage *right, VipsImage **out) {
    return vips_bandjoin2(left, right, out, NULL);
}
static inline int cvips_bandjoin_const1(VipsImage *in, VipsImage **out, double value) {
    return vips_bandjoin_const1(in, out, value, NULL);
}
static inline int cvips_linear(VipsImage *in, VipsImage **out, const double *a, const double *b, int n) {
    return vips_linear(in, out, a, b, n, NULL);
}
// Each output band is a weighted sum of the input bands (rows x columns = output x input bands).
static inline int cvips_recomb(VipsImage *in, VipsImage **out, const double *matrix, int rows, int columns) {
    VipsImage *m = vips_image_new_matrix_from_array(columns, rows, matrix, rows * columns);
    if (!m) return -1;
    int result = vips_recomb(in, out, m, NULL);
    g_object_unref(m);
    return result;
}
static inline int cvips_multiply(VipsImage *left, VipsImage *right, VipsImage **out) {
    return vips_multiply(left, right, out, NULL);
}
static inline int cvips_pow_const1(VipsImage *in, VipsImage **out, double exponent) {
    return vips_pow_const1(in, out, exponent, NULL);
}
static inline int cvips_rint(VipsImage *in, VipsImage **out) { return vips_rint(in, out, NULL); }
static inline int cvips_gamma(VipsImage *in, VipsImage **out, double exponent) {
    return vips_gamma(in, out, "exponent", exponent, NULL);
}
static inline int cvips_xyz(VipsImage **out, int width, int height) { return vips_xyz(out, width, height, NULL); }

// MARK: - Measuring (trim reads a corner pixel; tests check outputs independently of runner's own report)

static inline int cvips_getpoint(VipsImage *in, double **vector, int *n, int x, int y) {
    return vips_getpoint(in, vector, n, x, y, NULL);
}
static inline int cvips_extract_band(VipsImage *in, VipsImage **out, int band) { return vips_extract_band(in, out, band, NULL); }

// MARK: - Perceptual quality (SSIMULACRA2's libvips side: linear light and the scales)

static inline int cvips_embed_extend(VipsImage *in, VipsImage **out, int x, int y, int width, int height, VipsExtend extend) {
    return vips_embed(in, out, x, y, width, height, "extend", extend, NULL);
}
static inline int cvips_shrink(VipsImage *in, VipsImage **out, double factor) { return vips_shrink(in, out, factor, factor, NULL); }
static inline int cvips_lesseq_const1(VipsImage *in, VipsImage **out, double value) {
    return vips_relational_const1(in, out, VIPS_OPERATION_RELATIONAL_LESSEQ, value, NULL);
}
static inline int cvips_ifthenelse(VipsImage *cond, VipsImage *in1, VipsImage *in2, VipsImage **out) {
    return vips_ifthenelse(cond, in1, in2, out, NULL);
}
// A 1 x n table of doubles indexed by pixel value.
static inline int cvips_maplut(VipsImage *in, VipsImage **out, const double *table, int n) {
    VipsImage *lut = vips_image_new_matrix_from_array(n, 1, table, n);
    if (!lut) return -1;
    int result = vips_maplut(in, out, lut, NULL);
    g_object_unref(lut);
    return result;
}
static inline int cvips_stats(VipsImage *in, VipsImage **out) { return vips_stats(in, out, NULL); }
static inline double cvips_matrix_at(VipsImage *matrix, int x, int y) { return *VIPS_MATRIX(matrix, x, y); }

// MARK: - Rendering on the calling thread (macros Swift cannot import)

static inline size_t cvips_sizeof_line(VipsImage *image) { return VIPS_IMAGE_SIZEOF_LINE(image); }
static inline VipsPel *cvips_image_addr(VipsImage *image, int x, int y) { return VIPS_IMAGE_ADDR(image, x, y); }
static inline VipsPel *cvips_region_addr(VipsRegion *region, int x, int y) { return VIPS_REGION_ADDR(region, x, y); }
static inline int cvips_pipeline_from(VipsImage *image, VipsImage *input) {
    return vips_image_pipelinev(image, VIPS_DEMAND_STYLE_THINSTRIP, input, NULL);
}

// MARK: - Saving (to memory; runner writes the bytes itself, atomically)
// `keep` says which metadata the file carries: CVIPS_KEEP_* flags, libvips' VipsForeignKeep values.
// libvips 8.15 replaced the `strip` flag with `keep` flags that every saver applies; 8.14 has only
// `strip` (all or nothing), which its webpsave ignores (libvips issue #3340), so on 8.14 runner
// removes the rest itself (CVIPS_SAVERS_KEEP 0).

typedef enum {
    CVIPS_KEEP_NONE = 0, CVIPS_KEEP_EXIF = 1, CVIPS_KEEP_XMP = 2, CVIPS_KEEP_IPTC = 4, CVIPS_KEEP_ICC = 8,
    CVIPS_KEEP_OTHER = 16, CVIPS_KEEP_ALL = 31
} CVipsKeep;
#if VIPS_MAJOR_VERSION > 8 || (VIPS_MAJOR_VERSION == 8 && VIPS_MINOR_VERSION >= 15)
#define CVIPS_SAVERS_KEEP 1
#define CVIPS_METADATA(keep) "keep", (VipsForeignKeep) (keep)
#else
#define CVIPS_SAVERS_KEEP 0
#define CVIPS_METADATA(keep) "strip", (keep) == CVIPS_KEEP_NONE
#endif

static inline int cvips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int progressive,
                                        VipsForeignSubsample subsample, int optimize_coding, CVipsKeep keep) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "interlace", progressive, "subsample_mode", subsample,
                                "optimize_coding", optimize_coding, CVIPS_METADATA(keep), NULL);
}
static inline int cvips_pngsave_buffer(VipsImage *in, void **buf, size_t *len, int compression, int palette,
                                       double dither, int bitdepth, CVipsKeep keep) {
    return vips_pngsave_buffer(in, buf, len, "compression", compression, "palette", palette, "dither", dither,
                               "bitdepth", bitdepth, CVIPS_METADATA(keep), NULL);
}
static inline int cvips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int lossless, int near_lossless,
                                        int effort, int alpha_quality, int smart_subsample, CVipsKeep keep) {
    return vips_webpsave_buffer(in, buf, len, "Q", quality, "lossless", lossless, "near_lossless", near_lossless,
                                "effort", effort, "alpha_q", alpha_quality, "smart_subsample", smart_subsample, CVIPS_METADATA(keep), NULL);
}
// AVIF is HEIF with AV1 compression.
static inline int cvips_avifsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int effort, int lossless,
                                        CVipsKeep keep) {
    return vips_heifsave_buffer(in, buf, len, "Q", quality, "effort", effort, "lossless", lossless,
                                "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, CVIPS_METADATA(keep), NULL);
}
// 8.14's jxlsave takes effort 3-9, 8.16's 1-9 (lightning and thunder): below 3 is 3 there.
#if VIPS_MAJOR_VERSION > 8 || (VIPS_MAJOR_VERSION == 8 && VIPS_MINOR_VERSION >= 16)
#define CVIPS_JXL_EFFORT(effort) (effort)
#else
#define CVIPS_JXL_EFFORT(effort) ((effort) < 3 ? 3 : (effort))
#endif
static inline int cvips_jxlsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int effort, int lossless,
                                       CVipsKeep keep) {
    return vips_jxlsave_buffer(in, buf, len, "Q", quality, "effort", CVIPS_JXL_EFFORT(effort), "lossless", lossless,
                               CVIPS_METADATA(keep), NULL);
}
static inline int cvips_tiffsave_buffer(VipsImage *in, void **buf, size_t *len, VipsForeignTiffCompression compression,
                                        int quality, CVipsKeep keep) {
    return vips_tiffsave_buffer(in, buf, len, "compression", compression, "Q", quality, "pyramid", FALSE,
                                CVIPS_METADATA(keep), NULL);
}
static inline int cvips_gifsave_buffer(VipsImage *in, void **buf, size_t *len, double dither, int effort, int bitdepth,
                                       CVipsKeep keep) {
    return vips_gifsave_buffer(in, buf, len, "dither", dither, "effort", effort, "bitdepth", bitdepth,
                               CVIPS_METADATA(keep), NULL);
}

#endif
