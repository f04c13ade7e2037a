/* SPDX-License-Identifier: Apache-2.0 */
/* space.c: the global address space. Every process maps the same range with
 * MAP_FIXED_NOREPLACE (never MAP_FIXED, which would clobber a live mapping)
 * and MAP_NORESERVE: nothing is touched or committed up front, a page is
 * resident only once written and goes back with madvise. Candidates start
 * at 32 TiB, above where the kernel places mappings and above the shadow of
 * AddressSanitizer, and move on by whole TiB until every process agrees. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>
#include "space.h"
#include "manymalloc/myrmics.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define MMD_SPACE_FIRST 0x200000000000ull   /* 32 TiB */
#define MMD_SPACE_LIMIT 0x7f0000000000ull   /* below the stack of a 47-bit address space */
#define MMD_SPACE_STEP  0x10000000000ull    /* 1 TiB */

static bool space_try(uintptr_t base, uint64_t size) {
  void *p = mmap((void *)base, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return false;
  if ((uintptr_t)p == base) return true;
  munmap(p, size);  /* a kernel before 4.17 took the flag as a hint */
  return false;
}

int mmd_space_reserve(uint64_t size, bool (*agree)(bool ok), uintptr_t *base) {
  uint64_t step = (size + MMD_SPACE_STEP - 1) / MMD_SPACE_STEP * MMD_SPACE_STEP;
  for (uintptr_t b = MMD_SPACE_FIRST; b + size <= MMD_SPACE_LIMIT; b += step) {
    bool ok = space_try(b, size);
    if (agree(ok)) {
      *base = b;
      return 0;
    }
    if (ok) munmap((void *)b, size);
  }
  return SYS_ERR_NOMEM;
}

void mmd_space_unreserve(uintptr_t base, uint64_t size) { munmap((void *)base, size); }
