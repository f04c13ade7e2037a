/* SPDX-License-Identifier: Apache-2.0 */
/* tests/package/consumer: a dist program built against the installed
 * library: worker 0 sends worker 1 a region holding one object. */
#include <manymalloc/myrmics.h>
#include <stdio.h>
#include <string.h>

int myrmics_main(int argc, char **argv) {
  (void)argc, (void)argv;
  rid_t r;
  void *obj;
  if (sys_worker_id() == 0) {
    r = sys_ralloc(0, 0);
    obj = sys_alloc(32, r);
    strcpy(obj, "region ok");
    return sys_send(1, &r, 1, &obj, 1) != 0;
  }
  if (sys_recv(0, &r, 1, &obj, 1) != 0) return 1;
  printf("manymalloc dist consumer: %s\n", (const char *)obj);
  return 0;
}
