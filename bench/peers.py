#!/usr/bin/env python3
"""dualbench against its peers (wrk, ab, h2load, oha), same server, same settings, one run.

Starts nginx (Debian's nginx-light) on 127.0.0.1 and ::1 from a generated config in a
temporary directory (a 45-byte page), and `dualbench serve` for the /delay and stall
scenarios, then runs every installed tool in every mode, several repetitions each, and
prints the median per tool/mode/family of:

  requests/s, generator CPU microseconds per request (user+sys of the tool's process,
  from wait4's rusage), peak RSS (ru_maxrss), and the ratios to wrk and to ab.

Modes (pick with --modes):
  ka       keep-alive, -c 50, --duration seconds
  close    one connection per request (ab's default), -c 50
  c10k     keep-alive, -c 10000 (peak RSS is the figure that counts)
  open     open loop --rate 20000 for 10 s: achieved rate vs target (wrk2 is not in
           Debian: wrk's closed loop and h2load --rps are shown beside it)
  delay    /delay/10 at -c 10 against `dualbench serve`: p50 vs the true 10 ms, and vs
           the server's answer time seen on the wire (`dualbench capture` on lo during
           one more dualbench run: request segment to response segment, per request),
           which is what a client that costs nothing would report
  stall    open loop against `dualbench serve` paused with SIGSTOP for 1 s mid-run:
           corrected (from intended start) vs service-time percentiles, and wrk's

Usage: bench/peers.py [--reps 3] [--duration 3] [--modes ka,close,...] [--families 4,6]
                      [--workers N] [--json FILE]
DUALBENCH=path picks the binary (default target/release/dualbench).
Every process started is stopped by its recorded pid; the temp dir is removed.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = b"<html><body><h1>It works!</h1></body></html>\n"  # 45 bytes
assert len(PAGE) == 45
HOSTS = {"4": "127.0.0.1", "6": "[::1]"}

NGINX_CONF = """\
worker_processes 1;
worker_rlimit_nofile 200000;
daemon on;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 100000; multi_accept on; }}
http {{
  access_log off;
  keepalive_requests 1000000000;
  keepalive_timeout 120s;
  client_body_temp_path {d}/tmp;
  proxy_temp_path {d}/tmp;
  fastcgi_temp_path {d}/tmp;
  uwsgi_temp_path {d}/tmp;
  scgi_temp_path {d}/tmp;
  server {{
    listen 127.0.0.1:{port} backlog=65535;
    listen [::1]:{port} backlog=65535;
    root {d}/www;
  }}
}}
"""

# wrk is given the two header lines dualbench sends by default, so that both tools send the
# same request (ab sends the same two lines of its own): the server's work per request,
# and so its requests/s, then does not differ with the tool. Measured: the 40 fewer bytes
# of wrk's bare request gave nginx about 2% more requests/s.
WRK_LUA = """\
wrk.headers["User-Agent"] = "dualbench/0.1.0"
wrk.headers["Accept"] = "*/*"
done = function(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"errors":%d,'
    .. '"p50_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
"""


# ---------------------------------------------------------------- processes

# ru_maxrss survives exec, so a tool forked straight from this (large) Python process would
# report at least Python's RSS. A small C launcher forks the tool instead and reports the
# tool's own rusage (µs precision) on fd 3.
LAUNCHER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    pid_t pid = fork();
    if (pid == 0) { execvp(argv[1], argv + 1); _exit(127); }
    int status; struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return 126;
    FILE *out = fdopen(atoi(getenv("USAGE_FD")), "w");
    fprintf(out, "%ld %ld %ld\n",
            ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
            ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec, ru.ru_maxrss);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
"""
LAUNCHER = None


def build_launcher(d):
    global LAUNCHER
    src = os.path.join(d, "launch.c")
    with open(src, "w") as f:
        f.write(LAUNCHER_C)
    LAUNCHER = os.path.join(d, "launch")
    subprocess.run(["gcc", "-O2", "-o", LAUNCHER, src], check=True)


def free_port(start):
    """The first port from `start` on that is free on both 127.0.0.1 and ::1 (the machine
    is shared: another bench may hold the default)."""
    import socket
    for port in range(start, start + 1000):
        try:
            for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
                with socket.socket(fam, socket.SOCK_STREAM) as s:
                    s.bind((host, port))
            return port
        except OSError:
            continue
    raise SystemExit(f"no free port in {start}..{start + 999} on 127.0.0.1 and ::1")


class Servers:
    """nginx and `dualbench serve`, each stopped by the pid recorded at start."""

    def __init__(self, dualbench):
        self.dir = tempfile.mkdtemp(prefix="dualbench-peers-")
        self.dualbench = dualbench
        self.nginx_pid = None
        self.serve = None

    def start_nginx(self, port):
        d = self.dir
        os.makedirs(f"{d}/www")
        os.makedirs(f"{d}/tmp")
        with open(f"{d}/www/index.html", "wb") as f:
            f.write(PAGE)
        with open(f"{d}/nginx.conf", "w") as f:
            f.write(NGINX_CONF.format(d=d, port=port))
        subprocess.run(["nginx", "-c", f"{d}/nginx.conf", "-g", "user root;"], check=True)
        for _ in range(50):
            if os.path.exists(f"{d}/nginx.pid"):
                break
            time.sleep(0.05)
        with open(f"{d}/nginx.pid") as f:
            self.nginx_pid = int(f.read())
        return port

    def start_serve(self, port):
        self.serve = subprocess.Popen(
            [self.dualbench, "serve", "--listen", f"127.0.0.1:{port}",
             "--listen", f"[::1]:{port}", "--workers", "1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        return port

    def stop(self):
        if self.nginx_pid:
            try:
                os.kill(self.nginx_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.serve:
            self.serve.send_signal(signal.SIGCONT)
            self.serve.terminate()
            self.serve.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def measure(argv, timeout):
    """Run argv through the launcher; returns (stdout, cpu_s, maxrss_kib, wall_s)."""
    t0 = time.monotonic()
    r, w = os.pipe()
    p = subprocess.Popen([LAUNCHER] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         pass_fds=(w,), env=dict(os.environ, USAGE_FD=str(w)),
                         start_new_session=True)
    os.close(w)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # The tool hung (h2load sometimes does): stop the launcher's process group,
        # which is the launcher and the tool it forked, nothing else.
        sys.stderr.write(f"  ! {argv[0]} still running after {timeout:.0f} s: stopped\n")
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    with os.fdopen(r) as f:
        usage = f.read().split()
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.stderr.write(f"  ! {' '.join(argv)} exited {p.returncode}: "
                         f"{err.decode(errors='replace').strip()[-300:]}\n")
    if len(usage) != 3:
        return out.decode(errors="replace"), 0.0, 0, wall
    user, sys_, rss = (int(x) for x in usage)
    return out.decode(errors="replace"), (user + sys_) / 1e6, rss, wall


# ---------------------------------------------------------------- tools

def tool_argv(tool, mode, url, a, lua):
    """The command line for `tool` in `mode`, or None when the tool cannot do it."""
    c = {"ka": 50, "close": 50, "c10k": 10000, "delay": 10, "open": 100}[mode]
    d = f"{a.open_duration if mode == 'open' else a.duration:g}"
    ka = mode != "close"
    if tool == "dualbench":
        argv = [a.dualbench, "run", "-q", "--format", "json", "-c", str(c), "-t", str(d)]
        argv += ["-k"] if ka else []
        argv += ["--workers", str(a.workers)]
        argv += ["--rate", str(a.rate)] if mode == "open" else []
        return argv + [url]
    if tool == "wrk":
        argv = ["wrk", f"-t{a.workers}", f"-c{c}", f"-d{d}s", "-s", lua,
                "--timeout", "30s"]
        argv += [] if ka else ["-H", "Connection: close"]
        return argv + [url]
    if tool == "ab":
        if mode in ("open",):
            return None
        # -t implies -n 50000 in ab, so -n follows it; ab stops at whichever comes first.
        return ["ab", "-q", "-t", str(d), "-n", "50000000", "-c", str(c), "-s", "30"] \
            + (["-k"] if ka else []) + [url]
    if tool == "h2load":
        if not ka or "[" in url:
            # No connection-per-request mode; and h2load 1.52 -D hung on [::1] here
            # (twice, for minutes), so it is measured over IPv4 only.
            return None
        argv = ["h2load", "--h1", "-t", str(a.workers), "-c", str(c),
                "-D", str(d)]
        if mode == "open":
            argv += ["--rps", str(a.rate / c)]
        return argv + [url]
    if tool == "oha":
        argv = ["oha", "--no-tui", "--output-format", "json", "-c", str(c), "-z", f"{d}s"]
        argv += [] if ka else ["--disable-keepalive"]
        argv += ["-q", str(a.rate)] if mode == "open" else []
        return argv + [url]
    return None


def parse(tool, text):
    """Requests completed, seconds, and p50/p99/max latency in µs where the tool says."""
    if tool == "dualbench":
        j = json.loads(text)
        lat = j["total"]["latency_us"]
        svc = lat.get("service", {})
        return {"done": j["requests"]["completed"], "secs": j["duration_s"],
                "failed": j["requests"]["failed"],
                "p50": lat["total"]["p50"], "p99": lat["total"]["p99"],
                "p999": lat["total"]["p999"], "max": lat["total"]["max"],
                "svc_p50": svc.get("p50"), "svc_p99": svc.get("p99"),
                "svc_p999": svc.get("p999"), "svc_max": svc.get("max"),
                "late": j["total"]["late"], "unsent": j["total"]["unsent"]}
    if tool == "wrk":
        line = next(l for l in text.splitlines() if l.startswith("WRKJSON "))
        j = json.loads(line[8:])
        return {"done": j["requests"], "secs": j["duration_us"] / 1e6, "failed": j["errors"],
                "p50": j["p50_us"], "p99": j["p99_us"], "p999": j["p999_us"],
                "max": j["max_us"]}
    if tool == "ab":
        num = lambda pat: float(re.search(pat, text, re.M).group(1))
        p50 = re.search(r"^\s+50%\s+(\d+)", text, re.M)
        return {"done": int(num(r"^Complete requests:\s+(\d+)")),
                "secs": num(r"^Time taken for tests:\s+([\d.]+)"),
                "failed": int(num(r"^Failed requests:\s+(\d+)")),
                "p50": int(p50.group(1)) * 1000 if p50 else None}
    if tool == "h2load":
        m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", text)
        secs = re.search(r"finished in ([\d.]+)(m?s)", text)
        s = float(secs.group(1)) / (1000 if secs.group(2) == "ms" else 1)
        return {"done": int(m.group(2)), "secs": s, "failed": int(m.group(1)) - int(m.group(2))}
    if tool == "oha":
        j = json.loads(text)
        s = j["summary"]
        return {"done": round(s["requestsPerSec"] * s["total"]), "secs": s["total"],
                "failed": 0, "p50": j["latencyPercentiles"]["p50"] * 1e6}
    raise ValueError(tool)


def run_one(tool, mode, fam, url, a, lua):
    argv = tool_argv(tool, mode, url, a, lua)
    if argv is None:
        return None
    text, cpu, rss, wall = measure(argv, timeout=float(a.duration if mode != "open" else a.open_duration) + 30)
    try:
        r = parse(tool, text)
    except (StopIteration, AttributeError, ValueError, KeyError) as e:
        sys.stderr.write(f"  ! cannot read {tool}'s output ({e}): {text[-300:]}\n")
        return None
    r.update(tool=tool, mode=mode, family=fam, cpu_s=cpu, rss_kib=rss, wall_s=wall,
             rps=r["done"] / r["secs"] if r["secs"] else 0.0,
             cpu_us_per_req=cpu * 1e6 / r["done"] if r["done"] else float("inf"))
    return r


# ---------------------------------------------------------------- scenarios

def run_mode(mode, tools, a, ports, lua):
    rows = []
    for fam in a.families:
        path = "/delay/10" if mode == "delay" else "/"
        port = ports["serve"] if mode == "delay" else ports["nginx"]
        url = f"http://{HOSTS[fam]}:{port}{path}"
        reps = 1 if mode == "open" else a.reps
        if mode == "delay":
            w = wire_delay(a, url, port)
            a.wire[fam] = w
            if w is not None:
                print(f"  delay ipv{fam} on the wire: server answered after p50 {w:.0f} µs",
                      flush=True)
        for rep in range(reps):
            for tool in tools:  # tools interleaved inside a rep: load drifts hit all alike
                r = run_one(tool, mode, fam, url, a, lua)
                if r:
                    r["rep"] = rep
                    rows.append(r)
                    print(f"  {mode:5} ipv{fam} {tool:9} rep{rep}: {r['rps']:9.0f} req/s "
                          f"{r['cpu_us_per_req']:6.2f} µs/req  {r['rss_kib'] / 1024:7.1f} MiB",
                          flush=True)
    return rows


def wire_times(pcap, server_port):
    """Per request, µs from the client's request segment to the server's response segment
    in a pcap (nanosecond timestamps, Ethernet framing as on lo), paired in order per
    connection."""
    with open(pcap, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    scale = 1 if magic == 0xa1b23c4d else 1000  # ns or µs timestamps
    off, waiting, times = 24, {}, []
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        t = sec * 1_000_000_000 + frac * scale
        ethertype = struct.unpack_from("!H", frame, 12)[0]
        ip = frame[14:]
        if ethertype == 0x0800 and ip[9] == 6:
            hl, total = (ip[0] & 15) * 4, struct.unpack_from("!H", ip, 2)[0]
        elif ethertype == 0x86DD and ip[6] == 6:
            hl, total = 40, 40 + struct.unpack_from("!H", ip, 4)[0]
        else:
            continue
        tcp = ip[hl:]
        sport, dport = struct.unpack_from("!HH", tcp)
        payload = total - hl - (tcp[12] >> 4) * 4
        if payload <= 0:
            continue
        if dport == server_port:
            waiting.setdefault(sport, []).append(t)
        elif sport == server_port and waiting.get(dport):
            times.append((t - waiting[dport].pop(0)) / 1000)
    return times


def wire_delay(a, url, port):
    """The server's own p50 answer time for /delay/10 on the wire, µs (None if the
    capture failed): one more dualbench run like the delay mode's, captured on lo."""
    pcap = os.path.join(tempfile.gettempdir(), f"dualbench-peers-delay-{os.getpid()}.pcap")
    cap = subprocess.Popen([a.dualbench, "capture", "--iface", "lo", "--port", str(port),
                            "-w", pcap, "--duration", f"{a.duration + 10:g}s"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        measure(tool_argv("dualbench", "delay", url, a, None), timeout=a.duration + 30)
        time.sleep(0.2)
    finally:
        cap.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=30)
    try:
        times = wire_times(pcap, port)
    except (OSError, IndexError, ValueError, struct.error) as e:
        sys.stderr.write(f"  ! cannot read the capture ({e}): {err.decode()[-200:]}\n")
        return None
    finally:
        if os.path.exists(pcap):
            os.remove(pcap)
    return statistics.median(times) if times else None


def run_stall(a, ports, lua):
    """Open loop at a modest rate against `dualbench serve`, which is SIGSTOPped for
    `--stall` seconds in the middle; wrk runs the same against the same pause."""
    rows = []
    url = f"http://127.0.0.1:{ports['serve']}/"
    d = 6
    runs = {
        "dualbench": [a.dualbench, "run", "-q", "--format", "json", "-k", "-c", "50",
                      "--rate", "2000", "-t", str(d), url],
        "wrk": ["wrk", "-t1", "-c50", f"-d{d}s", "-s", lua, url],
    }
    for tool, argv in runs.items():
        pauser = threading.Thread(target=pause_server, args=(a.serve_pid, 2.0, a.stall))
        pauser.start()
        text, cpu, rss, wall = measure(argv, timeout=60)
        pauser.join()
        r = parse(tool, text)
        r.update(tool=tool, mode="stall", family="4", cpu_s=cpu, rss_kib=rss,
                 rps=r["done"] / r["secs"], cpu_us_per_req=cpu * 1e6 / max(r["done"], 1))
        rows.append(r)
    return rows


def pause_server(pid, after, length):
    time.sleep(after)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(length)
    os.kill(pid, signal.SIGCONT)


# ---------------------------------------------------------------- report

def medians(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["mode"], r["family"], r["tool"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        med = lambda k: statistics.median(x[k] for x in rs if x.get(k) is not None) \
            if any(x.get(k) is not None for x in rs) else None
        out[key] = {k: med(k) for k in ("rps", "cpu_us_per_req", "rss_kib", "done", "secs",
                                         "p50", "p99", "p999", "max", "svc_p50", "svc_p99",
                                         "svc_p999", "svc_max", "late", "unsent", "failed")}
        out[key]["reps"] = len(rs)
    return out


def ratio(x, y):
    return f"{x / y:5.2f}" if x is not None and y else "    -"


def print_table(med, a):
    print(f"\nMedians ({a.reps} reps; load average {os.getloadavg()[0]:.1f} at the end)")
    hdr = (f"{'mode':6} {'fam':5} {'tool':10} {'req/s':>9} {'µs/req':>7} {'RSS MiB':>8} "
           f"{'rps/wrk':>7} {'cpu/wrk':>7} {'cpu/ab':>7} {'rss/wrk':>7} {'p50 µs':>8}")
    print(hdr)
    print("-" * len(hdr))
    for (mode, fam, tool), m in sorted(med.items()):
        if mode == "stall":
            continue
        wrk = med.get((mode, fam, "wrk"), {})
        ab = med.get((mode, fam, "ab"), {})
        p50 = f"{m['p50']:8.0f}" if m["p50"] is not None else "       -"
        print(f"{mode:6} ipv{fam:2} {tool:10} {m['rps']:9.0f} {m['cpu_us_per_req']:7.2f} "
              f"{m['rss_kib'] / 1024:8.1f} {ratio(m['rps'], wrk.get('rps')):>7} "
              f"{ratio(m['cpu_us_per_req'], wrk.get('cpu_us_per_req')):>7} "
              f"{ratio(m['cpu_us_per_req'], ab.get('cpu_us_per_req')):>7} "
              f"{ratio(m['rss_kib'], wrk.get('rss_kib')):>7} {p50}")
    for fam in a.families:
        m = med.get(("open", fam, "dualbench"))
        if m:
            err = (m["rps"] - a.rate) / a.rate * 100
            print(f"\nopen loop ipv{fam}: target {a.rate:.0f}/s, achieved {m['rps']:.1f}/s "
                  f"({err:+.3f}%), late {m['late']:.0f}, unsent {m['unsent']:.0f}; "
                  f"p50 {m['p50']} µs corrected, {m['svc_p50']} µs service")
        m = med.get(("delay", fam, "dualbench"))
        if m:
            w = a.wire.get(fam)
            wire = (f"; the server's answers took p50 {w / 1000:.3f} ms on the wire, "
                    f"so the client's own part is {(m['p50'] - w) / 1000:+.3f} ms"
                    if w is not None else "")
            print(f"/delay/10 ipv{fam}: dualbench p50 {m['p50'] / 1000:.3f} ms "
                  f"(true 10 ms; off by {abs(m['p50'] - 10000) / 1000:.3f} ms{wire})")
    for (mode, fam, tool), m in sorted(med.items()):
        if mode == "stall":
            if tool == "dualbench":
                print(f"\nstall ({a.stall:.1f} s SIGSTOP) dualbench open loop 2000/s: "
                      f"corrected p50/p99/p99.9/max {m['p50']}/{m['p99']}/{m['p999']}/{m['max']} µs; "
                      f"service {m['svc_p50']}/{m['svc_p99']}/{m['svc_p999']}/{m['svc_max']} µs; "
                      f"late {m['late']:.0f}")
            else:
                print(f"stall ({a.stall:.1f} s SIGSTOP) {tool} closed loop -c 50: p50/p99/p99.9/max "
                      f"{m['p50']}/{m['p99']}/{m['p999']}/{m['max']} µs over {m['done']:.0f} requests")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per closed-loop run")
    ap.add_argument("--open-duration", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=20000.0)
    ap.add_argument("--stall", type=float, default=1.0, help="seconds the server is paused")
    ap.add_argument("--modes", default="ka,close,c10k,open,delay,stall")
    ap.add_argument("--families", default="4,6")
    ap.add_argument("--tools", default="dualbench,wrk,ab,h2load,oha")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                    help="threads for dualbench, wrk and h2load alike (default: one per two "
                         "cores, what dualbench picks against a server on loopback; ab has one)")
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--json", help="also write every run's figures here")
    a = ap.parse_args()
    a.dualbench = os.environ.get("DUALBENCH", os.path.join(ROOT, "target/release/dualbench"))
    a.families = a.families.split(",")
    a.wire = {}
    tools = [t for t in a.tools.split(",") if t == "dualbench" or shutil.which(t)]
    skipped = set(a.tools.split(",")) - set(tools)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:  # children inherit it; root may raise the hard limit too
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, 200000), max(hard, 200000)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    print(f"dualbench peers {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"tools {','.join(tools)}" + (f" (not installed: {','.join(sorted(skipped))})" if skipped else "")
          + f"; {a.workers} thread(s) each (ab: 1); load average {os.getloadavg()[0]:.1f}; "
          f"nofile {hard}", flush=True)
    # SIGTERM unwinds like Ctrl-C, so the servers below are stopped by their pids.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    servers = Servers(a.dualbench)
    lua = os.path.join(servers.dir, "report.lua")
    rows = []
    try:
        nginx_port = servers.start_nginx(free_port(a.port))
        ports = {"nginx": nginx_port, "serve": servers.start_serve(free_port(nginx_port + 1))}
        build_launcher(servers.dir)
        with open(lua, "w") as f:
            f.write(WRK_LUA)
        a.serve_pid = servers.serve.pid
        for mode in a.modes.split(","):
            if mode == "stall":
                rows += run_stall(a, ports, lua)
            else:
                rows += run_mode(mode, tools, a, ports, lua)
    finally:
        servers.stop()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print_table(medians(rows), a)


if __name__ == "__main__":
    main()
