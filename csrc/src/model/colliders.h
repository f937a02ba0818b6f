/* Where a point is relative to a collider: the signed distance and the outward normal,
   inline for the contact loops (ms_collider_distance is the same function, public). */
#ifndef MSPRINGS_MODEL_COLLIDERS_H
#define MSPRINGS_MODEL_COLLIDERS_H

#include <math.h>

#include "msprings/msprings.h"

static inline double ms_length3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* ms_collider_distance, inlined into the contact loops. */
static inline double ms_collider_distance_inline(const ms_collider* c, const double center[3], const double p[3],
                                       double normal[3]) {
    const double r[3] = {p[0] - center[0], p[1] - center[1], p[2] - center[2]};
    switch (c->type) {
        case MS_PLANE: {
            for (int a = 0; a < 3; ++a) normal[a] = c->axis[a];
            return r[0] * c->axis[0] + r[1] * c->axis[1] + r[2] * c->axis[2];
        }
        case MS_SPHERE: {
            const double length = ms_length3(r);
            if (length > 0.0)
                for (int a = 0; a < 3; ++a) normal[a] = r[a] / length;
            else
                normal[0] = 0.0, normal[1] = 1.0, normal[2] = 0.0;
            return length - c->size[0];
        }
        case MS_BOX: {
            /* q = |r| - half extents: the exact box distance, outside and inside. */
            double q[3], outside[3], largest = -INFINITY;
            int axis_of_largest = 0;
            for (int a = 0; a < 3; ++a) {
                q[a] = fabs(r[a]) - c->size[a];
                outside[a] = q[a] > 0.0 ? q[a] : 0.0;
                if (q[a] > largest) largest = q[a], axis_of_largest = a;
            }
            const double outside_length = ms_length3(outside);
            if (outside_length > 0.0) {
                for (int a = 0; a < 3; ++a) normal[a] = (r[a] < 0.0 ? -outside[a] : outside[a]) / outside_length;
                return outside_length;
            }
            for (int a = 0; a < 3; ++a) normal[a] = 0.0;
            normal[axis_of_largest] = r[axis_of_largest] < 0.0 ? -1.0 : 1.0;
            return largest;
        }
        case MS_CYLINDER: {
            const double* axis = c->axis;
            const double along = r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2];
            double radial[3] = {r[0] - along * axis[0], r[1] - along * axis[1], r[2] - along * axis[2]};
            const double rho = ms_length3(radial);
            if (rho > 0.0) {
                const double inv_rho = 1.0 / rho;
                for (int a = 0; a < 3; ++a) radial[a] *= inv_rho;
            }
            else {
                /* on the axis: any direction perpendicular to it */
                const double helper[3] = {fabs(axis[0]) < 0.9 ? 1.0 : 0.0, fabs(axis[0]) < 0.9 ? 0.0 : 1.0, 0.0};
                const double dot = helper[0] * axis[0] + helper[1] * axis[1] + helper[2] * axis[2];
                double perpendicular[3] = {helper[0] - dot * axis[0], helper[1] - dot * axis[1], helper[2] - dot * axis[2]};
                const double length = ms_length3(perpendicular);
                for (int a = 0; a < 3; ++a) radial[a] = perpendicular[a] / length;
            }
            const double side = along < 0.0 ? -1.0 : 1.0;
            const double dr = rho - c->size[0], dh = fabs(along) - c->size[1];
            if (dr > 0.0 && dh > 0.0) {
                const double length = sqrt(dr * dr + dh * dh);
                const double inv_length = 1.0 / length;
                for (int a = 0; a < 3; ++a) normal[a] = (dr * radial[a] + dh * side * axis[a]) * inv_length;
                return length;
            }
            if (dr > dh) {
                for (int a = 0; a < 3; ++a) normal[a] = radial[a];
                return dr;
            }
            for (int a = 0; a < 3; ++a) normal[a] = side * axis[a];
            return dh;
        }
        default:
            normal[0] = 0.0, normal[1] = 1.0, normal[2] = 0.0;
            return INFINITY;
    }
}

#endif
