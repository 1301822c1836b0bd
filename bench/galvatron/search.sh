#!/bin/sh
# bench/galvatron/search.sh - Galvatron v2.4.0's own parallelism search per scenario.
#
# Runs GalvatronSearchEngine.parallelism_optimization() (through
# bench/galvatron/model.py search) for each model x cluster at batch 16 and
# 80 GB, one search at a time, and writes the config Galvatron picks with its
# own evaluation to OUTDIR/search-<model>-<NxG>-b<B>.json; one line per search
# (rc, seconds) to stdout and OUTDIR/search-times.txt.  Existing results are
# kept, so an interrupted run resumes.  Searches take 15-110 s each on 2 cores.
# T5-3B is not searched: v2.4.0 cannot read its profile (int('[512,512]')).
#
# Needs: GALVATRON_SRC, a checkout of PKU-DAIR/Hetu-Galvatron at commit
# 498bcadeb6ff80cd246bdc4321124da0f4b2d89b (v2.4.0), no default;
# python3-numpy (PYTHON, default /usr/bin/python3, Debian's python3 that
# python3-numpy serves); g++ and pybind11-dev for Galvatron's DP core, built on
# first use into GALVATRON_BUILD (default build/galvatron/dp-core); the fixtures
# (FIX, default ../shared/fixtures/galvatron-v2.4.0).  Nothing of Galvatron is
# copied into this repository.
#
# usage (from the repository root): bench/galvatron/search.sh [OUTDIR]
#   OUTDIR default build/galvatron/out; BATCH default 16; TMO seconds per
#   search (default 600); MODELS, CLUSTERS space-separated subsets.
set -u
[ -n "${GALVATRON_SRC:-}" ] || {
	echo "search.sh: set GALVATRON_SRC to a checkout of PKU-DAIR/Hetu-Galvatron at 498bcadeb6ff80cd246bdc4321124da0f4b2d89b" >&2
	exit 1
}
export GALVATRON_SRC
O=${1:-build/galvatron/out}
B=${BATCH:-16}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
mkdir -p "$O"
for c in ${CLUSTERS:-1x4 1x8 2x8}; do
	for m in ${MODELS:-bert-large gpt-1.5b gpt-2.7b gpt-6.7b llama-7b vit-huge swin-huge vit-xhuge}; do
		f="$O/search-$m-$c-b$B.json"
		[ -s "$f" ] && continue
		s=$(date +%s)
		# --max-tp-deg 0: the largest TP all three other_memory entries profile
		# (v2.4.0 raises KeyError above it: dynamic_programming.py:491-492)
		if timeout "${TMO:-600}" "$PY" bench/galvatron/model.py search --model "$m" --cluster "$c" \
			--bsz "$B" --max-tp-deg 0 >"$f.tmp" 2>"$f.err"; then
			mv "$f.tmp" "$f"; rc=0
		else
			rc=$?; rm -f "$f.tmp"
		fi
		echo "search $m $c: rc $rc, $(( $(date +%s) - s )) s" | tee -a "$O/search-times.txt"
	done
done
