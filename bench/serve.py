"""Benchmark `webarchive-index serve` against pywb 2.10's own server, and our cluster reader
against pywb's, on the same cluster.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/serve.py              # 300,000 lines, 5 s per measurement
    python bench/serve.py --quick      # smoke run: 60,000 lines, 2 s per measurement
    python bench/serve.py --repeat 5   # 5 rounds of the exact-lookup rows (default 3)

1. **Cluster**: `--lines` synthetic CDXJ lines (Common-Crawl-shaped keys and fields over
   `--hosts` hosts; seeded, cached in bench/out/serve-cluster/), written as a ZipNum cluster
   of 4 shards, 3000 lines a block (as Common Crawl's), with its cluster.root.
2. **Lookups**: a fixed mix, the same for every server: 70% exact lookups of captured
   URLs, 15% prefix (`host/path*`) and 15% domain (`*.host`) lookups with `limit=100`
   (pywb without `page=` stops at its first page anyway); JSON output; misses included.
3. **Servers**, each answering only while it is measured:
   - ours: `webarchive-index serve NAME=CLUSTER --workers 2` (one per core);
   - pywb: `wayback` (gevent, its default 4 threads), the collection's index our
     cluster.idx (`nosource=true&allowFuzzy=false`, so that both do the same work);
   - remote: the same cluster on a local HTTP range server (tests/rangeserver.py, in its
     own process): ours reads the whole cluster over HTTP (`serve NAME=http://...`);
     pywb, which reads a ZipNum index from local disk only, reads the shards over HTTP
     through a cluster.loc of http:// URLs.
4. **Load**: a client (asyncio, in this process) keeps 1, 8 and 64 clients busy for
   `--seconds` each, after a warm-up over the mix: first each request on a new
   connection (as curl, cdx_toolkit and most scripts ask), then on kept-alive HTTP/1.1
   connections; requests/s, p50 and p99 latency; every answer's status must be 200.
   (pywb's server answers a kept-alive connection's requests after ~40 ms each: the
   delayed-ACK wait of small writes with Nagle's algorithm on.)
5. **One process**: exact lookups per second through `Cluster.lookup` (no cache, and with
   a 64 MiB BlockCache) against pywb's `ZipNumIndexSource.load_index`, same URLs, and
   against the floor of any uncached reader: the URL's key, the block that holds it
   (bisect over cluster.idx) read and inflated with libdeflate (the quickest inflate of a
   whole member here: a third quicker than ISA-L), nothing split or searched.
6. **Exact lookups** (the issue's targets: >= 25x pywb, p99 < 20 ms): the exact lookups of
   the mix at 8 kept-alive clients, on servers all started at once and measured in turn,
   `--repeat` rounds (medians and ranges, each against pywb's median): `serve`; `serve
   --acl` with 3,000 rules (bench/access.py's rules drawn from the cluster's URLs); `serve`
   while idle kept-alive connections (each has had one answer) are held open: 400 (the
   default bounds hold 2 workers x 256), 4,000 (`--max-connections 4096`; a worker holds
   at most ulimit -n less 64) and 1,000 (twice the default bounds: the server closes those
   idle longest, the busy clients keep being answered); pywb with neither. Each idle row
   says how many the server closed, and every row the server's CPU time a request (its
   processes summed, from /proc: steadier than requests/s where other work shares the
   cores, and pywb's server, latency-bound, loses less to such work than ours). The idle ones must open within the idle timeout
   (30 s) less a measurement, or the server closes them as it should.
7. **Report**: the table, the ratios (ours / pywb), the servers' peak memory (VmHWM of
   each process, the workers summed), bench/out/serve-results.json.

The machine is shared and has 2 cores: the client, the servers and the range server
compete for them, so absolute figures are low and noisy; the ratios, from one run, are
what to compare.
"""
import argparse
import asyncio
import bisect
import datetime
import json
import os
import platform
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv")
BIN = os.path.join(VENV, "bin")
PYTHON = os.path.join(BIN, "python")
OUT = os.path.join(ROOT, "bench", "out")
CONCURRENCY = (1, 8, 64)
# The exact-lookup rows: clients, the targets (ours / pywb), the access rules in force,
# and the idle kept-alive connections held open: as many as the default bounds hold
# (2 workers x DEFAULT_MAX_CONNECTIONS 256, less a margin for the uneven share of the
# workers' race to accept), thousands within a raised --max-connections, and twice the
# default bounds (beyond them: the longest idle are closed, the busy clients answered)
EXACT_CLIENTS = 8
EXACT_TARGETS = {"ratio": 25, "p99_ms": 20}
RULES = 3000
IDLE = ((400, (), "default bounds"), (4000, ("--max-connections", "4096"), "--max-connections 4096"),
        (1000, (), "2x default bounds"))

