/* SPDX-License-Identifier: Apache-2.0 */
/* space.c: the global address space. Every process maps the same range with
 * MAP_FIXED_NOREPLACE (never MAP_FIXED, which would clobber a live mapping)
 * and MAP_NORESERVE: nothing is touched or committed up front, a page is
 * resident only once written and goes back with madvise. Candidates start
 * at 32 TiB, above where the kernel places mappings and above the shadow of
 * AddressSanitizer, and move on by whole TiB until every process agrees. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include "space.h"
#include "manymalloc/myrmics.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
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

void mmd_space_discard(uintptr_t base, uint64_t off, uint64_t len) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t lo = (off + page - 1) & ~(page - 1), hi = (off + len) & ~(page - 1);
  if (lo < hi) madvise((void *)(base + lo), hi - lo, MADV_DONTNEED);
}

/* Populates in one call the pages a transfer is about to write: the kernel
 * fills them faster than the copy faulting them in one at a time (decision
 * 0008). Kernels before 5.14 lack MADV_POPULATE_WRITE; the copy faults then. */
void mmd_space_prefault(uintptr_t base, uint64_t off, uint64_t len) {
  static bool unsupported;
  if (unsupported || len == 0) return;
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t lo = off & ~(page - 1), hi = (off + len + page - 1) & ~(page - 1);
  if (madvise((void *)(base + lo), hi - lo, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) unsupported = true;
}
