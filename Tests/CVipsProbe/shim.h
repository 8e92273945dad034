#include <vips/vips.h>

// Calls only the tests make, to open and compare outputs (the production wrappers are in
// Sources/CVips): non-variadic, since Swift cannot call C varargs.

static inline VipsImage *cvips_new_from_file(const char *name, VipsAccess access) {
    return vips_image_new_from_file(name, "access", access, NULL);
}

static inline int cvips_avg(VipsImage *in, double *out) { return vips_avg(in, out, NULL); }
static inline int cvips_subtract(VipsImage *left, VipsImage *right, VipsImage **out) { return vips_subtract(left, right, out, NULL); }
static inline int cvips_abs(VipsImage *in, VipsImage **out) { return vips_abs(in, out, NULL); }
