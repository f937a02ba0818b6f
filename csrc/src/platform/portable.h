/* What differs between the compilers that build the core (GCC, Clang, MSVC), behind
 * macros, so that every other file is the C11 that all three accept. */
#ifndef MSPRINGS_PORTABLE_H
#define MSPRINGS_PORTABLE_H

/* The C99 restrict qualifier: MSVC's C compiler spells it __restrict. */
#if defined(_MSC_VER) && !defined(__clang__)
#define MS_RESTRICT __restrict
#else
#define MS_RESTRICT restrict
#endif

/* A function inlined wherever it is called, so that its constant arguments select its code
   at compile time (a request the compiler may decline where it cannot say so). */
#if defined(_MSC_VER) && !defined(__clang__)
#define MS_ALWAYS_INLINE static __forceinline
#elif defined(__GNUC__)
#define MS_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define MS_ALWAYS_INLINE static inline
#endif

/* A function kept out of line, so that the loop calling it on its rare path stays small
   (its registers are not spilt for the rare path's sake). */
#if defined(_MSC_VER) && !defined(__clang__)
#define MS_NOINLINE __declspec(noinline)
#elif defined(__GNUC__)
#define MS_NOINLINE __attribute__((noinline))
#else
#define MS_NOINLINE
#endif

/* A hint that the cache line holding *p will soon be read: a loop that goes on to read
   many scattered lines asks for them all first, so that their misses overlap. */
#if defined(__GNUC__)
#define MS_PREFETCH(p) __builtin_prefetch(p)
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <xmmintrin.h>
#define MS_PREFETCH(p) _mm_prefetch((const char*)(p), _MM_HINT_T0)
#else
#define MS_PREFETCH(p) ((void)(p))
#endif

/* printf-style format checking where the compiler has it; nothing elsewhere. */
#if defined(__GNUC__)
#define MS_PRINTF_LIKE(format_index, first_arg) __attribute__((format(printf, format_index, first_arg)))
#else
#define MS_PRINTF_LIKE(format_index, first_arg)
#endif

/* Subnormal numbers (magnitudes below 2.2e-308) flushed to zero while the core computes.
 * A disturbance spreading through a network at rest shrinks by a factor at every spring it
 * crosses, so for many steps a front of subnormal forces and velocities sweeps across a
 * cloth, and x86 processors handle such numbers many times slower than normal ones: the
 * cloth-256 step took up to 1.8 times as long while the front crossed it.  Flushed, what
 * is lost is below 1e-307 in any force, speed or energy.  ms_flush_subnormals() sets the
 * mode for the calling thread and returns the one it found, which ms_restore_fp() puts
 * back, so the caller's arithmetic (NumPy's, Python's) is never changed.  On x86-64 this
 * sets MXCSR's flush-to-zero and denormals-are-zero bits, on AArch64 FPCR.FZ; elsewhere
 * the core computes with subnormals (the same results to 1e-307, more slowly on some
 * states). */
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
typedef unsigned int ms_fp_mode;
static inline ms_fp_mode ms_flush_subnormals(void) {
    const unsigned int found = _mm_getcsr();
    _mm_setcsr(found | 0x8000u | 0x0040u); /* flush to zero, denormals are zero */
    return found;
}
static inline void ms_restore_fp(ms_fp_mode found) { _mm_setcsr(found); }
#elif defined(__aarch64__) && defined(__GNUC__)
typedef unsigned long long ms_fp_mode;
static inline ms_fp_mode ms_flush_subnormals(void) {
    unsigned long long found;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(found));
    const unsigned long long flush = found | (1ull << 24); /* FZ */
    __asm__ __volatile__("msr fpcr, %0" : : "r"(flush) : "memory");
    return found;
}
static inline void ms_restore_fp(ms_fp_mode found) { __asm__ __volatile__("msr fpcr, %0" : : "r"(found) : "memory"); }
#else
typedef int ms_fp_mode;
static inline ms_fp_mode ms_flush_subnormals(void) { return 0; }
static inline void ms_restore_fp(ms_fp_mode found) { (void)found; }
#endif

#endif
