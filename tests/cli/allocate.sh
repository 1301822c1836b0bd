#!/bin/sh
# tests/cli/allocate.sh - `uniap allocate` (docs/allocation.md): three jobs of
# the example BERT-Large chain share one 8-GPU node under each objective; the
# answer gives every job its own devices, whole inside the node, a curve per
# size with a plan for the size chosen, and the price of fairness; bad jobs
# documents are refused naming the field, jobs whose minimums cannot all run
# exit 3 saying so.  Uses tiny models: the whole script plans in about a second.
# Prints "allocate: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"

EX=schema/examples
CL=$EX/cluster-8gpu-nvlink.json
jobs() { # jobs FILE JSON-ARRAY-OF-JOBS (model "M" stands for the example model)
	jq -n --slurpfile m "$EX/model-bert-chain.json" --argjson j "$2" \
		'{jobs: [$j[] | if .model == "M" then .model = $m[0] else . end]}' >"$1"
}
jobs "$tmp/j.json" '[{"name":"a","model":"M","batch":32},
	{"name":"b","model":"M","batch":16,"weight":3,"samples":1000},
	{"name":"c","model":"M","batch":8,"min_devices":2,"samples":500}]'

check help 0 "usage: uniap allocate" -- "$UNIAP" allocate --help
check listed 2 "allocate" -- "$UNIAP"
for o in throughput fair; do
	check "$o" 0 "\"objective\":\"$o\"" -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/j.json" --objective $o --threads 2 --quiet
	cp "$tmp/out" "$tmp/$o.json"
	# every device once at most, a job inside one node or on whole nodes, a plan for each size given
	check "$o-devices" 0 true -- jq -e '[.jobs[] | select(.devices > 0) | range(.first_device; .first_device + .devices)]
		| (length == (unique | length)) and all(. >= 0 and . < 8)' "$tmp/$o.json"
	check "$o-plans" 0 true -- jq -e '.sizes as $s | all(.jobs[]; (.curve | length) == ($s | length)
		and (if .devices > 0 then .plan.pp >= 1 and .throughput_samples_per_s > 0 else .plan == null end))' "$tmp/$o.json"
	check "$o-used" 0 true -- jq -e '.devices_used == ([.jobs[].devices] | add) and .devices_used <= .devices' "$tmp/$o.json"
done
# fairness costs throughput or nothing, never more than the optimum
check fair-price 0 true -- jq -e '.price_of_fairness >= 0 and .price_of_fairness < 1' "$tmp/fair.json"
check fair-not-better 0 true -- jq -e --slurpfile t "$tmp/throughput.json" '.throughput_value <= $t[0].value + 1e-9' \
	"$tmp/fair.json"
check minimum-kept 0 true -- jq -e '.jobs[2].devices >= 2' "$tmp/throughput.json"

# bad input: the field named, exit 1; nothing fits together: exit 3
check deadline-needs-samples 1 "jobs[0].samples: the deadline objective needs the samples to go" -- \
	"$UNIAP" allocate --cluster $CL --jobs "$tmp/j.json" --objective deadline --quiet
jobs "$tmp/dup.json" '[{"name":"a","model":"M","batch":8},{"name":"a","model":"M","batch":8}]'
check duplicate-name 1 'jobs[1].name: duplicate of jobs[0].name "a"' -- \
	"$UNIAP" allocate --cluster $CL --jobs "$tmp/dup.json" --quiet
jobs "$tmp/unk.json" '[{"name":"a","model":"no-such-model","batch":8}]'
check unknown-model 1 "jobs[0].model" -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/unk.json" --quiet
jobs "$tmp/max.json" '[{"name":"a","model":"M","batch":8,"min_devices":4,"max_devices":2}]'
check max-below-min 1 "jobs[0].max_devices: must be >= min_devices (4), got 2" -- \
	"$UNIAP" allocate --cluster $CL --jobs "$tmp/max.json" --quiet
jobs "$tmp/key.json" '[{"name":"a","model":"M","batch":8,"gpus":2}]'
check unknown-key 1 "jobs[0]" -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/key.json" --quiet
jobs "$tmp/full.json" '[{"name":"a","model":"M","batch":8,"min_devices":8},{"name":"b","model":"M","batch":8,"min_devices":8}]'
check minimums-do-not-fit 3 "2 jobs cannot run together on 8 devices: a (8), b (8) need 16" -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/full.json" --quiet
check bad-objective 2 "--objective: must be throughput, fair, deadline or missed" -- \
	"$UNIAP" allocate --cluster $CL --jobs "$tmp/j.json" --objective fastest
