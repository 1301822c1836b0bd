/*
 * runtimes.h - test support: the flags and config keys each training runtime
 * reads, as facts taken from its public source at a stated version
 * (the .flags and .keys files of tests/data/runtimes/: their headers say
 * where), and a
 * check of an exported body against them.
 *
 * Never: used outside the tests; the files are read from the repository root.
 */
#ifndef UNIAP_TEST_RUNTIMES_H
#define UNIAP_TEST_RUNTIMES_H

#include <stddef.h>

#include "export.h"

/*
 * Checks body (an export in format f: megatron, deepspeed or galvatron;
 * others pass) against the runtime's facts file: every Megatron-LM flag
 * exists, with an integer where it takes one and a listed choice where it has
 * choices; every leaf of a DeepSpeed or Galvatron JSON config is a key the
 * runtime reads, with a listed value where the set is closed and a
 * comma-separated integer list where it reads one.  0 when it passes, else
 * -1 with the first offence in why (n bytes).
 */
int runtime_check_export(enum exp_format f, const char *body, char *why, size_t n);

#endif
