/* The adjoint and the tangent of one step of explicit and symplectic Euler, velocity
 * Verlet and RK4, written stage by stage from explicit.c, and of implicit Euler's converged
 * step (at the end).  Each stage's force evaluation f(x_s, v_s) gives an acceleration
 * a_s = w f_s with w = 1/m on free nodes (0 on pinned ones, which therefore keep their
 * velocity), and the explicit steps are sums of those.  The reverse pass evaluates the
 * stages again from (x, v), then takes them in reverse.  The energy loss multiplies the free
 * velocities by (1 - energy_loss) after the step.
 *
 * Verlet's end force is taken at its predicted velocity whenever the step has dampers or
 * drag; with neither, the force does not depend on the velocity and both forms are the
 * same map, so the derivatives here always follow the predicted form (at c = 0 it gives
 * the derivative with respect to c from above, the side on which c is allowed).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/tangent.h"
#include "solvers/adjoint.h"

int64_t ms_adjoint_work_size(const ms_model* m) { return 24 * 3 * m->nnode + 2 * m->nnode; }

static void forces(const ms_model* m, const double* external, const double* x, const double* v, double* f) {
    ms_forces(m, x, v, external, 0.0, f, NULL);
}

/* The adjoint of a = w f taken with weight, for the force: lf = weight w la. */
static void force_adjoint(const ms_model* m, const double* inv_mass, double weight, const double* la, double* lf) {
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) lf[3 * i + a] = weight * inv_mass[i] * la[3 * i + a];
}


/* da = w df + dw f with dw = -w^2 dm on free nodes. */
static void acceleration_tangent(const ms_model* m, const double* inv_mass, const double* dmass, const double* f,
                                 const double* df, double* da) {
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double w = inv_mass[i], dw = -w * w * dmass[i];
        for (int a = 0; a < 3; ++a) da[3 * i + a] = w * df[3 * i + a] + dw * f[3 * i + a];
    }
}

/* The energy loss's factor on the free velocities (or its adjoint: the same). */
static void energy_loss(const ms_model* m, const double* inv_mass, double* v) {
    const double keep = 1.0 - m->opt.energy_loss;
    if (m->opt.energy_loss == 0.0) return;
    for (int64_t i = 0; i < m->nnode; ++i)
        if (inv_mass[i] != 0.0)
            for (int a = 0; a < 3; ++a) v[3 * i + a] *= keep;
}

/* The mass gradient from the adjoint of w = 1/m, dw/dm = -w^2.  Each acceleration a = w f
   taken with weight gives lf = weight w la and adds weight la.f to the adjoint of w, which
   is lf.f / w: the pairing of lf with f that ms_forces_adjoint sums; so -w pairing. */
static void mass_from_pairing(const ms_model* m, const double* inv_mass, const double* pairing,
                              const ms_parameter_arrays* g) {
    for (int64_t i = 0; i < m->nnode; ++i) g->mass[i] -= inv_mass[i] * pairing[i];
}

static void axpy(int64_t n, double a, const double* x, double* y) {
    for (int64_t q = 0; q < n; ++q) y[q] += a * x[q];
}

/* y = x + a z */
static void offset(int64_t n, const double* x, double a, const double* z, double* y) {
    for (int64_t q = 0; q < n; ++q) y[q] = x[q] + a * z[q];
}

/* ---- explicit and symplectic Euler ----------------------------------------------------
   symplectic: v' = v + h w f(x, v), x' = x + h v';  explicit: x' = x + h v, v' = v + h w f */

static void euler_adjoint(const ms_model* m, ms_spring_adjoint* springs, const double* inv_mass, const double* external,
                          const double* x, const double* v, double h, double* lx, double* lv,
                          const ms_parameter_arrays* g, double* work, int explicit_euler) {
    const int64_t n3 = 3 * m->nnode;
    double *lf = work, *pairing = work + n3;
    memset(pairing, 0, sizeof(double) * (size_t)m->nnode);
    energy_loss(m, inv_mass, lv);
    for (int64_t i = 0; i < m->nnode; ++i) { /* one pass for x' = x + h v' (or v) and a = w f */
        const double weight = h * inv_mass[i];
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            const double moved = lv[q] + h * lx[q];
            if (explicit_euler) { /* x' = x + h v */
                lf[q] = weight * lv[q];
                lv[q] = moved;
            } else { /* x' = x + h v' */
                lf[q] = weight * moved;
                lv[q] = moved;
            }
        }
    }
    ms_forces_adjoint(m, springs, x, v, external, lf, lx, lv, g, pairing);
    mass_from_pairing(m, inv_mass, pairing, g);
}

static void euler_tangent(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                          const double* v, double h, double* dx, double* dv, const ms_parameter_arrays* d,
                          double* work, int explicit_euler) {
    const int64_t n3 = 3 * m->nnode;
    double *f = work, *df = work + n3;
    ms_forces_tangent(m, x, v, external, dx, dv, d, df, f);
    acceleration_tangent(m, inv_mass, d->mass, f, df, df);
    if (explicit_euler) axpy(n3, h, dv, dx);
    axpy(n3, h, df, dv);
    if (!explicit_euler) axpy(n3, h, dv, dx);
    energy_loss(m, inv_mass, dv);
}

