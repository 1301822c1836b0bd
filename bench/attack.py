#!/usr/bin/env python3
"""bench/attack.py - the attacks of bench/attack.sh that need many sockets at
once (issue: hardening, round two), each beside a /healthz prober, printing
one line of figures per attack.  Standard library only (asyncio).

  slow PORT CONNS ADDRS SECONDS
      CONNS connections spread over ADDRS loopback source addresses
      (127.0.0.2 ...), each trickling one header byte a second and
      reconnecting when closed, for SECONDS.
  hoard PORT KEY_A JOB_A KEY_B JOB_B SECONDS
      tenant A opens 64 long-polls (?wait=60) on its job and drops every
      socket at once, twice; meanwhile tenant B long-polls (?wait=1) and
      opens event streams on its own job, one after another, for SECONDS.
  evals PORT KEY_A KEY_C KEY_B HEAVY SMALL SECONDS
      tenants A and C each keep 4 heavy evaluations (the body in file HEAVY)
      in flight; tenant B sends the small evaluation (file SMALL) once a
      second; B's latencies.

The prober opens a new connection for GET /healthz every 200 ms (5 s
timeout each) and reports the share answered 200 and the p99 latency.
Figures, not assertions.
"""
import asyncio
import sys
import time

HOST = "127.0.0.1"


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


async def request(port, method, path, key=None, body=None, timeout=5.0, local=None):
    """One request on a new connection: (status, seconds); status 0 on error or timeout."""
    t0 = time.monotonic()
    w = None
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(HOST, port, local_addr=local), timeout)
        head = "%s %s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n" % (method, path)
        if key:
            head += "Authorization: Bearer %s\r\n" % key
        data = b""
        if body is not None:
            data = body
            head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        w.write(head.encode() + b"\r\n" + data)
        await w.drain()
        line = await asyncio.wait_for(r.readline(), timeout)
        await asyncio.wait_for(r.read(), timeout)
        status = int(line.split()[1]) if line.startswith(b"HTTP/") else 0
    except (OSError, asyncio.TimeoutError, ValueError, IndexError):
        status = 0
    finally:
        if w:
            w.close()
    return status, time.monotonic() - t0


async def prober(port, seconds, out):
    end = time.monotonic() + seconds
    tasks = []
    while time.monotonic() < end:
        tasks.append(asyncio.ensure_future(request(port, "GET", "/healthz")))
        await asyncio.sleep(0.2)
    for s, dt in await asyncio.gather(*tasks):
        out.append((s, dt))


def probe_line(res):
    """The share answered 200 and the p99 latency, a probe not answered 200 counting as its 5 s timeout."""
    ok = [dt for s, dt in res if s == 200]
    p99 = pct([dt if s == 200 else max(dt, 5.0) for s, dt in res], 99)
    return "healthz %d/%d answered, p99 %s" % (len(ok), len(res), "%.0f ms" % (1000 * p99) if p99 < 5.0 else "5 s or more")


async def slow(port, conns, addrs, seconds):
    stop = time.monotonic() + seconds
    closed = [0]

    async def trickler(i):
        local = ("127.0.0.%d" % (2 + i % addrs), 0)
        while time.monotonic() < stop:
            w = None
            try:
                _, w = await asyncio.open_connection(HOST, port, local_addr=local)
                w.write(b"GET /healthz HTTP/1.1\r\nHost: a\r\n")
                await w.drain()
                while time.monotonic() < stop:
                    await asyncio.sleep(1)
                    w.write(b"X")
                    await w.drain()
            except OSError:
                closed[0] += 1
                await asyncio.sleep(0.2)
            finally:
                if w:
                    w.close()

    await asyncio.sleep(0)
    ts = [asyncio.ensure_future(trickler(i)) for i in range(conns)]
    await asyncio.sleep(min(5, seconds / 3))  # the connections are in
    res = []
    await prober(port, seconds - min(5, seconds / 3), res)
    for t in ts:
        t.cancel()
    await asyncio.gather(*ts, return_exceptions=True)
    print("slow connections: %d from %d addresses; %s; %d closed by the server (evicted or past a deadline)"
          % (conns, addrs, probe_line(res), closed[0]))


