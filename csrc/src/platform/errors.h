/* Errors and finiteness checks, shared by every layer of the core. */
#ifndef MSPRINGS_PLATFORM_ERRORS_H
#define MSPRINGS_PLATFORM_ERRORS_H

#include <stddef.h>

#include "msprings/msprings.h"
#include "platform/portable.h"

/* Fills err (if not NULL) with a status and a printf-style message; returns the status. */
int ms_error_set(ms_error* err, ms_status status, const char* format, ...) MS_PRINTF_LIKE(3, 4);

/* Clears err to MS_OK with an empty message. */
void ms_error_clear(ms_error* err);

/* Returns non-zero if every one of the count values is finite. */
int ms_all_finite(const double* values, size_t count);

/* Checks that every component of count 3-vectors is finite; the error names the array
   (e.g. "x") and the first bad row. */
int ms_check_finite_vectors(const double* vectors, int64_t count, const char* name, ms_error* err);

#endif
