/* The compare benches' read bar: the machine's one-thread read of the same files, as C does it.
 * bench/lib.ts compiles this with the system C compiler (cc -O2) and runs it as a server, so its
 * runs interleave with the other contenders' and no process start is timed:
 *   read BUF_BYTES FILE...
 * prints "ready", then for every line on stdin reads every file once, front to back, with read(2)
 * into one reused BUF_BYTES buffer (open, read to EOF, close), and prints
 * "<seconds> <bytes>" (CLOCK_MONOTONIC around the whole pass). It exits at the end of stdin. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: read BUF_BYTES FILE...\n");
    return 2;
  }
  const size_t size = strtoull(argv[1], NULL, 10);
  char* buf = NULL;
  if (size == 0 || posix_memalign((void**)&buf, 4096, size) != 0) {
    fprintf(stderr, "read: bad buffer size %s\n", argv[1]);
    return 2;
  }
  printf("ready\n");
  fflush(stdout);
  char line[64];
  while (fgets(line, sizeof line, stdin)) {
    unsigned long long total = 0;
    const double t0 = now();
    for (int i = 2; i < argc; i++) {
      const int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        perror(argv[i]);
        return 1;
      }
      for (;;) {
        const ssize_t n = read(fd, buf, size);
        if (n < 0) {
          perror(argv[i]);
          return 1;
        }
        if (n == 0) break;
        total += (unsigned long long)n;
      }
      close(fd);
    }
    printf("%.9f %llu\n", now() - t0, total);
    fflush(stdout);
  }
  return 0;
}
