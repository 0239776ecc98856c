/*
 * The subcommands of the ccshim command.
 */
#ifndef CCSHIM_TOOLS_H
#define CCSHIM_TOOLS_H

#include <stddef.h>
#include <stdio.h>

int ccshim_conform_main(int argc, char** argv);

/* A reference run of a legacy kernel, for `conform --reference` (ccshim.conform
 * passes XLA's legacy path): runs `kernel` (form `api`, buffers as
 * `signature` says) on args, writing rets; 0 ran, 1 the kernel failed,
 * 2 the reference cannot run it; `message` says why. */
typedef int (*ccshim_conform_reference_fn)(void* kernel, int api, const char* signature,
                                           const unsigned char* opaque, size_t opaque_len,
                                           void* const* args, size_t num_args, void* const* rets,
                                           size_t num_rets, char* message, size_t cap);

/* A target's --init (ccshim.conform calls MODULE.FUNC()), run in each of
 * conform's child processes before the kernel is called, under the same
 * deadline: 0 ran (or there is none for this target), else `message` says
 * what it did. */
typedef int (*ccshim_conform_init_fn)(char* message, size_t cap);

/* A manifest line that names Python options (--python, --init,
 * --reference), resolved by ccshim.conform: given the line's words and the
 * manifest's directory, sets *kernel (NULL: LIB SYMBOL are loaded as usual)
 * and *reference (1: the reference runs the legacy side), and writes the
 * words left for the engine into `words`, each NUL-terminated, an empty one
 * after the last.  0, or 2 with `message` saying why the line is wrong. */
typedef int (*ccshim_conform_resolve_fn)(int argc, char** argv, const char* dir, void** kernel,
                                         int* reference, char* words, size_t words_cap,
                                         char* message, size_t cap);

/* `ccshim conform ARGS` run inside a Python process (ccshim.conform, through
 * ctypes): with `kernel` the legacy kernel at that address in this process
 * (LIB SYMBOL then only name it in the report), with `reference` the legacy
 * side run by it, named `name` in the report, with `init` called in each
 * child first, and with `resolve` a manifest's Python lines resolved (then
 * `reference` serves the lines that ask for it).  The exit status. */
__attribute__((visibility("default"))) int ccshim_conform_embedded(
    void* kernel, ccshim_conform_reference_fn reference, const char* name,
    ccshim_conform_init_fn init, ccshim_conform_resolve_fn resolve, int argc, char** argv);

/* conform's options, for ccshim.conform (through ctypes): the i-th
 * option's name, its value's placeholder (NULL for a flag) and where it is
 * handled (0 the command, 1 Python, 2 a target's words); 0 past the last.
 * The strings are static. */
__attribute__((visibility("default"))) int ccshim_conform_option(size_t i, const char** name,
                                                                 const char** value, int* where);

int ccshim_scan_main(int argc, char** argv);

/* Runs `main(argv)` of the Python module `module` (ccshim.export for
 * `rewrite`) in $CCSHIM_PYTHON, or python3; returns only on failure to
 * start it (exit status 2, with a message naming `command`). */
int ccshim_python_main(const char* command, const char* module, int argc, char** argv);

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
