/*
 * A tiny assertion header for ccshim's tests (after libuv's test/task.h):
 * each check prints both sides and the place on failure, then exits 1.
 * Usable from C and C++.
 */
#ifndef CCSHIM_TESTS_CHECK_H
#define CCSHIM_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tests that need what the machine lacks exit with this code (ctest's
 * SKIP_RETURN_CODE) so they show as skipped, never as passed. */
#define CHECK_SKIP_CODE 77

#define CHECK_FAIL_(...)                            \
  do {                                              \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                   \
    fputc('\n', stderr);                            \
    exit(1);                                        \
  } while (0)

#define CHECK(cond)                                      \
  do {                                                   \
    if (!(cond)) CHECK_FAIL_("CHECK(%s) failed", #cond); \
  } while (0)

#define CHECK_INT_(a, op, b)                                                     \
  do {                                                                           \
    long long a_ = (long long)(a), b_ = (long long)(b);                          \
    if (!(a_ op b_)) CHECK_FAIL_("%s %s %s: %lld vs %lld", #a, #op, #b, a_, b_); \
  } while (0)

#define CHECK_EQ(a, b) CHECK_INT_(a, ==, b)
#define CHECK_NE(a, b) CHECK_INT_(a, !=, b)
#define CHECK_LT(a, b) CHECK_INT_(a, <, b)
#define CHECK_LE(a, b) CHECK_INT_(a, <=, b)
#define CHECK_GE(a, b) CHECK_INT_(a, >=, b)

#define CHECK_PTR_EQ(a, b)                                           \
  do {                                                               \
    const void* a_ = (const void*)(a);                               \
    const void* b_ = (const void*)(b);                               \
    if (a_ != b_) CHECK_FAIL_("%s == %s: %p vs %p", #a, #b, a_, b_); \
  } while (0)

/* Function pointers cannot become void* in ISO C, so compare them as they are. */
#define CHECK_FN_EQ(a, b)                                                 \
  do {                                                                    \
    if ((a) != (b)) CHECK_FAIL_("%s == %s: different functions", #a, #b); \
  } while (0)

#define CHECK_STR_EQ(a, b)                                                     \
  do {                                                                         \
    const char* a_ = (a);                                                      \
    const char* b_ = (b);                                                      \
    if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                       \
      CHECK_FAIL_("%s == %s:\n  \"%s\"\n  \"%s\"", #a, #b, a_ ? a_ : "(null)", \
                  b_ ? b_ : "(null)");                                         \
  } while (0)

/* `hay` contains `needle`. */
#define CHECK_CONTAINS(hay, needle)                                                \
  do {                                                                             \
    const char* h_ = (hay);                                                        \
    const char* n_ = (needle);                                                     \
    if (h_ == NULL || strstr(h_, n_) == NULL)                                      \
      CHECK_FAIL_("%s contains \"%s\": got \"%s\"", #hay, n_, h_ ? h_ : "(null)"); \
  } while (0)

#define CHECK_MEM_EQ(a, b, n)                                 \
  do {                                                        \
    const unsigned char* a_ = (const unsigned char*)(a);      \
    const unsigned char* b_ = (const unsigned char*)(b);      \
    size_t n_ = (n);                                          \
    for (size_t i_ = 0; i_ < n_; i_++)                        \
      if (a_[i_] != b_[i_])                                   \
        CHECK_FAIL_(                                          \
            "%s == %s: first difference at byte %zu of %zu: " \
            "0x%02x vs 0x%02x",                               \
            #a, #b, i_, n_, a_[i_], b_[i_]);                  \
  } while (0)

/* A ccshim call that must succeed; prints its last error otherwise. */
#define CHECK_OK(call)                                                         \
  do {                                                                         \
    int st_ = (int)(call);                                                     \
    if (st_ != 0)                                                              \
      CHECK_FAIL_("%s: %s: %s", #call, ccshim_status_name((ccshim_status)st_), \
                  ccshim_last_error());                                        \
  } while (0)

/* A ccshim call that must fail with `status`. */
#define CHECK_STATUS(call, status)                                              \
  do {                                                                          \
    int st_ = (int)(call);                                                      \
    if (st_ != (int)(status))                                                   \
      CHECK_FAIL_("%s: expected %s, got %s (%s)", #call,                        \
                  ccshim_status_name((ccshim_status)(status)),                  \
                  ccshim_status_name((ccshim_status)st_), ccshim_last_error()); \
  } while (0)

#endif /* CCSHIM_TESTS_CHECK_H */
