/*
 * The disk's own tail, with no runtime in the way: four ways of writing a ~220-byte line durably, taking
 * turns in half-second blocks for N seconds, each timed per write. Not part of `npm run bench` (it needs a C
 * compiler); the append-latency suite measures the same floor from Node. Run it on the disk the store uses:
 *   gcc -O2 -o /tmp/disk-tail bench/disk-tail.c && d=$(mktemp -d) && /tmp/disk-tail "$d" 10; rm -rf "$d"
 * Prints p50, p99, p99.9, max (ms) and p99.9 / p50 for each way (README, "Costs that follow the work").
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, int n) {
  qsort(v, n, sizeof(double), by_value);
  printf("%-22s n=%6d p50 %.3f p99 %.3f p99.9 %.3f max %.1f ratio %.2f\n", name, n, v[n / 2], v[(int)(n * .99)],
         v[(int)(n * .999)], v[n - 1], v[(int)(n * .999)] / v[n / 2]);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <folder> <seconds>\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  int seconds = atoi(argv[2]);
  char path[4][512];
  char line[220];
  memset(line, 'x', sizeof line - 1);
  line[sizeof line - 1] = '\n';
  snprintf(path[0], sizeof path[0], "%s/append.jsonl", dir);
  snprintf(path[1], sizeof path[1], "%s/overwrite.jsonl", dir);
  snprintf(path[2], sizeof path[2], "%s/fdatasync.jsonl", dir);
  snprintf(path[3], sizeof path[3], "%s/fallocated.jsonl", dir);
  /* 1: an O_DSYNC append, as the store writes its log. */
  int append = open(path[0], O_WRONLY | O_APPEND | O_CREAT | O_DSYNC | O_TRUNC, 0644);
  /* 2: O_DSYNC writes into a file filled with zeros beforehand: the size never changes, no metadata waits. */
  int overwrite = open(path[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char *zeros = calloc(1, 1 << 20);
  for (int i = 0; i < 200; i++)
    if (write(overwrite, zeros, 1 << 20) != 1 << 20) return 1;
  fsync(overwrite);
  close(overwrite);
  overwrite = open(path[1], O_WRONLY | O_DSYNC);
  /* 3: a plain append followed by fdatasync. */
  int datasync = open(path[2], O_WRONLY | O_APPEND | O_CREAT | O_TRUNC, 0644);
  /* 4: O_DSYNC writes into space reserved with fallocate (blocks allocated, the size still grows). */
  int reserved = open(path[3], O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
  fallocate(reserved, FALLOC_FL_KEEP_SIZE, 0, (off_t)200 << 20);
  fsync(reserved);
  if (append < 0 || overwrite < 0 || datasync < 0 || reserved < 0) {
    perror("open");
    return 1;
  }
  int most = 400000;
  double *a = malloc(most * sizeof(double)), *o = malloc(most * sizeof(double));
  double *d = malloc(most * sizeof(double)), *r = malloc(most * sizeof(double));
  int na = 0, no = 0, nd = 0, nr = 0;
  off_t overwrite_at = 0, reserved_at = 0;
  for (int s = 0; s < seconds; s++) {
    double until = now_ms() + 500;
    while (now_ms() < until && na < most) {
      double t = now_ms();
      if (write(append, line, sizeof line) < 0) return 1;
      a[na++] = now_ms() - t;
    }
    until = now_ms() + 500;
    while (now_ms() < until && no < most && overwrite_at + (off_t)sizeof line <= (off_t)200 << 20) {
      double t = now_ms();
      if (pwrite(overwrite, line, sizeof line, overwrite_at) < 0) return 1;
      overwrite_at += sizeof line;
      o[no++] = now_ms() - t;
    }
    until = now_ms() + 500;
    while (now_ms() < until && nd < most) {
      double t = now_ms();
      if (write(datasync, line, sizeof line) < 0 || fdatasync(datasync) < 0) return 1;
      d[nd++] = now_ms() - t;
    }
    until = now_ms() + 500;
    while (now_ms() < until && nr < most) {
      double t = now_ms();
      if (pwrite(reserved, line, sizeof line, reserved_at) < 0) return 1;
      reserved_at += sizeof line;
      r[nr++] = now_ms() - t;
    }
  }
  report("append O_DSYNC", a, na);
  report("overwrite O_DSYNC", o, no);
  report("append+fdatasync", d, nd);
  report("fallocated O_DSYNC", r, nr);
  return 0;
}
