/*
 * `ccshim bench`'s report (bench/bench.c measures): the table on stdout and
 * the JSON, each naming the build, compiler and flags of the figures.
 */
#include "bench_report.h"

#include <unistd.h>

#include "ccshim/ccshim.h"
#include "tools.h"

/* The adapter's time against a hand-written handler's (B1 or B1x): "met"
 * when its median is at most the reference's, "in spread" when above it but
 * inside the reference's interquartile range, else "MISSED". */
static const char* time_verdict(const spread* b1, const spread* b2) {
  if (b2->median <= b1->median) return "met";
  if (b2->median <= b1->q3) return "in spread";
  return "MISSED";
}

/* (v - B0) / (ref - B0) in instructions: a variant's overhead over the
 * floor relative to a hand-written handler's (the adapter's: v = 2). */
static double over(const double* i, int v, int ref) { return (i[v] - i[0]) / (i[ref] - i[0]); }
static double over_ref(const double* i, int ref) { return over(i, 2, ref); }

/* The table's cells for a variant: instructions ("-" when not measured or
 * not built) and the median time with its quartiles. */
static void cell_ins(char* buf, size_t cap, const results* r, const double* i, int v, int f) {
  if (r->have_instr && variant_built(v, f))
    snprintf(buf, cap, "%.0f", i[v]);
  else
    snprintf(buf, cap, "-");
}
/* over(v, ref), or "-" when not measured. */
static void cell_ratio(char* buf, size_t cap, int measured, const double* i, int v, int ref) {
  if (measured)
    snprintf(buf, cap, "%.2f", over(i, v, ref));
  else
    snprintf(buf, cap, "-");
}
static void cell_ns(char* buf, size_t cap, const spread* t, int v, int f) {
  if (variant_built(v, f))
    snprintf(buf, cap, "%.2f [%.2f-%.2f]", t[v].median, t[v].q1, t[v].q3);
  else
    snprintf(buf, cap, "-");
}

/* The table on stdout; returns 1 when every row met the instruction
 * target against every reference built (or instructions were not
 * measured). */
