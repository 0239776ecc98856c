/*
 * Reading a fuzzer's bytes as a recipe: small integers, bounded choices and
 * byte strings, each taken from the front; an exhausted input reads as 0.
 */
#ifndef CCSHIM_FUZZ_INPUT_H
#define CCSHIM_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fuzz_input {
  const uint8_t* data;
  size_t size;
} fuzz_input;

static inline uint8_t take_u8(fuzz_input* in) {
  if (in->size == 0) return 0;
  in->size--;
  return *in->data++;
}

static inline uint32_t take_u32(fuzz_input* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v = v << 8 | take_u8(in);
  return v;
}

static inline int64_t take_i64(fuzz_input* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | take_u8(in);
  return (int64_t)v;
}

/* A value in [0, n). */
static inline unsigned take_below(fuzz_input* in, unsigned n) { return n ? take_u8(in) % n : 0; }

/* Up to max bytes into buf (NUL-terminated); returns the length. */
static inline size_t take_bytes(fuzz_input* in, char* buf, size_t max) {
  size_t n = take_below(in, (unsigned)max + 1);
  if (n > in->size) n = in->size;
  memcpy(buf, in->data, n);
  buf[n] = '\0';
  in->data += n;
  in->size -= n;
  return n;
}

#endif /* CCSHIM_FUZZ_INPUT_H */
