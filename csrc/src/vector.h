/* The vector layer under the spring kernel and the Euler update: a type v4 of four doubles
 * and the few operations they need, on one of three paths chosen by the file that includes
 * this header:
 *   MS_PATH_AVX2   one 256-bit AVX2 register
 *   MS_PATH_SSE2   two 128-bit SSE2 registers
 *   (neither)      four plain doubles (any processor; compilers may vectorise them)
 * and the one-lane type v1 (a plain double) with the same operations.  Every operation is
 * one IEEE operation per lane (no fused multiply-adds: the build turns contraction off),
 * so the three paths give the same bits.
 */
#ifndef MSPRINGS_VECTOR_H
#define MSPRINGS_VECTOR_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef double v1;
static inline v1 v1_set(double a) { return a; }
static inline v1 v1_add(v1 a, v1 b) { return a + b; }
static inline v1 v1_sub(v1 a, v1 b) { return a - b; }
static inline v1 v1_mul(v1 a, v1 b) { return a * b; }
static inline v1 v1_div(v1 a, v1 b) { return a / b; }
static inline v1 v1_sqrt(v1 a) { return sqrt(a); }
static inline v1 v1_if_greater(v1 a, v1 b, v1 c) { return a > b ? c : 0.0; } /* a > b ? c : 0 */
static inline v1 v1_abs(v1 a) { return fabs(a); }

#if defined(MS_PATH_AVX2)
#include <immintrin.h>
typedef __m256d v4;
static inline v4 v4_set(double a) { return _mm256_set1_pd(a); }
static inline v4 v4_load(const double* p) { return _mm256_loadu_pd(p); }
static inline void v4_store(double* p, v4 a) { _mm256_storeu_pd(p, a); }
static inline v4 v4_add(v4 a, v4 b) { return _mm256_add_pd(a, b); }
static inline v4 v4_sub(v4 a, v4 b) { return _mm256_sub_pd(a, b); }
static inline v4 v4_mul(v4 a, v4 b) { return _mm256_mul_pd(a, b); }
static inline v4 v4_div(v4 a, v4 b) { return _mm256_div_pd(a, b); }
static inline v4 v4_sqrt(v4 a) { return _mm256_sqrt_pd(a); }
static inline v4 v4_if_greater(v4 a, v4 b, v4 c) { return _mm256_and_pd(_mm256_cmp_pd(a, b, _CMP_GT_OQ), c); }
static inline v4 v4_abs(v4 a) {
    return _mm256_and_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)));
}
/* p[0..11] = x0 y0 z0 x1 y1 z1 ... (four consecutive nodes) as the vectors of their x, y, z */
static inline void v4_load_nodes(const double* p, v4* x, v4* y, v4* z) {
    const __m256d a = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p)), _mm_loadu_pd(p + 6), 1);
    const __m256d b = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p + 2)), _mm_loadu_pd(p + 8), 1);
    const __m256d c = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p + 4)), _mm_loadu_pd(p + 10), 1);
    /* a = x0 y0 x2 y2, b = z0 x1 z2 x3, c = y1 z1 y3 z3 */
    *x = _mm256_shuffle_pd(a, b, 0xA);
    *y = _mm256_shuffle_pd(a, c, 0x5);
    *z = _mm256_shuffle_pd(b, c, 0xA);
}
/* per-node values (a, b, c, d) of four consecutive nodes spread over their twelve
   components: (a a a b), (b b c c), (c d d d) */
