/* The derivatives of the forces, spring by spring and node by node, in plain doubles.
 *
 * Spring (i, j) with d = x_j - x_i, l = |d|, n = d / l, relative velocity w = v_j - v_i and
 * q = w.d pushes i with
 *     F = k (1 - L / l) d + c q d / l^2        (and j with -F),
 * the kernel's [k (l - L) + c (w.n)] n written in d.  Its derivatives:
 *     dF/dd = k [(1 - L/l) I + (L/l) n n^T] + c [d w^T / l^2 + (q / l^2) I - 2 q d d^T / l^4]
 *     dF/dw = c n n^T
 *     dF/dk = (l - L) n,   dF/dc = (w.n) n,   dF/dL = -k n.
 * A spring shorter than the kernel's MS_MIN_LENGTH_SQUARED exerts no force, and has no
 * derivative.  Node i feels m_i g - drag v_i + external_i. */
#include <math.h>

#include "kernels/derivatives.h"

/* As the spring kernel (spring_kernel.h): below this squared length a spring exerts no force. */
#define MIN_LENGTH_SQUARED 1e-24

static double dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

void ms_forces_adjoint(const ms_model* m, const double* x, const double* v, const double* lf, double* lx,
                       double* lv, const ms_parameter_arrays* g) {
    const double* gravity = m->opt.gravity;
    const double drag = m->opt.drag;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double* li = lf + 3 * i;
        g->mass[i] += dot3(gravity, li);
        for (int a = 0; a < 3; ++a) {
            g->external[3 * i + a] += li[a];
            lv[3 * i + a] -= drag * li[a];
        }
    }
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        double d[3], w[3], a[3];
        for (int c = 0; c < 3; ++c) {
            d[c] = x[3 * j + c] - x[3 * i + c];
            w[c] = v[3 * j + c] - v[3 * i + c];
            a[c] = lf[3 * i + c] - lf[3 * j + c]; /* F acts on i, -F on j */
        }
        const double length2 = dot3(d, d);
        if (!(length2 > MIN_LENGTH_SQUARED)) continue;
        const double length = sqrt(length2), inv_length = 1.0 / length;
        const double k = m->k[s], damping = m->c[s], rest = m->rest[s];
        const double q = dot3(w, d);
        const double da = dot3(d, a);
        const double na = da * inv_length;
        const double along = k * rest * inv_length * na * inv_length; /* k (L/l) (n.a) / l, times d */
        const double across = k * (1.0 - rest * inv_length);
        double gd[3], gw[3];
        for (int c = 0; c < 3; ++c) {
            gd[c] = across * a[c] + along * d[c] +
                    damping * (w[c] * da + q * a[c] - 2.0 * q * da / length2 * d[c]) / length2;
            gw[c] = damping * da / length2 * d[c];
            lx[3 * j + c] += gd[c];
            lx[3 * i + c] -= gd[c];
            lv[3 * j + c] += gw[c];
            lv[3 * i + c] -= gw[c];
        }
        g->k[s] += (length - rest) * na;
        g->c[s] += q * inv_length * na;
        g->rest[s] -= k * na;
    }
}

void ms_forces_tangent(const ms_model* m, const double* x, const double* v, const double* dx, const double* dv,
                       const ms_parameter_arrays* dp, double* df) {
    const double* gravity = m->opt.gravity;
    const double drag = m->opt.drag;
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a)
            df[3 * i + a] = dp->mass[i] * gravity[a] - drag * dv[3 * i + a] + dp->external[3 * i + a];
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        double d[3], w[3], dd[3], dw[3];
        for (int c = 0; c < 3; ++c) {
            d[c] = x[3 * j + c] - x[3 * i + c];
            w[c] = v[3 * j + c] - v[3 * i + c];
            dd[c] = dx[3 * j + c] - dx[3 * i + c];
            dw[c] = dv[3 * j + c] - dv[3 * i + c];
        }
        const double length2 = dot3(d, d);
        if (!(length2 > MIN_LENGTH_SQUARED)) continue;
        const double length = sqrt(length2), inv_length = 1.0 / length;
        const double k = m->k[s], damping = m->c[s], rest = m->rest[s];
        const double q = dot3(w, d);
        const double d_dd = dot3(d, dd);
        const double across = k * (1.0 - rest * inv_length);
        /* the d-coefficient: k (L/l) (n.dd) / l, the dampers' (w.dd) / l^2 - 2 q (d.dd) / l^4
           and (d.dw) / l^2, and the parameters' along n / l */
        const double along = k * rest * inv_length * inv_length * inv_length * d_dd +
                             damping * (dot3(w, dd) - 2.0 * q * d_dd / length2 + dot3(d, dw)) / length2 +
                             (dp->k[s] * (length - rest) + dp->c[s] * q * inv_length - k * dp->rest[s]) * inv_length;
        for (int c = 0; c < 3; ++c) {
            const double force = across * dd[c] + damping * q / length2 * dd[c] + along * d[c];
            df[3 * i + c] += force;
            df[3 * j + c] -= force;
        }
    }
}