int ccshim_bench_print_table(const results* r) {
  printf(
      "ccshim %s bench: per call, the same trivial legacy kernel and frame\n"
      "  build: %s, %s, flags: %s\n"
      "  B1x: %s%s%s%s\n"
      "  B0 direct call (floor)   B1 hand-written typed handler (C API)   B1x hand-written "
      "(ffi.h)\n  B2 ccshim adapter (prebuilt entry)   B2c (libffi closure)   P the handler "
      "`ccshim port` writes\n  where the call sites fix the counts (Arg and Ret per buffer)   Pr "
      "where "
      "they are known\n  only at run time (RemainingArgs, RemainingRets)   B1r hand-written "
      "(ffi.h) "
      "for\n  counts known only at run time (RemainingArgs, RemainingRets, get<AnyBuffer>)\n\n",
      ccshim_version(), CCSHIM_BENCH_BUILD_TYPE, CCSHIM_BENCH_COMPILER, CCSHIM_BENCH_FLAGS,
      CCSHIM_BENCH_HAVE_FFI ? CCSHIM_BENCH_CXX_COMPILER : "not built: ",
      CCSHIM_BENCH_HAVE_FFI ? ", flags: " : "",
      CCSHIM_BENCH_HAVE_FFI ? CCSHIM_BENCH_CXX_FLAGS : CCSHIM_BENCH_FFI_ABSENT,
      CCSHIM_BENCH_HAVE_FFI ? " -std=c++17" : "");
  printf(
      "%-7s %4s | %6s %6s %7s %6s %7s %5s %6s %7s | %5s %6s %5s %6s %6s %6s | %5s %15s %15s %15s "
      "%6s %15s %15s %15s | %9s %9s %9s %9s\n",
      "form", "bufs", "B0 ins", "B1 ins", "B1x ins", "B2 ins", "B2c ins", "P ins", "Pr ins",
      "B1r ins", "B2/B1", "B2/B1x", "P/B1x", "Pr/B1x", "Pr/B1r", "ins", "B0 ns", "B1 ns [q1-q3]",
      "B1x ns [q1-q3]", "B2 ns [q1-q3]", "B2c ns", "P ns [q1-q3]", "Pr ns [q1-q3]",
      "B1r ns [q1-q3]", "time B1", "time B1x", "P time", "Pr time");
  int met = 1;
  for (int f = 0; f < NUM_FORMS; f++)
    for (int a = 0; a < NUM_ARITIES; a++) {
      const double* i = r->instr[f][a];
      const spread* t = r->ns[f][a];
      int port = variant_built(PORT, f);
      int row_met =
          !r->have_instr ||
          (over_ref(i, 1) <= TARGET && (!CCSHIM_BENCH_HAVE_FFI || over_ref(i, B1X) <= TARGET) &&
           (!port || (over(i, PORT, B1X) <= TARGET && over(i, PORT_RT, B1R) <= TARGET)));
      if (!row_met) met = 0;
      char ins[VARIANTS][16], ns[VARIANTS][32], ratio[5][16];
      for (int v = 0; v < VARIANTS; v++) {
        cell_ins(ins[v], sizeof ins[v], r, i, v, f);
        cell_ns(ns[v], sizeof ns[v], t, v, f);
      }
      cell_ratio(ratio[0], sizeof ratio[0], r->have_instr, i, 2, 1);
      cell_ratio(ratio[1], sizeof ratio[1], r->have_instr && CCSHIM_BENCH_HAVE_FFI, i, 2, B1X);
      cell_ratio(ratio[2], sizeof ratio[2], r->have_instr && port, i, PORT, B1X);
      cell_ratio(ratio[3], sizeof ratio[3], r->have_instr && port, i, PORT_RT, B1X);
      cell_ratio(ratio[4], sizeof ratio[4], r->have_instr && port, i, PORT_RT, B1R);
      printf(
          "%-7s %4d | %6s %6s %7s %6s %7s %5s %6s %7s | %5s %6s %5s %6s %6s %6s | %5.2f %15s %15s "
          "%15s %6.2f %15s %15s %15s | %9s %9s %9s %9s\n",
          form_names[f], arities[a], ins[0], ins[1], ins[B1X], ins[2], ins[3], ins[PORT],
          ins[PORT_RT], ins[B1R], ratio[0], ratio[1], ratio[2], ratio[3], ratio[4],
          r->have_instr ? (row_met ? "met" : "MISSED") : "-", t[0].median, ns[1], ns[B1X], ns[2],
          t[3].median, ns[PORT], ns[PORT_RT], ns[B1R], time_verdict(&t[1], &t[2]),
          CCSHIM_BENCH_HAVE_FFI ? time_verdict(&t[B1X], &t[2]) : "-",
          port ? time_verdict(&t[B1X], &t[PORT]) : "-",
          port ? time_verdict(&t[B1R], &t[PORT_RT]) : "-");
    }
  printf(
      "\nB2/B1, B2/B1x: the adapter's overhead over the floor, relative to each hand-written "
      "handler's:\n(B2-B0)/(B1-B0) and (B2-B0)/(B1x-B0); P/B1x: the ported handler's, "
      "(P-B0)/(B1x-B0), and\nPr/B1x, Pr/B1r the same for Pr; ins: met when B2/B1, B2/B1x, P/B1x "
      "and Pr/B1r\n<= %.2f in instructions (P, Pr, B1r: none for cpu_v3, which the port "
      "refuses; Pr/B1x\nis shown, not held to it: B1x binds fixed counts, Pr's are known only "
      "at run time,\nas B1r's are).\n"
      "ns: the median of %d interleaved runs [its quartiles]; time B1, time B1x: met when B2's "
      "median\n<= the reference's, in spread when within the reference's quartiles; P time: "
      "P's against B1x's;\nPr time: Pr's against B1r's.\n",
      TARGET, r->runs);
  if (!r->have_instr)
    printf("instructions: not measured (valgrind or its callgrind.h not available)\n");
  if (!CCSHIM_BENCH_HAVE_FFI) printf("B1x (ffi.h): not built: %s\n", CCSHIM_BENCH_FFI_ABSENT);
  printf(
      "two threads on one adapter: %.2fx one thread's throughput (target >= 1.8 on "
      "2 cores; %ld cores here)\n",
      r->scaling, sysconf(_SC_NPROCESSORS_ONLN));
  printf(
      "wrapping a kernel: %.2f us (target < 5); one adapter: %zu bytes (target < "
      "1024) plus a %zu-byte closure when it uses one\n",
      r->wrap_us, r->footprint, r->closure_bytes);
  return met;
}

