/*
 * For tests that define malloc and friends themselves (forwarding to
 * glibc's): CCSHIM_TEST_OWNS_MALLOC is 0 in sanitizer builds, whose runtime
 * owns malloc (such a test skips); INTERPOSE exports a definition, so that
 * libccshim's calls come to it (the tests build with hidden visibility, and
 * a hidden malloc would see only the test file's own calls).
 */
#ifndef CCSHIM_TESTS_MALLOC_INTERPOSE_H
#define CCSHIM_TESTS_MALLOC_INTERPOSE_H

#include <stddef.h>

#if !defined(__has_feature)
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CCSHIM_TEST_OWNS_MALLOC 0
#else
#define CCSHIM_TEST_OWNS_MALLOC 1
#endif

#define INTERPOSE __attribute__((visibility("default")))

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);

#endif