/* ---- velocity Verlet -------------------------------------------------------------------
   f0 = f(x, v); vh = v + h/2 w f0; x1 = x + h vh; f1 = f(x1, vh); vp = vh + h/2 w f1;
   f2 = f(x1, vp); x' = x1, v' = vh + h/2 w f2 */

static void verlet_adjoint(const ms_model* m, ms_spring_adjoint* springs, const double* inv_mass,
                           const double* external, const double* x, const double* v, double h, double* lx, double* lv,
                           const ms_parameter_arrays* g, double* work) {
    const int64_t n3 = 3 * m->nnode;
    const double half = 0.5 * h;
    double *f0 = work, *vh = work + n3, *x1 = work + 2 * n3, *f1 = work + 3 * n3, *vp = work + 4 * n3;
    double *lvh = work + 6 * n3, *lvp = work + 7 * n3, *lf = work + 8 * n3, *pairing = work + 9 * n3;
    memset(pairing, 0, sizeof(double) * (size_t)m->nnode);
    forces(m, external, x, v, f0);
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            vh[q] = v[q] + half * inv_mass[i] * f0[q];
            x1[q] = x[q] + h * vh[q];
        }
    forces(m, external, x1, vh, f1);
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) vp[3 * i + a] = vh[3 * i + a] + half * inv_mass[i] * f1[3 * i + a];

    energy_loss(m, inv_mass, lv);
    /* lx is the adjoint of x1 from here until x1 = x + h vh is taken back */
    memcpy(lvh, lv, sizeof(double) * (size_t)n3);
    memset(lvp, 0, sizeof(double) * (size_t)n3);
    force_adjoint(m, inv_mass, half, lv, lf);
    ms_forces_adjoint(m, springs, x1, vp, external, lf, lx, lvp, g, pairing);
    axpy(n3, 1.0, lvp, lvh);
    force_adjoint(m, inv_mass, half, lvp, lf);
    ms_forces_adjoint(m, springs, x1, vh, external, lf, lx, lvh, g, pairing);
    axpy(n3, h, lx, lvh);
    memcpy(lv, lvh, sizeof(double) * (size_t)n3);
    force_adjoint(m, inv_mass, half, lvh, lf);
    ms_forces_adjoint(m, springs, x, v, external, lf, lx, lv, g, pairing);
    mass_from_pairing(m, inv_mass, pairing, g);
}

static void verlet_tangent(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                           const double* v, double h, double* dx, double* dv, const ms_parameter_arrays* d,
                           double* work) {
    const int64_t n3 = 3 * m->nnode;
    const double half = 0.5 * h;
    double *f = work, *df = work + n3, *vh = work + 2 * n3, *x1 = work + 3 * n3, *vp = work + 4 * n3;
    double *dvh = work + 5 * n3, *dvp = work + 6 * n3;
    ms_forces_tangent(m, x, v, external, dx, dv, d, df, f);
    acceleration_tangent(m, inv_mass, d->mass, f, df, df);
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            vh[q] = v[q] + half * inv_mass[i] * f[q];
            x1[q] = x[q] + h * vh[q];
            dvh[q] = dv[q] + half * df[q];
            dx[q] += h * dvh[q];
        }
    ms_forces_tangent(m, x1, vh, external, dx, dvh, d, df, f);
    acceleration_tangent(m, inv_mass, d->mass, f, df, df);
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            vp[q] = vh[q] + half * inv_mass[i] * f[q];
            dvp[q] = dvh[q] + half * df[q];
        }
    ms_forces_tangent(m, x1, vp, external, dx, dvp, d, df, f);
    acceleration_tangent(m, inv_mass, d->mass, f, df, df);
    offset(n3, dvh, half, df, dv);
    energy_loss(m, inv_mass, dv);
}

/* ---- RK4 -------------------------------------------------------------------------------
   stage s = 1..4 at (x_s, v_s): (x_1, v_1) = (x, v), (x_s, v_s) = (x, v) + c_s h (v_{s-1},
   a_{s-1}) with c = (1/2, 1/2, 1) and a_s = w f(x_s, v_s); x' = x + h/6 sum b_s v_s,
   v' = v + h/6 sum b_s a_s with b = (1, 2, 2, 1). */

static const double rk4_weight[4] = {1.0, 2.0, 2.0, 1.0};
static const double rk4_offset[4] = {0.0, 0.5, 0.5, 1.0};

