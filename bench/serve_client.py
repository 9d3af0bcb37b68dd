#!/usr/bin/env python3
"""The load client of bench/serve_load.sh: CLIENTS threads, each with its own
keep-alive connection, send the sentences of FILE to a running `attend serve`
(POST /translator/translate, one sentence a request, model 0), each client the
sentences i with i % CLIENTS == its number. Prints the requests per second over
the whole run and the p50, p90 and p99 latency of a request. Standard library
only; it checks every answer (status 200, one translation).
Usage: bench/serve_client.py --port PORT --clients 4 FILE
"""
import argparse
import http.client
import json
import sys
import threading
import time


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def client(host, port, sentences, latencies, errors):
    conn = http.client.HTTPConnection(host, port, timeout=120)
    for s in sentences:
        body = json.dumps([{"src": s, "id": 0}])
        t0 = time.perf_counter()
        try:
            conn.request("POST", "/translator/translate", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:  # a closed keep-alive connection: open a new one once
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=120)
            errors.append(repr(e))
            continue
        latencies.append(time.perf_counter() - t0)
        if r.status != 200 or len(json.loads(data)[0]) != 1:
            errors.append("status %d: %s" % (r.status, data[:200]))
    conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("file")
    a = ap.parse_args()
    with open(a.file, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f if line.strip()]
    parts = [sentences[k::a.clients] for k in range(a.clients)]
    latencies, errors = [[] for _ in parts], []
    threads = [threading.Thread(target=client, args=(a.host, a.port, p, l, errors)) for p, l in zip(parts, latencies)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    done = sorted(x for l in latencies for x in l)
    print("clients %d: %d requests in %.2f s, %.1f requests/s; latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms"
          % (a.clients, len(done), wall, len(done) / wall, 1000 * percentile(done, 50), 1000 * percentile(done, 90),
             1000 * percentile(done, 99)))
    if errors:
        print("%d failed requests, the first: %s" % (len(errors), errors[0]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
