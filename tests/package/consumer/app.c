/* SPDX-License-Identifier: Apache-2.0 */
/* tests/package/consumer: allocates through the installed library's own
 * names and prints what it saw; check.cmake compares the line. */
#include <manymalloc/manymalloc.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  char *p = mm_malloc(100);
  if (p == NULL) return 1;
  memset(p, 7, 100);
  size_t usable = mm_malloc_usable_size(p);
  p = mm_realloc(p, 5000);
  int kept = p != NULL && p[99] == 7;
  mm_free(p);
  printf("manymalloc consumer: usable %s, realloc %s\n", usable >= 100 ? "ok" : "short", kept ? "ok" : "lost");
  return 0;
}
