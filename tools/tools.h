/*
 * The subcommands of the ccshim command.
 */
#ifndef CCSHIM_TOOLS_H
#define CCSHIM_TOOLS_H

int ccshim_conform_main(int argc, char** argv);
int ccshim_scan_main(int argc, char** argv);

#endif
