/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: configuration from MANYMALLOC_* environment variables.
 *
 * Read once, at process init, before the first block is handed out; the
 * values never change afterwards.  docs/cpu-design.md lists them. */
#include <stdlib.h>

#include "internal.h"

mm_options_t _mm_options = {
  .verbose = false,
  .checked = false,
  .purge = true,
  .shrink = true,
  .shrink_threads = 1,
  .shrink_rate = 64,
  .purge_delay = 10,
  .segment_cache = 8,
  .large_hugepages = true,
};

/* getenv does not allocate, so it is safe this early. */
static size_t mm_option_number(const char *name, size_t fallback, size_t max) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return fallback;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0') return fallback;
  return v > max ? max : (size_t)v;
}

static bool mm_option_flag(const char *name, bool fallback) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return fallback;
  return !(s[0] == '0' || s[0] == 'n' || s[0] == 'N' || s[0] == 'f' || s[0] == 'F');
}

void _mm_options_init(void) {
  _mm_options.verbose = mm_option_flag("MANYMALLOC_VERBOSE", _mm_options.verbose);
  _mm_options.checked = mm_option_flag("MANYMALLOC_CHECKED", _mm_options.checked);
  _mm_options.purge = mm_option_flag("MANYMALLOC_PURGE", _mm_options.purge);
  _mm_options.shrink = _mm_options.purge && mm_option_flag("MANYMALLOC_SHRINK", _mm_options.shrink);
  _mm_options.shrink_threads = mm_option_number("MANYMALLOC_SHRINK_THREADS", _mm_options.shrink_threads, SIZE_MAX);
  _mm_options.shrink_rate = mm_option_number("MANYMALLOC_SHRINK_RATE", _mm_options.shrink_rate, SIZE_MAX / 256 / 1000);
  _mm_options.purge_delay = mm_option_number("MANYMALLOC_PURGE_DELAY", _mm_options.purge_delay, 3600 * 1000);
  _mm_options.segment_cache = mm_option_number("MANYMALLOC_SEGMENT_CACHE", _mm_options.segment_cache, 1024);
  _mm_options.large_hugepages = mm_option_flag("MANYMALLOC_LARGE_HUGEPAGES", _mm_options.large_hugepages);
}
