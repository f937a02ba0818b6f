/* Helpers shared by the plain C tests: error records, scene builders (oscillator, cloth),
   a deterministic random generator, force power, bitwise state snapshots. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

ms_error fresh_error(void) {
    ms_error err;
    memset(&err, 0, sizeof err);
    err.status = (ms_status)-1;
    return err;
}

int has_message(const ms_error* err) {
    return err->message[0] != '\0' && memchr(err->message, '\0', sizeof err->message) != NULL;
}

int all_finite(const double* values, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
        if (!isfinite(values[i])) return 0;
    return 1;
}

ms_model* make_oscillator(double k, double mass, double c, double amplitude,
                          ms_integrator integrator) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(2, 1, 0, &err);
    if (m == NULL) return NULL;
    m->pinned[0] = 1;
    m->mass[0] = 0.0;
    m->mass[1] = mass;
    m->x_initial[3] = 1.0 + amplitude;
    m->springs[0] = 0;
    m->springs[1] = 1;
    m->rest[0] = 1.0;
    m->k[0] = k;
    m->c[0] = c;
    m->opt.gravity[1] = 0.0;
    m->opt.integrator = integrator;
    if (ms_model_check(m, &err) != MS_OK) {
        fprintf(stderr, "make_oscillator: %s\n", err.message);
        ms_model_destroy(m);
        return NULL;
    }
    return m;
}

double lcg_uniform(uint64_t* seed) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

ms_model* make_cloth(int side, int pin, uint64_t seed) {
    const double spacing = 0.1;
    int64_t structural = 2 * (int64_t)side * (side - 1);
    int64_t shear = 2 * (int64_t)(side - 1) * (side - 1);
    int64_t bending = 2 * (int64_t)side * (side - 2);
    ms_error err = fresh_error();
    ms_model* m = ms_model_create((int64_t)side * side, structural + shear + bending, 0, &err);
    if (m == NULL) return NULL;
    for (int r = 0; r < side; ++r) {
        for (int col = 0; col < side; ++col) {
            int64_t i = (int64_t)r * side + col;
            m->x_initial[3 * i + 0] = col * spacing + 0.01 * lcg_uniform(&seed);
            m->x_initial[3 * i + 1] = 0.01 * lcg_uniform(&seed);
            m->x_initial[3 * i + 2] = r * spacing + 0.01 * lcg_uniform(&seed);
            m->mass[i] = 0.02 * (1.5 + lcg_uniform(&seed));
        }
    }
    int64_t s = 0;
    for (int r = 0; r < side; ++r) {
        for (int col = 0; col < side; ++col) {
            int32_t i = r * side + col;
            int32_t pairs[6][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}, {0, 2}, {2, 0}};
            for (int p = 0; p < 6; ++p) {
                int rr = r + pairs[p][0], cc = col + pairs[p][1];
                if (rr < 0 || rr >= side || cc < 0 || cc >= side) continue;
                m->springs[2 * s] = i;
                m->springs[2 * s + 1] = rr * side + cc;
                ++s;
            }
        }
    }
    if (s != m->nspring) {
        fprintf(stderr, "make_cloth: built %lld springs, expected %lld\n", (long long)s,
                (long long)m->nspring);
        ms_model_destroy(m);
        return NULL;
    }
    for (s = 0; s < m->nspring; ++s) {
        const double* a = m->x_initial + 3 * m->springs[2 * s];
        const double* b = m->x_initial + 3 * m->springs[2 * s + 1];
        m->rest[s] = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) +
                          (b[2] - a[2]) * (b[2] - a[2]));
        m->k[s] = 40.0 * (1.0 + 0.25 * lcg_uniform(&seed));
        m->c[s] = 0.02;
    }
    if (pin) {
        m->pinned[0] = 1;
        m->pinned[side - 1] = 1;
    }
    m->opt.drag = 0.001;
    if (ms_model_check(m, &err) != MS_OK) {
        fprintf(stderr, "make_cloth: %s\n", err.message);
        ms_model_destroy(m);
        return NULL;
    }
    return m;
}

int shuffle_nodes(ms_model* m, uint64_t seed) {
    const int64_t n = m->nnode;
    int32_t* place = malloc(sizeof(int32_t) * (size_t)n); /* the new number of node i */
    double* old = malloc(sizeof(double) * 6 * (size_t)n + sizeof(double) * (size_t)n + (size_t)n);
    if (place == NULL || old == NULL) {
        free(place);
        free(old);
        return -1;
    }
    for (int64_t i = 0; i < n; ++i) place[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; --i) { /* Fisher-Yates */
        const int64_t j = (int64_t)((0.5 * lcg_uniform(&seed) + 0.5) * (double)(i + 1)) % (i + 1);
        const int32_t swap = place[i];
        place[i] = place[j];
        place[j] = swap;
    }
    double* mass = old + 6 * n;
    uint8_t* pinned = (uint8_t*)(mass + n);
    memcpy(old, m->x_initial, sizeof(double) * 3 * (size_t)n);
    memcpy(old + 3 * n, m->v_initial, sizeof(double) * 3 * (size_t)n);
    memcpy(mass, m->mass, sizeof(double) * (size_t)n);
    memcpy(pinned, m->pinned, (size_t)n);
    for (int64_t i = 0; i < n; ++i) {
        memcpy(m->x_initial + 3 * place[i], old + 3 * i, sizeof(double) * 3);
        memcpy(m->v_initial + 3 * place[i], old + 3 * (n + i), sizeof(double) * 3);
        m->mass[place[i]] = mass[i];
        m->pinned[place[i]] = pinned[i];
    }
    for (int64_t e = 0; e < 2 * m->nspring; ++e) m->springs[e] = place[m->springs[e]];
    for (int64_t e = 0; e < 3 * m->nface; ++e) m->faces[e] = place[m->faces[e]];
    free(place);
    free(old);
    return 0;
}

