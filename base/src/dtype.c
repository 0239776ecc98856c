/*
 * XLA element types: HLO names and storage sizes, indexed by the
 * XLA_FFI_DataType / xla::PrimitiveType number.
 */
#include <string.h>

#include "base_internal.h"

typedef struct dtype_info {
  const char* name; /* HLO spelling; NULL where the number names no type */
  int bits;
} dtype_info;

static const dtype_info dtypes[] = {
    [0] = {NULL, 0},          [1] = {"pred", 8},        [2] = {"s8", 8},
    [3] = {"s16", 16},        [4] = {"s32", 32},        [5] = {"s64", 64},
    [6] = {"u8", 8},          [7] = {"u16", 16},        [8] = {"u32", 32},
    [9] = {"u64", 64},        [10] = {"f16", 16},       [11] = {"f32", 32},
    [12] = {"f64", 64},       [13] = {NULL, 0}, /* TUPLE: no FFI data type */
    [14] = {NULL, 0},                           /* OPAQUE_TYPE: no FFI data type */
    [15] = {"c64", 64},       [16] = {"bf16", 16},      [17] = {"token", 0},
    [18] = {"c128", 128},     [19] = {"f8e5m2", 8},     [20] = {"f8e4m3fn", 8},
    [21] = {"s4", 4},         [22] = {"u4", 4},         [23] = {"f8e4m3b11fnuz", 8},
    [24] = {"f8e5m2fnuz", 8}, [25] = {"f8e4m3fnuz", 8}, [26] = {"s2", 2},
    [27] = {"u2", 2},         [28] = {"f8e4m3", 8},     [29] = {"f8e3m4", 8},
    [30] = {"s1", 1},         [31] = {"u1", 1},         [32] = {"f4e2m1fn", 4},
    [33] = {"f8e8m0fnu", 8},
};

enum { NUM_DTYPES = (int)(sizeof dtypes / sizeof dtypes[0]) };

const char* ccshim_dtype_name(int dtype) {
  if (dtype < 0 || dtype >= NUM_DTYPES) return NULL;
  return dtypes[dtype].name;
}

int ccshim_dtype_from_name(const char* name, size_t len) {
  if (name == NULL) return 0;
  for (int i = 1; i < NUM_DTYPES; i++) {
    const char* n = dtypes[i].name;
    if (n != NULL && strlen(n) == len && memcmp(n, name, len) == 0) return i;
  }
  return 0;
}

int ccshim_dtype_bits(int dtype) {
  if (dtype < 0 || dtype >= NUM_DTYPES) return 0;
  return dtypes[dtype].bits;
}

size_t ccshim_dtype_bytes(int dtype, uint64_t count, int* overflow) {
  uint64_t bits = (uint64_t)ccshim_dtype_bits(dtype);
  if (overflow) *overflow = 0;
  if (bits == 0 || count == 0) return 0;
  if (count > (UINT64_MAX - 7) / bits || (count * bits + 7) / 8 > SIZE_MAX) {
    if (overflow) *overflow = 1;
    return 0;
  }
  return (size_t)((count * bits + 7) / 8);
}
