"""The Python client (clients/python/uniap_client) against a live uniapd.

Run by tests/cli/python-client.sh with UNIAP_URL set to a --no-auth uniapd;
every wait is the client's own, bounded by generous deadlines (tests/README.md).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'clients', 'python'))
from uniap_client import Client, UniapError, types  # noqa: E402

URL = os.environ['UNIAP_URL']
SLOW = float(os.environ.get('SLOW', '1'))
DEADLINE = 600 * SLOW
SMALL = dict(cluster='dgx-a100', model='bert-huge', batch=8)


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.c = Client(URL)

    def test_whoami_and_catalog(self):
        self.assertEqual(self.c.whoami()['tenant'], 'default')
        names = [e['name'] for e in self.c.catalog()['clusters']]
        self.assertIn('dgx-a100', names)

    def test_submit_and_wait_by_events(self):
        seen = []
        job = self.c.submit(**SMALL)
        self.assertIn(job['state'], ('queued', 'running', 'succeeded'))
        done = self.c.wait(job['id'], DEADLINE, progress=seen.append)
        self.assertEqual(done['state'], 'succeeded')
        self.assertTrue(seen, 'no event came')
        self.assertTrue(all('state' in e and 'progress' in e for e in seen))
        res = self.c.result(done)
        self.assertGreater(res['plan']['tpi_s'], 0)
        self.assertEqual(len(res['candidates']), res['plan'] and len(res['candidates']))

    def test_wait_by_long_poll(self):
        job = self.c.submit(**SMALL, schedule='1f1b')
        done = self.c.wait(job['id'], DEADLINE, stream=False)
        self.assertEqual(done['state'], 'succeeded')

    def test_wait_falls_back_when_no_stream(self):
        c = Client(URL)

        def refused(*a, **k):
            raise UniapError(503, 'the service\'s stream limit')
            yield  # a generator, as events() is

        c.events = refused
        job = c.submit(**SMALL, space='uniform')
        self.assertEqual(c.wait(job['id'], DEADLINE)['state'], 'succeeded')

    def test_plan_export_evaluate(self):
        plan = self.c.plan(**SMALL, timeout=DEADLINE)
        self.assertEqual(plan['microbatch_size'] * plan['microbatches'], 8)
        jid = self.c.last_job_id
        text = self.c.export(jid, 'text')
        self.assertTrue(text.startswith('plan: pp '), text[:100])
        self.assertEqual(self.c.export(jid, 'json')['tpi_s'], plan['tpi_s'])
        trace = self.c.export(jid, 'chrome-trace')
        self.assertIn('traceEvents', trace)
        rep = self.c.evaluate(SMALL['cluster'], SMALL['model'], SMALL['batch'], plan)
        self.assertTrue(rep['feasible'])
        self.assertTrue(rep['tpi_matches'])

    def test_targets_and_megatron(self):
        self.c.plan(**SMALL, targets=['megatron'], timeout=DEADLINE)
        args = self.c.export(self.c.last_job_id, 'megatron')
        self.assertIn('--tensor-model-parallel-size', args)
        self.assertEqual(self.c.plan_result(self.c.last_job_id)['target'], 'megatron')  # one target: no list

    def test_allocate(self):
        jobs: types.AllocationJobs = [{'name': 'a', 'model': 'bert-huge', 'batch': 8},
                                      {'name': 'b', 'model': 'vit-huge', 'batch': 16}]
        alloc = self.c.allocate('dgx-a100', jobs, timeout=DEADLINE, time_limit_s=30)
        self.assertEqual(sorted(j['name'] for j in alloc['jobs']), ['a', 'b'])
        self.assertLessEqual(sum(j['devices'] for j in alloc['jobs']), 8)

    def test_errors_name_the_field(self):
        with self.assertRaises(UniapError) as e:
            self.c.submit(cluster='dgx-a1000', model='bert-huge', batch=8)
        self.assertEqual(e.exception.status, 422)
        self.assertIn('dgx-a100', e.exception.detail)
        with self.assertRaises(UniapError) as e:
            self.c.submit(cluster='dgx-a100', model='bert-huge', batch=8, schedul='1f1b')
        self.assertEqual(e.exception.status, 422)
        self.assertIn('schedul', e.exception.detail)
        with self.assertRaises(UniapError) as e:
            Client('http://127.0.0.1:1').whoami()
        self.assertEqual(e.exception.status, 0)
        self.assertIn('is uniapd running', str(e.exception))

    def test_cancel_and_delete(self):
        job = self.c.submit(cluster='dgx-h100-x128', model='llama-70b', batch=2048, schedule='1f1b')
        self.c.cancel(job['id'])
        done = self.c.wait(job['id'], DEADLINE)
        self.assertIn(done['state'], ('canceled', 'succeeded', 'failed'))
        self.c.delete(job['id'])
        with self.assertRaises(UniapError) as e:
            self.c.job(job['id'])
        self.assertEqual(e.exception.status, 404)


if __name__ == '__main__':
    unittest.main(verbosity=1)
