/* Projective dynamics for springs (Liu, Bargteil, O'Brien and Kavan 2013, "Fast
 * Simulation of Mass-Spring Systems"; Bouaziz et al. 2014).
 *
 * Backward Euler for the springs is the minimum over x' of
 *   1/(2 h^2) |x' - y|_M^2 + sum_s k_s/2 (|x'_i - x'_j| - L_s)^2,
 * where y = x + h v + h^2 M^-1 f_ext is where the other forces alone would take the nodes.
 * Each spring's energy is the distance from (x_i - x_j) to the sphere of radius L_s, so with
 * d_s the nearest point of that sphere (the local step) the energy is a quadratic in x'
 * whose minimum solves the global step
 *   (M / h^2 + sum_s k_s A_s^T A_s) x' = M y / h^2 + sum_s k_s A_s^T d_s,   A_s x = x_i - x_j.
 * It is solved for the correction x' - y, whose right-hand side sum_s k_s A_s^T (d_s - A_s y)
 * is small where the springs are near their sphere (and exactly zero without springs).
 * The matrix depends only on the masses, the stiffnesses, the pins and h: it is factored
 * once (ms_cholesky, over the free nodes; a pinned node goes to x_p + h v_p and its terms
 * to the right-hand side) and again only when one of those changes.  m->opt.iterations
 * local/global rounds follow (default 10), starting from x' = y; as they grow the step
 * converges to backward Euler's for undamped springs.  With m->opt.chebyshev = rho > 0 the
 * rounds are accelerated by Chebyshev's semi-iterative method (Wang 2015):
 *   x_{k+1} = w_{k+1} (x^_{k+1} - x_{k-1}) + x_{k-1},  w_1 = 1, w_2 = 2 / (2 - rho^2),
 *   w_{k+1} = 4 / (4 - rho^2 w_k),
 * where x^_{k+1} is the plain round from x_k and rho estimates the rounds' convergence rate
 * (the factor by which each round shrinks the error).  The dampers, the node drag, the
 * external force and the air act through f_ext, taken at the start of the step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cholesky.h"
#include "kernels/pattern.h"
#include "solvers/solvers.h"

typedef struct ms_projective ms_projective;

/* Projective dynamics' storage (slot MS_WORK_PROJECTIVE). */
struct ms_projective {
    ms_node_pattern node;  /* the matrix's pattern over the free nodes */
    double* values;        /* its entries (node.column_start[nfree]) */
    int64_t* node_spring_start; /* the springs of each node (nnode + 1) */
    int32_t* node_springs;      /* (2 nspring) */
    ms_cholesky* factor;
    /* what the factor was made for */
    double h;
    double* mass;    /* (nnode) */
    double* k;       /* (nspring) */
    uint8_t* pinned; /* (nnode) */
    int factored;
    /* per step */
    double* y;       /* inertial target (nnode x 3) */
    double* d;       /* local step: the nearest point of each spring's sphere, less A_s y
                        (nspring x 3) */
    double* rhs;     /* (nfree x 3) */
    double* older;   /* Chebyshev: the iterate before the last (nnode x 3) */
    double* current; /* Chebyshev: the last iterate (nnode x 3) */
};

static void projective_free(void* solver) {
    ms_projective* p = solver;
    if (p == NULL) return;
    ms_cholesky_destroy(p->factor);
    ms_node_pattern_release(&p->node);
    free(p->values);
    free(p->node_spring_start);
    free(p->node_springs);
    free(p->mass);
    free(p->k);
    free(p->pinned);
    free(p->y);
    free(p->d);
    free(p->rhs);
    free(p->older);
    free(p->current);
    free(p);
}

/* The matrix M / h^2 + sum_s k_s A_s^T A_s over the free nodes, and its factor. */
static int assemble_and_factor(const ms_model* m, ms_projective* p, double h, const ms_interrupt* interrupt,
                               ms_error* err) {
    const double inv_h2 = 1.0 / (h * h);
    memset(p->values, 0, sizeof(double) * (size_t)p->node.column_start[p->node.nfree]);
    for (int64_t i = 0; i < m->nnode; ++i)
        if (p->node.free_index[i] >= 0) p->values[p->node.column_start[p->node.free_index[i]]] = m->mass[i] * inv_h2;
    for (int64_t s = 0; s < m->nspring; ++s) {
        const double k = m->k[s];
        for (int end = 0; end < 2; ++end) {
            const int32_t a = p->node.free_index[m->springs[2 * s + end]];
            if (a >= 0) p->values[p->node.column_start[a]] += k;
        }
        if (p->node.spring_entry[s] >= 0) p->values[p->node.spring_entry[s]] -= k;
    }
    if (p->factor == NULL) {
        p->factor = ms_cholesky_analyse(p->node.nfree, p->node.column_start, p->node.rows, err);
        if (p->factor == NULL) return err != NULL ? err->status : MS_ERR_MEMORY;
    }
    const int status = ms_cholesky_factor_checked(p->factor, p->values, interrupt, err);
    p->factored = status == MS_OK;
    if (status != MS_OK) return status;
    p->h = h;
    memcpy(p->mass, m->mass, sizeof(double) * (size_t)m->nnode);
    memcpy(p->k, m->k, sizeof(double) * (size_t)m->nspring);
    memcpy(p->pinned, m->pinned, (size_t)m->nnode);
    return MS_OK;
}

