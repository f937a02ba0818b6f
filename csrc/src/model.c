/* Model allocation, copying and validation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

ms_options ms_default_options(void) {
    ms_options opt;
    opt.gravity[0] = 0.0;
    opt.gravity[1] = -9.81;
    opt.gravity[2] = 0.0;
    opt.drag = 0.0;
    opt.energy_loss = 0.0;
    opt.integrator = MS_SYMPLECTIC_EULER;
    opt.strain_limiting = 0;
    opt.strain_limit = 0.1;
    opt.self_collision = 0.0;
    opt.implicit.newton_max_iter = 50;
    opt.implicit.newton_tol = 1e-8;
    opt.implicit.cg_max_iter = 1000;
    opt.implicit.cg_tol = 1e-4;
    opt.air.density = 1.2;
    opt.air.drag_coefficient = 0.0;
    opt.air.lift_coefficient = 0.0;
    opt.air.wind[0] = opt.air.wind[1] = opt.air.wind[2] = 0.0;
    opt.air.gust = 0.0;
    opt.air.gust_frequency = 5.0;
    opt.air.gust_wavenumber = 1.0;
    opt.threads = 0;
    return opt;
}

/* Bytes of the model's single buffer: doubles first, then int32 indices, then pin flags,
   so every section is naturally aligned. */
static size_t model_bytes(int64_t nnode, int64_t nspring, int64_t nface) {
    size_t n = (size_t)nnode, m = (size_t)nspring, f = (size_t)nface;
    return sizeof(double) * (n + 6 * m + 6 * n) + sizeof(int32_t) * (5 * m + 3 * f) + 2 * n;
}

static void model_bind(ms_model* model) {
    size_t n = (size_t)model->nnode, m = (size_t)model->nspring;
    double* d = (double*)model->buffer;
    model->mass = d;
    d += n;
    model->rest = d;
    d += m;
    model->k = d;
    d += m;
    model->c = d;
    d += m;
    model->x_initial = d;
    d += 3 * n;
    model->v_initial = d;
    d += 3 * n;
    model->sorted_params = d;
    d += 3 * m;
    model->springs = (int32_t*)d;
    model->faces = model->springs + 2 * m;
    model->spring_order = model->faces + 3 * (size_t)model->nface;
    model->sorted_springs = model->spring_order + m;
    model->pinned = (uint8_t*)(model->sorted_springs + 2 * m);
    model->spring_blocks = model->pinned + n;
}

ms_model* ms_model_create(int64_t nnode, int64_t nspring, int64_t nface, ms_error* err) {
    if (nnode < 1 || nnode > INT32_MAX) {
        ms_error_set(err, MS_ERR_VALUE, "nnode = %lld must be between 1 and %d",
                     (long long)nnode, INT32_MAX);
        return NULL;
    }
    if (nspring < 0 || nspring > INT32_MAX) {
        ms_error_set(err, MS_ERR_VALUE, "nspring = %lld must be between 0 and %d",
                     (long long)nspring, INT32_MAX);
        return NULL;
    }
    if (nface < 0 || nface > INT32_MAX) {
        ms_error_set(err, MS_ERR_VALUE, "nface = %lld must be between 0 and %d", (long long)nface, INT32_MAX);
        return NULL;
    }
    ms_model* model = calloc(1, sizeof *model);
    void* buffer = calloc(1, model_bytes(nnode, nspring, nface));
    if (model == NULL || buffer == NULL) {
        free(model);
        free(buffer);
        ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating a model of %lld nodes and %lld springs",
                     (long long)nnode, (long long)nspring);
        return NULL;
    }
    model->nnode = nnode;
    model->nspring = nspring;
    model->nface = nface;
    model->buffer = buffer;
    model->opt = ms_default_options();
    model_bind(model);
    ms_error_clear(err);
    return model;
}