static void rk4_adjoint(const ms_model* m, ms_spring_adjoint* springs, const double* inv_mass, const double* external,
                        const double* x, const double* v, double h, double* lx, double* lv,
                        const ms_parameter_arrays* g, double* work) {
    const int64_t n3 = 3 * m->nnode;
    /* the stages' points and forces, then the adjoints of their velocities and accelerations */
    double* xs[4];
    double* vs[4];
    double* fs[4];
    double* lvs[4];
    double* las[4];
    for (int s = 0; s < 4; ++s) {
        xs[s] = work + (0 + s) * n3;
        vs[s] = work + (4 + s) * n3;
        fs[s] = work + (8 + s) * n3;
        lvs[s] = work + (12 + s) * n3;
        las[s] = work + (16 + s) * n3;
    }
    double *lf = work + 20 * n3, *lxs = work + 21 * n3, *pairing = work + 22 * n3;
    memset(pairing, 0, sizeof(double) * (size_t)m->nnode);
    memcpy(xs[0], x, sizeof(double) * (size_t)n3);
    memcpy(vs[0], v, sizeof(double) * (size_t)n3);
    for (int s = 0; s < 4; ++s) {
        if (s > 0)
            for (int64_t i = 0; i < m->nnode; ++i)
                for (int a = 0; a < 3; ++a) {
                    const int64_t q = 3 * i + a;
                    xs[s][q] = x[q] + rk4_offset[s] * h * vs[s - 1][q];
                    vs[s][q] = v[q] + rk4_offset[s] * h * (inv_mass[i] * fs[s - 1][q]);
                }
        if (s < 3) forces(m, external, xs[s], vs[s], fs[s]); /* the last stage's is not needed */
    }
    energy_loss(m, inv_mass, lv);
    for (int s = 0; s < 4; ++s) {
        const double weight = rk4_weight[s] * h / 6.0;
        for (int64_t q = 0; q < n3; ++q) {
            lvs[s][q] = weight * lx[q];
            las[s][q] = weight * lv[q];
        }
    }
    for (int s = 3; s >= 0; --s) {
        force_adjoint(m, inv_mass, 1.0, las[s], lf);
        memset(lxs, 0, sizeof(double) * (size_t)n3);
        ms_forces_adjoint(m, springs, xs[s], vs[s], external, lf, lxs, lvs[s], g, pairing);
        axpy(n3, 1.0, lxs, lx);
        axpy(n3, 1.0, lvs[s], lv);
        if (s > 0) {
            axpy(n3, rk4_offset[s] * h, lxs, lvs[s - 1]);
            axpy(n3, rk4_offset[s] * h, lvs[s], las[s - 1]);
        }
    }
    mass_from_pairing(m, inv_mass, pairing, g);
}

static void rk4_tangent(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                        const double* v, double h, double* dx, double* dv, const ms_parameter_arrays* d,
                        double* work) {
    const int64_t n3 = 3 * m->nnode;
    double *xs = work, *vs = work + n3, *f = work + 2 * n3, *da = work + 3 * n3;
    double *dxs = work + 4 * n3, *dvs = work + 5 * n3, *dx_out = work + 6 * n3, *dv_out = work + 7 * n3;
    memcpy(xs, x, sizeof(double) * (size_t)n3);
    memcpy(vs, v, sizeof(double) * (size_t)n3);
    memcpy(dxs, dx, sizeof(double) * (size_t)n3);
    memcpy(dvs, dv, sizeof(double) * (size_t)n3);
    memcpy(dx_out, dx, sizeof(double) * (size_t)n3);
    memcpy(dv_out, dv, sizeof(double) * (size_t)n3);
    for (int s = 0; s < 4; ++s) {
        ms_forces_tangent(m, xs, vs, external, dxs, dvs, d, da, f);
        acceleration_tangent(m, inv_mass, d->mass, f, da, da);
        const double weight = rk4_weight[s] * h / 6.0;
        axpy(n3, weight, dvs, dx_out);
        axpy(n3, weight, da, dv_out);
        if (s == 3) break;
        const double step = rk4_offset[s + 1] * h;
        for (int64_t i = 0; i < m->nnode; ++i)
            for (int a = 0; a < 3; ++a) {
                const int64_t q = 3 * i + a;
                xs[q] = x[q] + step * vs[q];
                vs[q] = v[q] + step * (inv_mass[i] * f[q]);
                dxs[q] = dx[q] + step * dvs[q];
                dvs[q] = dv[q] + step * da[q];
            }
    }
    memcpy(dx, dx_out, sizeof(double) * (size_t)n3);
    memcpy(dv, dv_out, sizeof(double) * (size_t)n3);
    energy_loss(m, inv_mass, dv);
}

/* ---- implicit (backward) Euler ---------------------------------------------------------
   The converged step solves, on the free nodes,
       R(v', x, v, p) = M (v' - v) - h f(x + h v', v') = 0,    x' = x + h v',
   and keeps the pinned nodes' velocities (v'_p = v_p).  Its derivative follows from the
   implicit function theorem with A = dR/dv' = M - h^2 K - h D, K = df/dx and D = df/dv at
   (x', v'), the exact tangent (no clamp: the clamp only steers Newton's iterations, the
   converged step does not depend on it).  With dampers K is not symmetric (the damping
   force's derivative along the spring turns with it), so A is solved by BiCGSTAB, matrix
   free, to a relative residual of IMPLICIT_TOLERANCE: the derivatives are those of the
   exact backward-Euler step, taken at the forward Newton solve's result (converged to
   newton_tol).  Its preconditioner is the forward solver's symmetric matrix
   M + h (drag I + C) + h^2 K with K's clamped tangent blocks (kernels/tangent.h) at (x', v'),
   assembled and factored by sparse Cholesky for each step. */