double forces_power(const ms_model* m, const double* x, const double* v, const double* external, double t,
                    double* f) {
    ms_flow flow;
    ms_forces(m, x, v, external, t, f, &flow);
    return flow.dampers + flow.drag - flow.wind;
}

int snapshot_take(const ms_model* m, const ms_state* s, snapshot* out) {
    size_t block = 3 * (size_t)m->nnode;
    out->arrays = malloc(4 * block * sizeof(double));
    if (out->arrays == NULL) return 0;
    memcpy(out->arrays, s->x, block * sizeof(double));
    memcpy(out->arrays + block, s->v, block * sizeof(double));
    memcpy(out->arrays + 2 * block, s->f, block * sizeof(double));
    if (s->external != NULL)
        memcpy(out->arrays + 3 * block, s->external, block * sizeof(double));
    else
        memset(out->arrays + 3 * block, 0, block * sizeof(double));
    out->t = s->t;
    out->steps = s->steps;
    out->ledger = s->ledger;
    return 1;
}

/* True if the external force (NULL: zeros) is bitwise the saved one. */
static int external_equal(const double* external, const double* saved, size_t count) {
    if (external != NULL) return memcmp(external, saved, count * sizeof(double)) == 0;
    for (size_t q = 0; q < count; ++q)
        if (saved[q] != 0.0 || signbit(saved[q])) return 0;
    return 1;
}

int snapshot_equal(const ms_model* m, const ms_state* s, const snapshot* snap) {
    size_t bytes = 3 * (size_t)m->nnode * sizeof(double);
    size_t block = 3 * (size_t)m->nnode;
    return memcmp(s->x, snap->arrays, bytes) == 0 && memcmp(s->v, snap->arrays + block, bytes) == 0 &&
           memcmp(s->f, snap->arrays + 2 * block, bytes) == 0 &&
           external_equal(s->external, snap->arrays + 3 * block, block) &&
           memcmp(&s->t, &snap->t, sizeof s->t) == 0 && s->steps == snap->steps &&
           memcmp(&s->ledger, &snap->ledger, sizeof s->ledger) == 0;
}

double mechanical_energy(const ms_model* m, const ms_state* s) {
    ms_energy e = ms_state_energy(m, s);
    return e.kinetic + e.spring + e.gravity;
}
