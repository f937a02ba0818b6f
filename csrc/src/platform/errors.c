/* Error reporting and integrator names. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "platform/errors.h"

int ms_error_set(ms_error* err, ms_status status, const char* format, ...) {
    if (err != NULL) {
        err->status = status;
        err->step = 0;
        err->time = 0.0;
        err->call_step = 0;
        va_list args;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
    }
    return (int)status;
}

void ms_error_clear(ms_error* err) {
    if (err != NULL) {
        err->status = MS_OK;
        err->step = 0;
        err->time = 0.0;
        err->call_step = 0;
        err->message[0] = '\0';
    }
}

int ms_all_finite(const double* values, size_t count) {
    /* v - v is 0 for a finite v and NaN for an infinite or NaN one, so the sum is 0
       exactly when every value is finite; one branch-free pass. */
    /* Four independent sums, so the pass is not one long chain of dependent additions. */
    double probe[4] = {0.0, 0.0, 0.0, 0.0};
    size_t i = 0;
    for (; i + 4 <= count; i += 4)
        for (int lane = 0; lane < 4; ++lane) probe[lane] += values[i + lane] - values[i + lane];
    for (; i < count; ++i) probe[0] += values[i] - values[i];
    return probe[0] + probe[1] + probe[2] + probe[3] == 0.0;
}

int ms_check_finite_vectors(const double* vectors, int64_t count, const char* name, ms_error* err) {
    if (ms_all_finite(vectors, 3 * (size_t)count)) return MS_OK;
    for (int64_t i = 0; i < 3 * count; ++i)
        if (!isfinite(vectors[i]))
            return ms_error_set(err, MS_ERR_VALUE, "%s[%lld, %lld] = %g must be finite", name,
                                (long long)(i / 3), (long long)(i % 3), vectors[i]);
    return MS_OK;
}

static const char* const integrator_names[MS_INTEGRATOR_COUNT] = {
    "explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler", "projective", "xpbd"};

const char* ms_integrator_name(int integrator) {
    if (integrator < 0 || integrator >= MS_INTEGRATOR_COUNT) return NULL;
    return integrator_names[integrator];
}

int ms_integrator_from_name(const char* name) {
    if (name == NULL) return -1;
    for (int i = 0; i < MS_INTEGRATOR_COUNT; ++i)
        if (strcmp(name, integrator_names[i]) == 0) return i;
    return -1;
}