ms_model* ms_model_copy(const ms_model* m, ms_error* err) {
    ms_model* copy = ms_model_create(m->nnode, m->nspring, m->nface, err);
    if (copy == NULL) return NULL;
    memcpy(copy->buffer, m->buffer, model_bytes(m->nnode, m->nspring, m->nface));
    copy->opt = m->opt;
    copy->spring_order_ready = m->spring_order_ready;
    copy->default_threads = m->default_threads;
    if (m->ncollider > 0) {
        copy->colliders = malloc(sizeof(ms_collider) * (size_t)m->ncollider);
        if (copy->colliders == NULL) {
            ms_model_destroy(copy);
            ms_error_set(err, MS_ERR_MEMORY, "out of memory copying %lld colliders", (long long)m->ncollider);
            return NULL;
        }
        memcpy(copy->colliders, m->colliders, sizeof(ms_collider) * (size_t)m->ncollider);
        copy->collider_capacity = m->ncollider;
    }
    copy->ncollider = m->ncollider;
    copy->next_collider_id = m->next_collider_id;
    return copy;
}

void ms_model_destroy(ms_model* m) {
    if (m == NULL) return;
    free(m->colliders);
    free(m->buffer);
    free(m);
}

int ms_options_check(const ms_options* opt, ms_error* err) {
    for (int a = 0; a < 3; ++a)
        if (!isfinite(opt->gravity[a]))
            return ms_error_set(err, MS_ERR_VALUE, "gravity[%d] = %g must be finite", a, opt->gravity[a]);
    if (!isfinite(opt->drag) || opt->drag < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "drag = %g must be finite and >= 0 (N s/m)", opt->drag);
    if (!isfinite(opt->energy_loss) || opt->energy_loss < 0.0 || opt->energy_loss >= 1.0)
        return ms_error_set(err, MS_ERR_VALUE,
                            "energy_loss = %g must be in [0, 1): it is the fraction of velocity removed per step",
                            opt->energy_loss);
    if ((int)opt->integrator < 0 || opt->integrator >= MS_INTEGRATOR_COUNT)
        return ms_error_set(err, MS_ERR_VALUE, "integrator = %d is not a known integrator", (int)opt->integrator);
    if (opt->strain_limiting != 0 && opt->strain_limiting != 1)
        return ms_error_set(err, MS_ERR_VALUE, "strain_limiting = %d must be 0 or 1", opt->strain_limiting);
    if (!isfinite(opt->strain_limit) || opt->strain_limit < 0.0)
        return ms_error_set(err, MS_ERR_VALUE,
                            "strain_limit = %g must be finite and >= 0 (allowed stretch as a fraction of the "
                            "rest length)",
                            opt->strain_limit);
    if (!isfinite(opt->self_collision) || opt->self_collision < 0.0)
        return ms_error_set(err, MS_ERR_VALUE,
                            "self_collision = %g must be finite and >= 0 (m; 0 turns self-collision off)",
                            opt->self_collision);
    if (opt->threads < 0)
        return ms_error_set(err, MS_ERR_VALUE, "threads = %d must be >= 0 (0 = the default)", opt->threads);
    const ms_air* air = &opt->air;
    if (!isfinite(air->density) || air->density < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "air_density = %g must be finite and >= 0 (kg/m^3)", air->density);
    if (!isfinite(air->drag_coefficient) || air->drag_coefficient < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "drag_coefficient = %g must be finite and >= 0",
                            air->drag_coefficient);
    if (!isfinite(air->lift_coefficient) || air->lift_coefficient < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "lift_coefficient = %g must be finite and >= 0",
                            air->lift_coefficient);
    for (int a = 0; a < 3; ++a)
        if (!isfinite(air->wind[a]))
            return ms_error_set(err, MS_ERR_VALUE, "wind[%d] = %g must be finite (m/s)", a, air->wind[a]);
    if (!isfinite(air->gust) || air->gust < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "gust = %g must be finite and >= 0 (m/s)", air->gust);
    if (!isfinite(air->gust_frequency) || !isfinite(air->gust_wavenumber))
        return ms_error_set(err, MS_ERR_VALUE, "gust_frequency and gust_wavenumber must be finite");
    const ms_implicit_options* im = &opt->implicit;
    if (im->newton_max_iter < 1)
        return ms_error_set(err, MS_ERR_VALUE, "newton_max_iter = %d must be >= 1 (1 gives the linearised step)",
                            im->newton_max_iter);
    if (im->cg_max_iter < 1)
        return ms_error_set(err, MS_ERR_VALUE, "cg_max_iter = %d must be >= 1", im->cg_max_iter);
    if (!isfinite(im->newton_tol) || im->newton_tol <= 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "newton_tol = %g must be finite and > 0", im->newton_tol);
    if (!isfinite(im->cg_tol) || im->cg_tol <= 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "cg_tol = %g must be finite and > 0", im->cg_tol);
    ms_error_clear(err);
    return MS_OK;
}