#define IMPLICIT_TOLERANCE 1e-14
#define IMPLICIT_MAX_ITERATIONS 10000

/* The preconditioner: the forward solver's matrix at (x', v'), assembled and factored for
   each step, with 3 unknowns per node (3 i + a); a pinned node's rows are the identity's.
   Column 3 i + a holds the rows 3 i + b (b >= a) of node i's diagonal block, then the three
   rows of each free neighbour j > i, in the order of i's neighbour list (the same for the
   three columns of i). */
struct ms_adjoint_preconditioner {
    ms_cholesky* factor;
    int usable;         /* the last factorisation succeeded */
    int64_t* start;     /* (3 nnode + 1) */
    int32_t* rows;      /* (nonzeros) */
    double* values;     /* (nonzeros) */
    int64_t* neighbour; /* per spring: the ordinal of its higher end among its lower end's neighbours, or -1 */
    double* blocks;     /* per spring: the clamped tangent block (MS_SPRING_BLOCK_DOUBLES) */
};

void ms_adjoint_preconditioner_destroy(ms_adjoint_preconditioner* p) {
    if (p == NULL) return;
    ms_cholesky_destroy(p->factor);
    free(p->start);
    free(p->rows);
    free(p->values);
    free(p->neighbour);
    free(p->blocks);
    free(p);
}

ms_adjoint_preconditioner* ms_adjoint_preconditioner_create(const ms_model* m, ms_error* err) {
    if (m->opt.integrator != MS_IMPLICIT_EULER) return NULL;
    const int64_t n = m->nnode, ns = m->nspring;
    ms_adjoint_preconditioner* p = calloc(1, sizeof *p);
    int64_t* count = calloc((size_t)n + 1, sizeof *count); /* free neighbours above each node */
    int32_t* higher = malloc(sizeof *higher * (size_t)(ns > 0 ? ns : 1));
    int64_t* first = calloc((size_t)n + 1, sizeof *first);
    if (p == NULL || count == NULL || higher == NULL || first == NULL) goto out_of_memory;
    p->neighbour = malloc(sizeof *p->neighbour * (size_t)(ns > 0 ? ns : 1));
    p->blocks = malloc(sizeof *p->blocks * (size_t)(MS_SPRING_BLOCK_DOUBLES * (ns > 0 ? ns : 1)));
    if (p->neighbour == NULL || p->blocks == NULL) goto out_of_memory;
    /* each node's list of free neighbours above it (a pair joined twice is listed once),
       springs grouped by their lower end */
    for (int64_t s = 0; s < ns; ++s) {
        const int32_t a = m->springs[2 * s], b = m->springs[2 * s + 1];
        if (!m->pinned[a] && !m->pinned[b]) count[(a < b ? a : b) + 1] += 1;
    }
    for (int64_t i = 0; i < n; ++i) first[i + 1] = first[i] + count[i + 1];
    for (int64_t i = 0; i < n; ++i) count[i] = 0; /* listed so far */
    for (int64_t s = 0; s < ns; ++s) {
        const int32_t a = m->springs[2 * s], b = m->springs[2 * s + 1];
        p->neighbour[s] = -1;
        if (m->pinned[a] || m->pinned[b]) continue;
        const int32_t low = a < b ? a : b, high = a < b ? b : a;
        int64_t ordinal = 0;
        while (ordinal < count[low] && higher[first[low] + ordinal] != high) ++ordinal;
        if (ordinal == count[low]) higher[first[low] + count[low]++] = high;
        p->neighbour[s] = ordinal;
    }
    p->start = malloc(sizeof *p->start * (size_t)(3 * n + 1));
    if (p->start == NULL) goto out_of_memory;
    p->start[0] = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) p->start[3 * i + a + 1] = p->start[3 * i + a] + (3 - a) + 3 * count[i];
    const int64_t nonzeros = p->start[3 * n];
    p->rows = malloc(sizeof *p->rows * (size_t)nonzeros);
    p->values = malloc(sizeof *p->values * (size_t)nonzeros);
    if (p->rows == NULL || p->values == NULL) goto out_of_memory;
    for (int64_t i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) {
            int64_t q = p->start[3 * i + a];
            for (int b = a; b < 3; ++b) p->rows[q++] = (int32_t)(3 * i + b);
            for (int64_t k = 0; k < count[i]; ++k)
                for (int b = 0; b < 3; ++b) p->rows[q++] = (int32_t)(3 * higher[first[i] + k] + b);
        }
    p->factor = ms_cholesky_analyse(3 * n, p->start, p->rows, err);
    free(count);
    free(higher);
    free(first);
    if (p->factor == NULL) {
        ms_adjoint_preconditioner_destroy(p);
        return NULL;
    }
    return p;
