/* Stability diagnostics: the largest eigenvalues of the stiffness and damping per mass
   (Lanczos iteration) and their cheap Gershgorin bounds. */
#include <math.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/tangent.h"

/* Number of eigenvalues of the symmetric tridiagonal matrix (diagonal a, off-diagonal b)
   that are smaller than x (Sturm sequence count). */
static int64_t eigenvalues_below(const double* a, const double* b, int64_t size, double x) {
    int64_t count = 0;
    double q = 1.0;
    for (int64_t i = 0; i < size; ++i) {
        const double off = i > 0 ? b[i - 1] * b[i - 1] : 0.0;
        q = a[i] - x - (i > 0 ? off / q : 0.0);
        if (q == 0.0) q = -1e-300;
        if (q < 0.0) ++count;
    }
    return count;
}

/* Largest eigenvalue of a symmetric tridiagonal matrix, by bisection on the Sturm count
   inside its Gershgorin interval. */
static double largest_tridiagonal_eigenvalue(const double* a, const double* b, int64_t size) {
    double low = INFINITY, high = -INFINITY;
    for (int64_t i = 0; i < size; ++i) {
        const double radius = (i > 0 ? fabs(b[i - 1]) : 0.0) + (i + 1 < size ? fabs(b[i]) : 0.0);
        if (a[i] - radius < low) low = a[i] - radius;
        if (a[i] + radius > high) high = a[i] + radius;
    }
    for (int iteration = 0; iteration < 200 && high - low > 1e-15 * fabs(high); ++iteration) {
        const double mid = 0.5 * (low + high);
        if (eigenvalues_below(a, b, size, mid) < size)
            low = mid;
        else
            high = mid;
    }
    return high;
}

/* Largest eigenvalue of S = D P D with D = diag(sqrt(inv_mass)) and P the product selected
   by (damping_scale, stiffness_scale), by Lanczos iteration from a fixed pseudo-random
   start (no reorthogonalisation: ghost copies of converged Ritz values do not move the
   extreme one).  work holds 4 vectors of 3 n and 2 * MAX_LANCZOS doubles. */
#define MAX_LANCZOS 300
static double lanczos_largest(const ms_model* m, const double* inv_mass, const double* blocks,
                              double damping_scale, double stiffness_scale, double* work) {
    const int64_t n3 = 3 * m->nnode;
    double* q = work;
    double* q_previous = work + n3;
    double* y = work + 2 * n3;
    double* scaled = work + 3 * n3;
    double* alpha = work + 4 * n3;
    double* beta = alpha + MAX_LANCZOS;
    int64_t free_dimensions = 0;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    double norm2 = 0.0;
    for (int64_t qi = 0; qi < n3; ++qi) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const double value = inv_mass[qi / 3] > 0.0 ? (double)(seed >> 11) / 9007199254740992.0 - 0.5 : 0.0;
        free_dimensions += inv_mass[qi / 3] > 0.0;
        q[qi] = value;
        q_previous[qi] = 0.0;
        norm2 += value * value;
    }
    if (free_dimensions == 0 || norm2 == 0.0) return 0.0;
    const double inv_norm = 1.0 / sqrt(norm2);
    for (int64_t qi = 0; qi < n3; ++qi) q[qi] *= inv_norm;
    const int64_t max_steps = free_dimensions < MAX_LANCZOS ? free_dimensions : MAX_LANCZOS;
    int64_t size = 0;
    double previous_beta = 0.0, last_estimate = 0.0;
    for (int64_t step = 0; step < max_steps; ++step) {
        for (int64_t qi = 0; qi < n3; ++qi) scaled[qi] = sqrt(inv_mass[qi / 3]) * q[qi];
        ms_system_product(m, inv_mass, blocks, 0.0, damping_scale, stiffness_scale, scaled, y);
        double a = 0.0;
        for (int64_t qi = 0; qi < n3; ++qi) {
            y[qi] = sqrt(inv_mass[qi / 3]) * y[qi] - previous_beta * q_previous[qi];
            a += y[qi] * q[qi];
        }
        double b2 = 0.0;
        for (int64_t qi = 0; qi < n3; ++qi) {
            y[qi] -= a * q[qi];
            b2 += y[qi] * y[qi];
        }
        alpha[size] = a;
        size += 1;
        const double b = sqrt(b2);
        if (!(b > 1e-12 * fabs(a)) || step + 1 == max_steps) break;
        if (size % 10 == 0) {
            /* The extreme Ritz value converges first; stop once it has settled. */
            const double estimate = largest_tridiagonal_eigenvalue(alpha, beta, size);
            if (fabs(estimate - last_estimate) <= 1e-7 * fabs(estimate)) break;
            last_estimate = estimate;
        }
        beta[size - 1] = b;
        for (int64_t qi = 0; qi < n3; ++qi) {
            q_previous[qi] = q[qi];
            q[qi] = y[qi] / b;
        }
        previous_beta = b;
    }
    return largest_tridiagonal_eigenvalue(alpha, beta, size);
}