async def hoard(port, key_a, job_a, key_b, job_b, seconds):
    stop = time.monotonic() + seconds
    a_status = {}

    async def greedy_round():
        ws = []
        for _ in range(64):
            try:
                r, w = await asyncio.open_connection(HOST, port)
                w.write(("GET /v1/jobs/%s?wait=60 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer %s\r\n\r\n"
                         % (job_a, key_a)).encode())
                ws.append((r, w))
            except OSError:
                pass
        await asyncio.sleep(1.5)
        for r, w in ws:  # refused ones were answered at once: read their status
            try:
                line = await asyncio.wait_for(r.readline(), 0.05)
                s = line.split()[1].decode() if line else "open"
            except (asyncio.TimeoutError, IndexError, OSError):
                s = "open"
            a_status[s] = a_status.get(s, 0) + 1
            w.transport.abort()  # the client vanishes: a reset, no FIN handshake

    async def greedy():
        while time.monotonic() < stop - 3:
            await greedy_round()
            await asyncio.sleep(1)

    b = {"poll": [0, 0], "stream": [0, 0]}

    async def victim():
        while time.monotonic() < stop:
            s, _ = await request(port, "GET", "/v1/jobs/%s?wait=1" % job_b, key=key_b, timeout=10)
            b["poll"][0] += 1
            b["poll"][1] += s in (200, 304)
            try:
                r, w = await asyncio.open_connection(HOST, port)
                w.write(("GET /v1/jobs/%s/events HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer %s\r\n\r\n"
                         % (job_b, key_b)).encode())
                line = await asyncio.wait_for(r.readline(), 10)
                b["stream"][0] += 1
                b["stream"][1] += line.split()[1] == b"200"
                w.close()
            except (OSError, asyncio.TimeoutError, IndexError):
                b["stream"][0] += 1
            await asyncio.sleep(0.2)  # a refusal is quick: no hot loop

    res = []
    await asyncio.gather(greedy(), victim(), prober(port, seconds, res))
    print("stream hoarding: tenant A's long-polls %s; tenant B's long-polls %d/%d and event streams %d/%d "
          "succeeded; %s" % (", ".join("%s %d" % kv for kv in sorted(a_status.items())), b["poll"][1],
                             b["poll"][0], b["stream"][1], b["stream"][0], probe_line(res)))


async def evals(port, key_a, key_c, key_b, heavy, small, seconds):
    stop = time.monotonic() + seconds
    hb = open(heavy, "rb").read()
    sb = open(small, "rb").read()
    codes = {}

    async def flood(key):
        while time.monotonic() < stop:
            s, _ = await request(port, "POST", "/v1/evaluate", key=key, body=hb, timeout=120)
            codes[s] = codes.get(s, 0) + 1
            if s != 200:
                await asyncio.sleep(0.5)

    lat = []

    async def victim():
        await asyncio.sleep(3)
        while time.monotonic() < stop:
            s, dt = await request(port, "POST", "/v1/evaluate", key=key_b, body=sb, timeout=60)
            lat.append(dt if s == 200 else float("inf"))
            await asyncio.sleep(1)

    res = []
    floods = [flood(k) for k in (key_a, key_c) for _ in range(4)]
    await asyncio.gather(victim(), prober(port, seconds, res), *floods)
    print("evaluation flood: tenants A and C 4 heavy evaluations each in flight (answers %s); tenant B's small "
          "evaluation median %.0f ms, max %.0f ms over %d; %s"
          % (", ".join("%s %d" % kv for kv in sorted(codes.items())), 1000 * pct(lat, 50),
             1000 * max(lat or [float("nan")]), len(lat), probe_line(res)))


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "slow":
        asyncio.run(slow(int(args[0]), int(args[1]), int(args[2]), float(args[3])))
    elif cmd == "hoard":
        asyncio.run(hoard(int(args[0]), args[1], args[2], args[3], args[4], float(args[5])))
    elif cmd == "evals":
        asyncio.run(evals(int(args[0]), args[1], args[2], args[3], args[4], args[5], float(args[6])))
    else:
        sys.exit("bench/attack.py: unknown attack %s" % cmd)


if __name__ == "__main__":
    main(sys.argv)