out_of_memory:
    free(count);
    free(higher);
    free(first);
    ms_adjoint_preconditioner_destroy(p);
    ms_error_set(err, MS_ERR_MEMORY, "out of memory for the preconditioner of %lld nodes", (long long)n);
    return NULL;
}

/* Assembles and factors M + h (drag I + C) + h^2 K (K with the clamped tangent blocks) at x1. */
static void preconditioner_update(ms_adjoint_preconditioner* p, const ms_model* m, const double* x1, double h) {
    const int64_t n = m->nnode;
    memset(p->values, 0, sizeof(double) * (size_t)p->start[3 * n]);
    for (int64_t i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) p->values[p->start[3 * i + a]] = m->pinned[i] ? 1.0 : m->mass[i] + h * m->opt.drag;
    ms_spring_blocks(m, x1, p->blocks);
    for (int64_t s = 0; s < m->nspring; ++s) {
        const double* block = p->blocks + MS_SPRING_BLOCK_DOUBLES * s;
        const double beta = h * h * block[3], alpha = h * h * block[4] + h * m->c[s];
        double b[3][3];
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) b[r][c] = (r == c ? beta : 0.0) + alpha * block[r] * block[c];
        const int32_t ends[2] = {m->springs[2 * s], m->springs[2 * s + 1]};
        for (int e = 0; e < 2; ++e) {
            if (m->pinned[ends[e]]) continue;
            for (int c = 0; c < 3; ++c)
                for (int r = c; r < 3; ++r) p->values[p->start[3 * ends[e] + c] + (r - c)] += b[r][c];
        }
        if (p->neighbour[s] < 0) continue;
        const int32_t low = ends[0] < ends[1] ? ends[0] : ends[1];
        for (int c = 0; c < 3; ++c) {
            const int64_t at = p->start[3 * low + c] + (3 - c) + 3 * p->neighbour[s];
            for (int r = 0; r < 3; ++r) p->values[at + r] -= b[r][c];
        }
    }
    ms_error unused;
    p->usable = ms_cholesky_factor(p->factor, p->values, &unused) == MS_OK;
}

/* y = P^-1 r with the preconditioner's factor, or the diagonal's inverse without one. */
static void precondition(ms_adjoint_preconditioner* p, const double* diagonal, int64_t n3, const double* r,
                         double* y) {
    if (p != NULL && p->usable) {
        memcpy(y, r, sizeof(double) * (size_t)n3);
        ms_cholesky_solve(p->factor, y, 1);
        return;
    }
    for (int64_t q = 0; q < n3; ++q) y[q] = r[q] / diagonal[q / 3];
}

/* Removes from y the component along each held node's normal (none: nothing). */
static void filter_held(const ms_held_contact* held, int64_t nnode, double* y) {
    if (held != NULL) ms_filter_held(held->normal, y, 0, nnode);
}

/* Adds n n^T u to y on each held node. */
static void add_held_normal(const ms_held_contact* held, int64_t nnode, const double* u, double* y) {
    if (held == NULL) return;
    for (int64_t i = 0; i < nnode; ++i) {
        const double* n = held->normal + 3 * i;
        const double along = n[0] * u[3 * i] + n[1] * u[3 * i + 1] + n[2] * u[3 * i + 2];
        for (int a = 0; a < 3; ++a) y[3 * i + a] += along * n[a];
    }
}

/* y = A u (transpose: A^T u) on the free nodes, for u zero on the pinned ones.  With held
   nodes the matrix is B = P A + N, P removing the held nodes' normal components and N
   keeping only them (B^T = A^T P + N): the held rows say that the normal velocity stays. */
static void implicit_operator(const ms_model* m, ms_spring_adjoint* springs, const double* inv_mass,
                              const double* external, const double* x1, const double* v1, double h,
                              const ms_held_contact* held, int transpose, const double* u, double* y, double* scratch) {
    const int64_t n3 = 3 * m->nnode;
    const double* given = u;
    if (transpose && held != NULL) { /* A^T P u */
        double* filtered = scratch + 2 * n3;
        memcpy(filtered, u, sizeof(double) * (size_t)n3);
        filter_held(held, m->nnode, filtered);
        u = filtered;
    }
    if (transpose) {
        double *lx = scratch, *lv = scratch + n3;
        memset(lx, 0, sizeof(double) * (size_t)(2 * n3));
        ms_forces_adjoint(m, springs, x1, v1, external, u, lx, lv, NULL, NULL);
        for (int64_t q = 0; q < n3; ++q) y[q] = -h * (h * lx[q] + lv[q]);
    } else {
        double *hu = scratch, *df = scratch + n3;
        for (int64_t q = 0; q < n3; ++q) hu[q] = h * u[q];
        ms_forces_tangent(m, x1, v1, external, hu, u, NULL, df, NULL);
        for (int64_t q = 0; q < n3; ++q) y[q] = -h * df[q];
    }
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            y[q] = inv_mass[i] != 0.0 ? y[q] + m->mass[i] * u[q] : 0.0;
        }
    if (held != NULL) {
        if (!transpose) filter_held(held, m->nnode, y);
        add_held_normal(held, m->nnode, given, y);
    }
}

