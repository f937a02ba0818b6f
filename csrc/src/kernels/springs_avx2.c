/* The spring kernel, the Euler update and the xpbd projection on AVX2 (x86-64 processors that have it; chosen
   at run time, see ms_vector_path). */
#include "kernels/layout.h"
#if defined(MS_AVX2_PATH)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("avx2")
#endif /* MSVC: setup.py compiles this file alone with /arch:AVX2 */
#define MS_PATH_AVX2 1
#define MS_KERNEL(name) name##_avx2
#include "kernels/spring_kernel.h"
#include "kernels/spring_adjoint_kernel.h"
#include "kernels/xpbd_kernel.h"
#include "kernels/gap_kernel.h"
#include "kernels/product_kernel.h"
#include "kernels/batch_kernel.h"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#else
typedef int ms_springs_avx2_unused; /* not an x86-64 build */
#endif
