/* A spring's force written once over any vector type V whose operations are named V_add,
 * V_sub, V_mul, V_div, V_sqrt, V_if_greater, V_abs and V_set (vector.h's v1 and v4, and the
 * AVX-512 batched kernel's v8): every operation one IEEE operation per lane, so that every
 * type gives the bits of the plain one.  Included by spring_kernel.h.
 */
#ifndef MSPRINGS_KERNELS_SPRING_FORMULA_H
#define MSPRINGS_KERNELS_SPRING_FORMULA_H

/* Below this squared length (m^2) a spring's direction is lost in rounding, so it exerts
   no force rather than a NaN or an arbitrary one. */
#define MS_MIN_LENGTH_SQUARED 1e-24

/* A damper's power c u^2 is summed only for closing speeds |u| above this (m/s).  Below
   about 1.5e-154 m/s, u^2 is a subnormal number, which x86 processors handle many times
   slower than a normal one, and a cloth starting at rest has most of its springs there for
   its first steps.  What is left out is below c 1e-200 W per spring. */
#define MS_MIN_POWER_SPEED 1e-100

/* The force (fx, fy, fz) on the lower end of springs with separation (dx, dy, dz) and
   relative velocity (du, dv, dw), in type V (v1 or v4); their damper power is added to
   power and, unless energy is NULL, k (l - L)^2 to *energy. */
#define SPRING_FORCE(V, dx, dy, dz, du, dv, dw, rest, stiffness, damping, fx, fy, fz, power, energy)             \
    do {                                                                                                        \
        V length_, inv_length_;                                                                                 \
        SPRING_LENGTH(V, dx, dy, dz, length_, inv_length_);                                                     \
        SPRING_FORCE_AT(V, dx, dy, dz, du, dv, dw, length_, inv_length_, rest, stiffness, damping, fx, fy, fz,  \
                        power, energy);                                                                         \
    } while (0)

/* The two halves of SPRING_FORCE: the length and its inverse (0 below the shortest length),
   whose square root and division take long; then the force from them. */
#define SPRING_LENGTH(V, dx, dy, dz, length, inv_length)                                                        \
    do {                                                                                                        \
        const V length2_ = V##_add(V##_add(V##_mul(dx, dx), V##_mul(dy, dy)), V##_mul(dz, dz));                   \
        length = V##_sqrt(length2_);                                                                            \
        inv_length = V##_if_greater(length2_, V##_set(MS_MIN_LENGTH_SQUARED), V##_div(V##_set(1.0), length));     \
    } while (0)

#define SPRING_FORCE_AT(V, dx, dy, dz, du, dv, dw, length, inv_length, rest, stiffness, damping, fx, fy, fz, power,  \
                        energy)                                                                                 \
    do {                                                                                                        \
        const V closing_ = V##_mul(V##_add(V##_add(V##_mul(du, dx), V##_mul(dv, dy)), V##_mul(dw, dz)), inv_length); \
        const V stretch_ = V##_sub(length, rest);                                                               \
        const V tension_ = V##_mul(stiffness, stretch_);                                                        \
        const V magnitude_ = V##_mul(V##_add(tension_, V##_mul(damping, closing_)), inv_length);               \
        fx = V##_mul(magnitude_, dx);                                                                           \
        fy = V##_mul(magnitude_, dy);                                                                           \
        fz = V##_mul(magnitude_, dz);                                                                           \
        const V counted_ = V##_if_greater(V##_abs(closing_), V##_set(MS_MIN_POWER_SPEED), closing_);            \
        power = V##_add(power, V##_mul(V##_mul(damping, counted_), counted_));                                  \
        if ((energy) != NULL) *(energy) = V##_add(*(energy), V##_mul(tension_, stretch_));                      \
    } while (0)

#endif
