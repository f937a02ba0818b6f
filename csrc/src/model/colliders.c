/* Colliders: the list kept in the model and its state, and where a point is relative to one. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/colliders.h"
#include "model/model.h"

static const char* const collider_names[MS_COLLIDER_TYPE_COUNT] = {"plane", "sphere", "box", "cylinder"};

static int all_finite3(const double v[3]) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* The largest |component| of a and a / largest, whose length is in [1, sqrt 3]: scaling
   before squaring keeps the length of a finite vector of any size from overflowing or
   underflowing.  Returns 0 (and leaves scaled unset) for the zero vector. */
static double scale_vector(const double a[3], double scaled[3]) {
    const double largest = fmax(fabs(a[0]), fmax(fabs(a[1]), fabs(a[2])));
    if (!(largest > 0.0)) return 0.0;
    for (int q = 0; q < 3; ++q) scaled[q] = a[q] / largest;
    return largest;
}

static double scaled_length(const double scaled[3]) {
    return sqrt(scaled[0] * scaled[0] + scaled[1] * scaled[1] + scaled[2] * scaled[2]);
}

int ms_collider_check(const ms_collider* c, ms_error* err) {
    if ((int)c->type < 0 || c->type >= MS_COLLIDER_TYPE_COUNT)
        return ms_error_set(err, MS_ERR_VALUE, "collider type %d is unknown", (int)c->type);
    const char* name = collider_names[c->type];
    if (!all_finite3(c->center) || !all_finite3(c->axis) || !all_finite3(c->size) || !all_finite3(c->velocity))
        return ms_error_set(err, MS_ERR_VALUE, "%s: position, axis, size and velocity must be finite", name);
    if (c->type == MS_PLANE || c->type == MS_CYLINDER) {
        double scaled[3];
        const double largest = scale_vector(c->axis, scaled);
        if (!(largest > 0.0 && largest * scaled_length(scaled) > 1e-12))
            return ms_error_set(err, MS_ERR_VALUE, "%s: the %s must be a non-zero vector", name,
                                c->type == MS_PLANE ? "normal" : "axis");
    }
    const int sizes = c->type == MS_PLANE ? 0 : c->type == MS_SPHERE ? 1 : c->type == MS_BOX ? 3 : 2;
    static const char* const size_names[MS_COLLIDER_TYPE_COUNT][3] = {
        {"", "", ""}, {"radius", "", ""}, {"half extent x", "half extent y", "half extent z"},
        {"radius", "half height", ""}};
    for (int a = 0; a < sizes; ++a)
        if (!(c->size[a] > 0.0))
            return ms_error_set(err, MS_ERR_VALUE, "%s: %s = %g must be > 0 (m)", name, size_names[c->type][a],
                                c->size[a]);
    if (!isfinite(c->restitution) || c->restitution < 0.0 || c->restitution > 1.0)
        return ms_error_set(err, MS_ERR_VALUE, "%s: restitution = %g must be in [0, 1]", name, c->restitution);
    if (!isfinite(c->friction) || c->friction < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "%s: friction = %g must be finite and >= 0", name, c->friction);
    if (!isfinite(c->thickness) || c->thickness < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "%s: thickness = %g must be finite and >= 0 (m)", name, c->thickness);
    ms_error_clear(err);
    return MS_OK;
}

static ms_collider normalised(const ms_collider* c) {
    ms_collider copy = *c;
    if (c->type == MS_PLANE || c->type == MS_CYLINDER) {
        double scaled[3];
        const double largest = scale_vector(c->axis, scaled); /* > 0: checked */
        const double length = scaled_length(scaled);
        /* An axis that is already unit is kept bit for bit: normalising again is not
           idempotent in floating point, and a saved model must load exactly.  (largest *
           length may overflow to inf: then it is not unit.) */
        if (fabs(largest * length - 1.0) > 4.0 * DBL_EPSILON)
            for (int a = 0; a < 3; ++a) copy.axis[a] = scaled[a] / length;
    }
    return copy;
}

/* The row of the collider with that id in the model's list (and the state's), or -1. */
static int64_t collider_row(const ms_model* m, int64_t id) {
    for (int64_t k = 0; k < m->ncollider; ++k)
        if (m->colliders[k].id == id) return k;
    return -1;
}

