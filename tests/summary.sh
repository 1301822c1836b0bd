#!/bin/sh
# tests/summary.sh FILE [NOTES [TIMES [PASSES]]] - adds up the "passed failed [skipped]" lines
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
# With PASSES (tests/build.sh's "PASS build SECONDS" and tests/run.sh's "PASS
# run SECONDS" lines, and make test's "all start EPOCH"), one line gives each
# pass's time and the suite's in all.
[ -n "${4:-}" ] && [ -s "$4" ] &&
	awk -v now="$(date +%s)" '
		$1 == "all" && $2 == "start" { start = $3; next }
		{ if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
		  t[$1, $2] += $3; total[$1] += $3 }
		END {
			l = ""
			for (i = 1; i <= n; i++) {
				p = order[i]
				l = l (i > 1 ? ", " : "") p " " total[p] " s (build " t[p, "build"] + 0 " s, run " t[p, "run"] + 0 " s)"
			}
			if (start) l = l "; in all " now - start " s"
			print "time: " l
		}' "$4"
[ -n "${2:-}" ] && [ -s "$2" ] && cat "$2"
counts=$1
[ -s "$counts" ] || { echo "no test ran (no counts in $counts)"; counts=/dev/null; }
awk '{ p += $1; f += $2; s += $3; if ($1 == 0 && $2 == 0 && $3 + 0 == 0) f += 1 }
     END { if (NR == 0) f += 1
           if (s > 0) printf "%d passed, %d failed, %d skipped\n", p, f, s
           else printf "%d passed, %d failed\n", p, f
           exit (f > 0) }' "$counts"
