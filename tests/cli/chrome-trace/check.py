#!/usr/bin/env python3
"""check.py FILE [gpipe|1f1b|interleaved] [recompute] - a uniap chrome-trace export against the
Trace Event Format (Google's "Trace Event Format" document: the JSON Object Format with
traceEvents, complete "X" events with ts and dur in microseconds, metadata "M" events
process_name, thread_name, thread_sort_index) and against what the export promises
(docs/export.md): one compute track per pipeline rank whose events and bubbles tile the
iteration, transfers on link tracks, complete events properly nested per track (Perfetto
draws overlapping slices of one track wrongly), every unit once, and under GPipe the drawn
length equal to the plan's TPI.  Prints "ok" or the first problem; exit status 0 or 1."""
import json
import sys


def fail(msg):
    print('chrome-trace: ' + msg)
    sys.exit(1)


def main():
    path, sched = sys.argv[1], sys.argv[2]
    want_recompute = 'recompute' in sys.argv[3:]
    doc = json.load(open(path))
    if not isinstance(doc, dict) or not isinstance(doc.get('traceEvents'), list):
        fail('not the JSON Object Format (an object with traceEvents)')
    if doc.get('displayTimeUnit') not in (None, 'ms', 'ns'):
        fail('displayTimeUnit must be ms or ns')
    od = doc.get('otherData', {})
    for k in ('tpi_s', 'drawn_s', 'pp', 'microbatches', 'schedule'):
        if k not in od:
            fail('otherData lacks ' + k)
    if od['schedule'] != sched:
        fail('schedule %s, want %s' % (od['schedule'], sched))
    names, tracks, cats = {}, {}, {}
    for i, e in enumerate(doc['traceEvents']):
        where = 'traceEvents[%d]' % i
        if not isinstance(e, dict) or e.get('ph') not in ('X', 'M'):
            fail(where + ': ph must be X or M')
        if not isinstance(e.get('pid'), int) or not isinstance(e.get('name'), str):
            fail(where + ': pid (integer) and name (string) are required')
        if e['ph'] == 'M':
            if e['name'] not in ('process_name', 'thread_name', 'thread_sort_index', 'process_sort_index'):
                fail(where + ': unknown metadata event ' + e['name'])
            if not isinstance(e.get('args'), dict):
                fail(where + ': metadata without args')
            if e['name'] == 'thread_name':
                names[e['tid']] = e['args']['name']
            continue
        for k in ('ts', 'dur'):
            if not isinstance(e.get(k), (int, float)) or e[k] < 0:
                fail(where + ': %s must be a number >= 0' % k)
        if not isinstance(e.get('tid'), int) or not isinstance(e.get('cat'), str):
            fail(where + ': tid (integer) and cat (string) are required')
        tracks.setdefault(e['tid'], []).append(e)
        cats[e['cat']] = cats.get(e['cat'], 0) + 1
    drawn = od['drawn_s'] * 1e6
    eps = 1e-9 * max(drawn, 1)
    for tid, evs in tracks.items():
        if tid not in names:
            fail('track %d has no thread_name' % tid)
        evs.sort(key=lambda e: e['ts'])
        for a, b in zip(evs, evs[1:]):
            if b['ts'] < a['ts'] + a['dur'] - eps:
                fail('track %s: "%s" overlaps "%s"' % (names[tid], a['name'], b['name']))
        if names[tid].endswith(': compute'):
            total = sum(e['dur'] for e in evs)
            if abs(total - drawn) > 1e-6 * drawn or abs(evs[0]['ts']) > eps:
                fail('track %s: its events and bubbles cover %g of %g us' % (names[tid], total, drawn))
    ranks = sum(1 for n in names.values() if n.endswith(': compute'))
    if ranks != od['pp']:
        fail('%d compute tracks for pp %d' % (ranks, od['pp']))
    units = od['pp'] * od.get('virtual_stages', 1) * od['microbatches']
    back = cats.get('backward', 0) + cats.get('recompute+backward', 0)
    if cats.get('forward', 0) != units or back != units:
        fail('%d forward and %d backward units, want %d each' % (cats.get('forward', 0), back, units))
    if want_recompute and not cats.get('recompute+backward'):
        fail('no recompute+backward unit in a plan that recomputes')
    if sched == 'gpipe' and abs(od['drawn_s'] - od['tpi_s']) > 1e-9 * od['tpi_s']:
        fail('GPipe drawn %.17g s, the plan\'s TPI %.17g s' % (od['drawn_s'], od['tpi_s']))
    if od['pp'] > 1 and not (cats.get('activations') and cats.get('gradients')):
        fail('a pipeline without transfers')
    print('ok')


main()
