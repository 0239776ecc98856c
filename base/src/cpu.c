/*
 * What the CPU and its OS run, asked of CPUID itself.
 *
 * Not __builtin_cpu_supports: that reads the compiler runtime's CPU model,
 * which zig's compiler-rt (the wheel's compiler, zig 0.17.1) never fills
 * in, so under zig cc it answers "no" for every feature on every machine.
 */
#include "base_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

int ccshim__cpu_has_avx2(void) {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  /* AVX, and the OS saving the YMM registers (OSXSAVE, then XCR0's SSE
   * and AVX state bits). */
  const unsigned osxsave = 1u << 27, avx = 1u << 28;
  if ((ecx & (osxsave | avx)) != (osxsave | avx)) return 0;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
  return (int)((ebx >> 5) & 1u); /* AVX2 */
}
#else
int ccshim__cpu_has_avx2(void) { return 0; }
#endif
