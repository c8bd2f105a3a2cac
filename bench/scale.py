#!/usr/bin/env python3
"""Many concurrent keep-alive connections from one dualbench process (default 50,000).

Starts `--servers` `dualbench serve` processes on 127.0.0.1 (default 1; one port each,
`--server-workers` threads each), then runs

  dualbench run -k -c N -t D --bind 127.0.0.1,...,127.0.0.S URL1 URL2 ...

spreading the client's connections over S source addresses (127.0.0.0/8 is all loopback;
each source address has its own range of ~28,000 ephemeral ports per destination). It
prints how many connections were opened and how each ended, requests/s, dualbench's peak
RSS (and per connection) and CPU, and, when a limit stopped the run, dualbench's own
one-line reason (which limit, what to do).

Limits on the way to 50,000: RLIMIT_NOFILE (dualbench raises its soft limit to the hard
one, and the hard one to fs.nr_open when it has CAP_SYS_RESOURCE; past that, each worker
thread of the client and of `dualbench serve` has its own descriptor table, which the
limit caps separately, so the client adds workers on its own), and ephemeral ports per
(source, destination) pair (net.ipv4.ip_local_port_range; hence --bind). The kernel
searches for a free port on every connect: past about half of a source's ports that
search dominates the client's CPU, so the default spreads 50,000 over 8 sources.
For ::1 there is only one loopback address: IPv6 can spread over destination ports
instead (--servers N); `-c` bounds the connections open over all targets too.

Usage: bench/scale.py [--connections 50000] [--sources 8] [--servers 1]
                      [--server-workers 4] [--duration 10] [--family 4|6]
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the launcher that reads a tool's own rusage)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=50000)
    ap.add_argument("--sources", type=int, default=8)
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--server-workers", type=int, default=4,
                    help="threads per dualbench serve; each has its own descriptor table")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--family", default="4", choices=["4", "6"])
    ap.add_argument("--port", type=int, default=19000)
    a = ap.parse_args()
    dualbench = os.environ.get("DUALBENCH", os.path.join(peers.ROOT, "target/release/dualbench"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 20, 1 << 20))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    ports_range = open("/proc/sys/net/ipv4/ip_local_port_range").read().split()
    print(f"scale {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {a.connections} "
          f"connections, ipv{a.family}, {a.servers} servers, "
          f"{a.sources if a.family == '4' else 1} source address(es); RLIMIT_NOFILE hard "
          f"{limit}; ephemeral ports {ports_range[0]}-{ports_range[1]}; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    tmp = tempfile.mkdtemp(prefix="dualbench-scale-")
    peers.build_launcher(tmp)
    host = "127.0.0.1" if a.family == "4" else "[::1]"
    servers, urls = [], []
    try:
        port = a.port
        for _ in range(a.servers):
            port = peers.free_port(port)
            servers.append(subprocess.Popen(
                [dualbench, "serve", "--listen", f"{host}:{port}", "--workers",
                 str(a.server_workers)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            urls.append(f"http://{host}:{port}/")
            port += 1
        time.sleep(0.5)
        argv = [dualbench, "run", "-q", "--format", "json", "-k", "-c", str(a.connections),
                "-t", f"{a.duration:g}", "-s", "60"]
        if a.family == "4":
            argv += ["--bind", ",".join(f"127.0.0.{i + 1}" for i in range(a.sources))]
        argv += urls
        print("$ " + " ".join(argv), flush=True)
        out, cpu, rss, wall, err = measure_with_stderr(argv)
    finally:
        for s in servers:
            s.send_signal(signal.SIGTERM)
            s.wait()
    report(out, cpu, rss, wall, err, a)


def measure_with_stderr(argv):
    """peers.measure, but keeping dualbench's stderr (where a limit is named)."""
    r, w = os.pipe()
    t0 = time.monotonic()
    p = subprocess.Popen([peers.LAUNCHER] + argv, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, pass_fds=(w,),
                         env=dict(os.environ, USAGE_FD=str(w)))
    os.close(w)
    out, err = p.communicate(timeout=600)
    with os.fdopen(r) as f:
        user, sys_, rss = (int(x) for x in f.read().split())
    return out.decode(), (user + sys_) / 1e6, rss, time.monotonic() - t0, err.decode()


def report(out, cpu, rss, wall, err, a):
    if err.strip():
        print("dualbench said: " + err.strip())
    if not out.strip():
        return
    j = json.loads(out)
    t = j["total"]
    conns = t["connections"]
    print(f"connections opened {conns}, requests {t['requests']} (completed {t['completed']}, "
          f"failed {t['failed']}), {j['rps']:.0f} req/s over {j['duration_s']:.1f} s")
    print(f"how they ended: {json.dumps(t['close'])}")
    print(f"peak RSS {rss / 1024:.1f} MiB ({rss * 1024 / max(conns, 1):.0f} bytes per "
          f"connection), CPU {cpu:.2f} s, wall {wall:.1f} s; connect p50 "
          f"{t['latency_us']['connect']['p50']} µs, p99 {t['latency_us']['connect']['p99']} µs")


if __name__ == "__main__":
    main()
