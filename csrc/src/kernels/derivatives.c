/* The derivatives of the forces, spring by spring and node by node, in plain doubles (the
 * adjoint's springs also go over the step's layout on the vector paths:
 * spring_adjoint_kernel.h, with the same formulas).
 *
 * Spring (i, j) with d = x_j - x_i, l = |d|, n = d / l, relative velocity w = v_j - v_i and
 * q = w.d pushes i with
 *     F = k (1 - L / l) d + c q d / l^2        (and j with -F),
 * the kernel's [k (l - L) + c (w.n)] n written in d.  Its derivatives:
 *     dF/dd = k [(1 - L/l) I + (L/l) n n^T] + c [d w^T / l^2 + (q / l^2) I - 2 q d d^T / l^4]
 *     dF/dw = c n n^T
 *     dF/dk = (l - L) n,   dF/dc = (w.n) n,   dF/dL = -k n.
 * A spring shorter than the kernel's MS_MIN_LENGTH_SQUARED exerts no force, and has no
 * derivative.  Node i feels m_i g - drag v_i + external_i.
 *
 * The force's pairing with its adjoint, lf_i.f_i at each node, comes out of the adjoint's
 * loops at the cost of a few products (the integrators' derivatives need it for the
 * derivative of 1/m); the force in it equals the step's to rounding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/derivatives.h"

/* As the spring kernel (spring_kernel.h): below this squared length a spring exerts no force. */
#define MIN_LENGTH_SQUARED 1e-24

static double dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* f = m g - drag v + external, the nodes' own forces (for the tangent). */
static void node_forces(const ms_model* m, const double* MS_RESTRICT v, const double* MS_RESTRICT external,
                        double* MS_RESTRICT f) {
    const double* gravity = m->opt.gravity;
    const double drag = m->opt.drag;
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const double pushed = external != NULL ? external[3 * i + a] : 0.0;
            f[3 * i + a] = m->mass[i] * gravity[a] - drag * v[3 * i + a] + pushed;
        }
}

/* The adjoint of the nodes' own forces m_i g - drag v_i + external_i, in one pass: their
   J^T lf into lv and g (unless g is NULL), and unless pairing is NULL their pairing
   lf_i.(m_i g - drag v_i + external_i) added to pairing[i]. */
static void nodes_adjoint(const ms_model* m, const double* MS_RESTRICT v, const double* MS_RESTRICT external,
                          const double* MS_RESTRICT lf, double* MS_RESTRICT lv, const ms_parameter_arrays* g,
                          double* MS_RESTRICT pairing) {
    const double gx = m->opt.gravity[0], gy = m->opt.gravity[1], gz = m->opt.gravity[2];
    const double drag = m->opt.drag;
    double* MS_RESTRICT grad_mass = g != NULL ? g->mass : NULL;
    double* MS_RESTRICT grad_external = g != NULL ? g->external : NULL;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double* li = lf + 3 * i;
        const double pull = gx * li[0] + gy * li[1] + gz * li[2];
        if (grad_mass != NULL) {
            grad_mass[i] += pull;
            for (int a = 0; a < 3; ++a) grad_external[3 * i + a] += li[a];
        }
        if (drag != 0.0)
            for (int a = 0; a < 3; ++a) lv[3 * i + a] -= drag * li[a];
        if (pairing != NULL) {
            const double* vi = v + 3 * i;
            double paired = m->mass[i] * pull;
            if (drag != 0.0) paired -= drag * (vi[0] * li[0] + vi[1] * li[1] + vi[2] * li[2]);
            if (external != NULL) paired += dot3(external + 3 * i, li);
            pairing[i] += paired;
        }
    }
}

