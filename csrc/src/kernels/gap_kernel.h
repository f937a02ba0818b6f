/* The contact pass's screening by gap bounds (contact.c), written once over the vector layer
 * (vector.h) and compiled once per vector path beside the spring kernel (springs_avx2.c,
 * springs_sse2.c, springs_neon.c and springs_plain.c include this file): four consecutive
 * nodes at a time, each lane with the scalar test's operations in its order, so every path
 * gives its bits.
 */
#include "kernels/kernels.h"
#include "platform/vector.h"

int64_t MS_KERNEL(ms_screen_gaps)(const double* MS_RESTRICT x_old, const double* MS_RESTRICT x,
                                  double* MS_RESTRICT known, const double start[3], const double finish[3],
                                  double thickness, const double* plane, int64_t begin, int64_t end) {
    const v4 start_x = v4_set(start[0]), start_y = v4_set(start[1]), start_z = v4_set(start[2]);
    const v4 finish_x = v4_set(finish[0]), finish_y = v4_set(finish[1]), finish_z = v4_set(finish[2]);
    const v4 scale = v4_set(MS_GAP_ROUNDING), thick = v4_set(thickness);
    const v4 half = v4_set(0.5), one = v4_set(1.0), tiny = v4_set(MS_FULL_TEST_ROUNDING);
    const v4 axis_x = v4_set(plane != NULL ? plane[0] : 0.0), axis_y = v4_set(plane != NULL ? plane[1] : 0.0),
             axis_z = v4_set(plane != NULL ? plane[2] : 0.0);
    int64_t i = begin;
    for (; i + 4 <= end; i += 4) {
        v4 ox, oy, oz, nx, ny, nz;
        v4_load_nodes(x_old + 3 * i, &ox, &oy, &oz);
        v4_load_nodes(x + 3 * i, &nx, &ny, &nz);
        const v4 rx = v4_sub(ox, start_x), ry = v4_sub(oy, start_y), rz = v4_sub(oz, start_z);
        const v4 px = v4_sub(v4_sub(nx, finish_x), rx), py = v4_sub(v4_sub(ny, finish_y), ry),
                 pz = v4_sub(v4_sub(nz, finish_z), rz);
        const v4 ax = v4_abs(px), ay = v4_abs(py), az = v4_abs(pz);
        const v4 length = v4_add(v4_add(ax, ay), az);
        const v4 offset = v4_add(v4_add(v4_abs(rx), v4_abs(ry)), v4_abs(rz));
        const v4 spread = v4_add(v4_add(offset, length), thick);
        const v4 bound = v4_add(length, v4_mul(scale, spread));
        const v4 gap = v4_load(known + i);
        if (v4_all_greater(gap, bound)) {
            v4_store(known + i, v4_sub(gap, bound));
            continue;
        }
        /* A plane's full test where no node of the four has a bound that holds (every
           node, in the first step of a call): collide_node's pass-over, its operations in
           its order, so the same decision and the same new bound. */
        if (plane == NULL || !v4_all_greater(half, v4_if_greater(gap, bound, one))) break;
        const v4 start_gap =
            v4_sub(v4_add(v4_add(v4_mul(rx, axis_x), v4_mul(ry, axis_y)), v4_mul(rz, axis_z)), thick);
        const v4 travel = v4_sqrt(v4_add(v4_add(v4_mul(px, px), v4_mul(py, py)), v4_mul(pz, pz)));
        const v4 margin =
            v4_mul(tiny, v4_add(v4_add(v4_add(v4_add(offset, ax), ay), az), thick));
        if (!v4_all_greater(start_gap, v4_add(travel, margin))) break;
        v4_store(known + i, v4_sub(v4_sub(start_gap, travel), margin));
    }
    return i;
}