int64_t ms_model_add_collider(ms_model* m, const ms_collider* c, ms_error* err) {
    if (ms_collider_check(c, err) != MS_OK) return -1;
    /* ids are never reused, so the counter only grows: at its end it must stop, not wrap */
    if (m->next_collider_id < 0 || m->next_collider_id == INT64_MAX) {
        ms_error_set(err, MS_ERR_VALUE, "no collider id is left to give: the next id is %lld, and ids run from 0 "
                     "to %lld", (long long)m->next_collider_id, (long long)INT64_MAX - 1);
        return -1;
    }
    if (m->ncollider == m->collider_capacity) {
        const int64_t capacity = m->collider_capacity > 0 ? 2 * m->collider_capacity : 4;
        ms_collider* grown = realloc(m->colliders, sizeof(ms_collider) * (size_t)capacity);
        if (grown == NULL) {
            ms_error_set(err, MS_ERR_MEMORY, "out of memory adding a collider");
            return -1;
        }
        m->colliders = grown;
        m->collider_capacity = capacity;
    }
    ms_collider added = normalised(c);
    added.id = m->next_collider_id++;
    m->colliders[m->ncollider++] = added;
    ms_error_clear(err);
    return added.id;
}

int64_t ms_add_collider(ms_model* m, ms_state* s, const ms_collider* c, ms_error* err) {
    if (ms_state_same_colliders(m, s, err) != MS_OK || ms_state_reserve_colliders(s, m->ncollider + 1, err) != MS_OK)
        return -1;
    const int64_t id = ms_model_add_collider(m, c, err);
    if (id < 0) return -1;
    const int64_t row = m->ncollider - 1;
    memcpy(s->collider_center + 3 * row, m->colliders[row].center, sizeof m->colliders[row].center);
    s->collider_id[row] = id;
    s->collider_count = m->ncollider;
    return id;
}

const ms_collider* ms_find_collider(const ms_model* m, int64_t id) {
    const int64_t row = collider_row(m, id);
    return row >= 0 ? &m->colliders[row] : NULL;
}

const double* ms_collider_position(const ms_state* s, int64_t id) {
    for (int64_t k = 0; k < s->collider_count; ++k)
        if (s->collider_id[k] == id) return s->collider_center + 3 * k;
    return NULL;
}

int ms_set_collider(ms_model* m, ms_state* s, const ms_collider* c, ms_error* err) {
    if (ms_state_same_colliders(m, s, err) != MS_OK) return MS_ERR_VALUE;
    const int64_t row = collider_row(m, c->id);
    if (row < 0) return ms_error_set(err, MS_ERR_VALUE, "no collider with id %lld", (long long)c->id);
    ms_collider* target = &m->colliders[row];
    if (c->type != target->type)
        return ms_error_set(err, MS_ERR_VALUE, "a collider's type cannot change (%s)", collider_names[target->type]);
    if (ms_collider_check(c, err) != MS_OK) return MS_ERR_VALUE;
    double start[3];
    memcpy(start, target->center, sizeof start);
    *target = normalised(c);
    if (s->steps > 0) memcpy(target->center, start, sizeof start); /* where it starts stays */
    memcpy(s->collider_center + 3 * row, c->center, sizeof c->center);
    ms_error_clear(err);
    return MS_OK;
}

int ms_remove_collider(ms_model* m, ms_state* s, int64_t id, ms_error* err) {
    if (ms_state_same_colliders(m, s, err) != MS_OK) return MS_ERR_VALUE;
    const int64_t row = collider_row(m, id);
    if (row < 0) return ms_error_set(err, MS_ERR_VALUE, "no collider with id %lld", (long long)id);
    const size_t after = (size_t)(m->ncollider - row - 1);
    memmove(m->colliders + row, m->colliders + row + 1, sizeof(ms_collider) * after);
    memmove(s->collider_center + 3 * row, s->collider_center + 3 * (row + 1), sizeof(double) * 3 * after);
    memmove(s->collider_id + row, s->collider_id + row + 1, sizeof(int64_t) * after);
    m->ncollider -= 1;
    s->collider_count = m->ncollider;
    ms_error_clear(err);
    return MS_OK;
}

double ms_collider_distance(const ms_collider* c, const double center[3], const double p[3], double normal[3]) {
    return ms_collider_distance_inline(c, center, p, normal);
}

const char* ms_collider_type_name(int type) {
    if (type < 0 || type >= MS_COLLIDER_TYPE_COUNT) return NULL;
    return collider_names[type];
}
