#!/usr/bin/env python3
"""scripts/ui-fidelity.py [--check] - writes ui/fidelity.json, the web UI's table of how far the
planner's estimates are from measured runs, from the fidelity ratchet's baseline
(tests/data/fidelity-baseline.tsv: per published set, the mean absolute error of the datasheet
predictions of iteration time; docs/fidelity.md has every run).  The plan view's estimate badge
shows the sets measured on the plan's kind of cluster.  `make fidelity-baseline` rewrites both;
--check (tests/cli/fidelity.sh) exits 1 when ui/fidelity.json is not the baseline's."""
import json
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
TSV = os.path.join(ROOT, 'tests', 'data', 'fidelity-baseline.tsv')
OUT = os.path.join(ROOT, 'ui', 'fidelity.json')


def render():
    sets = []
    for line in open(TSV):
        if not line.strip() or line.startswith('#'):
            continue
        name, cluster, err, about = line.rstrip('\n').split('\t')[:4]
        sets.append({'set': name, 'cluster': cluster, 'error_pct': float(err), 'about': about})
    doc = {'source': 'tests/data/fidelity-baseline.tsv (make fidelity-baseline); every run: docs/fidelity.md',
           'measure': 'mean of |predicted iteration time / measured - 1| over the set, datasheet figures, in per cent',
           'sets': sets}
    return json.dumps(doc, indent=1) + '\n'


def main():
    text = render()
    if sys.argv[1:] == ['--check']:
        cur = open(OUT).read() if os.path.exists(OUT) else ''
        if cur != text:
            print('ui-fidelity.py: ui/fidelity.json is not tests/data/fidelity-baseline.tsv\'s: run python3 scripts/ui-fidelity.py')
            return 1
        return 0
    open(OUT, 'w').write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