static double dot(int64_t n, const double* a, const double* b) {
    double sum = 0.0;
    for (int64_t q = 0; q < n; ++q) sum += a[q] * b[q];
    return sum;
}

/* Solves A u = b (or A^T u = b) on the free nodes by preconditioned BiCGSTAB; b and u are zero
   on the pinned nodes.  Returns 0, or -1 if the residual did not reach IMPLICIT_TOLERANCE. */
static int implicit_solve(const ms_model* m, ms_spring_adjoint* springs, const double* inv_mass, const double* external,
                          const double* x1, const double* v1, double h, const ms_held_contact* held, int transpose,
                          const double* b, double* u, ms_adjoint_preconditioner* factor, double* work) {
    const int64_t n = m->nnode, n3 = 3 * n;
    double *r = work, *shadow = work + n3, *p = work + 2 * n3, *vp = work + 3 * n3, *y = work + 4 * n3;
    double *sv = work + 5 * n3, *t = work + 6 * n3, *scratch = work + 7 * n3, *diagonal = work + 10 * n3;
    /* without a factor, the diagonal: m + h (drag + sum c) + h^2 sum k over each node's springs */
    for (int64_t i = 0; i < n; ++i) diagonal[i] = m->mass[i] + h * m->opt.drag;
    for (int64_t s = 0; s < m->nspring; ++s)
        for (int end = 0; end < 2; ++end) diagonal[m->springs[2 * s + end]] += h * m->c[s] + h * h * m->k[s];
    if (factor != NULL) preconditioner_update(factor, m, x1, h);
    memset(u, 0, sizeof(double) * (size_t)n3);
    memcpy(r, b, sizeof(double) * (size_t)n3);
    memcpy(shadow, b, sizeof(double) * (size_t)n3);
    memset(p, 0, sizeof(double) * (size_t)n3);
    memset(vp, 0, sizeof(double) * (size_t)n3);
    const double target = IMPLICIT_TOLERANCE * sqrt(dot(n3, b, b));
    double rho = 1.0, alpha = 1.0, omega = 1.0;
    if (sqrt(dot(n3, r, r)) <= target) return 0;
    for (int iteration = 0; iteration < IMPLICIT_MAX_ITERATIONS; ++iteration) {
        const double rho_next = dot(n3, shadow, r);
        if (rho_next == 0.0 || omega == 0.0) break;
        const double beta = rho_next / rho * (alpha / omega);
        for (int64_t q = 0; q < n3; ++q) p[q] = r[q] + beta * (p[q] - omega * vp[q]);
        precondition(factor, diagonal, n3, p, y);
        implicit_operator(m, springs, inv_mass, external, x1, v1, h, held, transpose, y, vp, scratch);
        const double along = dot(n3, shadow, vp);
        if (along == 0.0) break;
        alpha = rho_next / along;
        for (int64_t q = 0; q < n3; ++q) {
            u[q] += alpha * y[q];
            sv[q] = r[q] - alpha * vp[q];
        }
        if (sqrt(dot(n3, sv, sv)) <= target) return 0;
        precondition(factor, diagonal, n3, sv, y);
        implicit_operator(m, springs, inv_mass, external, x1, v1, h, held, transpose, y, t, scratch);
        const double tt = dot(n3, t, t);
        omega = tt > 0.0 ? dot(n3, t, sv) / tt : 0.0;
        for (int64_t q = 0; q < n3; ++q) {
            u[q] += omega * y[q];
            r[q] = sv[q] - omega * t[q];
        }
        rho = rho_next;
        if (sqrt(dot(n3, r, r)) <= target) return 0;
    }
    return -1;
}

/* The velocity the step solved for, before the energy loss scaled it. */
static void solved_velocity(const ms_model* m, const double* inv_mass, const double* v_next, double* v1) {
    const double keep = 1.0 - m->opt.energy_loss;
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a)
            v1[3 * i + a] = inv_mass[i] != 0.0 && keep != 1.0 ? v_next[3 * i + a] / keep : v_next[3 * i + a];
}

/* The held nodes' own terms (kernels.h, ms_find_held: node i held with unit normal n(x_i) at
   its start x_i, H_i that normal's derivative).  Their rows of the converged step are
   P_i R_i = 0 and n_i.(v'_i - v_i) = 0, R_i = m_i (v'_i - v_i) - h f_i(x', v') the Newton
   residual: beside B dv' = (P on their rows) of the free nodes' right-hand side, their rows
   gain, along a direction moving x by dx and v by dv,
       rho_i H_i dx_i + n_i (n_i.dv_i) - n_i (H_i dx_i).(v'_i - v_i),
   rho_i = n_i.R_i (the collider's reaction, with the sign of the residual), from the
   derivative of P_i (dP R = -rho dn, as n.dn = 0) and of n_i n_i^T.  held_rho fills rho. */