ms_spring_adjoint* ms_spring_adjoint_create(const ms_model* m, ms_error* err) {
    ms_spring_adjoint* springs = calloc(1, sizeof *springs);
    double* grad = calloc(3 * (size_t)(m->nspring > 0 ? m->nspring : 1), sizeof(double));
    ms_layout* layout = springs != NULL && grad != NULL ? ms_layout_create(m, err) : NULL;
    if (layout == NULL) {
        free(springs);
        free(grad);
        ms_error_set(err, MS_ERR_MEMORY, "out of memory for the adjoint of %lld springs", (long long)m->nspring);
        return NULL;
    }
    ms_layout_refresh(m, layout);
    springs->layout = layout;
    springs->grad = grad;
    springs->kernel = MS_FASTEST_KERNEL(ms_springs_adjoint);
    return springs;
}

void ms_spring_adjoint_destroy(ms_spring_adjoint* springs) {
    if (springs == NULL) return;
    ms_layout_destroy(springs->layout);
    free(springs->grad);
    free(springs);
}

void ms_spring_adjoint_collect(ms_spring_adjoint* springs, const ms_parameter_arrays* g) {
    const ms_layout* layout = springs->layout;
    const int32_t* order = layout->order;
    double* grad = springs->grad;
    for (int64_t r = 0; r < layout->nspring;) { /* the params' order (ms_layout_refresh) */
        const int64_t k = layout->lanes[layout->pairs[2 * r]] & MS_MAX_LANE_SPRINGS;
        if (k == 0) {
            const int64_t s = order[r];
            g->rest[s] -= layout->params[3 * r + 1] * grad[3 * r];
            g->k[s] += grad[3 * r + 1];
            g->c[s] += grad[3 * r + 2];
            ++r;
            continue;
        }
        for (int64_t j = 0; j < k; ++j) {
            const double* p = grad + 3 * (r + MS_LANES * j);
            const double* stiffness = layout->params + 3 * (r + MS_LANES * j) + MS_LANES;
            for (int64_t q = 0; q < MS_LANES; ++q) {
                const int64_t s = order[r + MS_LANES * j + q];
                g->rest[s] -= stiffness[q] * p[q];
                g->k[s] += p[MS_LANES + q];
                g->c[s] += p[2 * MS_LANES + q];
            }
        }
        r += MS_LANES * k;
    }
    memset(grad, 0, sizeof(double) * 3 * (size_t)layout->nspring);
}

void ms_forces_adjoint(const ms_model* m, ms_spring_adjoint* springs, const double* MS_RESTRICT x,
                       const double* MS_RESTRICT v, const double* MS_RESTRICT external, const double* MS_RESTRICT lf,
                       double* MS_RESTRICT lx, double* MS_RESTRICT lv, const ms_parameter_arrays* g,
                       double* MS_RESTRICT pairing) {
    double* MS_RESTRICT grad_k = g != NULL ? g->k : NULL;
    double* MS_RESTRICT grad_c = g != NULL ? g->c : NULL;
    double* MS_RESTRICT grad_rest = g != NULL ? g->rest : NULL;
    nodes_adjoint(m, v, external, lf, lv, g, pairing);
    if (springs != NULL) {
        springs->kernel(springs->layout, x, v, lf, lx, lv, g != NULL ? springs->grad : NULL, pairing);
        return;
    }
    const int32_t* MS_RESTRICT pairs = m->springs;
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = pairs[2 * s], j = pairs[2 * s + 1];
        double d[3], w[3], a[3];
        for (int c = 0; c < 3; ++c) {
            d[c] = x[3 * j + c] - x[3 * i + c];
            w[c] = v[3 * j + c] - v[3 * i + c];
            a[c] = lf[3 * i + c] - lf[3 * j + c]; /* F acts on i, -F on j */
        }
        const double length2 = dot3(d, d);
        if (!(length2 > MIN_LENGTH_SQUARED)) continue;
        const double length = sqrt(length2), inv_length = 1.0 / length, inv_length2 = inv_length * inv_length;
        const double k = m->k[s], damping = m->c[s], rest = m->rest[s];
        const double q = dot3(w, d), da = dot3(d, a);
        const double na = da * inv_length;
        const double q_l2 = q * inv_length2, da_l2 = da * inv_length2;
        /* the force's magnitude over l: k (1 - L / l) + c q / l^2 */
        const double magnitude = k * (1.0 - rest * inv_length) + damping * q_l2;
        /* J^T a = magnitude a + (k L (d.a) / l^3 - 2 c q (d.a) / l^4) d + c (d.a) / l^2 w */
        const double on_d = k * rest * inv_length * da_l2 - 2.0 * damping * q_l2 * da_l2;
        const double on_w = damping * da_l2;
        for (int c = 0; c < 3; ++c) {
            const double gd = magnitude * a[c] + on_d * d[c] + on_w * w[c];
            const double gw = on_w * d[c];
            lx[3 * j + c] += gd;
            lx[3 * i + c] -= gd;
            lv[3 * j + c] += gw;
            lv[3 * i + c] -= gw;
        }
        if (grad_k != NULL) {
            grad_k[s] += (length - rest) * na;
            grad_c[s] += q * inv_length * na;
            grad_rest[s] -= k * na;
        }
        if (pairing != NULL) {
            pairing[i] += magnitude * dot3(lf + 3 * i, d);
            pairing[j] -= magnitude * dot3(lf + 3 * j, d);
        }
    }
}

