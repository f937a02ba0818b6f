/* Model allocation, copying and validation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

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
    opt.self_friction = 0.0;
    opt.self_contact_sweep = 1;
    opt.implicit.newton_max_iter = 50;
    opt.implicit.newton_tol = 1e-6;
    opt.implicit.cg_max_iter = 1000;
    opt.implicit.cg_tol = 1e-2;
    opt.air.density = 1.2;
    opt.air.drag_coefficient = 0.0;
    opt.air.lift_coefficient = 0.0;
    opt.air.wind[0] = opt.air.wind[1] = opt.air.wind[2] = 0.0;
    opt.air.gust = 0.0;
    opt.air.gust_frequency = 5.0;
    opt.air.gust_wavenumber = 1.0;
    opt.iterations = 0;
    opt.chebyshev = 0.0;
    opt.threads = 0;
    return opt;
}

/* Bytes of the model's single buffer: doubles first, then int32 indices, then pin flags,
   so every section is naturally aligned. */
static size_t model_bytes(int64_t nnode, int64_t nspring, int64_t nface) {
    size_t n = (size_t)nnode, m = (size_t)nspring, f = (size_t)nface;
    return sizeof(double) * (n + 3 * m + 6 * n) + sizeof(int32_t) * (2 * m + 3 * f) + n;
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
    model->springs = (int32_t*)d;
    model->faces = model->springs + 2 * m;
    model->pinned = (uint8_t*)(model->faces + 3 * (size_t)model->nface);
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
    if (!(opt->self_collision >= 0.0 && opt->self_collision <= MS_SELF_COLLISION_MAX)) /* also NaN */
        return ms_error_set(err, MS_ERR_VALUE,
                            "self_collision = %g must be in [0, %g] (m; the distance nodes keep apart, "
                            "0 turns self-collision off)",
                            opt->self_collision, MS_SELF_COLLISION_MAX);
    if (!(opt->self_friction >= 0.0) || !isfinite(opt->self_friction))
        return ms_error_set(err, MS_ERR_VALUE,
                            "self_friction = %g must be finite and >= 0 (Coulomb coefficient between layers)",
                            opt->self_friction);
    if (opt->self_contact_sweep != 0 && opt->self_contact_sweep != 1)
        return ms_error_set(err, MS_ERR_VALUE, "self_contact_sweep = %d must be 0 or 1", opt->self_contact_sweep);
    if (opt->iterations < 0)
        return ms_error_set(err, MS_ERR_VALUE, "iterations = %d must be >= 0 (0 = the integrator's default)",
                            opt->iterations);
    if (!isfinite(opt->chebyshev) || opt->chebyshev < 0.0 || opt->chebyshev >= 1.0)
        return ms_error_set(err, MS_ERR_VALUE,
                            "chebyshev = %g must be in [0, 1) (an estimate of the rounds' convergence rate; 0 = off)",
                            opt->chebyshev);
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

int ms_time_step_check(double h, ms_error* err) {
    if (!isfinite(h) || h <= 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "dt = %g must be a finite time step > 0 (s)", h);
    return MS_OK;
}