/* Checks one per-spring parameter array: finite and >= 0. */
static int check_spring_values(const double* values, int64_t count, const char* name, const char* unit,
                               ms_error* err) {
    for (int64_t s = 0; s < count; ++s) {
        double value = values[s];
        if (!isfinite(value) || value < 0.0)
            return ms_error_set(err, MS_ERR_VALUE, "%s[%lld] = %g must be finite and >= 0 (%s)", name,
                                (long long)s, value, unit);
    }
    return MS_OK;
}

int ms_model_check_values(const ms_model* m, ms_error* err) {
    for (int64_t i = 0; i < m->nnode; ++i) {
        double mass = m->mass[i];
        if (m->pinned[i] > 1)
            return ms_error_set(err, MS_ERR_VALUE, "pinned[%lld] = %d must be 0 or 1", (long long)i,
                                (int)m->pinned[i]);
        if (!isfinite(mass) || mass < 0.0)
            return ms_error_set(err, MS_ERR_VALUE, "mass[%lld] = %g must be finite and >= 0 (kg)",
                                (long long)i, mass);
        if (mass == 0.0 && !m->pinned[i])
            return ms_error_set(err, MS_ERR_VALUE,
                                "mass[%lld] = 0 on a free node: give it a positive mass or pin it",
                                (long long)i);
    }
    if (check_spring_values(m->rest, m->nspring, "rest", "m", err)) return MS_ERR_VALUE;
    if (check_spring_values(m->k, m->nspring, "k", "N/m", err)) return MS_ERR_VALUE;
    if (check_spring_values(m->c, m->nspring, "c", "N s/m", err)) return MS_ERR_VALUE;
    for (int64_t k = 0; k < m->ncollider; ++k)
        if (ms_collider_check(&m->colliders[k], err)) return MS_ERR_VALUE;
    return ms_options_check(&m->opt, err);
}

int ms_model_check(const ms_model* m, ms_error* err) {
    if (m == NULL) return ms_error_set(err, MS_ERR_VALUE, "model is NULL");
    for (int64_t s = 0; s < m->nspring; ++s) {
        int32_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        if (i < 0 || i >= m->nnode || j < 0 || j >= m->nnode)
            return ms_error_set(err, MS_ERR_VALUE,
                                "springs[%lld] = (%d, %d) refers to a node outside 0..%lld",
                                (long long)s, i, j, (long long)m->nnode - 1);
        if (i == j)
            return ms_error_set(err, MS_ERR_VALUE,
                                "springs[%lld] = (%d, %d) connects a node to itself", (long long)s, i, j);
    }
    for (int64_t f = 0; f < m->nface; ++f) {
        const int32_t* face = m->faces + 3 * f;
        for (int a = 0; a < 3; ++a)
            if (face[a] < 0 || face[a] >= m->nnode)
                return ms_error_set(err, MS_ERR_VALUE, "faces[%lld] = (%d, %d, %d) refers to a node outside 0..%lld",
                                    (long long)f, face[0], face[1], face[2], (long long)m->nnode - 1);
        if (face[0] == face[1] || face[1] == face[2] || face[0] == face[2])
            return ms_error_set(err, MS_ERR_VALUE, "faces[%lld] = (%d, %d, %d) repeats a node: a triangle needs three",
                                (long long)f, face[0], face[1], face[2]);
    }
    if (ms_check_finite_vectors(m->x_initial, m->nnode, "positions", err)) return MS_ERR_VALUE;
    for (int64_t f = 0; f < m->nface; ++f) {
        const int32_t* face = m->faces + 3 * f;
        const double* a = m->x_initial + 3 * face[0];
        const double* b = m->x_initial + 3 * face[1];
        const double* c = m->x_initial + 3 * face[2];
        const double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        const double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        const double scale = (e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]) + (e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]);
        if (!(n[0] * n[0] + n[1] * n[1] + n[2] * n[2] > 1e-24 * scale * scale))
            return ms_error_set(err, MS_ERR_VALUE, "faces[%lld] = (%d, %d, %d) is degenerate: zero area at the initial positions",
                                (long long)f, face[0], face[1], face[2]);
    }
    if (ms_check_finite_vectors(m->v_initial, m->nnode, "velocities", err)) return MS_ERR_VALUE;
    return ms_model_check_values(m, err);
}

