/* SPDX-License-Identifier: Apache-2.0 */
/* Resident OS pages of an address range (mincore), for the tests that check
 * what the allocator gave back to the OS.  Shared by the C++ tests and the
 * C child programs.  It allocates nothing: a malloc here could fault in a
 * page it is about to count. */
#ifndef MM_TEST_RESIDENT_H
#define MM_TEST_RESIDENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define MM_TEST_OS_PAGE ((uintptr_t)4096)

/* OS pages of [p, p + size) that are resident; pages that are not mapped
 * count as not resident. */
static inline size_t resident_pages(const void *p, size_t size) {
  uintptr_t at = (uintptr_t)p / MM_TEST_OS_PAGE * MM_TEST_OS_PAGE;
  const uintptr_t end = ((uintptr_t)p + size + MM_TEST_OS_PAGE - 1) / MM_TEST_OS_PAGE * MM_TEST_OS_PAGE;
  unsigned char v[1024]; /* 4 MiB per mincore call */
  size_t n = 0;
  while (at < end) {
    size_t count = (size_t)((end - at) / MM_TEST_OS_PAGE);
    if (count > sizeof v) count = sizeof v;
    if (mincore((void *)at, count * MM_TEST_OS_PAGE, v) == 0)
      for (size_t i = 0; i < count; i++) n += v[i] & 1;
    at += count * MM_TEST_OS_PAGE;
  }
  return n;
}

#endif /* MM_TEST_RESIDENT_H */
