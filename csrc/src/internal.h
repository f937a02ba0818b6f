/* Private helpers shared by the files in csrc/src; not part of the public interface. */
#ifndef MSPRINGS_INTERNAL_H
#define MSPRINGS_INTERNAL_H

#include "msprings/msprings.h"

#if defined(__GNUC__)
#define MS_PRINTF_LIKE(format_index, first_arg) __attribute__((format(printf, format_index, first_arg)))
#else
#define MS_PRINTF_LIKE(format_index, first_arg)
#endif

/* Fills err (if not NULL) with a status and a printf-style message; returns the status. */
int ms_error_set(ms_error* err, ms_status status, const char* format, ...) MS_PRINTF_LIKE(3, 4);

/* Clears err to MS_OK with an empty message. */
void ms_error_clear(ms_error* err);

/* Returns non-zero if every one of the count values is finite. */
int ms_all_finite(const double* values, size_t count);

/* Checks that every component of count 3-vectors is finite; the error names the array
   (e.g. "x") and the first bad row. */
int ms_check_finite_vectors(const double* vectors, int64_t count, const char* name, ms_error* err);

/* Stage storage for Verlet and RK4, allocated on first use: 3 arrays of nnode x 3. */
int ms_state_ensure_work(const ms_model* m, ms_state* s, ms_error* err);

/* One step of each integrator: reads (x, v) and writes (x_out, v_out), which do not
   alias them.  s->f receives the force at the start of the step and s->inv_mass must hold
   1/m for free nodes and 0 for pinned ones.  *dissipated receives the energy removed
   during the step by dampers and drag (J).  Returns 1 if x_out and v_out are finite. */
typedef int (*ms_step_function)(const ms_model* m, ms_state* s, const double* x, const double* v,
                                double* x_out, double* v_out, double h, double* dissipated);
int ms_step_explicit_euler(const ms_model* m, ms_state* s, const double* x, const double* v,
                           double* x_out, double* v_out, double h, double* dissipated);
int ms_step_symplectic_euler(const ms_model* m, ms_state* s, const double* x, const double* v,
                             double* x_out, double* v_out, double h, double* dissipated);
int ms_step_velocity_verlet(const ms_model* m, ms_state* s, const double* x, const double* v,
                            double* x_out, double* v_out, double h, double* dissipated);
int ms_step_rk4(const ms_model* m, ms_state* s, const double* x, const double* v,
                double* x_out, double* v_out, double h, double* dissipated);

#endif
