#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int n=atoi(argv[1]); int mode=atoi(argv[2]); size_t chunk=7680000, stages=15;
  for(int p=0;p<n;p++) if(fork()==0){
    char*src=malloc(chunk); memset(src,1,chunk);
    char*m=mmap(NULL,chunk*stages+(4<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0);
    if(mode==2) madvise(m,chunk*stages+(4<<20),MADV_HUGEPAGE);
    char*reuse=malloc(chunk); memset(reuse,0,chunk);
    double t0=now(), tp=0;
    for(size_t s=0;s<stages;s++){
      char*d=mode==3?reuse:m+s*chunk;
      double a=now();
      if(mode==0||mode==2) madvise(d,chunk,23);
      tp+=now()-a;
      memcpy(d,src,chunk);
    }
    double t=now()-t0;
    printf("mode %d proc %d: total %.1f ms populate %.1f ms\n",mode,p,t*1e3,tp*1e3);
    fflush(stdout); _exit(0);
  }
  while(wait(NULL)>0);
}