check missing-jobs 2 "--cluster and --jobs are required" -- "$UNIAP" allocate --cluster $CL

# jobs of the same model, batch and options share their curve: planned once (4 sizes on 8 GPUs)
jobs "$tmp/twins.json" '[{"name":"a","model":"M","batch":16},{"name":"b","model":"M","batch":16,"weight":2,"min_devices":2}]'
check twins 0 '"planner_runs":4,' -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/twins.json" --quiet
cp "$tmp/out" "$tmp/twins-report.json"
# a report as a curve cache: a job of another name that plans alike needs no planner run for its
# curve, and none at all without plans
jobs "$tmp/other.json" '[{"name":"z","model":"M","batch":16,"weight":5}]'
check curves-cache 0 '"planner_runs":0,' -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/other.json" \
	--curves "$tmp/twins-report.json" --no-plans --quiet
check curves-cache-plan 0 '"planner_runs":1,' -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/other.json" \
	--curves "$tmp/twins-report.json" --quiet
# the same with a catalog cluster, whose figures a report rounds: the slices still match
check catalog-twins 0 '"planner_runs":' -- "$UNIAP" allocate --cluster envb --jobs "$tmp/twins.json" --quiet
cp "$tmp/out" "$tmp/envb-report.json"
check catalog-cache 0 '"planner_runs":0,' -- "$UNIAP" allocate --cluster envb --jobs "$tmp/other.json" \
	--curves "$tmp/envb-report.json" --no-plans --quiet

# re-planning (docs/allocation.md): 4 nodes of 4; the allocation in force, then changes
C4=$EX/cluster-16gpu-pcie-pairs.json
check first 0 '"planner_runs":' -- "$UNIAP" allocate --cluster $C4 --jobs "$tmp/j.json" --quiet
cp "$tmp/out" "$tmp/a1.json"
# nothing changed: every curve and plan carries over, nobody moves
check unchanged 0 '"planner_runs":0,' -- "$UNIAP" allocate --cluster $C4 --jobs "$tmp/j.json" --current "$tmp/a1.json" --quiet
cp "$tmp/out" "$tmp/same.json"
check unchanged-moves 0 true -- jq -e '.moves == 0 and .ended == [] and all(.jobs[]; .moved == false)' "$tmp/same.json"
# a node out of service: no job on it, jobs elsewhere that keep their size stay where they are
n=$(jq '[.jobs[] | select(.devices > 0) | .nodes[0]][0]' "$tmp/a1.json")
check drain 0 "\"drained_nodes\":[$n]" -- "$UNIAP" allocate --cluster $C4 --jobs "$tmp/j.json" --current "$tmp/a1.json" \
	--drain "$n" --quiet
cp "$tmp/out" "$tmp/a2.json"
check drain-off 0 true -- jq -e --argjson n "$n" 'all(.jobs[]; (.nodes // []) | index($n) == null) and .devices == 12' "$tmp/a2.json"
check drain-moves 0 true -- jq -e '.moves == ([.jobs[] | select(.moved)] | length) and .moves >= 1' "$tmp/a2.json"
check drain-stays 0 true -- jq -e --slurpfile a "$tmp/a1.json" '[.jobs[] | select(.moved == false and .devices > 0)
	| . as $j | $a[0].jobs[] | select(.name == $j.name) | .first_device == $j.first_device] | all' "$tmp/a2.json"
# a job ends and another arrives: the first is listed as ended, only the newcomer is planned
jq '.jobs |= (map(select(.name != "a")) + [(.[0] | .name = "d")])' "$tmp/j.json" >"$tmp/j2.json"
check arrive-end 0 '"ended":["a"]' -- "$UNIAP" allocate --cluster $C4 --jobs "$tmp/j2.json" --current "$tmp/a1.json" --quiet
cp "$tmp/out" "$tmp/a3.json"
check arrive-planned 0 true -- jq -e \
	'.planner_runs <= (.sizes | length) + ([.jobs[] | select(.devices > 0)] | length)' "$tmp/a3.json"
check bad-drain 2 "--drain: must be node indices 0 .. 3" -- "$UNIAP" allocate --cluster $C4 --jobs "$tmp/j.json" --drain 9
check drain-all 2 "--drain: must leave at least one" -- "$UNIAP" allocate --cluster $C4 --jobs "$tmp/j.json" --drain 0,1,2,3
check bad-current 1 "current: must be a report of uniap allocate" -- \
	"$UNIAP" allocate --cluster $C4 --jobs "$tmp/j.json" --current "$tmp/j.json" --quiet

