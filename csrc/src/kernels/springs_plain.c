/* The spring kernel, the Euler update and the xpbd projection on plain doubles (any processor). */
#define MS_KERNEL(name) name##_plain
#include "kernels/spring_kernel.h"
#include "kernels/spring_adjoint_kernel.h"
#include "kernels/xpbd_kernel.h"
#include "kernels/gap_kernel.h"
#include "kernels/product_kernel.h"
#include "kernels/batch_kernel.h"

double ms_spring_force(const double xa[3], const double xb[3], const double va[3], const double vb[3], double rest,
                       double stiffness, double damping, double force[3]) {
    v1 power = 0.0;
    SPRING_FORCE(v1, xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2], vb[0] - va[0], vb[1] - va[1], vb[2] - va[2], rest,
                 stiffness, damping, force[0], force[1], force[2], power, (v1*)NULL);
    return power;
}
