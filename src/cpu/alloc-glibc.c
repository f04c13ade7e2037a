/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: glibc's own reports and trim, answered by manymalloc.
 *
 * A program that calls malloc_trim, malloc_stats or mallinfo2 under
 * LD_PRELOAD would otherwise reach glibc's allocator, which holds nothing:
 * trimming would give nothing back and mallinfo2 would count nothing.
 * (glibc's __libc_* aliases of malloc and friends are in alloc-override.c.)
 * mallopt and malloc_info stay glibc's: their tuning parameters and XML
 * report describe glibc's arenas, and harmlessly so.
 * Built only with MANYMALLOC_OVERRIDE. */
#define _GNU_SOURCE
#include <limits.h>
#include <malloc.h>
#include <stdio.h>

#include "internal.h"

/* 1 when memory went back to the OS, as glibc's; `pad` (bytes to leave at
 * the top of the heap) has no meaning for segments and is ignored. */
MM_EXPORT int malloc_trim(size_t pad) {
  (void)pad;
  return mm_collect() > 0;
}

MM_EXPORT void malloc_stats(void) { mm_stats_print(stderr); }

/* glibc's fields for manymalloc's figures: the arena is the segments'
 * mapped bytes, the mmapped blocks are the large blocks, and the arena's
 * free space is what its live blocks leave of it (reserved address space
 * included: segments are committed as they are used). */
MM_EXPORT struct mallinfo2 mallinfo2(void) {
  mm_stats_t s;
  mm_stats_get(&s);
  struct mallinfo2 info = { 0 };
  info.hblks = s.large_blocks;
  info.hblkhd = s.large_bytes;
  info.arena = s.bytes_mapped > s.large_bytes ? s.bytes_mapped - s.large_bytes : 0;
  info.uordblks = s.bytes_in_use > s.large_bytes ? s.bytes_in_use - s.large_bytes : 0;
  info.fordblks = info.arena > info.uordblks ? info.arena - info.uordblks : 0;
  return info;
}

static int mm_clamp_int(size_t value) { return value > INT_MAX ? INT_MAX : (int)value; }

/* The older, int-sized report, clamped where glibc's would wrap. */
MM_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 wide = mallinfo2();
  struct mallinfo info = { 0 };
  info.arena = mm_clamp_int(wide.arena);
  info.hblks = mm_clamp_int(wide.hblks);
  info.hblkhd = mm_clamp_int(wide.hblkhd);
  info.uordblks = mm_clamp_int(wide.uordblks);
  info.fordblks = mm_clamp_int(wide.fordblks);
  return info;
}