int ms_projective_prepare(const ms_model* m, ms_state* s, double h, const ms_interrupt* interrupt, ms_error* err) {
    ms_projective* p = ms_workspace_get(s, MS_WORK_PROJECTIVE);
    const size_t n = (size_t)m->nnode, ns = (size_t)(m->nspring > 0 ? m->nspring : 1);
    if (p != NULL && p->factored && p->h == h && memcmp(p->pinned, m->pinned, n) == 0 &&
        memcmp(p->mass, m->mass, sizeof(double) * n) == 0 && memcmp(p->k, m->k, sizeof(double) * (size_t)m->nspring) == 0)
        return MS_OK; /* the factor still holds */
    if (p != NULL && memcmp(p->pinned, m->pinned, n) != 0) {
        ms_workspace_set(s, MS_WORK_PROJECTIVE, NULL, NULL); /* other pins: another pattern */
        p = NULL;
    }
    if (p == NULL) {
        p = calloc(1, sizeof *p);
        if (p != NULL) {
            p->node_spring_start = malloc(sizeof(int64_t) * (n + 1));
            p->node_springs = malloc(sizeof(int32_t) * 2 * ns);
            p->mass = malloc(sizeof(double) * n);
            p->k = malloc(sizeof(double) * ns);
            p->pinned = malloc(n);
            p->y = malloc(sizeof(double) * 3 * n);
            p->d = malloc(sizeof(double) * 3 * ns);
            p->rhs = malloc(sizeof(double) * 3 * n);
            p->older = malloc(sizeof(double) * 3 * n);
            p->current = malloc(sizeof(double) * 3 * n);
        }
        if (p == NULL || !p->node_spring_start ||
            !p->node_springs || !p->mass || !p->k || !p->pinned || !p->y || !p->d || !p->rhs || !p->older ||
            !p->current ||
            ms_node_pattern_build(m, &p->node) != 0 ||
            (p->values = malloc(sizeof(double) * (size_t)(p->node.column_start[p->node.nfree] + 1))) == NULL ||
            ms_node_springs(m, p->node_spring_start, p->node_springs) != 0) {
            projective_free(p);
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory preparing projective dynamics for %lld nodes",
                                (long long)m->nnode);
        }
        ms_workspace_set(s, MS_WORK_PROJECTIVE, p, projective_free);
    }
    const int status = assemble_and_factor(m, p, h, interrupt, err);
    if (status == MS_ERR_INTERRUPTED)
        return ms_error_set(err, MS_ERR_INTERRUPTED,
                            "projective: the factorisation of M/h^2 + sum k A^T A was interrupted; the state is "
                            "unchanged");
    if (status == MS_ERR_VALUE && err != NULL) {
        char reason[sizeof err->message];
        memcpy(reason, err->message, sizeof reason);
        ms_error_set(err, MS_ERR_VALUE, "projective: the matrix M/h^2 + sum k A^T A could not be factored (%s)",
                     reason);
    }
    return status;
}

/* One step from (x, v) to (x_out, v_out) with the other forces f_ext at the start (node
   forces, dampers, air: nnode x 3), by worker w (the call's only one), which checks
   whether to stop (ms_should_stop) before each round.  Returns 1 if the result is
   finite. */
