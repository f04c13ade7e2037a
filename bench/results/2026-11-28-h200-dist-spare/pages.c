/* SPDX-License-Identifier: Apache-2.0 */
/* pages.c: what a 7.7 MB landing costs: fault, populate, copy into touched pages, or pages moved in with mremap; P processes at once (decision 0009). gcc -O2 pages.c -o pages && ./pages 16 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define LEN (7680000ul & ~4095ul)
#define STAGES 60
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
static double run(int mode){
  char *src=malloc(LEN); memset(src,1,LEN);
  size_t span=(size_t)STAGES*LEN*2;
  char *area=mmap(NULL,span,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0);
  char *pool=mmap(NULL,LEN,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0);
  memset(pool,0,LEN); char *warm=pool;
  double t[STAGES];
  for(int i=0;i<STAGES;i++){
    char *dst=area+(size_t)i*2*LEN;
    double t0=now();
    if(mode==0){ memcpy(dst,src,LEN); madvise(dst,LEN,MADV_DONTNEED);}            /* fault */
    else if(mode==1){ madvise(dst,LEN,MADV_POPULATE_WRITE); memcpy(dst,src,LEN); madvise(dst,LEN,MADV_DONTNEED);}
    else if(mode==2){ memcpy(warm,src,LEN);}                                         /* warm */
    else { void*r=mremap(pool,LEN,LEN,MREMAP_MAYMOVE|MREMAP_FIXED,dst); if(r==MAP_FAILED){perror("mremap");exit(1);}
           mmap(pool,LEN,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE|MAP_FIXED,-1,0);
           memcpy(dst,src,LEN);
           r=mremap(dst,LEN,LEN,MREMAP_MAYMOVE|MREMAP_FIXED,pool); if(r==MAP_FAILED){perror("mremap2");exit(1);}
           mmap(dst,LEN,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE|MAP_FIXED,-1,0);}
    t[i]=now()-t0;
  }
  qsort(t,STAGES,sizeof *t,cmpd); return t[STAGES/2];
}
int main(int argc,char**argv){
  int P=atoi(argv[1]);
  const char*names[]={"fault","populate","warm","mremap"};
  for(int mode=0;mode<4;mode++){
    int fd[2]; pipe(fd);
    for(int p=0;p<P;p++) if(fork()==0){ double m=run(mode); write(fd[1],&m,sizeof m); _exit(0);}
    double sum=0,m; for(int p=0;p<P;p++){read(fd[0],&m,sizeof m); sum+=m;} while(wait(NULL)>0);
    printf("P=%d %-8s %.3f ms per 7.7 MB stage (mean of medians)\n",P,names[mode],sum/P*1e3);
  }
}
