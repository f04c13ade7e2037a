/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: the main() of programs that define myrmics_main() instead. It is
 * its own object, so that a program with a main() of its own (calling
 * sys_init and sys_finalize) links without it. */
#include <stdio.h>
#include "manymalloc/myrmics.h"

#pragma weak myrmics_main

int main(int argc, char **argv) {
  if (myrmics_main == NULL) {
    fprintf(stderr, "manymalloc: the program defines neither main() nor myrmics_main()\n");
    return 1;
  }
  int role = sys_init(&argc, &argv);
  int status = role == 0 ? myrmics_main(argc, argv) : role < 0;
  sys_finalize();
  return status;
}