static inline void v4_spread(v4 w, v4 out[3]) {
    out[0] = _mm256_permute4x64_pd(w, 0x40);
    out[1] = _mm256_permute4x64_pd(w, 0xA5);
    out[2] = _mm256_permute4x64_pd(w, 0xFE);
}
/* p[0..11] += or -= (x, y, z) of four consecutive nodes */
static inline void v4_add_nodes(double* p, v4 x, v4 y, v4 z, int subtract) {
    const __m256d a = _mm256_unpacklo_pd(x, y);     /* x0 y0 x2 y2 */
    const __m256d b = _mm256_shuffle_pd(z, x, 0xA); /* z0 x1 z2 x3 */
    const __m256d c = _mm256_unpackhi_pd(y, z);     /* y1 z1 y3 z3 */
    const __m256d part0 = _mm256_permute2f128_pd(a, b, 0x20); /* x0 y0 z0 x1 */
    const __m256d part1 = _mm256_permute2f128_pd(c, a, 0x30); /* y1 z1 x2 y2 */
    const __m256d part2 = _mm256_permute2f128_pd(b, c, 0x31); /* z2 x3 y3 z3 */
    if (subtract) {
        _mm256_storeu_pd(p, _mm256_sub_pd(_mm256_loadu_pd(p), part0));
        _mm256_storeu_pd(p + 4, _mm256_sub_pd(_mm256_loadu_pd(p + 4), part1));
        _mm256_storeu_pd(p + 8, _mm256_sub_pd(_mm256_loadu_pd(p + 8), part2));
    } else {
        _mm256_storeu_pd(p, _mm256_add_pd(_mm256_loadu_pd(p), part0));
        _mm256_storeu_pd(p + 4, _mm256_add_pd(_mm256_loadu_pd(p + 4), part1));
        _mm256_storeu_pd(p + 8, _mm256_add_pd(_mm256_loadu_pd(p + 8), part2));
    }
}
/* nodes index[0..3] of p (x y z per node) as the vectors of their x, y, z */
static inline void v4_gather_nodes(const double* p, const int64_t index[4], v4* x, v4* y, v4* z) {
    const double *p0 = p + 3 * index[0], *p1 = p + 3 * index[1], *p2 = p + 3 * index[2], *p3 = p + 3 * index[3];
    const __m256d a = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p0)), _mm_loadu_pd(p2), 1);
    const __m256d b = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p1)), _mm_loadu_pd(p3), 1);
    /* a = x0 y0 x2 y2, b = x1 y1 x3 y3 */
    *x = _mm256_unpacklo_pd(a, b);
    *y = _mm256_unpackhi_pd(a, b);
    const __m128d z01 = _mm_loadh_pd(_mm_load_sd(p0 + 2), p1 + 2);
    const __m128d z23 = _mm_loadh_pd(_mm_load_sd(p2 + 2), p3 + 2);
    *z = _mm256_insertf128_pd(_mm256_castpd128_pd256(z01), z23, 1);
}
/* to[0..2] += or -= (xy[0], xy[1], z[0]) */
static inline void avx2_scatter_one(double* to, __m128d xy, __m128d z, int subtract) {
    const __m128d old = _mm_loadu_pd(to), old_z = _mm_load_sd(to + 2);
    _mm_storeu_pd(to, subtract ? _mm_sub_pd(old, xy) : _mm_add_pd(old, xy));
    _mm_store_sd(to + 2, subtract ? _mm_sub_sd(old_z, z) : _mm_add_sd(old_z, z));
}
/* to[q][0..2] += or -= lane q of (x, y, z), for q = 0..3 in turn */
static inline void v4_scatter_nodes(double* const to[4], v4 x, v4 y, v4 z, int subtract) {
    const __m256d low = _mm256_unpacklo_pd(x, y);  /* x0 y0 x2 y2 */
    const __m256d high = _mm256_unpackhi_pd(x, y); /* x1 y1 x3 y3 */
    const __m128d z01 = _mm256_castpd256_pd128(z), z23 = _mm256_extractf128_pd(z, 1);
    avx2_scatter_one(to[0], _mm256_castpd256_pd128(low), z01, subtract);
    avx2_scatter_one(to[1], _mm256_castpd256_pd128(high), _mm_unpackhi_pd(z01, z01), subtract);
    avx2_scatter_one(to[2], _mm256_extractf128_pd(low, 1), z23, subtract);
    avx2_scatter_one(to[3], _mm256_extractf128_pd(high, 1), _mm_unpackhi_pd(z23, z23), subtract);
}
#elif defined(MS_PATH_SSE2)
#include <emmintrin.h>
typedef struct v4 {
    __m128d lo, hi; /* lanes 0, 1 and 2, 3 */
} v4;
static inline v4 v4_make(__m128d lo, __m128d hi) {
    v4 r;
    r.lo = lo;
    r.hi = hi;
    return r;
}
static inline v4 v4_set(double a) { return v4_make(_mm_set1_pd(a), _mm_set1_pd(a)); }
static inline v4 v4_load(const double* p) { return v4_make(_mm_loadu_pd(p), _mm_loadu_pd(p + 2)); }
static inline void v4_store(double* p, v4 a) {
    _mm_storeu_pd(p, a.lo);
    _mm_storeu_pd(p + 2, a.hi);
}
static inline v4 v4_add(v4 a, v4 b) { return v4_make(_mm_add_pd(a.lo, b.lo), _mm_add_pd(a.hi, b.hi)); }
static inline v4 v4_sub(v4 a, v4 b) { return v4_make(_mm_sub_pd(a.lo, b.lo), _mm_sub_pd(a.hi, b.hi)); }
static inline v4 v4_mul(v4 a, v4 b) { return v4_make(_mm_mul_pd(a.lo, b.lo), _mm_mul_pd(a.hi, b.hi)); }
static inline v4 v4_div(v4 a, v4 b) { return v4_make(_mm_div_pd(a.lo, b.lo), _mm_div_pd(a.hi, b.hi)); }
static inline v4 v4_sqrt(v4 a) { return v4_make(_mm_sqrt_pd(a.lo), _mm_sqrt_pd(a.hi)); }
static inline v4 v4_if_greater(v4 a, v4 b, v4 c) {
    return v4_make(_mm_and_pd(_mm_cmpgt_pd(a.lo, b.lo), c.lo), _mm_and_pd(_mm_cmpgt_pd(a.hi, b.hi), c.hi));
}
static inline v4 v4_abs(v4 a) {
    const __m128d bits = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
    return v4_make(_mm_and_pd(a.lo, bits), _mm_and_pd(a.hi, bits));
}
/* two consecutive nodes p[0..5] as (x0 x1), (y0 y1), (z0 z1) */
static inline void sse2_load_pair(const double* p, __m128d* x, __m128d* y, __m128d* z) {
    const __m128d a = _mm_loadu_pd(p), b = _mm_loadu_pd(p + 2), c = _mm_loadu_pd(p + 4);
    *x = _mm_shuffle_pd(a, b, 0x2); /* x0 x1 */
    *y = _mm_shuffle_pd(a, c, 0x1); /* y0 y1 */
    *z = _mm_shuffle_pd(b, c, 0x2); /* z0 z1 */
}
static inline void sse2_add_pair(double* p, __m128d x, __m128d y, __m128d z, int subtract) {
    const __m128d part[3] = {_mm_unpacklo_pd(x, y), _mm_shuffle_pd(z, x, 0x2), _mm_unpackhi_pd(y, z)};
    for (int k = 0; k < 3; ++k) {
        const __m128d old = _mm_loadu_pd(p + 2 * k);
        _mm_storeu_pd(p + 2 * k, subtract ? _mm_sub_pd(old, part[k]) : _mm_add_pd(old, part[k]));
    }
}
static inline void v4_spread(v4 w, v4 out[3]) {
    out[0] = v4_make(_mm_unpacklo_pd(w.lo, w.lo), w.lo);
    out[1] = v4_make(_mm_unpackhi_pd(w.lo, w.lo), _mm_unpacklo_pd(w.hi, w.hi));
    out[2] = v4_make(w.hi, _mm_unpackhi_pd(w.hi, w.hi));
}
static inline void v4_load_nodes(const double* p, v4* x, v4* y, v4* z) {
    sse2_load_pair(p, &x->lo, &y->lo, &z->lo);
    sse2_load_pair(p + 6, &x->hi, &y->hi, &z->hi);
}
static inline void v4_add_nodes(double* p, v4 x, v4 y, v4 z, int subtract) {
    sse2_add_pair(p, x.lo, y.lo, z.lo, subtract);
    sse2_add_pair(p + 6, x.hi, y.hi, z.hi, subtract);
}
/* nodes p0 and p1 (x y z each) as (x0 x1), (y0 y1), (z0 z1) */
static inline void sse2_gather_pair(const double* p0, const double* p1, __m128d* x, __m128d* y, __m128d* z) {
    const __m128d a = _mm_loadu_pd(p0), b = _mm_loadu_pd(p1);
    *x = _mm_unpacklo_pd(a, b);
    *y = _mm_unpackhi_pd(a, b);
    *z = _mm_loadh_pd(_mm_load_sd(p0 + 2), p1 + 2);
}
static inline void v4_gather_nodes(const double* p, const int64_t index[4], v4* x, v4* y, v4* z) {
    sse2_gather_pair(p + 3 * index[0], p + 3 * index[1], &x->lo, &y->lo, &z->lo);
    sse2_gather_pair(p + 3 * index[2], p + 3 * index[3], &x->hi, &y->hi, &z->hi);
}
/* to0[0..2] and then to1[0..2] += or -= lanes 0 and 1 of (x, y, z) */
static inline void sse2_scatter_pair(double* to0, double* to1, __m128d x, __m128d y, __m128d z, int subtract) {
    const __m128d part[2] = {_mm_unpacklo_pd(x, y), _mm_unpackhi_pd(x, y)};
    const __m128d depth[2] = {z, _mm_unpackhi_pd(z, z)};
    double* to[2] = {to0, to1};
    for (int q = 0; q < 2; ++q) {
        const __m128d old = _mm_loadu_pd(to[q]), old_z = _mm_load_sd(to[q] + 2);
        _mm_storeu_pd(to[q], subtract ? _mm_sub_pd(old, part[q]) : _mm_add_pd(old, part[q]));
        _mm_store_sd(to[q] + 2, subtract ? _mm_sub_sd(old_z, depth[q]) : _mm_add_sd(old_z, depth[q]));
    }
}
static inline void v4_scatter_nodes(double* const to[4], v4 x, v4 y, v4 z, int subtract) {
    sse2_scatter_pair(to[0], to[1], x.lo, y.lo, z.lo, subtract);
    sse2_scatter_pair(to[2], to[3], x.hi, y.hi, z.hi, subtract);
}
#else
typedef struct v4 {
    double q[4];
} v4;
#define V4_LANEWISE(expression) \
    v4 r;                       \
    for (int q = 0; q < 4; ++q) r.q[q] = (expression); \
    return r
