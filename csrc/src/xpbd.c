/* Extended position-based dynamics (Macklin, Mueller and Chentanez 2016) for springs.
 *
 * Each spring s = (i, j) of rest length L, stiffness k and damping c is a compliant
 * distance constraint C = |x_i - x_j| - L with compliance alpha = 1/k and damping
 * beta = c, so that its force is -k C - c dC/dt as for the other integrators.  Within a
 * step of size h, with alpha~ = alpha / h^2 and gamma = alpha~ beta h = c / (k h), each
 * projection adds to the spring's multiplier lambda
 *   d lambda = (-C - alpha~ lambda - gamma grad C.(x - x_prev)) / ((1 + gamma)(w_i + w_j) + alpha~)
 * and moves x_i by w_i d lambda n and x_j by -w_j d lambda n (w = 1/m, 0 for pinned
 * nodes, n the unit vector from j to i).  The springs are coloured so that no two of one
 * colour share a node: Gauss-Seidel over colours, and any split of a colour among
 * workers gives the same bits.  A spring with k = 0 constrains nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpbd.h"

void ms_colouring_free(void* colouring) {
    ms_colouring* c = colouring;
    if (c == NULL) return;
    free(c->start);
    free(c->springs);
    free(c->pairs);
    free(c->params);
    free(c->lambda);
    free(c);
}

/* Greedy colouring in spring order: a sweep per colour takes every spring still
   uncoloured whose nodes that colour has not touched yet. */
static int colour_springs(const ms_model* m, ms_colouring* c) {
    const int64_t ns = m->nspring;
    int64_t* mark = malloc(sizeof(int64_t) * (size_t)m->nnode); /* the last colour touching a node */
    int32_t* left = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    int32_t* later = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    int64_t capacity = 16;
    c->start = malloc(sizeof(int64_t) * (size_t)(capacity + 1));
    int ok = mark != NULL && left != NULL && later != NULL && c->start != NULL;
    int64_t remaining = ns, placed = 0;
    if (ok) {
        for (int64_t i = 0; i < m->nnode; ++i) mark[i] = -1;
        for (int64_t s = 0; s < ns; ++s) left[s] = (int32_t)s;
        c->start[0] = 0;
    }
    for (int64_t colour = 0; ok && remaining > 0; ++colour) {
        if (colour == capacity) {
            capacity *= 2;
            int64_t* grown = realloc(c->start, sizeof(int64_t) * (size_t)(capacity + 1));
            if (grown == NULL) {
                ok = 0;
                break;
            }
            c->start = grown;
        }
        int64_t deferred = 0;
        for (int64_t r = 0; r < remaining; ++r) {
            const int32_t s = left[r];
            const int32_t i = m->springs[2 * (int64_t)s], j = m->springs[2 * (int64_t)s + 1];
            if (mark[i] == colour || mark[j] == colour) {
                later[deferred++] = s;
                continue;
            }
            mark[i] = mark[j] = colour;
            c->springs[placed++] = s;
        }
        c->start[colour + 1] = placed;
        c->ncolour = colour + 1;
        int32_t* swap = left;
        left = later;
        later = swap;
        remaining = deferred;
    }
    free(mark);
    free(left);
    free(later);
    return ok ? 0 : -1;
}

int ms_state_ensure_colours(const ms_model* m, ms_state* s, ms_error* err) {
    ms_colouring* c = s->constraints;
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        const size_t count = (size_t)(m->nspring > 0 ? m->nspring : 1);
        if (c != NULL) {
            c->springs = malloc(sizeof(int32_t) * count);
            c->pairs = malloc(sizeof(int32_t) * 2 * count);
            c->params = malloc(sizeof(double) * 3 * count);
            c->lambda = calloc(count, sizeof(double));
        }
        if (c == NULL || c->springs == NULL || c->pairs == NULL || c->params == NULL || c->lambda == NULL ||
            colour_springs(m, c) != 0) {
            ms_colouring_free(c);
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory colouring %lld springs", (long long)m->nspring);
        }
        for (int64_t r = 0; r < m->nspring; ++r) {
            c->pairs[2 * r] = m->springs[2 * (int64_t)c->springs[r]];
            c->pairs[2 * r + 1] = m->springs[2 * (int64_t)c->springs[r] + 1];
        }
        s->constraints = c;
    }
    for (int64_t r = 0; r < m->nspring; ++r) {
        const int64_t sp = c->springs[r];
        c->params[3 * r] = m->rest[sp];
        c->params[3 * r + 1] = m->k[sp];
        c->params[3 * r + 2] = m->c[sp];
    }
    return MS_OK;
}

void ms_xpbd_project(const double* MS_RESTRICT inv_mass, const ms_colouring* c, int64_t begin,
                     int64_t end, const double* MS_RESTRICT x_prev, double* MS_RESTRICT x, double h, int first) {
    for (int64_t r = begin; r < end; ++r) {
        const double* p = c->params + 3 * r;
        const double k = p[1];
        if (!(k > 0.0)) continue;
        const int64_t i = c->pairs[2 * r], j = c->pairs[2 * r + 1];
        const double wi = inv_mass[i], wj = inv_mass[j];
        if (wi + wj == 0.0) continue;
        double* xi = x + 3 * i;
        double* xj = x + 3 * j;
        const double d[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
        const double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if (!(length > 1e-12)) continue; /* no direction to push along */
        const double n[3] = {d[0] / length, d[1] / length, d[2] / length};
        const double alpha = 1.0 / (k * h * h);
        const double gamma = p[2] / (k * h);
        const double* pi = x_prev + 3 * i;
        const double* pj = x_prev + 3 * j;
        double rate = 0.0; /* grad C.(x - x_prev) */
        for (int a = 0; a < 3; ++a) rate += n[a] * ((xi[a] - pi[a]) - (xj[a] - pj[a]));
        const double lambda = first ? 0.0 : c->lambda[r];
        const double change =
            (-(length - p[0]) - alpha * lambda - gamma * rate) / ((1.0 + gamma) * (wi + wj) + alpha);
        c->lambda[r] = lambda + change;
        for (int a = 0; a < 3; ++a) {
            xi[a] += wi * change * n[a];
            xj[a] -= wj * change * n[a];
        }
    }
}
