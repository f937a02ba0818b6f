/* Wind field and aerodynamic forces on triangles. */
#include <math.h>

#include "kernels/kernels.h"

void ms_wind(const ms_air* air, const double p[3], double t, double out[3]) {
    /* wind(x, t) = W + A (1.5 |sin(kappa x + omega t) + cos(kappa y + omega t)|, 0,
                         0.5 sin(omega t)):  a uniform wind plus the flag reference's gusts,
       which sweep along x and y and swing the wind sideways in z. */
    out[0] = air->wind[0];
    out[1] = air->wind[1];
    out[2] = air->wind[2];
    if (air->gust != 0.0) {
        const double phase = air->gust_frequency * t;
        out[0] += air->gust * 1.5 *
                  fabs(sin(air->gust_wavenumber * p[0] + phase) + cos(air->gust_wavenumber * p[1] + phase));
        out[2] += air->gust * 0.5 * sin(phase);
    }
}

int ms_air_has_wind(const ms_air* air) {
    return air->gust != 0.0 || air->wind[0] != 0.0 || air->wind[1] != 0.0 || air->wind[2] != 0.0;
}

void ms_face_forces(const ms_model* m, const double* MS_RESTRICT x, const double* MS_RESTRICT v, double t,
                    double* MS_RESTRICT f, ms_flow* flow) {
    /* For each triangle, u = wind(centroid) - mean node velocity, n the unit normal turned
       towards u and c = n.u/|u| (so the winding does not matter):
         pressure drag  F_D = 1/2 rho C_d A |u|^2 c n
         lift           F_L = 1/2 rho C_l A |u|^2 c (n - c u/|u|)   (perpendicular to u)
       shared equally by the three nodes.  The nodes receive F.v_mean = F.w - F.u: the
       wind's work F.w, less F.u = 1/2 rho C_d A |u|^3 c^2 >= 0 dissipated in the air's
       frame (the lift is perpendicular to u and dissipates nothing). */
    const ms_air* air = &m->opt.air;
    const double pressure = 0.5 * air->density;
    const double drag = air->drag_coefficient, lift = air->lift_coefficient;
    double dissipated = 0.0, wind_power = 0.0;
    if (pressure == 0.0 || (drag == 0.0 && lift == 0.0)) return;
    for (int64_t k = 0; k < m->nface; ++k) {
        const int64_t a = m->faces[3 * k], b = m->faces[3 * k + 1], c = m->faces[3 * k + 2];
        const double* xa = x + 3 * a;
        const double* xb = x + 3 * b;
        const double* xc = x + 3 * c;
        const double e1[3] = {xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]};
        const double e2[3] = {xc[0] - xa[0], xc[1] - xa[1], xc[2] - xa[2]};
        double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        const double twice_area = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(twice_area > 0.0)) continue;
        const double centroid[3] = {(xa[0] + xb[0] + xc[0]) / 3.0, (xa[1] + xb[1] + xc[1]) / 3.0,
                                    (xa[2] + xb[2] + xc[2]) / 3.0};
        double wind[3], u[3];
        ms_wind(air, centroid, t, wind);
        double mean_velocity[3];
        for (int q = 0; q < 3; ++q) {
            mean_velocity[q] = (v[3 * a + q] + v[3 * b + q] + v[3 * c + q]) / 3.0;
            u[q] = wind[q] - mean_velocity[q];
            n[q] /= twice_area;
        }
        const double speed2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        if (!(speed2 > 0.0)) continue;
        const double speed = sqrt(speed2);
        double cosine = (n[0] * u[0] + n[1] * u[1] + n[2] * u[2]) / speed;
        if (cosine < 0.0) {
            cosine = -cosine;
            n[0] = -n[0], n[1] = -n[1], n[2] = -n[2];
        }
        const double scale = pressure * 0.5 * twice_area * speed2 * cosine;
        double force[3];
        for (int q = 0; q < 3; ++q) force[q] = scale * (drag * n[q] + lift * (n[q] - cosine * u[q] / speed));
        for (int q = 0; q < 3; ++q) {
            const double share = force[q] / 3.0;
            f[3 * a + q] += share;
            f[3 * b + q] += share;
            f[3 * c + q] += share;
        }
        dissipated += scale * drag * cosine * speed; /* F.u, the lift's part being zero */
        wind_power += force[0] * wind[0] + force[1] * wind[1] + force[2] * wind[2];
    }
    if (flow != NULL) {
        flow->drag += dissipated;
        flow->wind += wind_power;
    }
}

void ms_vertex_normals(const ms_model* m, const ms_state* s, double* MS_RESTRICT out) {
    /* Sum of the (unnormalised, area-weighted) face normals around each vertex. */
    for (int64_t q = 0; q < 3 * m->nnode; ++q) out[q] = 0.0;
    for (int64_t k = 0; k < m->nface; ++k) {
        const int64_t a = m->faces[3 * k], b = m->faces[3 * k + 1], c = m->faces[3 * k + 2];
        const double* xa = s->x + 3 * a;
        const double* xb = s->x + 3 * b;
        const double* xc = s->x + 3 * c;
        const double e1[3] = {xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]};
        const double e2[3] = {xc[0] - xa[0], xc[1] - xa[1], xc[2] - xa[2]};
        const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                             e1[0] * e2[1] - e1[1] * e2[0]};
        for (int q = 0; q < 3; ++q) {
            out[3 * a + q] += n[q];
            out[3 * b + q] += n[q];
            out[3 * c + q] += n[q];
        }
    }
    for (int64_t i = 0; i < m->nnode; ++i) {
        double* p = out + 3 * i;
        const double length = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        if (length > 0.0) p[0] /= length, p[1] /= length, p[2] /= length;
    }
}
