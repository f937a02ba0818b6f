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

/* printf-style format checking where the compiler has it; nothing elsewhere. */
#if defined(__GNUC__)
#define MS_PRINTF_LIKE(format_index, first_arg) __attribute__((format(printf, format_index, first_arg)))
#else
#define MS_PRINTF_LIKE(format_index, first_arg)
#endif

#endif
