// SSIMULACRA2's per-pixel work on float planes (w * h floats each, row after row): XYB, the
// Gaussian, and the error maps' norms. libvips does the rest (decoding, linear light, the scales);
// these loops are the part libvips would run as dozens of chained operations per scale.
#ifndef CPERCEPTUAL_H
#define CPERCEPTUAL_H
#include <stddef.h>

// Linear-light RGB (3 interleaved floats a pixel) to SSIMULACRA2's positive XYB, one plane each.
void cp_positive_xyb(const float *rgb, size_t pixels, float *x, float *y, float *b);

// The Gaussian of sigma 1.5 with zeros outside the image, as libjxl's recursive one reads them;
// `temp` holds w * h floats.
void cp_blur(const float *in, float *out, float *temp, int width, int height);

// a * b, pixel by pixel.
void cp_multiply(const float *a, const float *b, float *out, size_t pixels);

// One channel of one scale: the 1-norm and 4-norm of the SSIM error map (from the means and
// blurred squares), then of the artifact map, then of the detail-lost map, into norms[0..5].
void cp_error_maps(const float *x1, const float *mu1, const float *sigma11, const float *x2, const float *mu2,
                   const float *sigma22, const float *sigma12, size_t pixels, double norms[6]);
#endif
