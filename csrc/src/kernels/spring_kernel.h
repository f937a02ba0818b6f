/* The spring kernel and the Euler update, written once over the vector layer (vector.h)
 * and compiled once per vector path: springs_avx2.c, springs_sse2.c and springs_plain.c
 * define MS_KERNEL(name) (the path's suffix) and the path's macro, then include this file.
 *
 * Springs.  With d = x_b - x_a, l = |d|, n = d / l, the force on a is
 * [k (l - L) + c (v_b - v_a).n] n and the force on b is its opposite.  The damper removes
 * c ((v_b - v_a).n)^2 watts.  Asked for it, the kernel also sums the springs' elastic energy
 * k (l - L)^2 / 2 from the same l - L; otherwise that code is compiled out.
 */
#include "kernels/layout.h"
#include "platform/vector.h"
#include "kernels/spring_formula.h"

/* One j of a group: the four springs from the owners at (xa, ya, za) with velocities
   (ua, va, wa) (a[0..5]) to the ends b[0..5], with their parameters at p (four rest
   lengths, four k, four c).  Their forces on the owners go to force[0..2] and are added to
   sum[0..2], their damper power to power (and k (l - L)^2 to *energy unless it is NULL).
   The functions below are inlined into the kernel twice, with energy NULL and not. */
MS_ALWAYS_INLINE v4 MS_KERNEL(lanes)(const v4 a[6], const v4 b[6], const double* p, v4 force[3], v4 sum[3], v4 power,
                                     v4* energy) {
    SPRING_FORCE(v4, v4_sub(b[0], a[0]), v4_sub(b[1], a[1]), v4_sub(b[2], a[2]), v4_sub(b[3], a[3]),
                 v4_sub(b[4], a[4]), v4_sub(b[5], a[5]), v4_load(p), v4_load(p + MS_LANES),
                 v4_load(p + 2 * MS_LANES), force[0], force[1], force[2], power, energy);
    for (int c = 0; c < 3; ++c) sum[c] = v4_add(sum[c], force[c]);
    return power;
}

/* Where the force on a spring's other end goes (its dest in the layout): owned nodes
   straight into f, the block's halo into its buffer. */
static inline double* MS_KERNEL(target)(double* f, double* halo, int32_t dest) {
    return dest >= 0 ? f + 3 * (int64_t)dest : halo + 3 * (int64_t)(-1 - dest);
}

/* The springs [s, e) of one owner a, one at a time. */
MS_ALWAYS_INLINE v1 MS_KERNEL(single)(const int32_t* MS_RESTRICT pairs, const int32_t* MS_RESTRICT dest,
                                      const double* MS_RESTRICT params, int64_t s, int64_t e, int64_t a,
                                      const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* f,
                                      double* halo, v1 power, v1* energy) {
    const double* xa = x + 3 * a;
    const double* va = v + 3 * a;
    v1 sum_x = 0.0, sum_y = 0.0, sum_z = 0.0;
    for (int64_t r = s; r < e; ++r) {
        const int64_t b = pairs[2 * r + 1];
        const double* xb = x + 3 * b;
        const double* vb = v + 3 * b;
        const double* p = params + 3 * r;
        const v1 dx = xb[0] - xa[0], dy = xb[1] - xa[1], dz = xb[2] - xa[2];
        const v1 du = vb[0] - va[0], dv = vb[1] - va[1], dw = vb[2] - va[2];
        v1 fx, fy, fz;
        SPRING_FORCE(v1, dx, dy, dz, du, dv, dw, p[0], p[1], p[2], fx, fy, fz, power, energy);
        sum_x += fx;
        sum_y += fy;
        sum_z += fz;
        double* fb = MS_KERNEL(target)(f, halo, dest[r]);
        fb[0] -= fx;
        fb[1] -= fy;
        fb[2] -= fz;
    }
    double* fa = f + 3 * a;
    fa[0] += sum_x;
    fa[1] += sum_y;
    fa[2] += sum_z;
    return power;
}

/* A lane group: nodes a..a+3 with k springs each, sorted springs [s, s + 4 k).  Spring j
   of the four nodes is one v4, one lane per node; each node's force is summed over j and
   added to f once at the end. */