static void held_rho(const ms_model* m, const ms_held_contact* held, const double* v, const double* v1,
                     const double* f, double h, double* rho) {
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double* n = held->normal + 3 * i;
        double along = 0.0;
        for (int a = 0; a < 3; ++a) along += n[a] * (m->mass[i] * (v1[3 * i + a] - v[3 * i + a]) - h * f[3 * i + a]);
        rho[i] = along;
    }
}

static void times_hessian(const double* hessian, const double* y, double* out) {
    for (int a = 0; a < 3; ++a) out[a] = hessian[3 * a] * y[0] + hessian[3 * a + 1] * y[1] + hessian[3 * a + 2] * y[2];
}

static int implicit_adjoint(const ms_model* m, ms_spring_adjoint* springs, const double* inv_mass,
                            const double* external, const double* v, const double* x_next, const double* v_next,
                            double h, const ms_held_contact* held, double* lx, double* lv, const ms_parameter_arrays* g,
                            ms_adjoint_preconditioner* factor, double* work) {
    const int64_t n3 = 3 * m->nnode;
    double *v1 = work, *mu = work + n3, *z = work + 2 * n3, *hz = work + 3 * n3, *kx = work + 4 * n3;
    double *dv = work + 5 * n3, *solver = work + 7 * n3, *f = work + 18 * n3, *rho = work + 19 * n3;
    solved_velocity(m, inv_mass, v_next, v1);
    energy_loss(m, inv_mass, lv);
    for (int64_t q = 0; q < n3; ++q) mu[q] = lv[q] + h * lx[q]; /* x' = x + h v' */
    for (int64_t i = 0; i < m->nnode; ++i)
        if (inv_mass[i] == 0.0)
            for (int a = 0; a < 3; ++a) mu[3 * i + a] = 0.0; /* a pinned node keeps v'_p = v_p */
    const int status = implicit_solve(m, springs, inv_mass, external, x_next, v1, h, held, 1, mu, z, factor, solver);
    /* the inputs' adjoint is -z^T dR/d(input): x through x' (h K^T z), v through M on the free
       nodes and through x'_p = x_p + h v_p, v'_p = v_p on the pinned ones, the parameters
       through h f and M; with held nodes, through P z and their own terms */
    double* zp = dv + n3; /* P z */
    memcpy(zp, z, sizeof(double) * (size_t)n3);
    filter_held(held, m->nnode, zp);
    for (int64_t q = 0; q < n3; ++q) {
        hz[q] = h * zp[q];
        kx[q] = 0.0;
        dv[q] = 0.0;
    }
    if (held != NULL) { /* the force at the step's end, for the colliders' reactions (held_rho) */
        double *still = solver, *df = solver + 2 * n3;
        memset(still, 0, sizeof(double) * (size_t)(2 * n3));
        ms_forces_tangent(m, x_next, v1, external, still, still + n3, NULL, df, f);
    }
    ms_forces_adjoint(m, springs, x_next, v1, external, hz, kx, dv, g, NULL);
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            if (inv_mass[i] != 0.0)
                lv[q] = m->mass[i] * zp[q];
            else
                lv[q] += h * lx[q] + h * kx[q] + dv[q];
            lx[q] += kx[q];
        }
    for (int64_t i = 0; i < m->nnode; ++i) {
        double change = 0.0;
        for (int a = 0; a < 3; ++a) change += (v1[3 * i + a] - v[3 * i + a]) * zp[3 * i + a];
        g->mass[i] -= change;
    }
    if (held != NULL) {
        held_rho(m, held, v, v1, f, h, rho);
        for (int64_t i = 0; i < m->nnode; ++i) {
            const double* n = held->normal + 3 * i;
            if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
            const double* zi = z + 3 * i;
            const double along = n[0] * zi[0] + n[1] * zi[1] + n[2] * zi[2];
            double y[3], hy[3];
            for (int a = 0; a < 3; ++a) y[a] = rho[i] * zi[a] - along * (v1[3 * i + a] - v[3 * i + a]);
            times_hessian(held->hessian + 9 * i, y, hy);
            for (int a = 0; a < 3; ++a) {
                lv[3 * i + a] += along * n[a];
                lx[3 * i + a] += hy[a];
            }
        }
    }
    return status;
}

