/* The adjoint spring kernel on interleaved node arrays (x y z per node) against the same on
 * planar ones (every x, then every y, then every z), on the fastest vector path, over a 32 x 32
 * cloth (the test helpers' make_cloth: 1,024 nodes, 5,826 springs): checks that both give the
 * same bits, then times them in turn (processor time of the calling thread, five rounds).
 *
 *   cd csrc && cc -std=c11 -D_POSIX_C_SOURCE=200809L -O3 -ffp-contract=off -Iinclude -Isrc -Itests \
 *       -o /tmp/planar_adjoint ../benchmarks/c/planar_adjoint.c $(find src -name '*.c') tests/helpers.c \
 *       -lm -lpthread
 *   /tmp/planar_adjoint [which: 0 interleaved, 1 planar, 2 both] [calls per round] [states]
 *
 * With states > 1 each call reads the next of that many copies of x and v (as the backward
 * pass reads a stretch of states), lf and the adjoints staying the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helpers.h"
#include "kernels/derivatives.h"

static double thread_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void to_planar(const double* in, double* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) out[c * n + i] = in[3 * i + c];
}

static double* zeros(int64_t count) { return calloc((size_t)count, sizeof(double)); }

int main(int argc, char** argv) {
    const int which = argc > 1 ? atoi(argv[1]) : 2;
    const int calls = argc > 2 ? atoi(argv[2]) : 2000;
    const int states = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 1;
    ms_model* m = make_cloth(32, 1, 7);
    ms_error err;
    ms_spring_adjoint* springs = m != NULL ? ms_spring_adjoint_create(m, &err) : NULL;
    if (springs == NULL) return 1;
    const ms_layout* layout = springs->layout;
    const int64_t n = m->nnode, n3 = 3 * n, ns = m->nspring;
    int64_t grouped = 0, gathered = 0;
    for (int64_t s = 0; s < ns;) {
        const int64_t kind = layout->lanes[layout->pairs[2 * s]], k = kind & MS_MAX_LANE_SPRINGS;
        if (k == 0) {
            ++s;
            continue;
        }
        if (kind & MS_GATHERED) gathered += MS_LANES * k;
        else grouped += MS_LANES * k;
        s += MS_LANES * k;
    }
    printf("%lld springs: %lld in lane groups, %lld gathered, %lld single\n", (long long)ns, (long long)grouped,
           (long long)gathered, (long long)(ns - grouped - gathered));
    uint64_t seed = 3;
    double *x = zeros(n3), *v = zeros(n3), *lf = zeros(n3), *plf = zeros(n3);
    double *sx = zeros(n3 * states), *sv = zeros(n3 * states), *spx = zeros(n3 * states), *spv = zeros(n3 * states);
    double *lx = zeros(n3), *lv = zeros(n3), *grad = zeros(3 * ns), *pairing = zeros(n);
    double *plx = zeros(n3), *plv = zeros(n3), *pgrad = zeros(3 * ns), *ppairing = zeros(n);
    double *back_x = zeros(n3), *back_v = zeros(n3);
    for (int64_t q = 0; q < n3; ++q) {
        x[q] = m->x_initial[q] + 0.02 * lcg_uniform(&seed);
        v[q] = lcg_uniform(&seed);
        lf[q] = lcg_uniform(&seed);
    }
    to_planar(lf, plf, n);
    for (int k = 0; k < states; ++k) {
        memcpy(sx + k * n3, x, sizeof(double) * (size_t)n3);
        memcpy(sv + k * n3, v, sizeof(double) * (size_t)n3);
        to_planar(x, spx + k * n3, n);
        to_planar(v, spv + k * n3, n);
    }
    const ms_spring_adjoint_kernel interleaved = springs->kernel;
    const ms_spring_adjoint_kernel planar =
        interleaved == ms_springs_adjoint_plain ? ms_springs_adjoint_planar_plain :
#if defined(MS_AVX2_PATH)
        interleaved == ms_springs_adjoint_avx2 ? ms_springs_adjoint_planar_avx2 :
#endif
#if defined(MS_SSE2_PATH)
        ms_springs_adjoint_planar_sse2;
#elif defined(MS_NEON_PATH)
        ms_springs_adjoint_planar_neon;
#else
        ms_springs_adjoint_planar_plain;
#endif
    interleaved(layout, x, v, lf, lx, lv, grad, pairing);
    planar(layout, spx, spv, plf, plx, plv, pgrad, ppairing);
    to_planar(lx, back_x, n);
    to_planar(lv, back_v, n);
    printf("same bits: lx %d, lv %d, grad %d, pairing %d\n", !memcmp(back_x, plx, sizeof(double) * (size_t)n3),
           !memcmp(back_v, plv, sizeof(double) * (size_t)n3), !memcmp(grad, pgrad, sizeof(double) * 3 * (size_t)ns),
           !memcmp(pairing, ppairing, sizeof(double) * (size_t)n));
    for (int round = 0; round < 5; ++round) {
        const double t0 = thread_seconds();
        if (which != 1)
            for (int r = 0; r < calls; ++r)
                interleaved(layout, sx + (r % states) * n3, sv + (r % states) * n3, lf, lx, lv, grad, pairing);
        const double t1 = thread_seconds();
        if (which != 0)
            for (int r = 0; r < calls; ++r)
                planar(layout, spx + (r % states) * n3, spv + (r % states) * n3, plf, plx, plv, pgrad, ppairing);
        const double t2 = thread_seconds();
        printf("per call: interleaved %.2f us, planar %.2f us (planar / interleaved %.3f)\n",
               1e6 * (t1 - t0) / calls, 1e6 * (t2 - t1) / calls, (t2 - t1) / (t1 - t0));
    }
    return 0;
}