MS_ALWAYS_INLINE v4 MS_KERNEL(group)(const int32_t* MS_RESTRICT pairs, const int32_t* MS_RESTRICT dest,
                                     const double* MS_RESTRICT params, int64_t s, int64_t k, int64_t a,
                                     const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* f,
                                     double* halo, int64_t own_end, v4 power, v4* energy) {
    v4 ends[6], sum[3] = {v4_set(0.0), v4_set(0.0), v4_set(0.0)};
    v4_load_nodes(x + 3 * a, &ends[0], &ends[1], &ends[2]);
    v4_load_nodes(v + 3 * a, &ends[3], &ends[4], &ends[5]);
    for (int64_t j = 0; j < k; ++j) {
        const int64_t r = s + MS_LANES * j;
        const int64_t b = pairs[2 * r + 1]; /* the first node's other end; the others follow it */
        v4 others[6], force[3];
        v4_load_nodes(x + 3 * b, &others[0], &others[1], &others[2]);
        v4_load_nodes(v + 3 * b, &others[3], &others[4], &others[5]);
        power = MS_KERNEL(lanes)(ends, others, params + 3 * r, force, sum, power, energy);
        const v4 fx = force[0], fy = force[1], fz = force[2];
        if (b + MS_LANES <= own_end) {
            v4_add_nodes(f + 3 * b, fx, fy, fz, 1);
        } else if (b >= own_end) {
            v4_add_nodes(halo + 3 * (b - own_end), fx, fy, fz, 1);
        } else { /* the four ends straddle the end of the owned nodes: one at a time */
            double lane_x[MS_LANES], lane_y[MS_LANES], lane_z[MS_LANES];
            v4_store(lane_x, fx);
            v4_store(lane_y, fy);
            v4_store(lane_z, fz);
            for (int q = 0; q < MS_LANES; ++q) {
                double* fb = MS_KERNEL(target)(f, halo, dest[r + q]);
                fb[0] -= lane_x[q];
                fb[1] -= lane_y[q];
                fb[2] -= lane_z[q];
            }
        }
    }
    v4_add_nodes(f + 3 * a, sum[0], sum[1], sum[2], 0);
    return power;
}

/* A gathered group: owners a_0..a_3 (the owners of springs s..s+3) with k springs each,
   sorted springs [s, s + 4 k).  As a lane group, but every end is read and written on its
   own, lane after lane. */
MS_ALWAYS_INLINE v4 MS_KERNEL(gathered)(const int32_t* MS_RESTRICT pairs, const int32_t* MS_RESTRICT dest,
                                        const double* MS_RESTRICT params, int64_t s, int64_t k,
                                        const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* f,
                                        double* halo, v4 power, v4* energy) {
    int64_t owner[MS_LANES];
    double* mine[MS_LANES];
    for (int q = 0; q < MS_LANES; ++q) {
        owner[q] = pairs[2 * (s + q)];
        mine[q] = f + 3 * owner[q];
    }
    v4 ends[6], sum[3] = {v4_set(0.0), v4_set(0.0), v4_set(0.0)};
    v4_gather_nodes(x, owner, &ends[0], &ends[1], &ends[2]);
    v4_gather_nodes(v, owner, &ends[3], &ends[4], &ends[5]);
    for (int64_t j = 0; j < k; ++j) {
        const int64_t r = s + MS_LANES * j;
        const int64_t other[MS_LANES] = {pairs[2 * r + 1], pairs[2 * r + 3], pairs[2 * r + 5], pairs[2 * r + 7]};
        double* const to[MS_LANES] = {MS_KERNEL(target)(f, halo, dest[r]), MS_KERNEL(target)(f, halo, dest[r + 1]),
                                      MS_KERNEL(target)(f, halo, dest[r + 2]), MS_KERNEL(target)(f, halo, dest[r + 3])};
        v4 others[6], force[3];
        v4_gather_nodes(x, other, &others[0], &others[1], &others[2]);
        v4_gather_nodes(v, other, &others[3], &others[4], &others[5]);
        power = MS_KERNEL(lanes)(ends, others, params + 3 * r, force, sum, power, energy);
        v4_scatter_nodes(to, force[0], force[1], force[2], 1);
    }
    v4_scatter_nodes(mine, sum[0], sum[1], sum[2], 0);
    return power;
}

/* The springs of one block (the kernel below), summing their energy into *energy unless
   it is NULL. */
