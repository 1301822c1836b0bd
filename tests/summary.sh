#!/bin/sh
# tests/summary.sh FILE - adds up the "passed failed" lines tests/run.sh wrote
# and prints the closing line "N passed, N failed"; exits 1 if any failed.
# A pass that failed before running (a build error) appends "0 0" after its own
# lines; it is counted as one failure.
awk '{ p += $1; f += $2; if ($1 == 0 && $2 == 0) f += 1 }
     END { printf "%d passed, %d failed\n", p, f; exit (f > 0) }' "$1"
