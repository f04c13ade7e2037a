/* SPDX-License-Identifier: Apache-2.0 */
// exhaustion_regions.h: a case both exhaustion programs run. Regions of one
// 4 KiB object each until the space runs out (every eighth asked for on the
// top scheduler, level hint 1, which with one scheduler is the only one):
// allocation ends in SYS_ERR_NOMEM, every object is whole, and once all are
// freed a 4 MiB object fits again, at the leaf level and at the top.
#ifndef MMD_TEST_EXHAUSTION_REGIONS_H
#define MMD_TEST_EXHAUSTION_REGIONS_H

#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <vector>

#include "pattern.h"

namespace mmdtest {

inline void RegionsUntilTheSpaceRunsOut(size_t space) {
  std::vector<rid_t> regs;
  std::vector<void *> objs;
  int stop = SYS_OK;
  for (size_t n = 0; stop == SYS_OK; n++) {
    ASSERT_LE(n, space / 4096) << "more regions with an object than the space holds";
    const rid_t r = sys_ralloc(0, n % 8 == 7 ? 1 : 0);
    if (r < 0) {
      stop = int(r);
      break;
    }
    regs.push_back(r);
    void *p = sys_alloc(4096, r);
    if (!p) {
      stop = sys_last_error();
    } else {
      fill_pattern(p, 4096, uint64_t(r));
      objs.push_back(p);
    }
  }
  EXPECT_EQ(stop, SYS_ERR_NOMEM) << sys_strerror(stop);
  for (size_t i = 0; i < objs.size(); i++) ASSERT_TRUE(HasPattern(objs[i], 4096, uint64_t(regs[i])));
  ASSERT_EQ(sys_barrier(), SYS_OK);
  for (rid_t r : regs) ASSERT_EQ(sys_rfree(r), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  for (int hint : {0, 1}) {
    const rid_t r = sys_ralloc(0, hint);
    ASSERT_GT(r, 0) << sys_strerror(int(r));
    EXPECT_NE(sys_alloc(size_t(4) << 20, r), nullptr) << "hint " << hint << ": " << sys_strerror(sys_last_error());
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);
}

}  // namespace mmdtest

#endif
