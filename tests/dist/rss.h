/* SPDX-License-Identifier: Apache-2.0 */
// rss.h: the resident memory of this process, for the tests that check
// that memory the allocator no longer needs goes back to the OS.
#ifndef MMD_TEST_RSS_H
#define MMD_TEST_RSS_H

#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace mmdtest {

// Resident bytes (the second field of /proc/self/statm, in pages); 0 if
// unreadable.
inline int64_t resident_bytes() {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long size = 0, resident = 0;
  const int got = fscanf(f, "%ld %ld", &size, &resident);
  fclose(f);
  return got == 2 ? int64_t(resident) * sysconf(_SC_PAGESIZE) : 0;
}

}  // namespace mmdtest

#endif  // MMD_TEST_RSS_H