RANGE_SERVER = """import sys, time
sys.path.insert(0, {tests!r})
import rangeserver
with rangeserver.serving({root!r}) as server:
    print(server.url, flush=True)
    while True:
        time.sleep(3600)
"""


def make_lines(count, hosts, seed=1):
    """Sorted synthetic CDXJ lines: captures of pages of ``hosts`` hosts."""
    import surt
    rng = random.Random(seed)
    names = [f"{rng.choice(['www.', '', 'blog.', 'shop.'])}site{n}.{rng.choice(['com', 'org', 'net', 'de', 'co.uk'])}"
             for n in range(hosts)]
    lines, urls = [], []
    while len(lines) < count:
        host = names[min(int(rng.paretovariate(1.2)) - 1, hosts - 1)] if rng.random() < 0.5 else rng.choice(names)
        url = f"https://{host}/{rng.choice(['', 'news/', 'p/', 'a/b/'])}{rng.randint(0, 5000)}" \
              + (f"?id={rng.randint(0, 99)}" if rng.random() < 0.2 else "")
        urls.append(url)
        key = surt.surt(url)
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            ts = f"20{rng.randint(15, 24)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 23):02d}" \
                 f"{rng.randint(0, 59):02d}{rng.randint(0, 59):02d}"
            record = {"url": url, "mime": "text/html", "status": rng.choice(["200", "200", "301", "404"]),
                      "digest": "%032X" % rng.getrandbits(128), "length": str(rng.randint(500, 90000)),
                      "offset": str(rng.randint(0, 10 ** 9)),
                      "filename": f"crawl-data/CC-MAIN-2024-22/segments/{rng.randint(0, 99)}/warc/"
                                  f"CC-MAIN-{rng.randint(0, 99999):05d}.warc.gz"}
            lines.append(f"{key} {ts} {json.dumps(record)}\n".encode())
    lines.sort()
    return lines, urls, names


