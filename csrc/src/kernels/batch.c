/* The batched kernel's choice of vector path (the kernel itself: batch_kernel.h, and
   springs_avx512.c for AVX-512). */
#include <stdlib.h>
#include <string.h>

#include "kernels/batch.h"

#if defined(MS_SSE2_PATH)
#define BUILD_PATH "sse2"
#elif defined(MS_NEON_PATH)
#define BUILD_PATH "neon"
#else
#define BUILD_PATH "plain"
#endif

enum { LEVEL_BUILD = 1, LEVEL_AVX2 = 2, LEVEL_AVX512 = 3 };

/* The highest level MSPRINGS_BATCH_PATH allows: "avx2" caps the path at AVX2, the build's
   path ("sse2", "neon" or "plain") at that one; unset or anything else leaves the choice to
   the processor.  Read at every choice (when an ensemble's step call begins). */
static int allowed_level(void) {
    char value[16] = {0};
#if defined(_MSC_VER)
    size_t length = 0;
    if (getenv_s(&length, value, sizeof value, "MSPRINGS_BATCH_PATH") != 0) value[0] = '\0';
#else
    const char* set = getenv("MSPRINGS_BATCH_PATH");
    if (set != NULL && strlen(set) < sizeof value) memcpy(value, set, strlen(set) + 1);
#endif
    if (strcmp(value, "avx2") == 0) return LEVEL_AVX2;
    if (strcmp(value, "sse2") == 0 || strcmp(value, "neon") == 0 || strcmp(value, "plain") == 0) return LEVEL_BUILD;
    return LEVEL_AVX512;
}

static int batch_level(void) {
    const int allowed = allowed_level();
    if (allowed >= LEVEL_AVX512 && ms_avx512_supported()) return LEVEL_AVX512;
    if (allowed >= LEVEL_AVX2 && ms_avx2_supported()) return LEVEL_AVX2;
    return LEVEL_BUILD;
}

ms_batch_kernel ms_batch_kernel_path(void) {
    const int level = batch_level();
#if defined(MS_AVX512_PATH)
    if (level == LEVEL_AVX512) return ms_batch_steps_avx512;
#endif
#if defined(MS_AVX2_PATH)
    if (level == LEVEL_AVX2) return ms_batch_steps_avx2;
#endif
    (void)level;
    return MS_BUILD_KERNEL(ms_batch_steps);
}

const char* ms_batch_path(void) {
    const int level = batch_level();
    return level == LEVEL_AVX512 ? "avx512" : level == LEVEL_AVX2 ? "avx2" : BUILD_PATH;
}