static int implicit_tangent(const ms_model* m, const double* inv_mass, const double* external, const double* v,
                            const double* x_next, const double* v_next, double h, const ms_held_contact* held,
                            double* dx, double* dv, const ms_parameter_arrays* d, ms_adjoint_preconditioner* factor,
                            double* work) {
    const int64_t n3 = 3 * m->nnode;
    double *v1 = work, *known_x = work + n3, *known_v = work + 2 * n3, *df = work + 3 * n3, *b = work + 4 * n3;
    double *u = work + 5 * n3, *solver = work + 7 * n3, *f = work + 18 * n3, *rho = work + 19 * n3;
    solved_velocity(m, inv_mass, v_next, v1);
    /* the right-hand side M dv + h df(x', v'; dx + h dv'_p, dv'_p, d) - dm (v' - v) on the free
       nodes, the pinned nodes' dv'_p = dv_p being known */
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            const double pinned_dv = inv_mass[i] == 0.0 ? dv[q] : 0.0;
            known_v[q] = pinned_dv;
            known_x[q] = dx[q] + h * pinned_dv;
        }
    ms_forces_tangent(m, x_next, v1, external, known_x, known_v, d, df, held != NULL ? f : NULL);
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            b[q] = inv_mass[i] != 0.0 ? m->mass[i] * dv[q] + h * df[q] - d->mass[i] * (v1[q] - v[q]) : 0.0;
        }
    if (held != NULL) {
        filter_held(held, m->nnode, b);
        held_rho(m, held, v, v1, f, h, rho);
        for (int64_t i = 0; i < m->nnode; ++i) {
            const double* n = held->normal + 3 * i;
            if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
            double dn[3];
            times_hessian(held->hessian + 9 * i, dx + 3 * i, dn);
            double along_v = 0.0, turn = 0.0;
            for (int a = 0; a < 3; ++a) {
                along_v += n[a] * dv[3 * i + a];
                turn += dn[a] * (v1[3 * i + a] - v[3 * i + a]);
            }
            for (int a = 0; a < 3; ++a) b[3 * i + a] += rho[i] * dn[a] + (along_v - turn) * n[a];
        }
    }
    const int status = implicit_solve(m, NULL, inv_mass, external, x_next, v1, h, held, 0, b, u, factor, solver);
    for (int64_t i = 0; i < m->nnode; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            const double dv1 = inv_mass[i] != 0.0 ? u[q] : dv[q];
            dx[q] += h * dv1;
            dv[q] = dv1;
        }
    energy_loss(m, inv_mass, dv);
    return status;
}

int ms_implicit_held_adjoint(const ms_model* m, const double* inv_mass, const double* external, const double* v,
                             const double* x_next, const double* v_next, double h, const ms_held_contact* held,
                             double* lx, double* lv, const ms_parameter_arrays* g,
                             ms_adjoint_preconditioner* preconditioner, double* work) {
    return implicit_adjoint(m, NULL, inv_mass, external, v, x_next, v_next, h, held, lx, lv, g, preconditioner, work);
}

int ms_implicit_held_tangent(const ms_model* m, const double* inv_mass, const double* external, const double* v,
                             const double* x_next, const double* v_next, double h, const ms_held_contact* held,
                             double* dx, double* dv, const ms_parameter_arrays* d,
                             ms_adjoint_preconditioner* preconditioner, double* work) {
    return implicit_tangent(m, inv_mass, external, v, x_next, v_next, h, held, dx, dv, d, preconditioner, work);
}

int ms_adjoint_step(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                    const double* v, const double* x_next, const double* v_next, double h, double* lx, double* lv,
                    const ms_parameter_arrays* g, ms_adjoint_preconditioner* preconditioner,
                    ms_spring_adjoint* springs, double* work) {
    switch (m->opt.integrator) {
    case MS_IMPLICIT_EULER:
        return implicit_adjoint(m, springs, inv_mass, external, v, x_next, v_next, h, NULL, lx, lv, g, preconditioner,
                                work);
    case MS_EXPLICIT_EULER: euler_adjoint(m, springs, inv_mass, external, x, v, h, lx, lv, g, work, 1); break;
    case MS_VELOCITY_VERLET: verlet_adjoint(m, springs, inv_mass, external, x, v, h, lx, lv, g, work); break;
    case MS_RK4: rk4_adjoint(m, springs, inv_mass, external, x, v, h, lx, lv, g, work); break;
    default: euler_adjoint(m, springs, inv_mass, external, x, v, h, lx, lv, g, work, 0); break;
    }
    return 0;
}

int ms_tangent_step(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                    const double* v, const double* x_next, const double* v_next, double h, double* dx, double* dv,
                    const ms_parameter_arrays* d, ms_adjoint_preconditioner* preconditioner, double* work) {
    switch (m->opt.integrator) {
    case MS_IMPLICIT_EULER:
        return implicit_tangent(m, inv_mass, external, v, x_next, v_next, h, NULL, dx, dv, d, preconditioner, work);
    case MS_EXPLICIT_EULER: euler_tangent(m, inv_mass, external, x, v, h, dx, dv, d, work, 1); break;
    case MS_VELOCITY_VERLET: verlet_tangent(m, inv_mass, external, x, v, h, dx, dv, d, work); break;
    case MS_RK4: rk4_tangent(m, inv_mass, external, x, v, h, dx, dv, d, work); break;
    default: euler_tangent(m, inv_mass, external, x, v, h, dx, dv, d, work, 0); break;
    }
    return 0;
}
