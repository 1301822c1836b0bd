#!/bin/sh
# tests/summary.sh FILE [NOTES [TIMES]] - adds up the "passed failed [skipped]" lines
# tests/run.sh wrote and prints the closing line "N passed, N failed" (with
# ", N skipped" when a script skipped for want of a tool); exits 1 if any
# failed.  A pass that failed before running (a build error) appends "0 0"
# after its own lines; it is counted as one failure.  The lines of NOTES (what
# failed, and which programs skipped and why: tests/build.sh and tests/run.sh
# write them) come just before the
# closing line, which stays last; no counts at all is a failure too.  With
# TIMES (tests/run.sh's "PASS SECONDS PROGRAM" lines), one line before them
# names the five slowest programs, so a suite that grows slow says where.
[ -n "${3:-}" ] && [ -s "$3" ] &&
	sort -k2,2nr "$3" | head -n 5 | awk '{ l = l (NR > 1 ? ", " : "") $3 " (" $1 ") " $2 " s" }
		END { print "slowest: " l }'
[ -n "${2:-}" ] && [ -s "$2" ] && cat "$2"
counts=$1
[ -s "$counts" ] || { echo "no test ran (no counts in $counts)"; counts=/dev/null; }
awk '{ p += $1; f += $2; s += $3; if ($1 == 0 && $2 == 0 && $3 + 0 == 0) f += 1 }
     END { if (NR == 0) f += 1
           if (s > 0) printf "%d passed, %d failed, %d skipped\n", p, f, s
           else printf "%d passed, %d failed\n", p, f
           exit (f > 0) }' "$counts"
