/* Implicit (backward) Euler: M (v' - v) = h f(x + h v', v'),  x' = x + h v'.
 *
 * Newton's method on the velocity change dv = v' - v.  Iteration k linearises the force
 * about a point (x_k, v_k):  f(x', v') ~ f_k - K_k (x' - x_k) - C_k (v' - v_k), with
 * K = -df/dx and C = -df/dv, which gives the linear system
 *
 *     A_k dv = h [f_k - K_k (x + h v - x_k) - C_k (v - v_k)] + (terms in dv_k),
 *     A_k = M + h C_k + h^2 K_k.
 *
 * The first iteration linearises about the start (x, v) itself, so its right-hand side is
 * h (f_0 - h K_0 v): exactly Baraff & Witkin's (1998) linearised step.  Later iterations
 * linearise about the current iterate (x + h v'_k, v'_k), where the system reduces to the
 * Newton update A_k delta = -g_k with the residual g_k = M dv_k - h f_k.  Each system is
 * solved by conjugate gradients with a Jacobi preconditioner, matrix-free over the springs'
 * 3x3 blocks, with pinned nodes filtered out so they keep their own velocity exactly.
 *
 * The transverse stiffness k (1 - L/l) is clamped at zero for compressed springs so A stays
 * symmetric positive definite.  The dampers' dependence on position is left out of K (it is
 * not symmetric); Newton then converges linearly rather than quadratically when dampers are
 * strong, but to the same solution.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

void ms_spring_blocks(const ms_model* m, const double* restrict x, double* restrict blocks) {
    for (int64_t s = 0; s < m->nspring; ++s) {
        const double* xi = x + 3 * (int64_t)m->springs[2 * s];
        const double* xj = x + 3 * (int64_t)m->springs[2 * s + 1];
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        const double length2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        double* b = blocks + MS_IMPLICIT_SPRING_DOUBLES * s;
        if (length2 <= 1e-24) {
            b[0] = b[1] = b[2] = b[3] = b[4] = 0.0;
            continue;
        }
        const double length = sqrt(length2);
        const double transverse_factor = 1.0 - m->rest[s] / length;
        const double k_transverse = transverse_factor > 0.0 ? m->k[s] * transverse_factor : 0.0;
        b[0] = d[0] / length;
        b[1] = d[1] / length;
        b[2] = d[2] / length;
        b[3] = k_transverse;
        b[4] = m->k[s] - k_transverse;
    }
}

void ms_system_product(const ms_model* m, const double* restrict inv_mass, const double* restrict blocks,
                       double mass_scale, double damping_scale, double stiffness_scale, const double* restrict p,
                       double* restrict y) {
    const double node_scale = damping_scale * m->opt.drag;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double diagonal = mass_scale * m->mass[i] + node_scale;
        for (int a = 0; a < 3; ++a) y[3 * i + a] = diagonal * p[3 * i + a];
    }
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        const double* b = blocks + MS_IMPLICIT_SPRING_DOUBLES * s;
        /* B = beta I + alpha n n^T */
        const double beta = stiffness_scale * b[3];
        const double alpha = stiffness_scale * b[4] + damping_scale * m->c[s];
        const double u[3] = {p[3 * i] - p[3 * j], p[3 * i + 1] - p[3 * j + 1], p[3 * i + 2] - p[3 * j + 2]};
        const double along = alpha * (b[0] * u[0] + b[1] * u[1] + b[2] * u[2]);
        for (int a = 0; a < 3; ++a) {
            const double value = beta * u[a] + along * b[a];
            y[3 * i + a] += value;
            y[3 * j + a] -= value;
        }
    }
    for (int64_t i = 0; i < m->nnode; ++i)
        if (inv_mass[i] == 0.0) y[3 * i] = y[3 * i + 1] = y[3 * i + 2] = 0.0;
}

static double dot(const double* restrict a, const double* restrict b, int64_t count) {
    double sum = 0.0;
    for (int64_t q = 0; q < count; ++q) sum += a[q] * b[q];
    return sum;
}