/* {"B0": x, ...} of the variants built for form f, in the table's order. */
static void write_variants(FILE* j, const double* x, int f) {
  static const int order[VARIANTS] = {0, 1, B1X, 2, 3, PORT, PORT_RT, B1R};
  const char* sep = "{";
  for (int k = 0; k < VARIANTS; k++) {
    int v = order[k];
    if (!variant_built(v, f)) continue;
    fprintf(j, "%s\"%s\": %.3f", sep, variant_names[v], x[v]);
    sep = ", ";
  }
  fprintf(j, "}");
}

static void write_spread(FILE* j, const spread* t, int f) {
  double median[VARIANTS];
  for (int v = 0; v < VARIANTS; v++) median[v] = t[v].median;
  write_variants(j, median, f);
  fprintf(j, ", \"ns_spread\": {");
  const char* sep = "";
  for (int v = 0; v < VARIANTS; v++) {
    if (!variant_built(v, f)) continue;
    fprintf(j,
            "%s\"%s\": {\"min\": %.3f, \"q1\": %.3f, \"median\": %.3f, \"q3\": %.3f, "
            "\"max\": %.3f}",
            sep, variant_names[v], t[v].min, t[v].q1, t[v].median, t[v].q3, t[v].max);
    sep = ", ";
  }
  fprintf(j, "}");
}

void ccshim_bench_write_json(FILE* j, const results* r) {
  fprintf(j, "{\n  \"version\": \"%s\",\n  \"build\": {\"type\": ", ccshim_version());
  ccshim_tool_json_string(j, CCSHIM_BENCH_BUILD_TYPE);
  fprintf(j, ", \"compiler\": ");
  ccshim_tool_json_string(j, CCSHIM_BENCH_COMPILER);
  fprintf(j, ", \"flags\": ");
  ccshim_tool_json_string(j, CCSHIM_BENCH_FLAGS);
  fprintf(j, ", \"cxx_compiler\": ");
  ccshim_tool_json_string(j, CCSHIM_BENCH_CXX_COMPILER);
  fprintf(j, ", \"cxx_flags\": ");
  ccshim_tool_json_string(j, CCSHIM_BENCH_CXX_FLAGS);
  fprintf(j, "},\n  \"ffi_reference\": {\"built\": %s, \"why_not\": ",
          CCSHIM_BENCH_HAVE_FFI ? "true" : "false");
  ccshim_tool_json_string(j, CCSHIM_BENCH_FFI_ABSENT);
  fprintf(j, "},\n  \"instructions_measured\": %s,\n  \"runs\": %d,\n  \"rows\": [\n",
          r->have_instr ? "true" : "false", r->runs);
  for (int f = 0; f < NUM_FORMS; f++)
    for (int a = 0; a < NUM_ARITIES; a++) {
      fprintf(j, "    {\"form\": \"%s\", \"buffers\": %d, \"instructions\": ", form_names[f],
              arities[a]);
      write_variants(j, r->instr[f][a], f);
      fprintf(j, ", \"ns\": ");
      write_spread(j, r->ns[f][a], f);
      fprintf(j, "}%s\n", f == NUM_FORMS - 1 && a == NUM_ARITIES - 1 ? "" : ",");
    }
  fprintf(j,
          "  ],\n  \"two_thread_scaling\": %.3f,\n  \"cores\": %ld,\n  \"wrap_us\": %.3f,\n"
          "  \"adapter_bytes\": %zu,\n  \"closure_bytes\": %zu\n}\n",
          r->scaling, sysconf(_SC_NPROCESSORS_ONLN), r->wrap_us, r->footprint, r->closure_bytes);
}
