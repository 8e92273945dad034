#include "CPerceptual.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The loops below vectorise; where the CPU has AVX2 (most x86-64 servers since 2013) a second copy
// of each, picked once at load time, does eight floats at a step instead of four.
#if defined(__x86_64__) && defined(__clang__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

// The cube root of v > 0 without libm's cbrtf (a fifth of a score's time): an estimate from the
// exponent's bits, then three Newton steps, within a float's precision over SSIMULACRA2's range.
static inline float cube_root(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits = bits / 3 + 709921077u;
    float y;
    memcpy(&y, &bits, sizeof y);
    for (int step = 0; step < 3; step++) y = (2.0f * y + v / (y * y)) * (1.0f / 3.0f);
    return y;
}

VECTOR_CLONES void cp_positive_xyb(const float *rgb, size_t pixels, float *x, float *y, float *b) {
    const float bias = 0.0037930732552754493f;
    const float root_of_bias = cube_root(bias);
    const float m20 = 0.24342268924547819f, m21 = 0.20476744424496821f, m22 = 1.0f - m20 - m21;
    for (size_t i = 0; i < pixels; i++) {
        const float r = rgb[3 * i], g = rgb[3 * i + 1], bl = rgb[3 * i + 2];
        // The opsin absorbance mix; never below zero, so the cube root is real.
        const float l = fmaxf(0.30f * r + 0.622f * g + 0.078f * bl + bias, 0.0f);
        const float m = fmaxf(0.23f * r + 0.692f * g + 0.078f * bl + bias, 0.0f);
        const float s = fmaxf(m20 * r + m21 * g + m22 * bl + bias, 0.0f);
        const float lc = cube_root(l) - root_of_bias, mc = cube_root(m) - root_of_bias, sc = cube_root(s) - root_of_bias;
        const float cx = 0.5f * (lc - mc), cy = 0.5f * (lc + mc);
        // Moved into 0...1 as SSIMULACRA2 does.
        x[i] = cx * 14.0f + 0.42f;
        y[i] = cy + 0.01f;
        b[i] = sc - cy + 0.55f;
    }
}

// libjxl's recursive Gaussian reaches round(3.2795 sigma + 0.2546) pixels: 5 at sigma 1.5.
enum { RADIUS = 5 };


static void fill_kernel(float weights[2 * RADIUS + 1]) {
    double sum = 0;
    for (int i = -RADIUS; i <= RADIUS; i++) sum += exp(-(double) (i * i) / (2 * 1.5 * 1.5));
    for (int i = -RADIUS; i <= RADIUS; i++) weights[i + RADIUS] = (float) (exp(-(double) (i * i) / (2 * 1.5 * 1.5)) / sum);
}

VECTOR_CLONES void cp_blur(const float *restrict in, float *restrict out, float *restrict temp, int width, int height) {
    float w[2 * RADIUS + 1];
    fill_kernel(w);
    // Each pass adds one weighted, shifted copy of its input per tap: plain loops over a row that
    // vectorise. The horizontal pass reads a copy of the row with RADIUS zeros on each side.
    float *padded = calloc((size_t) width + 2 * RADIUS, sizeof(float));
    if (!padded) abort();  // a few kilobytes a row: out of memory here is out of memory anywhere
    for (int y = 0; y < height; y++) {
        memcpy(padded + RADIUS, in + (size_t) y * width, sizeof(float) * (size_t) width);
        float *restrict to = temp + (size_t) y * width;
        for (int x = 0; x < width; x++) to[x] = w[RADIUS] * padded[x + RADIUS];
        for (int k = 1; k <= RADIUS; k++) {
            const float weight = w[RADIUS + k];
            const float *left = padded + RADIUS - k, *right = padded + RADIUS + k;
            for (int x = 0; x < width; x++) to[x] += weight * (left[x] + right[x]);
        }
    }
    for (int y = 0; y < height; y++) {
        float *restrict to = out + (size_t) y * width;
        const float *centre = temp + (size_t) y * width;
        for (int x = 0; x < width; x++) to[x] = w[RADIUS] * centre[x];
        for (int k = 1; k <= RADIUS; k++) {
            const float *above = y - k >= 0 ? temp + (size_t) (y - k) * width : NULL;
            const float *below = y + k < height ? temp + (size_t) (y + k) * width : NULL;
            const float weight = w[RADIUS + k];
            if (above && below) {
                for (int x = 0; x < width; x++) to[x] += weight * (above[x] + below[x]);
            } else if (above || below) {
                const float *row = above ? above : below;
                for (int x = 0; x < width; x++) to[x] += weight * row[x];
            }
        }
    }
    free(padded);
}

VECTOR_CLONES void cp_multiply(const float *restrict a, const float *restrict b, float *restrict out, size_t pixels) {
    for (size_t i = 0; i < pixels; i++) out[i] = a[i] * b[i];
}

VECTOR_CLONES void cp_error_maps(const float *restrict x1, const float *restrict mu1, const float *restrict sigma11, const float *restrict x2,
                   const float *restrict mu2, const float *restrict sigma22, const float *restrict sigma12, size_t pixels, double norms[6]) {
    const float c2 = 0.0009f;
    double sums[6] = {0, 0, 0, 0, 0, 0};
    // Summed in float a row's worth at a time, then into doubles: as exact as the tool's doubles
    // per pixel for these magnitudes, and the loop vectorises.
    const size_t block = 1024;
    for (size_t start = 0; start < pixels; start += block) {
        const size_t end = start + block < pixels ? start + block : pixels;
        float partial[6] = {0, 0, 0, 0, 0, 0};
        for (size_t i = start; i < end; i++) {
            const float m1 = mu1[i], m2 = mu2[i], m11 = m1 * m1, m22 = m2 * m2, m12 = m1 * m2;
            // SSIM without the luminance term's denominator, as an error: 1 - SSIM', never below zero.
            const float means = 1.0f - (m1 - m2) * (m1 - m2);
            const float structure = 2 * (sigma12[i] - m12) + c2;
            const float variances = (sigma11[i] - m11) + (sigma22[i] - m22) + c2;
            const float ssim = fmaxf(1.0f - means * structure / variances, 0.0f);
            // Local detail of the distorted image over the reference's: more is an artifact, less is detail lost.
            const float edge = (1.0f + fabsf(x2[i] - m2)) / (1.0f + fabsf(x1[i] - m1)) - 1.0f;
            const float artifact = fmaxf(edge, 0.0f), lost = fmaxf(-edge, 0.0f);
            const float ssim2 = ssim * ssim, artifact2 = artifact * artifact, lost2 = lost * lost;
            partial[0] += ssim;
            partial[1] += ssim2 * ssim2;
            partial[2] += artifact;
            partial[3] += artifact2 * artifact2;
            partial[4] += lost;
            partial[5] += lost2 * lost2;
        }
        for (int n = 0; n < 6; n++) sums[n] += partial[n];
    }
    for (int n = 0; n < 6; n += 2) {
        norms[n] = sums[n] / (double) pixels;
        norms[n + 1] = sqrt(sqrt(sums[n + 1] / (double) pixels));
    }
}
