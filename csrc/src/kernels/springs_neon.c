/* The spring kernel, the Euler update and the xpbd projection on NEON (every AArch64 processor). */
#include "kernels/layout.h"
#if defined(MS_NEON_PATH)
#define MS_PATH_NEON 1
#define MS_KERNEL(name) name##_neon
#include "kernels/spring_kernel.h"
#include "kernels/spring_adjoint_kernel.h"
#include "kernels/xpbd_kernel.h"
#include "kernels/gap_kernel.h"
#include "kernels/product_kernel.h"
#include "kernels/batch_kernel.h"
#else
typedef int ms_springs_neon_unused; /* not an AArch64 build */
#endif
