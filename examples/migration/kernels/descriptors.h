/*
 * The packed descriptors of the legacy kernels, as jaxlib-era code passed
 * them: plain structs, little-endian, no padding, built in Python with
 * struct.pack.  The typed port replaces them with attributes.
 */
#ifndef MIGRATION_DESCRIPTORS_H
#define MIGRATION_DESCRIPTORS_H

#include <stdint.h>

/* rms_norm's first operand, a u8[16]: struct.pack("<iifi", rows, cols, eps, 0) */
typedef struct rms_norm_descriptor {
  int32_t rows;
  int32_t cols;
  float eps;
  int32_t reserved;
} rms_norm_descriptor;

/* clip's opaque (backend_config), 16 bytes: struct.pack("<ffq", lo, hi, n) */
typedef struct clip_descriptor {
  float lo;
  float hi;
  int64_t n;
} clip_descriptor;

#endif