static int projective_step(ms_worker* w, const ms_model* m, ms_state* s, const double* MS_RESTRICT f_ext,
                           const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* MS_RESTRICT x_out,
                           double* MS_RESTRICT v_out, double h) {
    ms_projective* p = ms_workspace_get(s, MS_WORK_PROJECTIVE);
    const int64_t n = m->nnode;
    const double* MS_RESTRICT inv_mass = s->inv_mass;
    /* the inertial target y = x + h v^ with v^ = v + h M^-1 f_ext (pins: x_p + h v_p) */
    for (int64_t q = 0; q < 3 * n; ++q) {
        v_out[q] = v[q] + h * inv_mass[q / 3] * f_ext[q];
        p->y[q] = x[q] + h * v_out[q];
        x_out[q] = p->y[q];
    }
    const int iterations = m->opt.iterations > 0 ? m->opt.iterations : 10;
    const double rho2 = m->opt.chebyshev * m->opt.chebyshev;
    double weight = 1.0; /* Chebyshev's w */
    for (int iteration = 0; iteration < iterations && !ms_should_stop(w); ++iteration) {
        if (rho2 > 0.0) memcpy(p->current, x_out, sizeof(double) * 3 * (size_t)n);
        /* local step: each spring's nearest point on its sphere */
        for (int64_t sp = 0; sp < m->nspring; ++sp) {
            const int64_t i = m->springs[2 * sp], j = m->springs[2 * sp + 1];
            double* d = p->d + 3 * sp;
            double length2 = 0.0;
            for (int a = 0; a < 3; ++a) {
                d[a] = x_out[3 * i + a] - x_out[3 * j + a];
                length2 += d[a] * d[a];
            }
            const double scale = length2 > 1e-24 ? m->rest[sp] / sqrt(length2) : 0.0;
            for (int a = 0; a < 3; ++a) d[a] = d[a] * scale - (p->y[3 * i + a] - p->y[3 * j + a]);
        }
        /* global step for the correction from y: the right-hand side node by node, in
           spring order (pinned neighbours sit at their y, which is where they go) */
        for (int64_t i = 0; i < n; ++i) {
            const int32_t row = p->node.free_index[i];
            if (row < 0) continue;
            double* b = p->rhs + 3 * row;
            b[0] = b[1] = b[2] = 0.0;
            for (int64_t e = p->node_spring_start[i]; e < p->node_spring_start[i + 1]; ++e) {
                const int64_t sp = p->node_springs[e];
                const double weight = m->springs[2 * sp] == i ? m->k[sp] : -m->k[sp];
                for (int a = 0; a < 3; ++a) b[a] += weight * p->d[3 * sp + a];
            }
        }
        ms_cholesky_solve(p->factor, p->rhs, 3);
        for (int64_t i = 0; i < n; ++i) {
            const int32_t row = p->node.free_index[i];
            if (row >= 0)
                for (int a = 0; a < 3; ++a) x_out[3 * i + a] = p->y[3 * i + a] + p->rhs[3 * (int64_t)row + a];
        }
        if (rho2 > 0.0) {
            weight = iteration == 0 ? 1.0 : iteration == 1 ? 2.0 / (2.0 - rho2) : 4.0 / (4.0 - rho2 * weight);
            if (iteration > 0)
                for (int64_t q = 0; q < 3 * n; ++q) x_out[q] = weight * (x_out[q] - p->older[q]) + p->older[q];
            double* swap = p->older; /* x_k becomes the iterate before the last */
            p->older = p->current;
            p->current = swap;
        }
    }
    double probe = 0.0;
    for (int64_t q = 0; q < 3 * n; ++q) {
        /* v' = (x' - x) / h, as v^ plus what the springs moved beyond y: exactly v^ where they
           moved nothing (the pins) */
        v_out[q] += (x_out[q] - p->y[q]) / h;
        probe += (x_out[q] - x_out[q]) + (v_out[q] - v_out[q]);
    }
    return probe == 0.0;
}

/* Projective dynamics as the stages of a step, on one worker (the driver gives it no others): the
   node forces, the dampers and the air at the start form f_ext; the local/global
   iterations do the springs.  s->f and the flows as for xpbd. */
int ms_projective_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                      ms_flow* flow) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    const int ticket = ms_stage_forces_and_own(w, x, v, t, s->f, s->work);
    ms_sync(w); /* s->f and the flows complete */
    const ms_flow rate = ms_forces_flow(tm, ticket);
    double* f_ext = s->work;
    for (int64_t sp = 0; sp < m->nspring; ++sp) {
        if (!(m->c[sp] > 0.0)) continue;
        const int64_t i = m->springs[2 * sp], j = m->springs[2 * sp + 1];
        double force[3]; /* the damper alone: the spring's formula with k = 0 */
        ms_spring_force(x + 3 * i, x + 3 * j, v + 3 * i, v + 3 * j, m->rest[sp], 0.0, m->c[sp], force);
        for (int a = 0; a < 3; ++a) {
            f_ext[3 * i + a] += force[a];
            f_ext[3 * j + a] -= force[a];
        }
    }
    const int finite = projective_step(w, m, s, f_ext, x, v, x_out, v_out, tm->h);
    MS_FOR_MY_NODES(w, b, begin, end)
    ms_finish_nodes(w, b, begin, end, !finite, x, x_out, v_out);
    ms_sync(w);
    ms_flow_add(flow, &rate, tm->h);
    return !ms_any_bad(tm) && ms_flow_finite(flow);
}
