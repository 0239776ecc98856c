/*
 * The subcommands of the ccshim command.
 */
#ifndef CCSHIM_TOOLS_H
#define CCSHIM_TOOLS_H

#include <stddef.h>
#include <stdio.h>

int ccshim_conform_main(int argc, char** argv);

int ccshim_scan_main(int argc, char** argv);

/* Runs `main(argv)` of the Python module `module` (ccshim.export for
 * `rewrite`) in $CCSHIM_PYTHON, or python3; returns only on failure to
 * start it (exit status 2, with a message naming `command`). */
int ccshim_python_main(const char* command, const char* module, int argc, char** argv);

/* The same without the message: execs the Python, and returns only when it
 * could not (the errno); ccshim_python_path() is the Python it runs. */
int ccshim_python_exec(const char* command, const char* module, int argc, char** argv);
const char* ccshim_python_path(void);

/* Scans one file's text, named `name` (its extension says the language),
 * and prints the inventory to stdout; the exit status of `ccshim scan`.
 * For the fuzzer. */
int ccshim_scan_buffer(const char* name, const char* data, size_t len, int json);

/* Parses a manifest's text as `ccshim conform --manifest` does, without
 * running a target; its exit status (0, 1 for a bad line, 2 for a text
 * that is no manifest).  For the fuzzer. */
int ccshim_conform_parse_manifest(const char* data, size_t len);

/* Writes s as a JSON string: UTF-8 as it is, control characters escaped,
 * and each byte that is not UTF-8 as the lone surrogate \udcXX (Python's
 * "surrogateescape"), so that the output is valid JSON whatever a file name
 * or a kernel's message held, and the bytes can be recovered. */
void ccshim_tool_json_string(FILE* f, const char* s);

#endif