/* Whether nodes a..a+3 can form a block: their groups (consecutive in order, starting at
   start[a]) have the same size k, 1 <= k <= MS_MAX_BLOCK_SPRINGS, and their j-th springs
   reach the same distance up the node numbering. */
static int64_t block_size(const ms_model* m, const int32_t* order, const int64_t* start, int64_t a) {
    if (a + MS_BLOCK_NODES > m->nnode) return 0;
    const int64_t k = start[a + 1] - start[a];
    if (k < 1 || k > MS_MAX_BLOCK_SPRINGS) return 0;
    for (int64_t q = 1; q < MS_BLOCK_NODES; ++q)
        if (start[a + q + 1] - start[a + q] != k) return 0;
    for (int64_t j = 0; j < k; ++j) {
        const int32_t* first = m->springs + 2 * (int64_t)order[start[a] + j];
        const int64_t reach = (first[0] > first[1] ? first[0] : first[1]) - a;
        for (int64_t q = 1; q < MS_BLOCK_NODES; ++q) {
            const int32_t* other = m->springs + 2 * (int64_t)order[start[a + q] + j];
            if ((other[0] > other[1] ? other[0] : other[1]) - (a + q) != reach) return 0;
        }
    }
    return k;
}

void ms_model_sort_springs(ms_model* m) {
    /* Sorted by lower node, then upper node, then the user's order: two stable counting
       sorts, the upper node first. */
    const int64_t n = m->nnode, ns = m->nspring;
    int64_t* start = calloc((size_t)n + 1, sizeof(int64_t));
    int32_t* by_upper = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    memset(m->spring_blocks, 0, (size_t)n);
    if (start == NULL || by_upper == NULL) {
        /* no memory for sorting: the user's order, visited one spring at a time */
        for (int64_t s = 0; s < ns; ++s) m->spring_order[s] = (int32_t)s;
    } else {
        for (int pass = 0; pass < 2; ++pass) {
            /* pass 0 sorts by upper node into by_upper, pass 1 by lower node into spring_order */
            const int upper = pass == 0;
            memset(start, 0, sizeof(int64_t) * ((size_t)n + 1));
            for (int64_t s = 0; s < ns; ++s) {
                const int32_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
                start[((i < j) != upper ? i : j) + 1] += 1;
            }
            for (int64_t i = 0; i < n; ++i) start[i + 1] += start[i];
            int32_t* out = upper ? by_upper : m->spring_order;
            for (int64_t r = 0; r < ns; ++r) {
                const int64_t s = upper ? r : by_upper[r];
                const int32_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
                out[start[(i < j) != upper ? i : j]++] = (int32_t)s;
            }
        }
        /* start[i] is now where node i + 1's group begins: shift it back by one node */
        for (int64_t i = n; i > 0; --i) start[i] = start[i - 1];
        start[0] = 0;
        /* Blocks: four consecutive nodes whose springs match one for one are stored
           interleaved, the j-th springs of nodes a..a+3 side by side, so that the step
           evaluates them as one vector (ms_spring_forces). */
        if (ms_avx2_supported()) {
            int32_t chunk[MS_BLOCK_NODES * MS_MAX_BLOCK_SPRINGS];
            for (int64_t a = 0; a + MS_BLOCK_NODES <= n;) {
                const int64_t k = block_size(m, m->spring_order, start, a);
                if (k == 0) {
                    ++a;
                    continue;
                }
                for (int64_t q = 0; q < MS_BLOCK_NODES; ++q)
                    for (int64_t j = 0; j < k; ++j) chunk[MS_BLOCK_NODES * j + q] = m->spring_order[start[a] + k * q + j];
                memcpy(m->spring_order + start[a], chunk, sizeof(int32_t) * MS_BLOCK_NODES * (size_t)k);
                m->spring_blocks[a] = (uint8_t)k;
                a += MS_BLOCK_NODES;
            }
        }
    }
    free(start);
    free(by_upper);
    /* lower node first: ms_spring_forces keeps it in registers over its springs.  Turning a
       spring round negates its d and its force exactly, so the forces do not change. */
    for (int64_t r = 0; r < ns; ++r) {
        const int32_t i = m->springs[2 * (int64_t)m->spring_order[r]];
        const int32_t j = m->springs[2 * (int64_t)m->spring_order[r] + 1];
        m->sorted_springs[2 * r] = i < j ? i : j;
        m->sorted_springs[2 * r + 1] = i < j ? j : i;
    }
    m->spring_order_ready = 1;
}