# the missed objective: the fewest jobs past their deadline, then throughput.  b's deadline is
# met only with at least half of the node (its finish on 4 devices, from the throughput curve),
# c's never; a has none.
check m-curves 0 '"objective":"throughput"' -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/j.json" --quiet
cp "$tmp/out" "$tmp/m0.json"
need=$(jq '.sizes as $s | .jobs[1] | 1000 / .curve[($s | index(4))]' "$tmp/m0.json")
jq --argjson d "$need" '.jobs[1].deadline_s = $d | .jobs[2].deadline_s = 1e-6' "$tmp/j.json" >"$tmp/jm.json"
check missed 0 '"objective":"missed","value":1,' -- "$UNIAP" allocate --cluster $CL --jobs "$tmp/jm.json" \
	--objective missed --quiet
cp "$tmp/out" "$tmp/m1.json"
check missed-meets 0 true -- jq -e '.jobs[1].meets_deadline == true and .jobs[1].devices >= 4
	and .jobs[2].meets_deadline == false and (.jobs[0] | has("meets_deadline") | not)' "$tmp/m1.json"
jq '.jobs[0].deadline_s = 10' "$tmp/j.json" >"$tmp/jd.json"
check deadline-needs-samples-too 1 'jobs[0].deadline_s: a deadline needs "samples"' -- \
	"$UNIAP" allocate --cluster $CL --jobs "$tmp/jd.json" --objective missed --quiet

# pools: an 8-GPU node and 4 nodes of 4 as two pools; each job inside one of them, every device
# of a pool once at most, curves over both pools' sizes
check pools 0 '"pools":[' -- "$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/j.json" --quiet
cp "$tmp/out" "$tmp/p1.json"
check pools-shape 0 true -- jq -e '.sizes as $s | (.pools | length) == 2 and .devices == 24 and ($s | length) ==
	(.pools[0].sizes_count + .pools[1].sizes_count) and all(.jobs[]; (.curve | length) == ($s | length))
	and (has("cluster") | not)' "$tmp/p1.json"
check pools-devices 0 true -- jq -e '[.pools[].name] as $n | all($n[]; . as $p |
	[$_jobs[] | select(.pool == $p) | range(.first_device; .first_device + .devices)] | length == (unique | length))
	and all(.jobs[]; .devices == 0 or (.pool as $p | $n | index($p) != null))' --argjson _jobs "$(jq .jobs "$tmp/p1.json")" "$tmp/p1.json"
check pools-used 0 true -- jq -e '.devices_used == ([.pools[].devices_used] | add) and
	all(.pools[]; .devices_used <= .devices)' "$tmp/p1.json"
# re-planning on pools: nothing changed, nothing planned, nobody moves; a drained node of one pool
check pools-unchanged 0 '"planner_runs":0,' -- "$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/j.json" \
	--current "$tmp/p1.json" --quiet
cp "$tmp/out" "$tmp/p2.json"
check pools-unchanged-moves 0 true -- jq -e '.moves == 0 and all(.jobs[]; .moved == false)' "$tmp/p2.json"
p4=$(jq -r '.pools[1].name' "$tmp/p1.json")
check pools-drain 0 '"drained_nodes":[2]' -- "$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/j.json" \
	--current "$tmp/p1.json" --drain "$p4:2" --quiet
cp "$tmp/out" "$tmp/p3.json"
check pools-drain-off 0 true -- jq -e --arg p "$p4" '.pools[1].devices == 12 and
	all(.jobs[]; .pool != $p or ((.nodes // []) | index(2) == null))' "$tmp/p3.json"
check pools-drain-index 0 '"drained_nodes":[2]' -- "$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/j.json" \
	--curves "$tmp/p1.json" --drain 1:2 --no-plans --quiet
check pools-drain-named 2 "--drain: with several clusters each node is POOL:NODE" -- \
	"$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/j.json" --drain 2
check pools-drain-unknown 2 '--drain: no pool named "nowhere"' -- \
	"$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/j.json" --drain nowhere:2
check pools-twice 2 'clusters: two are named' -- "$UNIAP" allocate --cluster $CL --cluster $CL --jobs "$tmp/j.json"
# one job too many for both pools at their minimums: named, with the others
jobs "$tmp/pfull.json" '[{"name":"a","model":"M","batch":32,"min_devices":8},{"name":"b","model":"M","batch":32,"min_devices":16},
	{"name":"c","model":"M","batch":32,"min_devices":8}]'
check pools-full 3 "jobs cannot run together in the 2 pools" -- \
	"$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/pfull.json" --quiet

echo "allocate: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