int ms_max_eigenvalues(const ms_model* m, const ms_state* s, double* omega2_max, double* gamma_max,
                       ms_error* err) {
    const int64_t n3 = 3 * m->nnode;
    double* inv_mass = malloc(sizeof(double) * (size_t)m->nnode);
    double* blocks = malloc(sizeof(double) * MS_SPRING_BLOCK_DOUBLES * (size_t)(m->nspring > 0 ? m->nspring : 1));
    double* work = malloc(sizeof(double) * (4 * (size_t)n3 + 2 * MAX_LANCZOS));
    if (inv_mass == NULL || blocks == NULL || work == NULL) {
        free(inv_mass);
        free(blocks);
        free(work);
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory estimating the eigenvalues of %lld nodes",
                            (long long)m->nnode);
    }
    for (int64_t i = 0; i < m->nnode; ++i) inv_mass[i] = m->pinned[i] || !(m->mass[i] > 0.0) ? 0.0 : 1.0 / m->mass[i];
    ms_spring_blocks(m, s->x, blocks);
    *omega2_max = lanczos_largest(m, inv_mass, blocks, 0.0, 1.0, work);
    *gamma_max = lanczos_largest(m, inv_mass, blocks, 1.0, 0.0, work);
    free(inv_mass);
    free(blocks);
    free(work);
    ms_error_clear(err);
    return MS_OK;
}

void ms_eigenvalue_bounds(const ms_model* m, const ms_state* s, double* omega2_bound, double* gamma_bound) {
    /* Row (i, a) of M^-1 K holds the diagonal block sum_s K_s and the blocks -K_s of the
       neighbours, so its absolute row sum is at most 2 sum_s |row a of K_s|_1 / m_i, with
       K_s = k_t I + (k - k_t) n n^T; likewise for C with c n n^T and drag I.  The largest
       row sum over free nodes bounds the spectral radius (Gershgorin). */
    double* rows = calloc(6 * (size_t)m->nnode, sizeof(double));
    *omega2_bound = INFINITY;
    *gamma_bound = INFINITY;
    if (rows == NULL) return;
    double* stiffness_rows = rows;
    double* damping_rows = rows + 3 * m->nnode;
    for (int64_t k = 0; k < m->nspring; ++k) {
        const int64_t i = m->springs[2 * k], j = m->springs[2 * k + 1];
        const double* xi = s->x + 3 * i;
        const double* xj = s->x + 3 * j;
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        const double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if (!(length > 1e-12)) continue;
        const double n[3] = {fabs(d[0]) / length, fabs(d[1]) / length, fabs(d[2]) / length};
        const double n1 = n[0] + n[1] + n[2];
        const double transverse = 1.0 - m->rest[k] / length;
        const double k_t = transverse > 0.0 ? m->k[k] * transverse : 0.0;
        for (int a = 0; a < 3; ++a) {
            const double stiffness = 2.0 * (k_t + (m->k[k] - k_t) * n[a] * n1);
            const double damping = 2.0 * m->c[k] * n[a] * n1;
            stiffness_rows[3 * i + a] += stiffness;
            stiffness_rows[3 * j + a] += stiffness;
            damping_rows[3 * i + a] += damping;
            damping_rows[3 * j + a] += damping;
        }
    }
    double omega2 = 0.0, gamma = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        if (m->pinned[i] || !(m->mass[i] > 0.0)) continue;
        for (int a = 0; a < 3; ++a) {
            const double stiffness = stiffness_rows[3 * i + a] / m->mass[i];
            const double damping = (damping_rows[3 * i + a] + m->opt.drag) / m->mass[i];
            if (stiffness > omega2) omega2 = stiffness;
            if (damping > gamma) gamma = damping;
        }
    }
    free(rows);
    *omega2_bound = omega2;
    *gamma_bound = gamma;
}
