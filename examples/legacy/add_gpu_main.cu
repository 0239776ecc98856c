// Runs the legacy GPU kernel of add_gpu.cu on a real GPU: through a ccshim
// adapter in the embedded runtime (a real stream, device memory from the
// runtime's allocator hooks), and through the legacy invoker on the same
// stream, and checks both against the host.  Exits 77 without a GPU.
//
// Built for CUDA by nvcc and for ROCm by hipcc from this one source.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ccshim/ccshim.h"
#include "gpu_vendor.h"

#define GPU_CHECK(expr)                                               \
  do {                                                                \
    gpuError_t e_ = (expr);                                           \
    if (e_ != gpuSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #expr, gpuGetErrorString(e_)); \
      return 1;                                                       \
    }                                                                 \
  } while (0)

static void* device_alloc(void*, size_t size, size_t) {
  void* p = nullptr;
  return gpuMalloc(&p, size) == gpuSuccess ? p : nullptr;
}
static void device_free(void*, void* p, size_t) { gpuFree(p); }

int main() {
  int devices = 0;
  if (gpuGetDeviceCount(&devices) != gpuSuccess || devices == 0) {
    std::printf("skipped: no %s device\n", GPU_PLATFORM_NAME);
    return 77;
  }
  const bool rocm = std::strcmp(GPU_PLATFORM_NAME, "ROCM") == 0;
  ccshim_platform platform = rocm ? CCSHIM_PLATFORM_ROCM : CCSHIM_PLATFORM_CUDA;

  std::vector<float> b(128), c(2048), want(2048), got(2048), ref(2048);
  for (int i = 0; i < 128; ++i) b[i] = 0.5f * i;
  for (int i = 0; i < 2048; ++i) c[i] = std::sin(0.01f * i);
  const char opaque[] = "2.5";
  for (int i = 0; i < 2048; ++i) want[i] = 2.5f * (b[i % 128] + c[i]);

  gpuStream_t stream;
  GPU_CHECK(gpuStreamCreate(&stream));
  float *db, *dc, *da, *dref;
  GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&db), 128 * sizeof(float)));
  GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&dc), 2048 * sizeof(float)));
  GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&da), 2048 * sizeof(float)));
  GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&dref), 2048 * sizeof(float)));
  GPU_CHECK(gpuMemcpy(db, b.data(), 128 * sizeof(float), gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemcpy(dc, c.data(), 2048 * sizeof(float), gpuMemcpyHostToDevice));

  // (1) Through an adapter, in the embedded runtime, on a real stream.
  ccshim_adapter* adapter;
  if (ccshim_wrap_registered("add_gpu_v2", GPU_PLATFORM_NAME, 2,
                             "(f32[128], f32[2048]) -> f32[2048]", nullptr,
                             &adapter) != CCSHIM_OK) {
    std::fprintf(stderr, "wrap: %s\n", ccshim_last_error());
    return 1;
  }
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.platform = rocm ? "rocm" : "cuda";
  o.stream = stream;
  o.alloc = device_alloc;
  o.free = device_free;
  ccshim_context* ctx;
  ccshim_frame_builder* fb;
  int64_t nb = 128, nc = 2048;
  if (ccshim_context_new(&o, &ctx) || ccshim_frame_builder_new(&fb) ||
      ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, db, 1, &nb) ||
      ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, dc, 1, &nc) ||
      ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, da, 1, &nc) ||
      ccshim_frame_builder_add_string(fb, "opaque", opaque, 3) ||
      ccshim_invoke_handler(ccshim_adapter_handler(adapter), ctx, XLA_FFI_ExecutionStage_EXECUTE,
                            fb, nullptr)) {
    std::fprintf(stderr, "adapter: %s\n", ccshim_last_error());
    return 1;
  }
  GPU_CHECK(gpuStreamSynchronize(stream));
  GPU_CHECK(gpuMemcpy(got.data(), da, 2048 * sizeof(float), gpuMemcpyDeviceToHost));

  // (2) Through the legacy invoker, as XLA's legacy GPU runtime calls it.
  void* args[2] = {db, dc};
  void* rets[1] = {dref};
  ccshim_legacy_call call;
  std::memset(&call, 0, sizeof call);
  call.fn = ccshim_legacy_lookup("add_gpu_v2", GPU_PLATFORM_NAME);
  call.api_version = 2;
  call.platform = platform;
  call.args = args;
  call.num_args = 2;
  call.rets = rets;
  call.num_rets = 1;
  call.opaque = opaque;
  call.opaque_len = 3;
  call.stream = stream;
  ccshim_legacy_outcome outcome;
  if (ccshim_legacy_invoke(&call, &outcome) != CCSHIM_OK || outcome.failed) {
    std::fprintf(stderr, "legacy: %s\n", outcome.failed ? outcome.message : ccshim_last_error());
    return 1;
  }
  GPU_CHECK(gpuStreamSynchronize(stream));
  GPU_CHECK(gpuMemcpy(ref.data(), dref, 2048 * sizeof(float), gpuMemcpyDeviceToHost));

  bool same = std::memcmp(got.data(), ref.data(), 2048 * sizeof(float)) == 0;
  float err = 0;
  for (int i = 0; i < 2048; ++i) err = std::fmax(err, std::fabs(got[i] - want[i]));
  std::printf(
      "%s add_gpu_v2 through ccshim (embedded runtime, real stream): "
      "%s the legacy invoker byte for byte; max |error| vs host %g\n",
      GPU_PLATFORM_NAME, same ? "equal to" : "DIFFERENT from", err);

  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
  ccshim_adapter_free(adapter);
  gpuFree(db);
  gpuFree(dc);
  gpuFree(da);
  gpuFree(dref);
  gpuStreamDestroy(stream);
  return same && err < 1e-5f ? 0 : 1;
}
