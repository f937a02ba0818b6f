/* The adjoint of the spring kernel (spring_kernel.h), written over the same layout and
 * vector layer and compiled once per vector path beside it (springs_avx2.c, springs_sse2.c,
 * springs_neon.c, springs_plain.c).
 *
 * Spring (a, b), a its owner, with d = x_b - x_a, l = |d|, n = d / l, w = v_b - v_a, the
 * closing speed u = w.n and the stretch l - L pushes a with F = m d, m = [k (l - L) + c u] / l,
 * and b with -F.  Given the adjoint lf of the forces, with e = lf_a - lf_b and t = (e.n) / l,
 *     J_d^T e = m e + t (k L - 2 c u) / l d + c t w,   J_w^T e = c t d,
 *     dF/dk . e = (l - L) (e.n),   dF/dc . e = u (e.n),   dF/dL . e = -k (e.n);
 * J_d^T e is added to the adjoint of x_b and taken from that of x_a, J_w^T e likewise for v.
 * What the adjoint of 1/m needs of the forces is their pairing with lf at each node, lf_a.F
 * at a and -lf_b.F at b: one number per node rather than the three of the force.
 * A spring shorter than MS_MIN_LENGTH_SQUARED exerts no force, and has no derivative: its
 * 1 / l is 0, which zeroes every term.
 *
 * The springs are taken in the layout's order, block after block, on one thread: groups of
 * four springs (one j of a lane group or a gathered group) as one v4, the springs left over
 * one at a time, with the same operations in the same order on every path, so every path
 * and every number of workers gives the same bits.  Each owner's sums are added to it once,
 * after its springs, as in the forces.
 */

/* The length l of springs with separation (dx, dy, dz) and 1 / l (0 below MS_MIN_LENGTH), in
   type V (v4 or v1). */
#define SPRING_LENGTH(V, dx, dy, dz, length, inv_length)                                                               \
    do {                                                                                                               \
        const V length2_ = V##_add(V##_add(V##_mul(dx, dx), V##_mul(dy, dy)), V##_mul(dz, dz));                        \
        length = V##_sqrt(length2_);                                                                                   \
        inv_length = V##_if_greater(length2_, V##_set(MS_MIN_LENGTH_SQUARED), V##_div(V##_set(1.0), length));          \
    } while (0)

/* The adjoint of springs with separation (dx, dy, dz), its length and 1 / length
   (SPRING_LENGTH), relative velocity (du, dv, dw) and force adjoints (ax, ay, az) = lf_a,
   (bx, by, bz) = lf_b, in type V (v4 or v1): J_d^T e into (gx, gy, gz), J_w^T e into (hx, hy,
   hz), unless PAIR is 0 the pairings lf_a.F and lf_b.F into pa and pb (lf_b.F as lf_a.F - e.F),
   and unless GRAD is 0 the parameters' derivatives added to (grest, gk, gc), grest's without
   its factor -k (e.n summed: ms_spring_adjoint_collect multiplies the sum by -k). */
#define SPRING_ADJOINT(V, dx, dy, dz, length_, inv_length_, du, dv, dw, ax, ay, az, bx, by, bz, rest, stiffness,       \
                       damping, gx, gy, gz, hx, hy, hz, pa, pb, grest, gk, gc, PAIR, GRAD)                             \
    do {                                                                                                               \
        const V closing_ = V##_mul(V##_add(V##_add(V##_mul(du, dx), V##_mul(dv, dy)), V##_mul(dw, dz)), inv_length_);  \
        const V stretch_ = V##_sub(length_, rest);                                                                     \
        const V magnitude_ = V##_mul(V##_add(V##_mul(stiffness, stretch_), V##_mul(damping, closing_)), inv_length_);  \
        const V ex_ = V##_sub(ax, bx), ey_ = V##_sub(ay, by), ez_ = V##_sub(az, bz);                                   \
        const V on_e_ = V##_add(V##_add(V##_mul(ex_, dx), V##_mul(ey_, dy)), V##_mul(ez_, dz));                        \
        const V along_ = V##_mul(on_e_, inv_length_);                                                                  \
        const V turn_ = V##_mul(along_, inv_length_);                                                                  \
        const V on_w_ = V##_mul(damping, turn_);                                                                       \
        const V on_d_ = V##_mul(V##_mul(turn_, inv_length_),                                                           \
                                V##_sub(V##_mul(stiffness, rest), V##_mul(V##_add(damping, damping), closing_)));      \
        gx = V##_add(V##_add(V##_mul(magnitude_, ex_), V##_mul(on_d_, dx)), V##_mul(on_w_, du));                       \
        gy = V##_add(V##_add(V##_mul(magnitude_, ey_), V##_mul(on_d_, dy)), V##_mul(on_w_, dv));                       \
        gz = V##_add(V##_add(V##_mul(magnitude_, ez_), V##_mul(on_d_, dz)), V##_mul(on_w_, dw));                       \
        hx = V##_mul(on_w_, dx);                                                                                       \
        hy = V##_mul(on_w_, dy);                                                                                       \
        hz = V##_mul(on_w_, dz);                                                                                       \
        if (PAIR) {                                                                                                    \
            pa = V##_mul(magnitude_, V##_add(V##_add(V##_mul(ax, dx), V##_mul(ay, dy)), V##_mul(az, dz)));             \
            pb = V##_sub(pa, V##_mul(magnitude_, on_e_));                                                              \
        }                                                                                                              \
        if (GRAD) {                                                                                                    \
            grest = V##_add(grest, along_);                                                                            \
            gk = V##_add(gk, V##_mul(stretch_, along_));                                                               \
            gc = V##_add(gc, V##_mul(closing_, along_));                                                               \
        }                                                                                                              \
    } while (0)

