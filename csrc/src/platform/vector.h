/* The vector layer under the spring kernel and the Euler update: a type v4 of four doubles
 * and the few operations they need, on one of four paths chosen by the file that includes
 * this header:
 *   MS_PATH_AVX2   one 256-bit AVX2 register
 *   MS_PATH_SSE2   two 128-bit SSE2 registers
 *   MS_PATH_NEON   two 128-bit NEON registers (AArch64)
 *   (none)         four plain doubles (any processor; compilers may vectorise them)
 * and the one-lane type v1 (a plain double) with the same operations.  Every operation is
 * one IEEE operation per lane (no fused multiply-adds: the build turns contraction off),
 * so the four paths give the same bits.
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
/* 1 if a > b in every lane, else 0 */
static inline int v4_all_greater(v4 a, v4 b) { return _mm256_movemask_pd(_mm256_cmp_pd(a, b, _CMP_GT_OQ)) == 0xF; }
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
/* the columns of the 4 x 4 matrix whose rows are r[0..3]: out[c] = (r[0][c], .., r[3][c]) */
static inline void v4_transpose(const v4 r[4], v4 out[4]) {
    const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    out[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    out[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    out[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    out[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
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
#elif defined(MS_PATH_SSE2) || defined(MS_PATH_NEON)
/* Two 128-bit registers: a two-lane type v2 per path, and v4 as its two halves below. */
#if defined(MS_PATH_SSE2)
#include <emmintrin.h>
typedef __m128d v2;
static inline v2 v2_set(double a) { return _mm_set1_pd(a); }
static inline v2 v2_load(const double* p) { return _mm_loadu_pd(p); }
static inline void v2_store(double* p, v2 a) { _mm_storeu_pd(p, a); }
static inline v2 v2_add(v2 a, v2 b) { return _mm_add_pd(a, b); }
static inline v2 v2_sub(v2 a, v2 b) { return _mm_sub_pd(a, b); }
static inline v2 v2_mul(v2 a, v2 b) { return _mm_mul_pd(a, b); }
static inline v2 v2_div(v2 a, v2 b) { return _mm_div_pd(a, b); }
static inline v2 v2_sqrt(v2 a) { return _mm_sqrt_pd(a); }
static inline v2 v2_if_greater(v2 a, v2 b, v2 c) { return _mm_and_pd(_mm_cmpgt_pd(a, b), c); }
static inline v2 v2_abs(v2 a) { return _mm_and_pd(a, _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL))); }
static inline int v2_all_greater(v2 a, v2 b) { return _mm_movemask_pd(_mm_cmpgt_pd(a, b)) == 3; }
static inline v2 v2_low_twice(v2 a) { return _mm_unpacklo_pd(a, a); }
static inline v2 v2_lows(v2 a, v2 b) { return _mm_unpacklo_pd(a, b); }
static inline v2 v2_highs(v2 a, v2 b) { return _mm_unpackhi_pd(a, b); }
static inline v2 v2_high_twice(v2 a) { return _mm_unpackhi_pd(a, a); }
/* nodes p0 and p1 (x y z each) as (x0 x1), (y0 y1), (z0 z1) */
static inline void v2_gather_pair(const double* p0, const double* p1, v2* x, v2* y, v2* z) {
    const __m128d a = _mm_loadu_pd(p0), b = _mm_loadu_pd(p1);
    *x = _mm_unpacklo_pd(a, b);
    *y = _mm_unpackhi_pd(a, b);
    *z = _mm_loadh_pd(_mm_load_sd(p0 + 2), p1 + 2);
}
/* to0[0..2] and then to1[0..2] += or -= lanes 0 and 1 of (x, y, z) */
static inline void v2_scatter_pair(double* to0, double* to1, v2 x, v2 y, v2 z, int subtract) {
    const __m128d part[2] = {_mm_unpacklo_pd(x, y), _mm_unpackhi_pd(x, y)};
    const __m128d depth[2] = {z, _mm_unpackhi_pd(z, z)};
    double* to[2] = {to0, to1};
    for (int q = 0; q < 2; ++q) {
        const __m128d old = _mm_loadu_pd(to[q]), old_z = _mm_load_sd(to[q] + 2);
        _mm_storeu_pd(to[q], subtract ? _mm_sub_pd(old, part[q]) : _mm_add_pd(old, part[q]));
        _mm_store_sd(to[q] + 2, subtract ? _mm_sub_sd(old_z, depth[q]) : _mm_add_sd(old_z, depth[q]));
    }
}
/* two consecutive nodes p[0..5] as (x0 x1), (y0 y1), (z0 z1) */
static inline void v2_load_nodes(const double* p, v2* x, v2* y, v2* z) {
    const __m128d a = _mm_loadu_pd(p), b = _mm_loadu_pd(p + 2), c = _mm_loadu_pd(p + 4);
    *x = _mm_shuffle_pd(a, b, 0x2); /* x0 x1 */
    *y = _mm_shuffle_pd(a, c, 0x1); /* y0 y1 */
    *z = _mm_shuffle_pd(b, c, 0x2); /* z0 z1 */
}
static inline void v2_add_nodes(double* p, v2 x, v2 y, v2 z, int subtract) {
    const __m128d part[3] = {_mm_unpacklo_pd(x, y), _mm_shuffle_pd(z, x, 0x2), _mm_unpackhi_pd(y, z)};
    for (int k = 0; k < 3; ++k) {
        const __m128d old = _mm_loadu_pd(p + 2 * k);
        _mm_storeu_pd(p + 2 * k, subtract ? _mm_sub_pd(old, part[k]) : _mm_add_pd(old, part[k]));
    }
}
#else
#include <arm_neon.h>
typedef float64x2_t v2;
static inline v2 v2_set(double a) { return vdupq_n_f64(a); }
static inline v2 v2_load(const double* p) { return vld1q_f64(p); }
static inline void v2_store(double* p, v2 a) { vst1q_f64(p, a); }
static inline v2 v2_add(v2 a, v2 b) { return vaddq_f64(a, b); }
static inline v2 v2_sub(v2 a, v2 b) { return vsubq_f64(a, b); }
static inline v2 v2_mul(v2 a, v2 b) { return vmulq_f64(a, b); }
static inline v2 v2_div(v2 a, v2 b) { return vdivq_f64(a, b); }
static inline v2 v2_sqrt(v2 a) { return vsqrtq_f64(a); }
static inline v2 v2_if_greater(v2 a, v2 b, v2 c) {
    return vreinterpretq_f64_u64(vandq_u64(vcgtq_f64(a, b), vreinterpretq_u64_f64(c)));
}
static inline v2 v2_abs(v2 a) { return vabsq_f64(a); }
static inline int v2_all_greater(v2 a, v2 b) {
    const uint64x2_t greater = vcgtq_f64(a, b);
    return (vgetq_lane_u64(greater, 0) & vgetq_lane_u64(greater, 1)) != 0;
}
static inline v2 v2_low_twice(v2 a) { return vdupq_laneq_f64(a, 0); }
static inline v2 v2_lows(v2 a, v2 b) { return vzip1q_f64(a, b); }
static inline v2 v2_highs(v2 a, v2 b) { return vzip2q_f64(a, b); }
static inline v2 v2_high_twice(v2 a) { return vdupq_laneq_f64(a, 1); }
/* nodes p0 and p1 (x y z each) as (x0 x1), (y0 y1), (z0 z1) */
static inline void v2_gather_pair(const double* p0, const double* p1, v2* x, v2* y, v2* z) {
    const v2 a = vld1q_f64(p0), b = vld1q_f64(p1);
    *x = vzip1q_f64(a, b);
    *y = vzip2q_f64(a, b);
    *z = vcombine_f64(vld1_f64(p0 + 2), vld1_f64(p1 + 2));
}
/* to0[0..2] and then to1[0..2] += or -= lanes 0 and 1 of (x, y, z) */
static inline void v2_scatter_pair(double* to0, double* to1, v2 x, v2 y, v2 z, int subtract) {
    const v2 part[2] = {vzip1q_f64(x, y), vzip2q_f64(x, y)};
    const float64x1_t depth[2] = {vget_low_f64(z), vget_high_f64(z)};
    double* to[2] = {to0, to1};
    for (int q = 0; q < 2; ++q) {
        const v2 old = vld1q_f64(to[q]);
        const float64x1_t old_z = vld1_f64(to[q] + 2);
        vst1q_f64(to[q], subtract ? vsubq_f64(old, part[q]) : vaddq_f64(old, part[q]));
        vst1_f64(to[q] + 2, subtract ? vsub_f64(old_z, depth[q]) : vadd_f64(old_z, depth[q]));
    }
}
/* two consecutive nodes p[0..5]: vld3q_f64 deinterleaves them into (x0 x1), (y0 y1),
   (z0 z1), and vst3q_f64 interleaves them back */
static inline void v2_load_nodes(const double* p, v2* x, v2* y, v2* z) {
    const float64x2x3_t node = vld3q_f64(p);
    *x = node.val[0];
    *y = node.val[1];
    *z = node.val[2];
}
static inline void v2_add_nodes(double* p, v2 x, v2 y, v2 z, int subtract) {
    float64x2x3_t node = vld3q_f64(p);
    const v2 part[3] = {x, y, z};
    for (int k = 0; k < 3; ++k)
        node.val[k] = subtract ? vsubq_f64(node.val[k], part[k]) : vaddq_f64(node.val[k], part[k]);
    vst3q_f64(p, node);
}
#endif
typedef struct v4 {
    v2 lo, hi; /* lanes 0, 1 and 2, 3 */
} v4;
static inline v4 v4_make(v2 lo, v2 hi) {
    v4 r;
    r.lo = lo;
    r.hi = hi;
    return r;
}
static inline v4 v4_set(double a) { return v4_make(v2_set(a), v2_set(a)); }
static inline v4 v4_load(const double* p) { return v4_make(v2_load(p), v2_load(p + 2)); }
static inline void v4_store(double* p, v4 a) {
    v2_store(p, a.lo);
    v2_store(p + 2, a.hi);
}
static inline v4 v4_add(v4 a, v4 b) { return v4_make(v2_add(a.lo, b.lo), v2_add(a.hi, b.hi)); }
static inline v4 v4_sub(v4 a, v4 b) { return v4_make(v2_sub(a.lo, b.lo), v2_sub(a.hi, b.hi)); }
static inline v4 v4_mul(v4 a, v4 b) { return v4_make(v2_mul(a.lo, b.lo), v2_mul(a.hi, b.hi)); }
static inline v4 v4_div(v4 a, v4 b) { return v4_make(v2_div(a.lo, b.lo), v2_div(a.hi, b.hi)); }
static inline v4 v4_sqrt(v4 a) { return v4_make(v2_sqrt(a.lo), v2_sqrt(a.hi)); }
static inline v4 v4_if_greater(v4 a, v4 b, v4 c) {
    return v4_make(v2_if_greater(a.lo, b.lo, c.lo), v2_if_greater(a.hi, b.hi, c.hi));
}
static inline v4 v4_abs(v4 a) { return v4_make(v2_abs(a.lo), v2_abs(a.hi)); }
static inline int v4_all_greater(v4 a, v4 b) { return v2_all_greater(a.lo, b.lo) && v2_all_greater(a.hi, b.hi); }
static inline void v4_spread(v4 w, v4 out[3]) {
    out[0] = v4_make(v2_low_twice(w.lo), w.lo);
    out[1] = v4_make(v2_high_twice(w.lo), v2_low_twice(w.hi));
    out[2] = v4_make(w.hi, v2_high_twice(w.hi));
}
static inline void v4_load_nodes(const double* p, v4* x, v4* y, v4* z) {
    v2_load_nodes(p, &x->lo, &y->lo, &z->lo);
    v2_load_nodes(p + 6, &x->hi, &y->hi, &z->hi);
}
static inline void v4_add_nodes(double* p, v4 x, v4 y, v4 z, int subtract) {
    v2_add_nodes(p, x.lo, y.lo, z.lo, subtract);
    v2_add_nodes(p + 6, x.hi, y.hi, z.hi, subtract);
}
static inline void v4_gather_nodes(const double* p, const int64_t index[4], v4* x, v4* y, v4* z) {
    v2_gather_pair(p + 3 * index[0], p + 3 * index[1], &x->lo, &y->lo, &z->lo);
    v2_gather_pair(p + 3 * index[2], p + 3 * index[3], &x->hi, &y->hi, &z->hi);
}
static inline void v4_scatter_nodes(double* const to[4], v4 x, v4 y, v4 z, int subtract) {
    v2_scatter_pair(to[0], to[1], x.lo, y.lo, z.lo, subtract);
    v2_scatter_pair(to[2], to[3], x.hi, y.hi, z.hi, subtract);
}
static inline void v4_transpose(const v4 r[4], v4 out[4]) {
    out[0] = v4_make(v2_lows(r[0].lo, r[1].lo), v2_lows(r[2].lo, r[3].lo));
    out[1] = v4_make(v2_highs(r[0].lo, r[1].lo), v2_highs(r[2].lo, r[3].lo));
    out[2] = v4_make(v2_lows(r[0].hi, r[1].hi), v2_lows(r[2].hi, r[3].hi));
    out[3] = v4_make(v2_highs(r[0].hi, r[1].hi), v2_highs(r[2].hi, r[3].hi));
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
static inline int v4_all_greater(v4 a, v4 b) {
    return a.q[0] > b.q[0] && a.q[1] > b.q[1] && a.q[2] > b.q[2] && a.q[3] > b.q[3];
}
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
static inline void v4_transpose(const v4 r[4], v4 out[4]) {
    for (int q = 0; q < 16; ++q) out[q / 4].q[q % 4] = r[q % 4].q[q / 4];
}
#undef V4_LANEWISE
#endif

#endif