/* Jacobi preconditioner: the diagonal of A (1 on pinned rows, which are filtered out). */
static void assemble_diagonal(const ms_model* m, const double* inv_mass, const double* blocks, double h,
                              double* restrict diagonal) {
    const double node = h * m->opt.drag;
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) diagonal[3 * i + a] = m->mass[i] + node;
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        const double* b = blocks + MS_IMPLICIT_SPRING_DOUBLES * s;
        const double beta = h * h * b[3];
        const double alpha = h * h * b[4] + h * m->c[s];
        for (int a = 0; a < 3; ++a) {
            const double value = beta + alpha * b[a] * b[a];
            diagonal[3 * i + a] += value;
            diagonal[3 * j + a] += value;
        }
    }
    for (int64_t i = 0; i < m->nnode; ++i)
        if (inv_mass[i] == 0.0) diagonal[3 * i] = diagonal[3 * i + 1] = diagonal[3 * i + 2] = 1.0;
}

typedef struct cg_vectors {
    double* r;
    double* z;
    double* p;
    double* ap;
    double* diagonal;
} cg_vectors;

/* Solves A delta = rhs (pinned rows of rhs already zero) from delta = 0 by Jacobi-
   preconditioned CG.  Returns the iterations used; *relative_residual is |r| / |rhs|
   of the returned iterate, which is the last one (CG's error decreases monotonically in
   the A-norm, so it is the best one when the cap is hit). */
static int conjugate_gradient(const ms_model* m, const double* inv_mass, const double* blocks, double h,
                              const double* rhs, double* restrict delta, const cg_vectors* w, double* relative_residual,
                              int* converged) {
    const int64_t n3 = 3 * m->nnode;
    const ms_implicit_options* opt = &m->opt.implicit;
    memset(delta, 0, sizeof(double) * (size_t)n3);
    const double rhs_norm = sqrt(dot(rhs, rhs, n3));
    *relative_residual = 0.0;
    *converged = 1;
    if (rhs_norm == 0.0) return 0;
    if (!isfinite(rhs_norm)) {
        *relative_residual = NAN;
        *converged = 0;
        return 0;
    }
    memcpy(w->r, rhs, sizeof(double) * (size_t)n3);
    for (int64_t q = 0; q < n3; ++q) {
        w->z[q] = w->r[q] / w->diagonal[q];
        w->p[q] = w->z[q];
    }
    double rz = dot(w->r, w->z, n3);
    const double target = opt->cg_tol * rhs_norm;
    int iteration = 0;
    double residual_norm = rhs_norm;
    while (iteration < opt->cg_max_iter) {
        ms_system_product(m, inv_mass, blocks, 1.0, h, h * h, w->p, w->ap);
        const double curvature = dot(w->p, w->ap, n3);
        ++iteration;
        if (!(curvature > 0.0)) break; /* exhausted (or not positive definite): keep the iterate */
        const double step = rz / curvature;
        for (int64_t q = 0; q < n3; ++q) {
            delta[q] += step * w->p[q];
            w->r[q] -= step * w->ap[q];
        }
        residual_norm = sqrt(dot(w->r, w->r, n3));
        if (residual_norm <= target) break;
        for (int64_t q = 0; q < n3; ++q) w->z[q] = w->r[q] / w->diagonal[q];
        const double rz_next = dot(w->r, w->z, n3);
        const double beta = rz_next / rz;
        rz = rz_next;
        for (int64_t q = 0; q < n3; ++q) w->p[q] = w->z[q] + beta * w->p[q];
    }
    *relative_residual = residual_norm / rhs_norm;
    *converged = residual_norm <= target;
    return iteration;
}