/* The springs of a group go through in chunks of up to ADJOINT_CHUNK (four springs each):
   the ends' positions and velocities and the lengths of a chunk first, their square roots
   and divisions independent of one another, then the rest spring by spring, so that the
   rest need not wait on each square root. */
#define ADJOINT_CHUNK 8

/* Where four springs' ends are relative to their owners: d, w and l, 1 / l (SPRING_LENGTH). */
typedef struct MS_KERNEL(adjoint_geometry) {
    v4 d[3], w[3], length, inv_length;
} MS_KERNEL(adjoint_geometry);

MS_ALWAYS_INLINE void MS_KERNEL(adjoint_measure)(const v4 own[6], const v4 other[6],
                                                 MS_KERNEL(adjoint_geometry) * g) {
    for (int c = 0; c < 3; ++c) {
        g->d[c] = v4_sub(other[c], own[c]);
        g->w[c] = v4_sub(other[3 + c], own[3 + c]);
    }
    SPRING_LENGTH(v4, g->d[0], g->d[1], g->d[2], g->length, g->inv_length);
}

/* Where the adjoint kernel adds: the adjoints of x and v, the pairings lf.f (nnode; or
   NULL) and the parameters' derivatives in the layout's order (or NULL). */
typedef struct MS_KERNEL(adjoint_out) {
    double* lx;
    double* lv;
    double* pairing;
    double* grad;
} MS_KERNEL(adjoint_out);

/* Four springs, one lane each, from owners (lf) = own[6..8] to ends other[6..8] at
   geometry geo, with parameters and derivatives at p and grad (four rest lengths, four k,
   four c); their J_d^T e and J_w^T e into g[0..2] and h[0..2], their pairings at the owners
   and the ends into pair[0..1]. */
MS_ALWAYS_INLINE void MS_KERNEL(adjoint_lanes)(const v4 own[9], const v4 other[9],
                                               const MS_KERNEL(adjoint_geometry) * geo, const double* MS_RESTRICT p,
                                               double* MS_RESTRICT grad, v4 g[3], v4 h[3], v4 pair[2], int with_pair,
                                               int with_grad) {
    const v4 dx = geo->d[0], dy = geo->d[1], dz = geo->d[2];
    const v4 du = geo->w[0], dv = geo->w[1], dw = geo->w[2];
    v4 grest = v4_set(0.0), gk = grest, gc = grest;
    if (with_grad) {
        grest = v4_load(grad);
        gk = v4_load(grad + MS_LANES);
        gc = v4_load(grad + 2 * MS_LANES);
    }
    SPRING_ADJOINT(v4, dx, dy, dz, geo->length, geo->inv_length, du, dv, dw, own[6], own[7], own[8], other[6],
                   other[7], other[8], v4_load(p), v4_load(p + MS_LANES), v4_load(p + 2 * MS_LANES), g[0], g[1], g[2],
                   h[0], h[1], h[2], pair[0], pair[1], grest, gk, gc, with_pair, with_grad);
    if (with_grad) {
        v4_store(grad, grest);
        v4_store(grad + MS_LANES, gk);
        v4_store(grad + 2 * MS_LANES, gc);
    }
}

