/* conform: deterministic inputs, buffers that end at a guard page, and
 * comparing results byte for byte or within a tolerance. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

/* --- Inputs ----------------------------------------------------------------- */

static uint64_t next(uint64_t* s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* One random float value: ordinary, or with `specials` now and then NaN,
 * +-Inf or -0 (every other run, so that kernels which refuse non-finite
 * input are compared on the results they compute as well). */
static double random_value(uint64_t r, int specials) {
  switch (specials ? r % 53 : 53) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -0.0;
    default: return (double)(int64_t)(r >> 11) / 9007199254740992.0 * 200.0;
  }
}

/* Random values for one buffer: floats from random_value, integers any
 * bits, pred 0 or 1, the rest any bytes. */
static void fill(void* data, size_t bytes, int dtype, uint64_t seed, int specials) {
  uint64_t s = seed | 1;
  unsigned char* p = data;
  if (dtype == XLA_FFI_DataType_F32 || dtype == XLA_FFI_DataType_C64) {
    float* f = data;
    for (size_t i = 0; i < bytes / 4; i++) f[i] = (float)random_value(next(&s), specials);
    return;
  }
  if (dtype == XLA_FFI_DataType_F64 || dtype == XLA_FFI_DataType_C128) {
    double* f = data;
    for (size_t i = 0; i < bytes / 8; i++) f[i] = random_value(next(&s), specials);
    return;
  }
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)next(&s);
  if (dtype == XLA_FFI_DataType_PRED)
    for (size_t i = 0; i < bytes; i++) p[i] &= 1;
}

/* --- Comparing ---------------------------------------------------------------- */

static double half_to_double(uint16_t h, int bf16) {
  uint32_t f;
  if (bf16) {
    f = (uint32_t)h << 16;
  } else {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
    if (exp == 0) {
      float v = ldexpf((float)man, -24);
      return sign ? -v : v;
    }
    f = sign | (exp == 31 ? 0xff << 23 : (exp - 15 + 127) << 23) | man << 13;
  }
  float v;
  memcpy(&v, &f, 4);
  return v;
}

/* Within rtol: equal bits, both NaN, or |a - b| <= rtol * |b|. */
static int close_enough(double a, double b, double rtol) {
  if (isnan(a) && isnan(b)) return 1;
  if (a == b) return 1;
  return fabs(a - b) <= rtol * fabs(b);
}

/* Returns the first differing byte of a buffer, or -1. */
long conform_compare(const unsigned char* a, const unsigned char* b, size_t bytes, int dtype,
                     double rtol) {
  if (rtol <= 0) {
    for (size_t i = 0; i < bytes; i++)
      if (a[i] != b[i]) return (long)i;
    return -1;
  }
  size_t w = 0;
  switch (dtype) {
    case XLA_FFI_DataType_F16:
    case XLA_FFI_DataType_BF16: w = 2; break;
    case XLA_FFI_DataType_F32:
    case XLA_FFI_DataType_C64: w = 4; break;
    case XLA_FFI_DataType_F64:
    case XLA_FFI_DataType_C128: w = 8; break;
    default: return conform_compare(a, b, bytes, dtype, 0);
  }
  for (size_t i = 0; i + w <= bytes; i += w) {
    double x, y;
    if (w == 2) {
      uint16_t u, v;
      memcpy(&u, a + i, 2);
      memcpy(&v, b + i, 2);
      x = half_to_double(u, dtype == XLA_FFI_DataType_BF16);
      y = half_to_double(v, dtype == XLA_FFI_DataType_BF16);
    } else if (w == 4) {
      float u, v;
      memcpy(&u, a + i, 4);
      memcpy(&v, b + i, 4);
      x = u;
      y = v;
    } else {
      memcpy(&x, a + i, 8);
      memcpy(&y, b + i, 8);
    }
    if (!close_enough(x, y, rtol)) return (long)i;
  }
  return -1;
}

/* --- Buffers ------------------------------------------------------------------ */
static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void conform_layout_free(layout* l) {
  if (l->map) munmap(l->map, l->map_bytes);
  if (l->fd >= 0) close(l->fd);
  free(l->args);
  free(l->rets[0]);
  free(l->rets[1]);
  ccshim_signature_free(l->sig);
  memset(l, 0, sizeof *l);
  l->fd = -1;
}

/* Sizes every leaf, maps the buffers with their guards; 0 or -1 with detail. */
int conform_layout_init(layout* l, char* detail, size_t cap) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t na = l->sig->num_arg_leaves, nr = l->sig->num_ret_leaves;
  l->args = calloc(na + 1, sizeof(buffer));
  l->rets[0] = calloc(nr + 1, sizeof(buffer));
  l->rets[1] = calloc(nr + 1, sizeof(buffer));
  if (!l->args || !l->rets[0] || !l->rets[1]) {
    snprintf(detail, cap, "out of memory");
    return -1;
  }
  buffer* all[3] = {l->args, l->rets[0], l->rets[1]};
  size_t count[3] = {na, nr, nr};
  size_t total = 0;
  for (int g = 0; g < 3; g++)
    for (size_t i = 0; i < count[g]; i++) {
      const ccshim_shape* s = g == 0 ? l->sig->arg_leaves[i] : l->sig->ret_leaves[i];
      buffer* b = &all[g][i];
      b->dtype = s->dtype;
      b->bytes = ccshim_dtype_bytes(s->dtype, (uint64_t)ccshim_shape_elements(s), NULL);
      if (b->bytes > ((size_t)1 << 40)) {
        snprintf(detail, cap, "%s %zu needs %zu bytes; conform maps at most 1 TiB a buffer",
                 g == 0 ? "argument" : "result", i, b->bytes);
        return -1;
      }
      if (s->dtype != XLA_FFI_DataType_TOKEN)
        total += round_up(round_up(b->bytes, ALIGN), page) + page;
    }
  l->map_bytes = total ? total : page;
  /* A memfd, so that a side run in Python (in_python.c) maps the same pages. */
  l->fd = memfd_create("ccshim-conform-buffers", MFD_CLOEXEC);
  l->map = MAP_FAILED;
  if (l->fd >= 0 && ftruncate(l->fd, (off_t)l->map_bytes) == 0)
    l->map = mmap(NULL, l->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
  if (l->map == MAP_FAILED) {
    l->map = NULL;
    snprintf(detail, cap, "cannot map %zu bytes for the buffers: %s", total, strerror(errno));
    return -1;
  }
  unsigned char* at = l->map;
  for (int g = 0; g < 3; g++)
    for (size_t i = 0; i < count[g]; i++) {
      buffer* b = &all[g][i];
      if (b->dtype == XLA_FFI_DataType_TOKEN) continue;
      size_t used = round_up(b->bytes, ALIGN);
      unsigned char* guard = at + round_up(used, page);
      mprotect(guard, page, PROT_NONE);
      b->data = guard - used;
      b->slack = used - b->bytes;
      at = guard + page;
    }
  return 0;
}

/* Fills a buffer and its slack; the contents come from fill() or a byte. */
void conform_prepare(buffer* b, int byte, uint64_t seed, int specials) {
  if (b->data == NULL) return;
  if (byte < 0)
    fill(b->data, b->bytes, b->dtype, seed, specials);
  else
    memset(b->data, byte, b->bytes);
  memset(b->data + b->bytes, CANARY, b->slack);
}

/* The first byte past the end that a kernel wrote, or -1. */
long conform_overrun(const buffer* b) {
  for (size_t k = 0; b->data && k < b->slack; k++)
    if (b->data[b->bytes + k] != CANARY) return (long)(b->bytes + k);
  return -1;
}
