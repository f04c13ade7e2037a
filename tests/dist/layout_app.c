/* SPDX-License-Identifier: Apache-2.0 */
/* layout_app.c: a program that defines myrmics_main() and takes main() from
 * the library, as the README shows. Every worker prints one line naming
 * itself; layout_check.cmake runs it in good and bad layouts. */
#include <stdio.h>
#include <manymalloc/myrmics.h>

int myrmics_main(int argc, char **argv) {
  (void)argc, (void)argv;
  int size = 0;
  MPI_Comm_size(sys_worker_comm(), &size);
  printf("layout: worker %d of %d, worker comm %d\n", sys_worker_id(), sys_num_workers(), size);
  return sys_barrier();
}