/* A lane group (spring_kernel.h): owners a..a+3, k springs each, sorted springs [s, s + 4 k),
   the j-th ends of the four owners b..b+3. */
MS_ALWAYS_INLINE void MS_KERNEL(adjoint_group)(const int32_t* MS_RESTRICT pairs, const double* MS_RESTRICT params,
                                               int64_t s, int64_t k, int64_t a, const double* MS_RESTRICT x,
                                               const double* MS_RESTRICT v, const double* MS_RESTRICT lf,
                                               const MS_KERNEL(adjoint_out) * out, int with_pair, int with_grad) {
    v4 own[9], sum_g[3], sum_h[3], sum_pair = v4_set(0.0);
    for (int c = 0; c < 3; ++c) sum_g[c] = sum_h[c] = v4_set(0.0);
    v4_load_nodes(x + 3 * a, &own[0], &own[1], &own[2]);
    v4_load_nodes(v + 3 * a, &own[3], &own[4], &own[5]);
    v4_load_nodes(lf + 3 * a, &own[6], &own[7], &own[8]);
    for (int64_t first = 0; first < k; first += ADJOINT_CHUNK) {
        MS_KERNEL(adjoint_geometry) geo[ADJOINT_CHUNK];
        const int64_t chunk = k - first < ADJOINT_CHUNK ? k - first : ADJOINT_CHUNK;
        for (int64_t q = 0; q < chunk; ++q) {
            v4 other[6];
            const int64_t b = pairs[2 * (s + MS_LANES * (first + q)) + 1];
            v4_load_nodes(x + 3 * b, &other[0], &other[1], &other[2]);
            v4_load_nodes(v + 3 * b, &other[3], &other[4], &other[5]);
            MS_KERNEL(adjoint_measure)(own, other, &geo[q]);
        }
        for (int64_t q = 0; q < chunk; ++q) {
            const int64_t r = s + MS_LANES * (first + q);
            const int64_t b = pairs[2 * r + 1];
            v4 other[9], g[3], h[3], pair[2];
            v4_load_nodes(lf + 3 * b, &other[6], &other[7], &other[8]);
            MS_KERNEL(adjoint_lanes)(own, other, &geo[q], params + 3 * r, with_grad ? out->grad + 3 * r : NULL, g, h,
                                     pair, with_pair, with_grad);
            for (int c = 0; c < 3; ++c) {
                sum_g[c] = v4_add(sum_g[c], g[c]);
                sum_h[c] = v4_add(sum_h[c], h[c]);
            }
            v4_add_nodes(out->lx + 3 * b, g[0], g[1], g[2], 0);
            v4_add_nodes(out->lv + 3 * b, h[0], h[1], h[2], 0);
            if (with_pair) {
                sum_pair = v4_add(sum_pair, pair[0]);
                v4_store(out->pairing + b, v4_sub(v4_load(out->pairing + b), pair[1]));
            }
        }
    }
    v4_add_nodes(out->lx + 3 * a, sum_g[0], sum_g[1], sum_g[2], 1);
    v4_add_nodes(out->lv + 3 * a, sum_h[0], sum_h[1], sum_h[2], 1);
    if (with_pair) v4_store(out->pairing + a, v4_add(v4_load(out->pairing + a), sum_pair));
}

/* pairing[index[q]] += or -= lane q of p, for q = 0..3 in turn */
MS_ALWAYS_INLINE void MS_KERNEL(scatter_pairing)(double* pairing, const int64_t index[MS_LANES], v4 p, int subtract) {
    double lane[MS_LANES];
    v4_store(lane, p);
    for (int q = 0; q < MS_LANES; ++q) {
        if (subtract)
            pairing[index[q]] -= lane[q];
        else
            pairing[index[q]] += lane[q];
    }
}

/* A gathered group: owners of springs s..s+3, k springs each, every end read and written
   on its own, lane after lane. */