def cluster(count, hosts):
    """The cluster's directory and the lookup mix, made once per parameters."""
    from webarchive_indexing.zipnum.layout import write_cluster
    out = os.path.join(OUT, "serve-cluster", f"l{count}-h{hosts}")
    done = out + ".json"
    if os.path.exists(done):
        with open(done) as fh:
            return out, json.load(fh)
    shutil.rmtree(out, ignore_errors=True)
    print(f"writing a cluster of {count} lines (once) ...", flush=True)
    lines, urls, names = make_lines(count, hosts)
    splits = [lines[len(lines) * i // 4] for i in range(1, 4)]
    stats = write_cluster(lines, os.path.join(out, "cluster"), splits, lines_per_block=3000)
    rng = random.Random(7)
    mix = []
    for _ in range(400):
        kind = rng.random()
        if kind < 0.7:
            url = rng.choice(urls) if rng.random() < 0.9 else f"https://nothing{rng.randint(0, 999)}.example/"
            mix.append({"url": url})
        elif kind < 0.85:
            url = rng.choice(urls)
            mix.append({"url": url.rsplit("/", 1)[0] + "/*", "limit": "100"})
        else:
            mix.append({"url": "*." + rng.choice(names).removeprefix("www."), "limit": "100"})
    meta = {"stats": stats, "mix": mix}
    with open(done, "w") as fh:
        json.dump(meta, fh)
    return out, meta


def remote_copy(out):
    """A copy of the cluster whose cluster.loc names its shards by http:// URL, for pywb;
    and the range server's root, serving the cluster."""
    copy = os.path.join(out, "pywb-remote")
    shutil.rmtree(copy, ignore_errors=True)
    os.makedirs(copy)
    shutil.copy(os.path.join(out, "cluster", "cluster.idx"), copy)
    return copy


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(argv, cwd=None, ready=None):
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE if ready is None else subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, text=True)
    if ready:
        deadline = time.monotonic() + 60
        while True:
            try:
                status = asyncio.run(fetch_one(ready))
                if status == 200:
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{argv[0]} did not start")
            time.sleep(0.2)
    return process


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def family(process):
    """The pids of a process and its children (a server's workers)."""
    pids = [process.pid]
    try:
        with open(f"/proc/{process.pid}/task/{process.pid}/children") as fh:
            pids += [int(p) for p in fh.read().split()]
    except OSError:
        pass
    return pids


def cpu_seconds(process):
    """CPU time (user and system) of a process and its children so far."""
    total = 0
    for pid in family(process):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def peak_kb(process):
    """VmHWM of a process and its children (a server's workers), in KiB."""
    total = 0
    for pid in family(process):
        try:
            with open(f"/proc/{pid}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
        except (OSError, StopIteration):
            pass
    return total


async def fetch_one(url):
    parts = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        status, _ = await request(reader, writer, parts.hostname, parts.path + "?" + parts.query)
        return status
    finally:
        writer.close()


async def request(reader, writer, host, target, close=False):
    connection = "Connection: close\r\n" if close else ""
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\n{connection}\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    else:
        pieces = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            pieces.append(await reader.readexactly(size + 2))
            if size == 0:
                break
        body = b"".join(pieces)
    return status, body


async def hold_idle(base, target, count):
    """``count`` kept-alive connections, each having had one answer, then idle:
    [(reader, writer)], and how many the server closed or refused while they opened."""
    parts = urllib.parse.urlsplit(base)
    held, lost = [], []

    async def one():
        try:
            connection = await asyncio.open_connection(parts.hostname, parts.port)
            status, _ = await request(*connection, parts.hostname, target)
            held.append(connection) if status == 200 else lost.append(status)
        except (OSError, asyncio.IncompleteReadError) as exc:
            lost.append(exc)

    for first in range(0, count, 200):  # within the listening socket's backlog (1024)
        await asyncio.gather(*(one() for _ in range(min(200, count - first))))
    return held, len(lost)


async def load_while_idle(base, targets, clients, seconds, idle, server):
    """``load`` (kept-alive) while ``idle`` other connections are held open: (requests/s,
    latencies, errors, idle connections the server closed or refused, the server's CPU
    seconds a request)."""
    held, lost = await hold_idle(base, targets[0], idle)
    try:
        cpu = cpu_seconds(server)
        rate, latencies, errors = await load(base, targets, clients, seconds, True)
        cpu = (cpu_seconds(server) - cpu) / max(1, len(latencies))
        return rate, latencies, errors, lost + sum(reader.at_eof() for reader, _ in held), cpu
    finally:
        for _, writer in held:
            writer.close()


def exact_once(base, targets, seconds, idle, server):
    """One measurement of exact lookups at EXACT_CLIENTS kept-alive clients while ``idle``
    connections are held open (after a short warm-up)."""
    asyncio.run(load(base, targets, 4, 1, True))
    rate, latencies, errors, closed, cpu = asyncio.run(
        load_while_idle(base, targets, EXACT_CLIENTS, seconds, idle, server))
    if errors:
        raise RuntimeError(f"{base}: {len(errors)} answers were not 200, e.g. {errors[0]}")
    latencies.sort()
    return {"requests_per_s": rate, "p50_ms": 1000 * latencies[len(latencies) // 2],
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            "idle_closed": closed, "server_cpu_ms": 1000 * cpu}


def exact_section(cluster_dir, config, mix, rules, args, serving, memory):
    """Exact lookups at EXACT_CLIENTS kept-alive clients: serve plainly, with the rules,
    with idle connections held open (IDLE), and pywb; every server up at once and the rows
    measured in turn, ``--repeat`` rounds; medians and ranges, each against pywb's median."""
    spec = f"c={cluster_dir}"
    exact_mix = [q for q in mix if "limit" not in q]
    ours_targets, pywb_targets = targets_for("/c/cdx", exact_mix, False), targets_for("/local/cdx", exact_mix, True)
    servers, rows = {}, []
    try:
        for extra in ((), ("--acl", f"c={rules}"), *(bound for _, bound, _ in IDLE if bound)):
            servers[extra] = serving(spec, *extra)
        port = free_port()
        servers["pywb"] = port, start([os.path.join(BIN, "wayback"), "-p", str(port), "-b", "127.0.0.1"], cwd=config,
                                      ready=f"http://127.0.0.1:{port}/local/cdx?url=example.com&allowFuzzy=false")
        rows = [{"name": "serve", "server": (), "idle": 0},
                {"name": f"serve --acl ({RULES} rules)", "server": ("--acl", f"c={rules}"), "idle": 0},
                *({"name": f"serve, {idle} idle connections open ({label})", "server": bound, "idle": idle}
                  for idle, bound, label in IDLE),
                {"name": "pywb wayback", "server": "pywb", "idle": 0}]
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)
        print(f"exact lookups, {EXACT_CLIENTS} clients kept-alive, local cluster, {args.repeat} rounds "
              f"(ulimit -n {limit[0]} soft, {limit[1]} hard; threads-max {read_number('/proc/sys/kernel/threads-max')}):",
              flush=True)
        for n in range(args.repeat):
            for row in rows:
                port, process = servers[row["server"]]
                got = exact_once(f"http://127.0.0.1:{port}", pywb_targets if row["server"] == "pywb" else ours_targets,
                                 args.seconds, row["idle"], process)
                row.setdefault("runs", []).append(got)
                print(f"  round {n + 1}  {row['name']:<56} {got['requests_per_s']:8.1f} req/s  p50 "
                      f"{got['p50_ms']:6.2f} ms  p99 {got['p99_ms']:7.2f} ms  {got['server_cpu_ms']:.2f} CPU ms/req"
                      + (f"  ({got['idle_closed']} of {row['idle']} idle closed by the server)" if row["idle"] else ""),
                      flush=True)
        names = {row["server"]: row["name"] for row in reversed(rows)}
        for server, (_, process) in servers.items():
            memory[f"{names[server]} (exact rows)"] = peak_kb(process)
    finally:
        for _, process in servers.values():
            stop(process)
    pywb = statistics.median(r["requests_per_s"] for r in rows[-1]["runs"])
    pywb_cpu = statistics.median(r["server_cpu_ms"] for r in rows[-1]["runs"])
    print(f"\nexact lookups, {EXACT_CLIENTS} clients kept-alive: medians of {args.repeat} rounds [range], "
          f"against pywb's median (no rules, no idle connections); targets >= {EXACT_TARGETS['ratio']}x, "
          f"p99 < {EXACT_TARGETS['p99_ms']} ms:")
    for row in rows:
        for field in ("requests_per_s", "p50_ms", "p99_ms", "idle_closed", "server_cpu_ms"):
            values = [r[field] for r in row["runs"]]
            row[field] = statistics.median(values)
            row[field + "_range"] = [min(values), max(values)]
        row["vs_pywb"] = row["requests_per_s"] / pywb
        row["cpu_vs_pywb"] = pywb_cpu / row["server_cpu_ms"]
        row["meets_targets"] = row["vs_pywb"] >= EXACT_TARGETS["ratio"] and row["p99_ms"] < EXACT_TARGETS["p99_ms"]
        lo, hi = row["requests_per_s_range"]
        print(f"  {row['name']:<56} {row['requests_per_s']:7.0f} req/s [{lo:.0f}-{hi:.0f}] "
              f"{row['vs_pywb']:5.1f}x [{lo / pywb:.1f}-{hi / pywb:.1f}]  p50 {row['p50_ms']:5.2f} ms  "
              f"p99 {row['p99_ms']:6.2f} ms [{row['p99_ms_range'][0]:.1f}-{row['p99_ms_range'][1]:.1f}]"
              + f"  CPU/req {row['server_cpu_ms']:.2f} ms ({row['cpu_vs_pywb']:.1f}x less than pywb's)"
              + ("" if row["server"] == "pywb" else "  ok" if row["meets_targets"] else "  BELOW TARGET")
              + (f"  idle closed {row['idle_closed']:.0f} of {row['idle']}" if row["idle"] else ""))
        row["server"] = " ".join(row["server"])
    return rows


def read_number(path):
    try:
        with open(path) as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return "unknown"


def rules_file(out, count, hosts, rules):
    """An .aclj file of ``rules`` rules drawn from the cluster's URLs (bench/access.py's
    mix of hosts, path prefixes and exact URLs; allow, block, exclude), made once."""
    path = os.path.join(out, f"rules-{rules}.aclj")
    if not os.path.exists(path):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from access import make_rules
        make_rules(random.Random(3), make_lines(count, hosts)[1], rules, path + ".part")
        os.replace(path + ".part", path)
    return path


async def load(base, targets, clients, seconds, keep_alive):
    """Keep ``clients`` clients busy for ``seconds``, each on one kept-alive connection or
    on a new connection a request: (requests/s, latencies, errors)."""
    parts = urllib.parse.urlsplit(base)
    latencies, errors = [], []
    stop_at = time.monotonic() + seconds

    async def client(n):
        connection = None
        i = n * 7919
        try:
            while time.monotonic() < stop_at:
                target = targets[i % len(targets)]
                i += 1
                began = time.perf_counter()
                if connection is None:
                    connection = await asyncio.open_connection(parts.hostname, parts.port)
                status, _ = await request(*connection, parts.hostname, target, close=not keep_alive)
                if not keep_alive:
                    connection[1].close()
                    connection = None
                latencies.append(time.perf_counter() - began)
                if status != 200:
                    errors.append((status, target))
        finally:
            if connection:
                connection[1].close()

    began = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return len(latencies) / (time.monotonic() - began), latencies, errors


def measure_server(name, base, targets, seconds):
    asyncio.run(load(base, targets, 4, min(seconds, 2), True))  # warm-up: caches, imports
    rows = []
    for keep_alive in (False, True):
        for clients in CONCURRENCY:
            rate, latencies, errors = asyncio.run(load(base, targets, clients, seconds, keep_alive))
            if errors:
                raise RuntimeError(f"{name}: {len(errors)} answers were not 200, e.g. {errors[0]}")
            latencies.sort()
            rows.append({"server": name, "clients": clients, "keep_alive": keep_alive,
                         "requests_per_s": round(rate, 1),
                         "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
                         "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2),
                         "requests": len(latencies)})
            print(f"  {name:<14} {clients:>3} clients {'kept-alive' if keep_alive else 'new conns.'}"
                  f"  {rate:8.1f} req/s  p50 {rows[-1]['p50_ms']:7.2f} ms  p99 {rows[-1]['p99_ms']:8.2f} ms",
                  flush=True)
    return rows


def targets_for(path, mix, pywb):
    extra = {"output": "json"}
    if pywb:
        extra.update({"nosource": "true", "allowFuzzy": "false"})
    return [f"{path}?{urllib.parse.urlencode({**query, **extra})}" for query in mix]


def one_process(cluster_dir, mix, seconds):
    """Exact lookups a second in this process: ours (no cache; a 64 MiB BlockCache) and pywb's."""
    from pywb.warcserver.index.zipnum import ZipNumIndexSource
    from webarchive_indexing.zipnum.reader import BlockCache, Cluster
    urls = [q["url"] for q in mix if "limit" not in q]
    results = {}

    def rate(name, lookup):
        for url in urls[:50]:
            lookup(url)
        done, began = 0, time.perf_counter()
        while time.perf_counter() - began < seconds:
            lookup(urls[done % len(urls)])
            done += 1
        results[name] = round(done / (time.perf_counter() - began), 1)
        print(f"  {name:<32} {results[name]:8.1f} lookups/s", flush=True)

    idx = os.path.join(cluster_dir, "cluster.idx")
    source = ZipNumIndexSource(idx, {})
    rate("pywb ZipNumIndexSource", lambda url: [c.to_json() for c in source.load_index({"url": url})])
    plain = Cluster(cluster_dir)
    rate("ours, no cache", lambda url: list(plain.lookup(url)))
    cached = Cluster(cluster_dir, cache=BlockCache(64 << 20))
    rate("ours, 64 MiB block cache", lambda url: list(cached.lookup(url)))
    rate("floor: inflate the URL's block", block_floor(idx))
    return results


def block_floor(idx):
    """What any reader of the cluster pays for an exact lookup without a cache: the URL's
    key (SURT), the block whose range holds it (bisect over cluster.idx, read once), its
    bytes read and inflated (libdeflate); no lines split, searched or formatted."""
    from deflate import gzip_decompress
    from webarchive_indexing import storage
    from webarchive_indexing.cdx.urlkey import url_key
    entries = []
    with open(idx, "rb") as fh:
        for line in fh:
            key, shard, offset, length = line.rstrip(b"\n").split(b"\t")[:4]
            entries.append((key.rsplit(b" ", 1)[0], shard.decode(), int(offset), int(length)))
    keys = [entry[0] for entry in entries]
    shards = {}

    def lookup(url):
        key = url_key(url).encode()
        _, shard, offset, length = entries[max(0, bisect.bisect_left(keys, key) - 1)]
        if shard not in shards:
            shards[shard] = open(storage.below(os.path.dirname(idx), shard), "rb")
        return gzip_decompress(os.pread(shards[shard].fileno(), length, offset))
    return lookup


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=300_000, help="CDXJ lines in the cluster")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5, help="per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the exact-lookup rows (medians, ranges)")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=False,
                        help="smoke run: 60,000 lines, 2 s per measurement")
    args = parser.parse_args(argv)
    if args.quick:
        args.lines, args.seconds = 60_000, 2
    out, meta = cluster(args.lines, args.hosts)
    cluster_dir = os.path.join(out, "cluster")
    mix = meta["mix"]
    load_start = os.getloadavg()
    rows = []

    print("one process, exact lookups:", flush=True)
    lookups = one_process(cluster_dir, mix, args.seconds)

    range_server = subprocess.Popen([PYTHON, "-c", RANGE_SERVER.format(tests=os.path.join(ROOT, "tests"), root=out)],
                                    stdout=subprocess.PIPE, text=True)
    remote = range_server.stdout.readline().strip()
    pywb_remote = remote_copy(out)
    with open(os.path.join(pywb_remote, "cluster.loc"), "w") as fh:
        for name in sorted(os.listdir(cluster_dir)):
            if name.startswith("cdx-"):
                fh.write(f"{name}\t{remote}/cluster/{name}\n")
    config = os.path.join(out, "pywb")
    os.makedirs(config, exist_ok=True)
    with open(os.path.join(config, "config.yaml"), "w") as fh:
        fh.write(f"collections:\n  local: {os.path.join(cluster_dir, 'cluster.idx')}\n"
                 f"  remote: {os.path.join(pywb_remote, 'cluster.idx')}\n")
    memory = {}

    def serving(spec, *extra):
        port = free_port()
        return port, start([os.path.join(BIN, "webarchive-index"), "serve", spec, "--port", str(port),
                            "--workers", "2", "--no-log", *extra], ready=f"http://127.0.0.1:{port}/collinfo.json")

    try:
        for where, ours_spec, pywb_coll in (("local", f"c={cluster_dir}", "local"),
                                            ("remote", f"c={remote}/cluster", "remote")):
            print(f"servers, {where} cluster:", flush=True)
            port, ours = serving(ours_spec)
            try:
                rows += [dict(r, cluster=where) for r in measure_server(
                    "serve", f"http://127.0.0.1:{port}", targets_for("/c/cdx", mix, False), args.seconds)]
                memory[f"serve, {where} (2 workers)"] = peak_kb(ours)
            finally:
                stop(ours)
            port = free_port()
            pywb = start([os.path.join(BIN, "wayback"), "-p", str(port), "-b", "127.0.0.1"], cwd=config,
                         ready=f"http://127.0.0.1:{port}/{pywb_coll}/cdx?url=example.com&allowFuzzy=false")
            try:
                rows += [dict(r, cluster=where) for r in measure_server(
                    "pywb wayback", f"http://127.0.0.1:{port}", targets_for(f"/{pywb_coll}/cdx", mix, True),
                    args.seconds)]
                memory[f"pywb wayback, {where}"] = peak_kb(pywb)
            finally:
                stop(pywb)
    finally:
        range_server.terminate()
        range_server.wait()
    exact = exact_section(cluster_dir, config, mix, rules_file(out, args.lines, args.hosts, RULES),
                          args, serving, memory)

    ratios = {}
    for where in ("local", "remote"):
        for keep_alive in (False, True):
            for clients in CONCURRENCY:
                ours, theirs = (next(r["requests_per_s"] for r in rows if r["server"] == s and r["clients"] == clients
                                     and r["cluster"] == where and r["keep_alive"] == keep_alive)
                                for s in ("serve", "pywb wayback"))
                how = "kept-alive" if keep_alive else "new connections"
                ratios[f"req/s {where}, {clients} clients, {how}"] = round(ours / theirs, 2)
    ratios["lookups/s one process, no cache"] = round(lookups["ours, no cache"] / lookups["pywb ZipNumIndexSource"], 2)
    ratios["lookups/s one process, block cache"] = round(lookups["ours, 64 MiB block cache"] / lookups["pywb ZipNumIndexSource"], 2)
    print("\nratios (ours / pywb):")
    for name, value in ratios.items():
        print(f"  {name:<40} {value:5.2f}x")
    ratios["lookups/s one process, no cache / the floor"] = round(
        lookups["ours, no cache"] / lookups["floor: inflate the URL's block"], 2)
    print(f"  lookups/s one process, no cache, against the floor (inflate the URL's block): "
          f"{100 * ratios['lookups/s one process, no cache / the floor']:.0f}% of its rate")
    print("peak memory (VmHWM):")
    for name, kb in memory.items():
        print(f"  {name:<40} {kb / 1024:7.1f} MiB")
    result = {"meta": {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                       "python": platform.python_version(), "cores": os.cpu_count(),
                       "lines": args.lines, "blocks": meta["stats"]["blocks"], "seconds": args.seconds,
                       "loadavg_1_5_15min": {"start": load_start, "end": os.getloadavg()}},
              "servers": rows, "exact": exact, "one_process": lookups, "ratios": ratios, "peak_memory_kib": memory}
    with open(os.path.join(OUT, "serve-results.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {os.path.relpath(os.path.join(OUT, 'serve-results.json'))}")
    return 0


if __name__ == "__main__":
    if os.path.realpath(sys.prefix) != os.path.realpath(VENV) and os.path.exists(PYTHON):
        os.execv(PYTHON, [PYTHON, *sys.argv])
    # killed (kill, a closed terminal): the servers it started are stopped on the way out,
    # as on Ctrl-C, by the `finally` that started them
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda number, frame: sys.exit(128 + number))
    sys.exit(main())
