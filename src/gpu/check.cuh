/* SPDX-License-Identifier: Apache-2.0 */
// gpu/check.cuh: XMC_ASSERT, the device heap's runtime invariants (the GPU's
// MM_ASSERT). On where XMC_CHECKED is defined (Debug builds of the library),
// compiled out otherwise. A broken one prints the condition and where, then
// traps: the kernel stops, and the host sees the error at its next
// synchronization.
#pragma once
#include <cstdio>

#ifdef XMC_CHECKED
#define XMC_ASSERT(cond) \
  ((cond) ? (void)0 : (printf("xmalloc: %s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond), __trap()))
#else
#define XMC_ASSERT(cond) ((void)0)
#endif