MS_ALWAYS_INLINE void MS_KERNEL(adjoint_gathered)(const int32_t* MS_RESTRICT pairs, const double* MS_RESTRICT params,
                                                  int64_t s, int64_t k, const double* MS_RESTRICT x,
                                                  const double* MS_RESTRICT v, const double* MS_RESTRICT lf,
                                                  const MS_KERNEL(adjoint_out) * out, int with_pair, int with_grad) {
    int64_t owner[MS_LANES];
    double *owner_lx[MS_LANES], *owner_lv[MS_LANES];
    for (int q = 0; q < MS_LANES; ++q) {
        owner[q] = pairs[2 * (s + q)];
        owner_lx[q] = out->lx + 3 * owner[q];
        owner_lv[q] = out->lv + 3 * owner[q];
    }
    v4 own[9], sum_g[3], sum_h[3], sum_pair = v4_set(0.0);
    for (int c = 0; c < 3; ++c) sum_g[c] = sum_h[c] = v4_set(0.0);
    v4_gather_nodes(x, owner, &own[0], &own[1], &own[2]);
    v4_gather_nodes(v, owner, &own[3], &own[4], &own[5]);
    v4_gather_nodes(lf, owner, &own[6], &own[7], &own[8]);
    for (int64_t first = 0; first < k; first += ADJOINT_CHUNK) {
        MS_KERNEL(adjoint_geometry) geo[ADJOINT_CHUNK];
        const int64_t chunk = k - first < ADJOINT_CHUNK ? k - first : ADJOINT_CHUNK;
        for (int64_t q = 0; q < chunk; ++q) {
            const int64_t r = s + MS_LANES * (first + q);
            const int64_t end[MS_LANES] = {pairs[2 * r + 1], pairs[2 * r + 3], pairs[2 * r + 5], pairs[2 * r + 7]};
            v4 other[6];
            v4_gather_nodes(x, end, &other[0], &other[1], &other[2]);
            v4_gather_nodes(v, end, &other[3], &other[4], &other[5]);
            MS_KERNEL(adjoint_measure)(own, other, &geo[q]);
        }
        for (int64_t q = 0; q < chunk; ++q) {
            const int64_t r = s + MS_LANES * (first + q);
            const int64_t end[MS_LANES] = {pairs[2 * r + 1], pairs[2 * r + 3], pairs[2 * r + 5], pairs[2 * r + 7]};
            v4 other[9], g[3], h[3], pair[2];
            v4_gather_nodes(lf, end, &other[6], &other[7], &other[8]);
            MS_KERNEL(adjoint_lanes)(own, other, &geo[q], params + 3 * r, with_grad ? out->grad + 3 * r : NULL, g, h,
                                     pair, with_pair, with_grad);
            for (int c = 0; c < 3; ++c) {
                sum_g[c] = v4_add(sum_g[c], g[c]);
                sum_h[c] = v4_add(sum_h[c], h[c]);
            }
            double* const to_lx[MS_LANES] = {out->lx + 3 * end[0], out->lx + 3 * end[1], out->lx + 3 * end[2],
                                             out->lx + 3 * end[3]};
            double* const to_lv[MS_LANES] = {out->lv + 3 * end[0], out->lv + 3 * end[1], out->lv + 3 * end[2],
                                             out->lv + 3 * end[3]};
            v4_scatter_nodes(to_lx, g[0], g[1], g[2], 0);
            v4_scatter_nodes(to_lv, h[0], h[1], h[2], 0);
            if (with_pair) {
                sum_pair = v4_add(sum_pair, pair[0]);
                MS_KERNEL(scatter_pairing)(out->pairing, end, pair[1], 1);
            }
        }
    }
    v4_scatter_nodes(owner_lx, sum_g[0], sum_g[1], sum_g[2], 1);
    v4_scatter_nodes(owner_lv, sum_h[0], sum_h[1], sum_h[2], 1);
    if (with_pair) MS_KERNEL(scatter_pairing)(out->pairing, owner, sum_pair, 0);
}

