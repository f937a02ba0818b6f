/* The spring kernel, the Euler update and the xpbd projection on SSE2 (every x86-64 processor). */
#include "kernels/layout.h"
#if defined(MS_SSE2_PATH)
#define MS_PATH_SSE2 1
#define MS_KERNEL(name) name##_sse2
#include "kernels/spring_kernel.h"
#include "kernels/spring_adjoint_kernel.h"
#include "kernels/xpbd_kernel.h"
#include "kernels/gap_kernel.h"
#include "kernels/product_kernel.h"
#include "kernels/batch_kernel.h"
#else
typedef int ms_springs_sse2_unused; /* not an x86-64 build */
#endif