static inline v4 v4_set(double a) { V4_LANEWISE(a); }
static inline v4 v4_load(const double* p) { V4_LANEWISE(p[q]); }
static inline void v4_store(double* p, v4 a) { memcpy(p, a.q, sizeof a.q); }
static inline v4 v4_add(v4 a, v4 b) { V4_LANEWISE(a.q[q] + b.q[q]); }
static inline v4 v4_sub(v4 a, v4 b) { V4_LANEWISE(a.q[q] - b.q[q]); }
static inline v4 v4_mul(v4 a, v4 b) { V4_LANEWISE(a.q[q] * b.q[q]); }
static inline v4 v4_div(v4 a, v4 b) { V4_LANEWISE(a.q[q] / b.q[q]); }
static inline v4 v4_sqrt(v4 a) { V4_LANEWISE(sqrt(a.q[q])); }
static inline v4 v4_if_greater(v4 a, v4 b, v4 c) { V4_LANEWISE(a.q[q] > b.q[q] ? c.q[q] : 0.0); }
static inline v4 v4_abs(v4 a) { V4_LANEWISE(fabs(a.q[q])); }
static inline void v4_spread(v4 w, v4 out[3]) {
    for (int q = 0; q < 12; ++q) out[q / 4].q[q % 4] = w.q[q / 3];
}
static inline void v4_gather_nodes(const double* p, const int64_t index[4], v4* x, v4* y, v4* z) {
    for (int q = 0; q < 4; ++q) {
        const double* node = p + 3 * index[q];
        x->q[q] = node[0];
        y->q[q] = node[1];
        z->q[q] = node[2];
    }
}
static inline void v4_scatter_nodes(double* const to[4], v4 x, v4 y, v4 z, int subtract) {
    for (int q = 0; q < 4; ++q) {
        double* node = to[q];
        if (subtract) {
            node[0] -= x.q[q];
            node[1] -= y.q[q];
            node[2] -= z.q[q];
        } else {
            node[0] += x.q[q];
            node[1] += y.q[q];
            node[2] += z.q[q];
        }
    }
}
static inline void v4_load_nodes(const double* p, v4* x, v4* y, v4* z) {
    const int64_t consecutive[4] = {0, 1, 2, 3};
    v4_gather_nodes(p, consecutive, x, y, z);
}
static inline void v4_add_nodes(double* p, v4 x, v4 y, v4 z, int subtract) {
    double* const consecutive[4] = {p, p + 3, p + 6, p + 9};
    v4_scatter_nodes(consecutive, x, y, z, subtract);
}
#undef V4_LANEWISE
#endif

#endif
