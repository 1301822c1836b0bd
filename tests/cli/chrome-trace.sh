#!/bin/sh
# tests/cli/chrome-trace.sh - `uniap plan --format chrome-trace` and `uniap
# export --format chrome-trace` write traces that tests/cli/chrome-trace/check.py
# accepts (the Trace Event Format, and the export's promises: docs/export.md)
# for GPipe, 1F1B, interleaved and recomputing plans; the service's
# ?format=chrome-trace answers the same JSON.  Perfetto's trace processor is
# not packaged for Debian nor on npm, so the format is checked against its
# documentation.  Needs python3.  Prints "chrome-trace: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
CHECK=tests/cli/chrome-trace/check.py

# trace NAME SCHEDULE [recompute] -- PLAN ARGS...: the plan as a trace, checked
trace() {
	tname=$1 sched=$2 extra=
	shift 2
	[ "$1" = recompute ] && { extra=recompute; shift; }
	shift # --
	check "$tname-plan" 0 "" -- "$UNIAP" plan --format chrome-trace --quiet "$@"
	cp "$tmp/out" "$tmp/$tname.json"
	check "$tname-format" 0 "ok" -- python3 "$CHECK" "$tmp/$tname.json" "$sched" $extra
}
trace gpipe gpipe -- --cluster envb-8 --model bert-huge --batch 16
trace 1f1b 1f1b -- --cluster envb-8 --model bert-huge --batch 16 --schedule 1f1b
trace interleaved interleaved -- --cluster envb-8 --model bert-huge --batch 16 --schedule interleaved \
	--virtual-stages 2 --target megatron
trace single gpipe -- --cluster dgx-a100 --model bert-huge --batch 8
# a plan document through uniap export
check export 0 "" -- "$UNIAP" export --plan schema/examples/plan-example.json --format chrome-trace \
	--cluster schema/examples/cluster-8gpu-nvlink.json --model schema/examples/model-bert-chain.json
cp "$tmp/out" "$tmp/export.json"
sched=$(sed -n 's/.*"schedule": *"\([a-z0-9]*\)".*/\1/p' schema/examples/plan-example.json | head -n 1)
check export-format 0 "ok" -- python3 "$CHECK" "$tmp/export.json" "${sched:-gpipe}"
# the same plan with its transformer layers recomputing: their backward units say so
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for l in d["layers"][1:-1]:
    l["strategy"]["recompute"] = True
    l["strategy"]["name"] += "+rc"
json.dump(d, open(sys.argv[2], "w"))' schema/examples/plan-example.json "$tmp/rc.plan.json"
check export-recompute 0 "" -- "$UNIAP" export --plan "$tmp/rc.plan.json" --format chrome-trace \
	--cluster schema/examples/cluster-8gpu-nvlink.json --model schema/examples/model-bert-chain.json
cp "$tmp/out" "$tmp/rc.json"
check export-recompute-format 0 "ok" -- python3 "$CHECK" "$tmp/rc.json" "${sched:-gpipe}" recompute
check bad-format 2 "chrome-trace" -- "$UNIAP" plan --cluster envb-8 --model bert-huge --batch 16 --format perfetto
# the makespan objective: 1F1B's TPI is the iteration as drawn, to the last bit of the
# trace's precision, and the plan document says so next to the formula's TPI, which
# bounds it; uniap evaluate reproduces it from the document alone
trace makespan 1f1b -- --cluster envb-8 --model bert-huge --batch 16 --schedule 1f1b --objective makespan \
	--time-limit 30
check makespan-drawn 0 "same" -- python3 -c 'import json, sys
od = json.load(open(sys.argv[1]))["otherData"]
print("same" if abs(od["drawn_s"] - od["tpi_s"]) <= 1e-12 * od["tpi_s"] else od)' "$tmp/makespan.json"
check makespan-plan 0 "" -- "$UNIAP" plan --quiet --cluster envb-8 --model bert-huge --batch 16 --schedule 1f1b \
	--objective makespan --time-limit 30
