/* SPDX-License-Identifier: Apache-2.0 */
// gpu/size_class.cuh: the size classes of chunks (Basicblocks or, with
// Superblocks off, class Memoryblocks): eight classes 32..256 B in 32-byte
// steps, then eight per doubling up to 16 KiB. Powers of two and the sizes a
// full warp coalesces to land near a class body, so little is lost to rounding.
// src/common/size_class.h serves the CPU's per-thread caches with different
// bounds and spacing (see docs/gpu-design.md).
#pragma once
#include "types.cuh"

// Class of a chunk whose payload must hold `bytes` (1 <= bytes <= xmc_class_max_body).
__host__ __device__ __forceinline__ int xmc_class_of(uint32_t bytes) {
  if (bytes <= 256) return (int)((bytes + 31) >> 5) - 1;
  uint32_t v = bytes - 1;
#ifdef __CUDA_ARCH__
  int e = 31 - __clz(v);                     // 2^e <= v < 2^(e+1), e >= 8
#else
  int e = 31 - __builtin_clz(v);
#endif
  uint32_t m = (v >> (e - 3)) & 7;
  return 8 + (e - 8) * 8 + (int)m;
}

// Usable bytes of a chunk of class `cls`.
__host__ __device__ __forceinline__ constexpr uint32_t xmc_class_body(int cls) {
  if (cls < 8) return (uint32_t)(cls + 1) << 5;
  int e = 8 + (cls - 8) / 8;
  uint32_t m = (uint32_t)(cls - 8) % 8;
  return (9 + m) << (e - 3);
}

// Bytes of a chunk of class `cls`, header included; a multiple of the unit.
__host__ __device__ __forceinline__ constexpr uint32_t xmc_class_stride(int cls) {
  return (xmc_class_body(cls) + xmc_chunk_header + xmc_unit - 1) & ~(xmc_unit - 1);
}

// Units of a Superblock of `cls`: its header unit and 32 Basicblocks.
__host__ __device__ __forceinline__ constexpr uint32_t xmc_sb_units(int cls) {
  return 1 + xmc_sb_blocks * (xmc_class_stride(cls) >> xmc_unit_shift);
}
