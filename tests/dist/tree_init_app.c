/* SPDX-License-Identifier: Apache-2.0 */
/* tree_init_app.c: a program with its own main() that reports what
 * sys_init() made of MANYMALLOC_SCHEDULERS and
 * MANYMALLOC_WORKERS_PER_SCHEDULER: the code when it fails (exit status 2),
 * else one line a worker naming the scheduler that owns a region it
 * creates with no hint (its leaf) and the tree's size. tree_config_check.cmake
 * runs it in good and bad configurations. */
#include <stdio.h>
#include <manymalloc/myrmics.h>

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int role = sys_init(&argc, &argv);
  if (role < 0) {
    printf("tree_init: sys_init returned %d (%s)\n", role, sys_strerror(role));
    sys_finalize();
    return 2;
  }
  if (role == 1) return sys_finalize() == 0 ? 0 : 1;

  int rank = -1, world = -1;
  MPI_Comm_rank(sys_worker_comm(), &rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  rid_t r = sys_ralloc(0, 0);
  sys_region_stats_t s = {0};
  sys_sched_stats_t t = {0};
  int rc = r > 0 ? sys_region_stats(r, 0, &s) : (int)r;
  int rc2 = sys_sched_stats(&t);
  if (rc == 0) rc = sys_rfree(r);
  printf("tree_init: worker %d of %d, comm rank %d, world rank %d, leaf scheduler %lld level %lld, "
         "%lld schedulers %lld levels, status %d %d\n",
         sys_worker_id(), sys_num_workers(), rank, world, (long long)s.scheduler, (long long)s.scheduler_level,
         (long long)t.schedulers, (long long)t.levels, rc, rc2);
  int bad = rc != 0 || rc2 != 0 || sys_barrier() != 0;
  return sys_finalize() != 0 || bad;
}