cp "$tmp/out" "$tmp/makespan.plan.json"
check makespan-doc 0 "makespan below" -- python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["objective"], "below" if d["tpi_s"] <= d["formula_tpi_s"] else "above")' "$tmp/makespan.plan.json"
check makespan-evaluate 0 "same" -- sh -c '"$1" evaluate --cluster envb-8 --model bert-huge --batch 16 --plan "$2" |
	python3 -c "import json, sys
e = json.load(sys.stdin); d = json.load(open(sys.argv[1]))
print(\"same\" if e[\"tpi_s\"] == d[\"tpi_s\"] else (e[\"tpi_s\"], d[\"tpi_s\"]))" "$2"' sh "$UNIAP" "$tmp/makespan.plan.json"
check makespan-bad 2 "--objective: must be formula or makespan" -- "$UNIAP" plan --cluster envb-8 \
	--model bert-huge --batch 16 --objective fastest
# interleaved too: its list schedule as drawn is the TPI
trace makespan-il interleaved -- --cluster envb-8 --model bert-huge --batch 16 --schedule interleaved \
	--virtual-stages 2 --target megatron --objective makespan --time-limit 30
check makespan-il-drawn 0 "same" -- python3 -c 'import json, sys
od = json.load(open(sys.argv[1]))["otherData"]
print("same" if abs(od["drawn_s"] - od["tpi_s"]) <= 1e-12 * od["tpi_s"] else od)' "$tmp/makespan-il.json"
sed 's/"objective": *"makespan"/"objective": "quickest"/' "$tmp/makespan.plan.json" >"$tmp/bad-objective.json"
check makespan-bad-doc 1 "plan.objective" -- "$UNIAP" evaluate --plan "$tmp/bad-objective.json" \
	--cluster envb-8 --model bert-huge --batch 16

# the service: the same trace for a job's plan
if start_uniapd --no-auth; then
	U=http://127.0.0.1:$port
	job=$(curl -s -o /dev/null -w '%header{location}' -H 'Content-Type: application/json' \
		-d '{"cluster":"envb-8","model":"bert-huge","batch":16}' "$U/v1/plans")
	check service 0 "" -- curl -s -f -D "$tmp/hdr" "$U$job/plan?format=chrome-trace&wait=60"
	cp "$tmp/out" "$tmp/service.json"
	check service-type 0 "application/json" -- cat "$tmp/hdr"
	check service-format 0 "ok" -- python3 "$CHECK" "$tmp/service.json" gpipe
	check service-same 0 "" -- cmp "$tmp/service.json" "$tmp/gpipe.json"
	# the makespan objective through the service: the plan says so; a bad one names the field
	job=$(curl -s -o /dev/null -w '%header{location}' -H 'Content-Type: application/json' \
		-d '{"cluster":"envb-8","model":"bert-huge","batch":16,"schedule":"1f1b","objective":"makespan","time_limit_s":30}' \
		"$U/v1/plans")
	# waits on the job's end, not on a time: up to ten long polls
	check service-makespan 0 "makespan below" -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do
		curl -s "$1" >"$2" && grep -q "\"tpi_s\"" "$2" && break; done; python3 -c "import json, sys
d = json.load(sys.stdin)
print(d.get(\"objective\", d), \"below\" if d[\"tpi_s\"] <= d[\"formula_tpi_s\"] else \"above\")" <"$2"' sh "$U$job/plan?wait=60" "$tmp/ms.out"
	check service-makespan-bad 0 "422 objective" -- sh -c 'code=$(curl -s -w "%{http_code}" -o "$2" \
		-H "Content-Type: application/json" \
		-d "{\"cluster\":\"envb-8\",\"model\":\"bert-huge\",\"batch\":16,\"objective\":\"quick\"}" "$1/v1/plans")
		grep -q "\.objective: must be" "$2" && echo "$code objective"' sh "$U" "$tmp/bad.out"
	stop_uniapd
else
	echo "FAIL start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	fail=$((fail + 1))
fi
summary chrome-trace
