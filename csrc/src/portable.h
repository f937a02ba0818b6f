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

/* printf-style format checking where the compiler has it; nothing elsewhere. */
#if defined(__GNUC__)
#define MS_PRINTF_LIKE(format_index, first_arg) __attribute__((format(printf, format_index, first_arg)))
#else
#define MS_PRINTF_LIKE(format_index, first_arg)
#endif

#endif
