/*
 * The small contract between the GPU example and its vendor (after jaxlib's
 * jaxlib/gpu/vendor.h): CUDA and HIP differ in a stream type, a few runtime
 * calls and the platform name XLA registers legacy targets under.  The
 * kernels are written once against these names.
 */
#ifndef CCSHIM_EXAMPLES_GPU_VENDOR_H
#define CCSHIM_EXAMPLES_GPU_VENDOR_H

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
typedef hipStream_t gpuStream_t;
typedef hipError_t gpuError_t;
#define gpuSuccess hipSuccess
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuStreamCreate hipStreamCreate
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuGetDeviceCount hipGetDeviceCount
#define GPU_PLATFORM_NAME "ROCM"
#else
#include <cuda_runtime.h>
typedef cudaStream_t gpuStream_t;
typedef cudaError_t gpuError_t;
#define gpuSuccess cudaSuccess
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuGetDeviceCount cudaGetDeviceCount
#define GPU_PLATFORM_NAME "CUDA"
#endif

#endif /* CCSHIM_EXAMPLES_GPU_VENDOR_H */
