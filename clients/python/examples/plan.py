#!/usr/bin/env python3
"""Plans Llama-3.1-8B on two DGX H100 nodes for Megatron-LM and prints its arguments.

    make run                                   # in one terminal
    python3 clients/python/examples/plan.py    # in another

UNIAP_URL (default http://127.0.0.1:8080) and UNIAP_KEY (a tenant's key, for a
keyed uniapd) say where and who.  Prints the plan's summary, its estimated
time per iteration, and the Megatron-LM arguments that run it.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from uniap_client import Client, UniapError  # noqa: E402


def main() -> int:
    c = Client(os.environ.get('UNIAP_URL', 'http://127.0.0.1:8080'), key=os.environ.get('UNIAP_KEY'))

    def progress(ev):
        p = ev.get('progress', {})
        print('  %s: %s of %s candidates' % (ev.get('state'), p.get('candidates_done'), p.get('candidates_total')),
              file=sys.stderr)

    try:
        plan = c.plan(cluster='dgx-h100-x2', model='llama-3.1-8b', batch=64, schedule='1f1b',
                      targets=['megatron'], progress=progress)
        print('plan: pp %d, %d micro-batches of %d, %.4f s per iteration, %.1f samples/s'
              % (plan['pp'], plan['microbatches'], plan['microbatch_size'], plan['tpi_s'],
                 plan['throughput_samples_per_s']))
        print(c.export(c.last_job_id, 'megatron'), end='')
    except UniapError as e:
        print('plan.py: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