MS_ALWAYS_INLINE double MS_KERNEL(block)(const ms_layout* layout, int64_t block, const double* MS_RESTRICT x,
                                         const double* MS_RESTRICT v, double* MS_RESTRICT f, double* energy) {
    const int32_t* MS_RESTRICT pairs = layout->pairs;
    const double* MS_RESTRICT params = layout->params;
    const int32_t* MS_RESTRICT dest = layout->dest;
    const uint16_t* MS_RESTRICT lanes = layout->lanes;
    const int64_t own_end = layout->node_start[block + 1];
    double* halo = layout->halo + 3 * layout->halo_start[block];
    memset(halo, 0, sizeof(double) * 3 * (size_t)(layout->halo_start[block + 1] - layout->halo_start[block]));
    v4 lane_power = v4_set(0.0), lane_energy = v4_set(0.0);
    v1 single_power = 0.0, single_energy = 0.0;
    v4* const lanes_energy = energy != NULL ? &lane_energy : NULL;
    v1* const singles_energy = energy != NULL ? &single_energy : NULL;
    const int64_t end = layout->spring_start[block + 1];
    for (int64_t s = layout->spring_start[block]; s < end;) {
        const int64_t a = pairs[2 * s];
        const int64_t kind = lanes[a], k = kind & MS_MAX_LANE_SPRINGS;
        if (kind & MS_GATHERED) {
            lane_power = MS_KERNEL(gathered)(pairs, dest, params, s, k, x, v, f, halo, lane_power, lanes_energy);
            s += MS_LANES * k;
            continue;
        }
        if (k > 0) {
            lane_power =
                MS_KERNEL(group)(pairs, dest, params, s, k, a, x, v, f, halo, own_end, lane_power, lanes_energy);
            s += MS_LANES * k;
            continue;
        }
        int64_t e = s + 1;
        while (e < end && pairs[2 * e] == a) ++e;
        single_power = MS_KERNEL(single)(pairs, dest, params, s, e, a, x, v, f, halo, single_power, singles_energy);
        s = e;
    }
    double power[MS_LANES];
    v4_store(power, lane_power);
    if (energy != NULL) {
        double lane[MS_LANES];
        v4_store(lane, lane_energy);
        *energy = 0.5 * (single_energy + ((lane[0] + lane[1]) + (lane[2] + lane[3])));
    }
    return single_power + ((power[0] + power[1]) + (power[2] + power[3]));
}

double MS_KERNEL(ms_springs)(const ms_layout* layout, int64_t block, const double* MS_RESTRICT x,
                             const double* MS_RESTRICT v, double* MS_RESTRICT f, double* energy) {
    if (energy == NULL) return MS_KERNEL(block)(layout, block, x, v, f, NULL);
    return MS_KERNEL(block)(layout, block, x, v, f, energy);
}

/* The explicit (explicit_euler != 0) or symplectic Euler update of nodes [begin, end),
   four nodes (twelve values, three v4) at a time, written to x_out and v_out (which may
   be x and v) or, with x_out NULL, only checked.  Returns 1 if every new value is finite.
   Unless energy is NULL, it also sums the energies of (x, v) that it asks for. */
