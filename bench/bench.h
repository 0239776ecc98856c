/*
 * The benchmark behind `ccshim bench` (bench/bench.c).
 */
#ifndef CCSHIM_BENCH_H
#define CCSHIM_BENCH_H

/* Runs the benchmark; `self` is the path of the running ccshim executable
 * (it re-runs itself under callgrind).  Returns the process exit code. */
int ccshim_bench_main(const char* self, int argc, char** argv);

#endif