/* The springs [s, e) of one owner a, one at a time. */
MS_ALWAYS_INLINE void MS_KERNEL(adjoint_single)(const int32_t* MS_RESTRICT pairs, const double* MS_RESTRICT params,
                                                int64_t s, int64_t e, int64_t a, const double* MS_RESTRICT x,
                                                const double* MS_RESTRICT v, const double* MS_RESTRICT lf,
                                                const MS_KERNEL(adjoint_out) * out, int with_pair, int with_grad) {
    const double* xa = x + 3 * a;
    const double* va = v + 3 * a;
    const double* la = lf + 3 * a;
    v1 sum_g[3] = {0.0, 0.0, 0.0}, sum_h[3] = {0.0, 0.0, 0.0}, sum_pair = 0.0;
    for (int64_t r = s; r < e; ++r) {
        const int64_t b = pairs[2 * r + 1];
        const double* xb = x + 3 * b;
        const double* vb = v + 3 * b;
        const double* lb = lf + 3 * b;
        const double* p = params + 3 * r;
        const v1 dx = xb[0] - xa[0], dy = xb[1] - xa[1], dz = xb[2] - xa[2];
        const v1 du = vb[0] - va[0], dv = vb[1] - va[1], dw = vb[2] - va[2];
        v1 g[3], h[3], pa = 0.0, pb = 0.0, grest = 0.0, gk = 0.0, gc = 0.0, length, inv_length;
        double* grad = with_grad ? out->grad + 3 * r : NULL;
        if (with_grad) {
            grest = grad[0];
            gk = grad[1];
            gc = grad[2];
        }
        SPRING_LENGTH(v1, dx, dy, dz, length, inv_length);
        SPRING_ADJOINT(v1, dx, dy, dz, length, inv_length, du, dv, dw, la[0], la[1], la[2], lb[0], lb[1], lb[2], p[0], p[1], p[2], g[0],
                       g[1], g[2], h[0], h[1], h[2], pa, pb, grest, gk, gc, with_pair, with_grad);
        if (with_grad) {
            grad[0] = grest;
            grad[1] = gk;
            grad[2] = gc;
        }
        double* to_lx = out->lx + 3 * b;
        double* to_lv = out->lv + 3 * b;
        for (int c = 0; c < 3; ++c) {
            sum_g[c] += g[c];
            sum_h[c] += h[c];
            to_lx[c] += g[c];
            to_lv[c] += h[c];
        }
        if (with_pair) {
            sum_pair += pa;
            out->pairing[b] -= pb;
        }
    }
    for (int c = 0; c < 3; ++c) {
        out->lx[3 * a + c] -= sum_g[c];
        out->lv[3 * a + c] -= sum_h[c];
    }
    if (with_pair) out->pairing[a] += sum_pair;
}

/* Every spring of the layout, in its order. */
MS_ALWAYS_INLINE void MS_KERNEL(adjoint_walk)(const ms_layout* layout, const double* MS_RESTRICT x,
                                              const double* MS_RESTRICT v, const double* MS_RESTRICT lf,
                                              const MS_KERNEL(adjoint_out) * out, int with_pair, int with_grad) {
    const int32_t* MS_RESTRICT pairs = layout->pairs;
    const double* MS_RESTRICT params = layout->params;
    const uint16_t* MS_RESTRICT lanes = layout->lanes;
    const int64_t end = layout->nspring;
    for (int64_t s = 0; s < end;) {
        const int64_t a = pairs[2 * s];
        const int64_t kind = lanes[a], k = kind & MS_MAX_LANE_SPRINGS;
        if (kind & MS_GATHERED) {
            MS_KERNEL(adjoint_gathered)(pairs, params, s, k, x, v, lf, out, with_pair, with_grad);
            s += MS_LANES * k;
            continue;
        }
        if (k > 0) {
            MS_KERNEL(adjoint_group)(pairs, params, s, k, a, x, v, lf, out, with_pair, with_grad);
            s += MS_LANES * k;
            continue;
        }
        int64_t e = s + 1;
        while (e < end && pairs[2 * e] == a) ++e;
        MS_KERNEL(adjoint_single)(pairs, params, s, e, a, x, v, lf, out, with_pair, with_grad);
        s = e;
    }
}

void MS_KERNEL(ms_springs_adjoint)(const ms_layout* layout, const double* MS_RESTRICT x, const double* MS_RESTRICT v,
                                   const double* MS_RESTRICT lf, double* lx, double* lv, double* grad,
                                   double* pairing) {
    const MS_KERNEL(adjoint_out) out = {lx, lv, pairing, grad};
    if (pairing != NULL && grad != NULL) MS_KERNEL(adjoint_walk)(layout, x, v, lf, &out, 1, 1);
    else if (pairing != NULL) MS_KERNEL(adjoint_walk)(layout, x, v, lf, &out, 1, 0);
    else if (grad != NULL) MS_KERNEL(adjoint_walk)(layout, x, v, lf, &out, 0, 1);
    else MS_KERNEL(adjoint_walk)(layout, x, v, lf, &out, 0, 0);
}
