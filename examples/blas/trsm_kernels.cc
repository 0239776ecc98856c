// A legacy CPU kernel in the style of early jaxlib's BLAS kernels: a batched
// triangular solve through CBLAS, API version 2 (status returning), with
// every dimension and flag passed as a scalar operand ahead of the arrays.
// The library is legacy code: nothing here knows about ccshim.
//
//   operands: left_side s32[], lower s32[], trans_a s32[], unit_diag s32[],
//             m s32[], n s32[], batch s32[], alpha T[],
//             a T[batch, k, k], b T[batch, n, m]       (k = m if left_side else n)
//   result:   x T[batch, n, m]
//
// Arrays are column-major per batch (BLAS's order; JAX passes the transposed
// layout).  Solves op(A) X = alpha B (left_side) or X op(A) = alpha B.

#include <cblas.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

namespace {

void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
          float alpha, const float* a, int lda, float* b, int ldb) {
  cblas_strsm(CblasColMajor, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb);
}

void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
          double alpha, const double* a, int lda, double* b, int ldb) {
  cblas_dtrsm(CblasColMajor, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb);
}

template <typename T>
struct Trsm {
  static void Kernel(void* out, void** data, XlaCustomCallStatus* status) {
    int32_t left_side = *static_cast<int32_t*>(data[0]);
    int32_t lower = *static_cast<int32_t*>(data[1]);
    int32_t trans_a = *static_cast<int32_t*>(data[2]);
    int32_t unit_diag = *static_cast<int32_t*>(data[3]);
    int32_t m = *static_cast<int32_t*>(data[4]);
    int32_t n = *static_cast<int32_t*>(data[5]);
    int32_t batch = *static_cast<int32_t*>(data[6]);
    T alpha = *static_cast<T*>(data[7]);
    const T* a = static_cast<const T*>(data[8]);
    const T* b = static_cast<const T*>(data[9]);
    T* x = static_cast<T*>(out);
    if (m <= 0 || n <= 0 || batch <= 0 || trans_a < 0 || trans_a > 2) {
      char msg[128];
      int len =
          std::snprintf(msg, sizeof msg, "trsm: bad operands: m %d, n %d, batch %d, trans_a %d", m,
                        n, batch, trans_a);
      XlaCustomCallStatusSetFailure(status, msg, static_cast<size_t>(len));
      return;
    }
    int k = left_side ? m : n;
    size_t a_size = static_cast<size_t>(k) * k;
    size_t x_size = static_cast<size_t>(m) * n;
    if (x != b) std::memcpy(x, b, x_size * batch * sizeof(T));
    CBLAS_TRANSPOSE trans = trans_a == 0   ? CblasNoTrans
                            : trans_a == 1 ? CblasTrans
                                           : CblasConjTrans;
    for (int32_t i = 0; i < batch; ++i)
      trsm(left_side ? CblasLeft : CblasRight, lower ? CblasLower : CblasUpper, trans,
           unit_diag ? CblasUnit : CblasNonUnit, m, n, alpha, a + i * a_size, k, x + i * x_size, m);
    XlaCustomCallStatusSetSuccess(status);
  }
};

}  // namespace

XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("blas_strsm", Trsm<float>::Kernel);
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("blas_dtrsm", Trsm<double>::Kernel);

// Exported under plain names as well, for `ccshim conform` and ctypes.
extern "C" __attribute__((visibility("default"))) void blas_strsm(void* out, void** data,
                                                                  XlaCustomCallStatus* status) {
  Trsm<float>::Kernel(out, data, status);
}
extern "C" __attribute__((visibility("default"))) void blas_dtrsm(void* out, void** data,
                                                                  XlaCustomCallStatus* status) {
  Trsm<double>::Kernel(out, data, status);
}
