/* The kernels of every vector path this build and processor have, for the tests that
   compare the paths' bits. */
#ifndef MSPRINGS_TEST_VECTOR_PATHS_H
#define MSPRINGS_TEST_VECTOR_PATHS_H

#include <stddef.h>

#include "kernels/layout.h"

#if defined(MS_SSE2_PATH)
#define SECOND_PATH_KERNEL(name) name##_sse2
#elif defined(MS_NEON_PATH)
#define SECOND_PATH_KERNEL(name) name##_neon
#else
#define SECOND_PATH_KERNEL(name) NULL
#endif
#if defined(MS_AVX2_PATH)
#define AVX2_PATH_KERNEL(name) (ms_avx2_supported() ? name##_avx2 : NULL)
#else
#define AVX2_PATH_KERNEL(name) NULL
#endif

/* paths[0..2] = kernel name's plain path, its SSE2 or NEON path, its AVX2 path (NULL where
   the build or the processor has none) */
#define VECTOR_PATHS(paths, name)                                                                                     \
    ((paths)[0] = name##_plain, (paths)[1] = SECOND_PATH_KERNEL(name), (paths)[2] = AVX2_PATH_KERNEL(name))

#endif
