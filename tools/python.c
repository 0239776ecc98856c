/*
 * The subcommands that are JAX's machinery driven from Python: `ccshim
 * rewrite` reads and writes jax.export artifacts with jax.export and
 * jaxlib's MLIR bindings, which only exist in Python.  The command runs
 * the ccshim package's entry point in $CCSHIM_PYTHON (when unset: the Python
 * the build was configured with, CCSHIM_PYTHON_DEFAULT, else python3),
 * with the arguments as given; a Python without JAX or ccshim gets a
 * message saying so, and exit status 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools.h"

/* Run as `python -c BOOT COMMAND ARGS...`: imports the entry point, and
 * turns its absence into the command's usual exit status for bad set-up. */
static const char boot[] =
    "import sys\n"
    "cmd, module = sys.argv[1], sys.argv[2]\n"
    "try:\n"
    "    import importlib\n"
    "    main = importlib.import_module(module).main\n"
    "except ImportError as e:\n"
    "    print(f'ccshim {cmd}: needs a Python with JAX and the ccshim package ({e}); '\n"
    "          f'set CCSHIM_PYTHON to one (this was {sys.executable})', file=sys.stderr)\n"
    "    sys.exit(2)\n"
    "sys.exit(main(sys.argv[3:]))\n";

const char* ccshim_python_path(void) {
  const char* python = getenv("CCSHIM_PYTHON");
#ifdef CCSHIM_DEFAULT_PYTHON
  /* The Python this build was configured with (the Makefile's venv). */
  if (python == NULL || python[0] == '\0') python = CCSHIM_DEFAULT_PYTHON;
#endif
  if (python == NULL || python[0] == '\0') python = "python3";
  return python;
}

int ccshim_python_exec(const char* command, const char* module, int argc, char** argv) {
  const char* python = ccshim_python_path();
  char** args = calloc((size_t)argc + 6, sizeof *args);
  if (args == NULL) return ENOMEM;
  args[0] = (char*)python;
  args[1] = "-c";
  args[2] = (char*)boot;
  args[3] = (char*)command;
  args[4] = (char*)module;
  for (int i = 0; i < argc; i++) args[5 + i] = argv[i];
  fflush(NULL);
  execvp(python, args);
  int e = errno;
  free(args);
  return e;
}

int ccshim_python_main(const char* command, const char* module, int argc, char** argv) {
  int e = ccshim_python_exec(command, module, argc, argv);
  fprintf(stderr,
          "ccshim %s: cannot run %s (%s); this command needs a Python with JAX and the "
          "ccshim package: set CCSHIM_PYTHON to one\n",
          command, ccshim_python_path(), strerror(e));
  return 2;
}