int ms_step_implicit_euler(const ms_model* m, ms_state* s, const double* restrict x, const double* restrict v,
                           double* restrict x_out, double* restrict v_out, double h, ms_flow* flow) {
    const int64_t nnode = m->nnode, n3 = 3 * nnode;
    const double* inv_mass = s->inv_mass;
    double* work = s->implicit_work;
    double* dv = work;
    double* rhs = work + n3;
    cg_vectors w = {work + 2 * n3, work + 3 * n3, work + 4 * n3, work + 5 * n3, work + 6 * n3};
    double* force = work + 7 * n3;
    double* delta = work + 8 * n3;
    double* blocks = work + 9 * n3;
    ms_solver_stats* stats = &s->solver;
    const ms_implicit_options* opt = &m->opt.implicit;

    stats->newton_iterations = 0;
    stats->cg_iterations = 0;
    stats->cg_converged = 1;
    stats->newton_converged = 0;

    /* Iteration 0 about (x, v): A_0 dv = h f_0 - h^2 K_0 v. */
    ms_flow rate = {0.0, 0.0, 0.0, 0.0, 0.0};
    ms_step_forces(m, s, x, v, s->t, s->f, &rate);
    ms_spring_blocks(m, x, blocks);
    ms_system_product(m, inv_mass, blocks, 0.0, 0.0, 1.0, v, rhs);
    for (int64_t i = 0; i < nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            rhs[q] = inv_mass[i] == 0.0 ? 0.0 : h * s->f[q] - h * h * rhs[q];
        }
    memset(dv, 0, sizeof(double) * (size_t)n3);
    for (;;) {
        assemble_diagonal(m, inv_mass, blocks, h, w.diagonal);
        int converged;
        stats->cg_iterations += conjugate_gradient(m, inv_mass, blocks, h, rhs, delta, &w, &stats->cg_residual, &converged);
        stats->newton_iterations += 1;
        if (!converged) stats->cg_converged = 0;
        for (int64_t q = 0; q < n3; ++q) {
            dv[q] += delta[q];
            v_out[q] = v[q] + dv[q];
            x_out[q] = x[q] + h * v_out[q];
        }
        /* Residual g = M dv - h f(x', v') at the new iterate (also the end-of-step power,
           which backward Euler integrates its flows with). */
        ms_step_forces(m, s, x_out, v_out, s->t + h, force, &rate);
        double residual2 = 0.0, momentum2 = 0.0, impulse2 = 0.0, weight2 = 0.0;
        const double* g = m->opt.gravity;
        const double g2 = g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
        for (int64_t i = 0; i < nnode; ++i) {
            if (inv_mass[i] == 0.0) {
                rhs[3 * i] = rhs[3 * i + 1] = rhs[3 * i + 2] = 0.0;
                continue;
            }
            weight2 += h * h * m->mass[i] * m->mass[i] * g2;
            for (int a = 0; a < 3; ++a) {
                const int64_t q = 3 * i + a;
                const double momentum = m->mass[i] * dv[q], impulse = h * force[q];
                rhs[q] = impulse - momentum; /* -g */
                residual2 += rhs[q] * rhs[q];
                momentum2 += momentum * momentum;
                impulse2 += impulse * impulse;
            }
        }
        /* At rest under gravity the net force is a cancellation of weights and tensions, so
           the weight impulse sets the scale of its round-off too. */
        double scale2 = momentum2 > impulse2 ? momentum2 : impulse2;
        if (weight2 > scale2) scale2 = weight2;
        const double scale = sqrt(scale2);
        stats->newton_residual = scale > 0.0 ? sqrt(residual2) / scale : 0.0;
        if (!isfinite(stats->newton_residual)) break;
        if (sqrt(residual2) <= opt->newton_tol * scale) {
            stats->newton_converged = 1;
            break;
        }
        if (stats->newton_iterations >= opt->newton_max_iter) break;
        ms_spring_blocks(m, x_out, blocks);
    }
    if (!stats->cg_converged) stats->cg_failures += 1;
    ms_flow_add(flow, &rate, h);
    double probe = 0.0;
    for (int64_t q = 0; q < n3; ++q) probe += (x_out[q] - x_out[q]) + (v_out[q] - v_out[q]);
    /* A non-finite residual means the linear algebra broke down (e.g. h^2 overflowed):
       the step is not trusted even if the iterate happens to be finite. */
    return probe == 0.0 && isfinite(stats->newton_residual) && isfinite(stats->cg_residual) && ms_flow_finite(flow);
}
