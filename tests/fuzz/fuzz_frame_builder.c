/*
 * Fuzzes the call-frame builder with a recipe of operations: buffers of any
 * dtype, rank and dims (negative, huge), attributes of every kind with
 * arbitrary names (duplicates included) and nesting, ends without begins,
 * builds at any stage.  Properties: no crash; every refusal leaves a
 * message; a built frame has struct sizes as XLA's, the counts added, and
 * every dictionary sorted byte-wise with unique names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ccshim/runtime.h"
#include "fuzz_input.h"

static void check_sorted(const XLA_FFI_Attrs* a, int depth) {
  if (a->struct_size != XLA_FFI_Attrs_STRUCT_SIZE || depth > 40) abort();
  for (int64_t i = 0; i < a->size; i++) {
    if (i > 0) {
      const XLA_FFI_ByteSpan* p = a->names[i - 1];
      const XLA_FFI_ByteSpan* q = a->names[i];
      size_t n = p->len < q->len ? p->len : q->len;
      int c = memcmp(p->ptr, q->ptr, n);
      if (c > 0 || (c == 0 && p->len >= q->len)) abort(); /* sorted, unique */
    }
    if (a->types[i] == XLA_FFI_AttrType_DICTIONARY) check_sorted(a->attrs[i], depth + 1);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz_input in = {data, size};
  ccshim_frame_builder* fb;
  if (ccshim_frame_builder_new(&fb) != CCSHIM_OK) abort();
  static char arena[1 << 12];
  int64_t dims[70];
  char name[20], bytes[64];
  size_t nargs = 0, nrets = 0;
  for (int op = 0; op < 64 && in.size > 0; op++) {
    ccshim_status st = CCSHIM_OK;
    unsigned kind = take_below(&in, 9);
    switch (kind) {
      case 0:
      case 1: {
        int dtype = (int)take_below(&in, 40);
        int64_t rank = (int64_t)take_below(&in, 70) - 2;
        for (int i = 0; i < 70; i++)
          dims[i] = take_u8(&in) < 250 ? take_below(&in, 9) : take_i64(&in);
        void* p = take_u8(&in) % 4 ? arena : NULL;
        st = kind == 0 ? ccshim_frame_builder_add_arg(fb, (XLA_FFI_DataType)dtype, p, rank,
                                                      take_u8(&in) % 8 ? dims : NULL)
                       : ccshim_frame_builder_add_ret(fb, (XLA_FFI_DataType)dtype, p, rank, dims);
        if (st == CCSHIM_OK && kind == 0) nargs++;
        if (st == CCSHIM_OK && kind == 1) nrets++;
        break;
      }
      case 2: {
        take_bytes(&in, name, 8);
        size_t n = take_bytes(&in, bytes, 40);
        st = ccshim_frame_builder_add_string(fb, take_u8(&in) % 16 ? name : NULL, bytes, n);
        break;
      }
      case 3: {
        take_bytes(&in, name, 8);
        int64_t value = take_i64(&in);
        st = ccshim_frame_builder_add_scalar(fb, name, (XLA_FFI_DataType)take_below(&in, 40),
                                             take_u8(&in) % 16 ? (void*)&value : NULL);
        break;
      }
      case 4: {
        take_bytes(&in, name, 8);
        /* Within the arena's 4096 bytes (512 elements of 8), or far beyond
         * the builder's limit, which it must refuse before reading. */
        size_t count =
            take_u8(&in) < 250 ? take_below(&in, 64) : ((size_t)take_i64(&in) | ((size_t)1 << 40));
        st = ccshim_frame_builder_add_array(fb, name, (XLA_FFI_DataType)take_below(&in, 40),
                                            take_u8(&in) % 16 ? (void*)arena : NULL, count);
        break;
      }
      case 5:
        take_bytes(&in, name, 8);
        st = ccshim_frame_builder_begin_dict(fb, name);
        break;
      case 6: st = ccshim_frame_builder_end_dict(fb); break;
      case 7: ccshim_frame_builder_reset(fb), nargs = nrets = 0; break;
      default: {
        XLA_FFI_CallFrame f;
        st = ccshim_frame_builder_build(fb, ccshim_ffi_api(), NULL,
                                        (XLA_FFI_ExecutionStage)take_below(&in, 7), &f);
        if (st == CCSHIM_OK) {
          if (f.struct_size != 168 || f.args.size != (int64_t)nargs ||
              f.rets.size != (int64_t)nrets)
            abort();
          for (size_t i = 0; i < nargs; i++) {
            const XLA_FFI_Buffer* b = f.args.args[i];
            if (b->struct_size != 48 || b->rank < 0) abort();
            for (int64_t d = 0; d < b->rank; d++)
              if (b->dims[d] < 0) abort();
          }
          check_sorted(&f.attrs, 0);
        }
      }
    }
    if (st != CCSHIM_OK && ccshim_last_error()[0] == '\0') abort();
  }
  ccshim_frame_builder_free(fb);
  return 0;
}