MS_ALWAYS_INLINE int MS_KERNEL(euler)(const double* MS_RESTRICT inv_mass, const double* x, const double* v,
                                      const double* MS_RESTRICT f, double h, int explicit_euler, int64_t begin,
                                      int64_t end, double* x_out, double* v_out, const ms_energy_request* energy) {
    const v4 step = v4_set(h);
    v4 probe = v4_set(0.0);
    v1 tail_probe = 0.0;
    /* the energies: lane q of part p sums m |v_c|^2 and m g_c x_c over the components c of
       the nodes' values 4 p + q (mod 12); a pinned node's mass counts as 0 */
    v4 moving = v4_set(0.0), height = v4_set(0.0), pull[3];
    v1 tail_moving = 0.0, tail_height = 0.0;
    if (energy != NULL) {
        const double* g = energy->gravity;
        const double pattern[3 * MS_LANES] = {g[0], g[1], g[2], g[0], g[1], g[2], g[0], g[1], g[2], g[0], g[1], g[2]};
        for (int part = 0; part < 3; ++part) pull[part] = v4_load(pattern + MS_LANES * part);
    }
    int64_t i = begin;
    for (; i + MS_LANES <= end; i += MS_LANES) {
        v4 weight[3]; /* h / m of nodes i..i+3, spread over their components */
        v4_spread(v4_mul(step, v4_load(inv_mass + i)), weight);
        v4 mass[3];
        if (energy != NULL)
            v4_spread(v4_if_greater(v4_load(inv_mass + i), v4_set(0.0), v4_load(energy->mass + i)), mass);
        v4 position[3], velocity[3];
        for (int part = 0; part < 3; ++part) {
            const int64_t q = 3 * i + MS_LANES * part;
            const v4 xq = v4_load(x + q), vq = v4_load(v + q), fq = v4_load(f + q);
            const v4 w = weight[part];
            if (energy != NULL) {
                moving = v4_add(moving, v4_mul(mass[part], v4_mul(vq, vq)));
                height = v4_add(height, v4_mul(mass[part], v4_mul(pull[part], xq)));
            }
            if (explicit_euler) { /* x' = x + h v;  v' = v + h a(x, v) */
                position[part] = v4_add(xq, v4_mul(step, vq));
                velocity[part] = v4_add(vq, v4_mul(w, fq));
            } else { /* v' = v + h a(x, v);  x' = x + h v' */
                velocity[part] = v4_add(vq, v4_mul(w, fq));
                position[part] = v4_add(xq, v4_mul(step, velocity[part]));
            }
            probe = v4_add(probe, v4_sub(position[part], position[part]));
            probe = v4_add(probe, v4_sub(velocity[part], velocity[part]));
        }
        if (x_out != NULL)
            for (int part = 0; part < 3; ++part) {
                v4_store(x_out + 3 * i + MS_LANES * part, position[part]);
                v4_store(v_out + 3 * i + MS_LANES * part, velocity[part]);
            }
    }
    for (; i < end; ++i) {
        const double w = h * inv_mass[i];
        if (energy != NULL && inv_mass[i] > 0.0) {
            const double* xi = x + 3 * i;
            const double* vi = v + 3 * i;
            const double* g = energy->gravity;
            tail_moving += energy->mass[i] * (vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
            tail_height += energy->mass[i] * (g[0] * xi[0] + g[1] * xi[1] + g[2] * xi[2]);
        }
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            double position, velocity;
            if (explicit_euler) {
                position = x[q] + h * v[q];
                velocity = v[q] + w * f[q];
            } else {
                velocity = v[q] + w * f[q];
                position = x[q] + h * velocity;
            }
            if (x_out != NULL) {
                x_out[q] = position;
                v_out[q] = velocity;
            }
            tail_probe += (position - position) + (velocity - velocity);
        }
    }
    double lanes[MS_LANES];
    if (energy != NULL) {
        v4_store(lanes, moving);
        *energy->kinetic = 0.5 * (((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + tail_moving);
        v4_store(lanes, height);
        *energy->potential = -(((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + tail_height);
    }
    v4_store(lanes, probe);
    return tail_probe + lanes[0] + lanes[1] + lanes[2] + lanes[3] == 0.0;
}

int MS_KERNEL(ms_euler)(const double* MS_RESTRICT inv_mass, const double* x, const double* v, const double* MS_RESTRICT f,
                        double h, int explicit_euler, int64_t begin, int64_t end, double* x_out, double* v_out,
                        const ms_energy_request* energy) {
    if (energy == NULL) return MS_KERNEL(euler)(inv_mass, x, v, f, h, explicit_euler, begin, end, x_out, v_out, NULL);
    return MS_KERNEL(euler)(inv_mass, x, v, f, h, explicit_euler, begin, end, x_out, v_out, energy);
}

void MS_KERNEL(ms_node_energy)(const double* MS_RESTRICT mass, const double* MS_RESTRICT inv_mass,
                               const double gravity[3], const double* MS_RESTRICT x, const double* MS_RESTRICT v,
                               int64_t begin, int64_t end, double* kinetic, double* potential) {
    /* lane q sums m |v|^2 and m g.x over the nodes i = begin + q (mod 4); a pinned node's
       mass counts as 0 */
    const v4 gx = v4_set(gravity[0]), gy = v4_set(gravity[1]), gz = v4_set(gravity[2]);
    v4 moving = v4_set(0.0), height = v4_set(0.0);
    int64_t i = begin;
    for (; i + MS_LANES <= end; i += MS_LANES) {
        const v4 m = v4_if_greater(v4_load(inv_mass + i), v4_set(0.0), v4_load(mass + i));
        v4 px, py, pz, vx, vy, vz;
        v4_load_nodes(x + 3 * i, &px, &py, &pz);
        v4_load_nodes(v + 3 * i, &vx, &vy, &vz);
        const v4 speed2 = v4_add(v4_add(v4_mul(vx, vx), v4_mul(vy, vy)), v4_mul(vz, vz));
        const v4 lift = v4_add(v4_add(v4_mul(gx, px), v4_mul(gy, py)), v4_mul(gz, pz));
        moving = v4_add(moving, v4_mul(m, speed2));
        height = v4_add(height, v4_mul(m, lift));
    }
    v1 tail_moving = 0.0, tail_height = 0.0;
    for (; i < end; ++i) {
        if (inv_mass[i] == 0.0) continue;
        const double* xi = x + 3 * i;
        const double* vi = v + 3 * i;
        tail_moving += mass[i] * (vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
        tail_height += mass[i] * (gravity[0] * xi[0] + gravity[1] * xi[1] + gravity[2] * xi[2]);
    }
    double lanes[MS_LANES];
    v4_store(lanes, moving);
    *kinetic = 0.5 * (((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + tail_moving);
    v4_store(lanes, height);
    *potential = -(((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + tail_height);
}