int64_t ms_model_unit_start(const ms_model* m, int64_t r) {
    if (r <= 0) return 0;
    if (r >= m->nspring) return m->nspring;
    const int64_t node = m->sorted_springs[2 * r];
    int64_t first = -1; /* the first node of a block that holds node, if any */
    for (int64_t q = 0; q < MS_BLOCK_NODES && q <= node && first < 0; ++q)
        if (m->spring_blocks[node - q] != 0) first = node - q;
    if (first < 0) return r; /* a group of single springs may be split anywhere */
    /* the springs of nodes below first + MS_BLOCK_NODES come before every other: find
       where those end, or where the block begins if r is its first spring */
    if (m->sorted_springs[2 * (r - 1)] < first) return r;
    int64_t low = r, high = m->nspring;
    while (low < high) {
        const int64_t mid = low + (high - low) / 2;
        if (m->sorted_springs[2 * mid] >= first + MS_BLOCK_NODES)
            high = mid;
        else
            low = mid + 1;
    }
    return low;
}

void ms_model_refresh_sorted(ms_model* m) {
    if (!m->spring_order_ready) ms_model_sort_springs(m);
    for (int64_t r = 0; r < m->nspring;) {
        const int64_t k = m->spring_blocks[m->sorted_springs[2 * r]];
        if (k == 0) {
            const int64_t s = m->spring_order[r];
            double* p = m->sorted_params + 3 * r;
            p[0] = m->rest[s];
            p[1] = m->k[s];
            p[2] = m->c[s];
            ++r;
            continue;
        }
        /* a block: for each j, the rest lengths of its four springs, then k, then c */
        for (int64_t j = 0; j < k; ++j) {
            double* p = m->sorted_params + 3 * (r + MS_BLOCK_NODES * j);
            for (int64_t q = 0; q < MS_BLOCK_NODES; ++q) {
                const int64_t s = m->spring_order[r + MS_BLOCK_NODES * j + q];
                p[q] = m->rest[s];
                p[MS_BLOCK_NODES + q] = m->k[s];
                p[2 * MS_BLOCK_NODES + q] = m->c[s];
            }
        }
        r += MS_BLOCK_NODES * k;
    }
}
