#include "CPerceptual.h"
#include <math.h>

void cp_positive_xyb(const float *rgb, size_t pixels, float *x, float *y, float *b) {
    const float bias = 0.0037930732552754493f;
    const float root_of_bias = cbrtf(bias);
    const float m20 = 0.24342268924547819f, m21 = 0.20476744424496821f, m22 = 1.0f - m20 - m21;
    for (size_t i = 0; i < pixels; i++) {
        const float r = rgb[3 * i], g = rgb[3 * i + 1], bl = rgb[3 * i + 2];
        // The opsin absorbance mix; never below zero, so the cube root is real.
        const float l = fmaxf(0.30f * r + 0.622f * g + 0.078f * bl + bias, 0.0f);
        const float m = fmaxf(0.23f * r + 0.692f * g + 0.078f * bl + bias, 0.0f);
        const float s = fmaxf(m20 * r + m21 * g + m22 * bl + bias, 0.0f);
        const float lc = cbrtf(l) - root_of_bias, mc = cbrtf(m) - root_of_bias, sc = cbrtf(s) - root_of_bias;
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

void cp_blur(const float *in, float *out, float *temp, int width, int height) {
    float w[2 * RADIUS + 1];
    fill_kernel(w);
    for (int y = 0; y < height; y++) {
        const float *row = in + (size_t) y * width;
        float *to = temp + (size_t) y * width;
        for (int x = 0; x < width; x++) {
            const int from = x - RADIUS < 0 ? RADIUS - x : 0, upto = x + RADIUS >= width ? RADIUS + (width - 1 - x) : 2 * RADIUS;
            float sum = 0;
            for (int k = from; k <= upto; k++) sum += w[k] * row[x - RADIUS + k];
            to[x] = sum;
        }
    }
    for (int y = 0; y < height; y++) {
        float *to = out + (size_t) y * width;
        for (int x = 0; x < width; x++) to[x] = 0;
        for (int k = 0; k <= 2 * RADIUS; k++) {
            const int source = y - RADIUS + k;
            if (source < 0 || source >= height) continue;
            const float *row = temp + (size_t) source * width;
            const float weight = w[k];
            for (int x = 0; x < width; x++) to[x] += weight * row[x];
        }
    }
}

void cp_multiply(const float *a, const float *b, float *out, size_t pixels) {
    for (size_t i = 0; i < pixels; i++) out[i] = a[i] * b[i];
}

static double fourth(double v) { v *= v; return v * v; }

void cp_error_maps(const float *x1, const float *mu1, const float *sigma11, const float *x2, const float *mu2,
                   const float *sigma22, const float *sigma12, size_t pixels, double norms[6]) {
    const float c2 = 0.0009f;
    double sums[6] = {0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < pixels; i++) {
        const float m1 = mu1[i], m2 = mu2[i], m11 = m1 * m1, m22 = m2 * m2, m12 = m1 * m2;
        // SSIM without the luminance term's denominator, as an error: 1 - SSIM', never below zero.
        const float means = 1.0f - (m1 - m2) * (m1 - m2);
        const float structure = 2 * (sigma12[i] - m12) + c2;
        const float variances = (sigma11[i] - m11) + (sigma22[i] - m22) + c2;
        const double ssim = fmax(1.0 - (means * structure / variances), 0.0);
        // Local detail of the distorted image over the reference's: more is an artifact, less is detail lost.
        const double edge = (1.0 + fabs(x2[i] - m2)) / (1.0 + fabs(x1[i] - m1)) - 1.0;
        const double artifact = fmax(edge, 0.0), lost = fmax(-edge, 0.0);
        sums[0] += ssim;
        sums[1] += fourth(ssim);
        sums[2] += artifact;
        sums[3] += fourth(artifact);
        sums[4] += lost;
        sums[5] += fourth(lost);
    }
    for (int n = 0; n < 6; n += 2) {
        norms[n] = sums[n] / (double) pixels;
        norms[n + 1] = sqrt(sqrt(sums[n + 1] / (double) pixels));
    }
}
