/* conform: the report, as a table or as JSON, and --help. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

/* --- Output ---------------------------------------------------------------------------- */

static const char* status_word(int s) {
  static const char* const words[] = {"equal", "DIFFER", "CRASHED", "ERROR", "OVERRAN"};
  return words[s];
}

static const char* json_status(int s) {
  static const char* const words[] = {"equal", "differ", "crashed", "error", "overran"};
  return words[s];
}

/* The reference of every report, or -1 when they differ (a manifest whose
 * lines ask for different ones). */
static int common_reference(const report* r, int n) {
  for (int i = 1; i < n; i++)
    if (r[i].by_reference != r[0].by_reference) return -1;
  return n ? r[0].by_reference : 0;
}

void conform_print_reports(const report* r, int n, int json) {
  int common = common_reference(r, n);
  if (json) {
    int all = 1;
    printf("{\n  \"targets\": [\n");
    for (int i = 0; i < n; i++) {
      all &= r[i].status == 0;
      printf("    {\"target\": ");
      ccshim_tool_json_string(stdout, r[i].symbol);
      printf(", \"library\": ");
      ccshim_tool_json_string(stdout, r[i].lib);
      printf(", \"form\": ");
      ccshim_tool_json_string(stdout, r[i].form);
      printf(", \"signature\": ");
      ccshim_tool_json_string(stdout, r[i].signature);
      printf(", \"runs\": %d, \"equal\": %d, \"both_failed\": %d, \"status\": \"%s\"", r[i].runs,
             r[i].equal, r[i].failed, json_status(r[i].status));
      if (r[i].first_byte >= 0)
        printf(", \"first_difference\": {\"result\": %zu, \"byte\": %ld}", r[i].first_result,
               r[i].first_byte);
      if (common < 0) {
        printf(", \"reference\": ");
        ccshim_tool_json_string(stdout, conform_reference_name(r[i].by_reference));
      }
      printf(", \"detail\": ");
      ccshim_tool_json_string(stdout, r[i].detail ? r[i].detail : "");
      if (r[i].output) {
        printf(", \"kernel_output\": ");
        ccshim_tool_json_string(stdout, r[i].output);
      }
      if (r[i].failure) {
        printf(", \"failure_message\": ");
        ccshim_tool_json_string(stdout, r[i].failure);
      }
      printf("}%s\n", i + 1 < n ? "," : "");
    }
    printf("  ],\n  \"reference\": ");
    ccshim_tool_json_string(stdout, common < 0 ? "per target" : conform_reference_name(common));
    printf(",\n  \"all_equal\": %s\n}\n", all ? "true" : "false");
    return;
  }
  int wt = 6, wf = 4, ws = 9;
  for (int i = 0; i < n; i++) {
    int a = (int)strlen(r[i].symbol), f = (int)strlen(r[i].form), b = (int)strlen(r[i].signature);
    wt = a > wt ? a : wt;
    wf = f > wf ? f : wf;
    ws = b > ws ? b : ws;
  }
  wt = wt > 40 ? 40 : wt;
  ws = ws > 60 ? 60 : ws;
  printf("%-*s  %-*s  %-*s  %4s  %5s  %6s  %s\n", wt, "target", wf, "form", ws, "signature", "runs",
         "equal", "failed", "result");
  int equal = 0;
  for (int i = 0; i < n; i++) {
    printf("%-*s  %-*s  %-*s  %4d  %5d  %6d  %s%s%s\n", wt, r[i].symbol, wf, r[i].form, ws,
           r[i].signature, r[i].runs, r[i].equal, r[i].failed, status_word(r[i].status),
           r[i].detail ? ": " : "", r[i].detail ? r[i].detail : "");
    if (r[i].failure) printf("    (both failed alike: %s)\n", r[i].failure);
    if (r[i].output) printf("    (%s)\n", r[i].output);
    equal += r[i].status == 0;
  }
  printf("%d of %d targets equal (failed: runs where both sides failed alike)\n", equal, n);
  if (common >= 0) {
    printf("reference: %s\n", conform_reference_name(common));
    return;
  }
  printf("reference: %s, and for", conform_reference_name(0));
  for (int i = 0, k = 0; i < n; i++)
    if (r[i].by_reference) printf("%s %s", k++ ? "," : "", r[i].symbol);
  printf(": %s\n", conform_reference_name(1));
}

/* Writes `text` from column `indent`, wrapped before column 79. */
static void wrapped(FILE* to, const char* text, int indent, int column) {
  while (*text) {
    int room = 79 - column, n = (int)strlen(text);
    if (n > room) {
      n = room;
      while (n > 0 && text[n] != ' ') n--;
      if (n == 0) n = (int)strcspn(text, " ");
    }
    fprintf(to, "%.*s\n", n, text);
    text += n;
    while (*text == ' ') text++;
    if (*text) fprintf(to, "%*s", indent, "");
    column = indent;
  }
}

/* --help: the usage, every option from conform_options, examples. */
void conform_print_usage(FILE* to) {
  fputs(
      "usage: ccshim conform LIB SYMBOL --api N --signature SIG [options]\n"
      "       ccshim conform --python MODULE[:ATTR] [NAME] [--init FUNC] --api N\n"
      "                      --signature SIG [options]\n"
      "       ccshim conform --manifest FILE [--json]\n"
      "       (any of these with --reference xla)\n"
      "\n"
      "Runs a legacy kernel through XLA's legacy convention (ccshim's invoker) and\n"
      "through an adapter in the embedded typed runtime, each side in a child process\n"
      "that alone loads LIB, on the same deterministic inputs, and compares results.\n"
      "\n",
      to);
  for (size_t k = 0; k < conform_num_options; k++) {
    const option_spec* o = &conform_options[k];
    char head[64];
    int n = snprintf(head, sizeof head, "  %s%s%s", o->name, o->value ? " " : "",
                     o->value ? o->value : "");
    if (n > 30) {
      fprintf(to, "%s\n%30s", head, "");
    } else {
      fprintf(to, "%-30s", head);
    }
    wrapped(to, o->help, 30, 30);
  }
  fputs(
      "\n"
      "A manifest has one target a line in the same words ('#' comments, quotes group).\n"
      "Exit status: 0 all equal, 1 a target differs or failed, 2 the command is wrong.\n"
      "\n"
      "examples:\n"
      "  ccshim conform ./libk.so add_v2 --api 2 --signature '(f32[4], f32[4]) -> f32[4]'\n"
      "  ccshim conform ./libk.so add_v3 --api 3 --signature '(f32[8]) -> f32[8]' \\\n"
      "      --opaque-hex 0000c03f --runs 10 --json\n"
      "  ccshim conform --manifest kernels.manifest\n"
      "  ccshim conform --python jaxlib/cpu/_lapack.so lapack_spotrf --init initialize \\\n"
      "      --api 2 --signature '(s32[], s32[], s32[], f32[4,4]) -> (f32[4,4], s32[])' \\\n"
      "      --arg-hex 0=00000000 --arg-hex 1=01000000 --arg-hex 2=04000000\n"
      "  ccshim conform --manifest kernels.manifest --reference xla\n",
      to);
}