void ms_forces_tangent(const ms_model* m, const double* MS_RESTRICT x, const double* MS_RESTRICT v,
                       const double* MS_RESTRICT external, const double* MS_RESTRICT dx,
                       const double* MS_RESTRICT dv, const ms_parameter_arrays* dp, double* MS_RESTRICT df,
                       double* MS_RESTRICT f) {
    const double* gravity = m->opt.gravity;
    const double drag = m->opt.drag;
    const double* MS_RESTRICT dk = dp != NULL ? dp->k : NULL;
    const double* MS_RESTRICT dc = dp != NULL ? dp->c : NULL;
    const double* MS_RESTRICT drest = dp != NULL ? dp->rest : NULL;
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const double moved = dp != NULL ? dp->mass[i] * gravity[a] + dp->external[3 * i + a] : 0.0;
            df[3 * i + a] = moved - drag * dv[3 * i + a];
        }
    if (f != NULL) node_forces(m, v, external, f);
    const int32_t* MS_RESTRICT springs = m->springs;
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = springs[2 * s], j = springs[2 * s + 1];
        double d[3], w[3], dd[3], dw[3];
        for (int c = 0; c < 3; ++c) {
            d[c] = x[3 * j + c] - x[3 * i + c];
            w[c] = v[3 * j + c] - v[3 * i + c];
            dd[c] = dx[3 * j + c] - dx[3 * i + c];
            dw[c] = dv[3 * j + c] - dv[3 * i + c];
        }
        const double length2 = dot3(d, d);
        if (!(length2 > MIN_LENGTH_SQUARED)) continue;
        const double length = sqrt(length2), inv_length = 1.0 / length, inv_length2 = inv_length * inv_length;
        const double k = m->k[s], damping = m->c[s], rest = m->rest[s];
        const double q = dot3(w, d), d_dd = dot3(d, dd);
        const double q_l2 = q * inv_length2;
        const double magnitude = k * (1.0 - rest * inv_length) + damping * q_l2;
        /* dF = magnitude dd + [k L (d.dd) / l^3 + c ((w.dd) + (d.dw) - 2 q (d.dd) / l^2) / l^2
                + (dk (l - L) + dc q / l - k dL) / l] d */
        const double on_d = k * rest * inv_length * inv_length2 * d_dd +
                            damping * (dot3(w, dd) + dot3(d, dw) - 2.0 * q_l2 * d_dd) * inv_length2 +
                            (dk != NULL ? (dk[s] * (length - rest) + dc[s] * q * inv_length - k * drest[s]) * inv_length
                                        : 0.0);
        for (int c = 0; c < 3; ++c) {
            const double change = magnitude * dd[c] + on_d * d[c];
            df[3 * i + c] += change;
            df[3 * j + c] -= change;
        }
        if (f != NULL)
            for (int c = 0; c < 3; ++c) {
                f[3 * i + c] += magnitude * d[c];
                f[3 * j + c] -= magnitude * d[c];
            }
    }
}
