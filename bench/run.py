"""Benchmark `webarchive-index cdx` against cdxj-indexer and the gzip decompression floor.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/run.py                 # 4 files x 5000 captures (~280 MB .warc.gz), repeat 3
    python bench/run.py --quick         # smoke run: 1 file x 1000 captures
    python bench/run.py --files 2 --captures 2000 --mean-kb 20 --repeat 5

Every measurement is a whole command run with subprocess (Python start-up included),
pinned to one core with `taskset -c 0` when available, on a page-cache-warm corpus.  Ours
runs from a regular install of the working tree, made for the run in bench/out/venv (with
.venv's packages as its dependencies), as a user's `pip install` makes it and as
cdxj-indexer is installed: .venv's editable install costs every start an import hook
(~12 ms), and under PYTHONDONTWRITEBYTECODE=1 a compile of the sources (60-90 ms).

* floor isal     stream the file through isal.igzip in 1 MiB chunks, discarding the
                 output (the fastest gzip available); zlib-ng and zlib (Python's gzip
                 module) for reference
* cdxj-indexer   `cdxj-indexer FILE...`             (the baseline)
* ours           `webarchive-index cdx FILE...`     (sorted CDXJ to stdout)

each per file and once for all files in one command.  Our output for each file must
equal pywb's `cdx-indexer -s -j FILE` byte for byte, else the run exits with status 1
(pywb's run is timed once, for reference).  Then `webarchive-index build` of the whole
corpus (local runner, all cores, not pinned) is timed.  Last, the columnar index:
`export --format parquet` of the build's cluster and of a larger one made from it
(--scale copies of its lines, hosts renamed), with peak memory, and what a one-host
DuckDB query reads of the larger table (see bench/README.md).

The corpus is generated once and cached in bench/out/corpus/<parameters>/; the table is
printed and bench/out/results.json written.  Scratch output goes to bench/out/tmp/.
"""
import argparse
import collections
import datetime
import filecmp
import functools
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv")
OUT = os.path.join(ROOT, "bench", "out")
TMP = os.path.join(OUT, "tmp")
INSTALL = os.path.join(OUT, "venv")
BIN = os.path.join(VENV, "bin")
PYTHON = os.path.join(BIN, "python")

# Decompress every file named on the command line in 1 MiB chunks, discarding the output.
FLOOR_SCRIPT = """import sys
from {module} import open as gz_open
for path in sys.argv[1:]:
    with gz_open(path, "rb") as fh:
        while fh.read(1 << 20):
            pass
"""
FLOORS = {"floor isal": "isal.igzip", "floor zlib-ng": "zlib_ng.gzip_ng", "floor zlib": "gzip"}
# The floor of a build on every core: FLOOR_SCRIPT with isal (argv[1]) in one process a core
# (argv[2]), the files dealt out largest first to the process with the fewest bytes so far
PARALLEL_FLOOR_SCRIPT = """import os, subprocess, sys
script, shares = sys.argv[1], [[0, []] for _ in range(int(sys.argv[2]))]
for path in sorted(sys.argv[3:], key=os.path.getsize, reverse=True):
    share = min(shares, key=lambda s: s[0])
    share[0] += os.path.getsize(path)
    share[1].append(path)
procs = [subprocess.Popen([sys.executable, "-c", script, *paths]) for _, paths in shares if paths]
sys.exit(max(p.wait() for p in procs))
"""
PYWB = "pywb cdx-indexer (1 run)"
ORDER = (*FLOORS, "cdxj-indexer", PYWB, "ours")


def corpus(files, captures, mean_kb, seed=1):
    """The corpus' .warc.gz paths, generated on first use and cached by parameters."""
    from webarchive_indexing.commands.corpus import make_corpus
    key = f"f{files}-c{captures}-kb{mean_kb:g}-s{seed}"
    out_dir = os.path.join(OUT, "corpus", key)
    done = out_dir + ".done.json"  # beside, not inside: `build` indexes the whole directory
    if os.path.exists(done):
        with open(done) as fh:
            return json.load(fh)["paths"]
    shutil.rmtree(out_dir, ignore_errors=True)
    print(f"generating corpus {key} (once) ...", flush=True)
    start = time.perf_counter()
    paths = make_corpus(out_dir, files=files, captures=captures, seed=seed, mean_kb=mean_kb)
    with open(done, "w") as fh:
        json.dump({"paths": paths}, fh)
    print(f"  {total_mb(paths):.1f} MB in {time.perf_counter() - start:.0f} s", flush=True)
    return paths


def total_mb(paths):
    return sum(map(os.path.getsize, paths)) / 1e6


@functools.cache
def records_in(path):
    """WARC records in the file (indexed or not), from the corpus' ground-truth manifest
    (read once: every row of the report asks)."""
    from webarchive_indexing.commands.corpus import read_manifest
    return len(read_manifest(path))


def total_records(paths):
    return sum(map(records_in, paths))


def install_project(source=ROOT, install=INSTALL):
    """A regular (not editable) install of the working tree (or of another ``source``
    tree) in ``install``, whose other packages come from .venv; returns its bin directory."""
    print(f"installing {'the working tree' if source == ROOT else os.path.relpath(source, ROOT)} "
          f"in {os.path.relpath(install, ROOT)} ...", flush=True)
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", "--clear", install], check=True)
    site = subprocess.run([os.path.join(install, "bin", "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "project-deps.pth"), "w") as fh:
        fh.write(sysconfig.get_path("purelib") + "\n")
    subprocess.run([os.path.join(BIN, "pip"), "--python", os.path.join(install, "bin", "python"),
                    "install", "--quiet", "--no-deps", "--no-build-isolation", source], check=True)
    return os.path.join(install, "bin")


def walker(ours_bin):
    """Which member walker the install runs, and with which inflater (its --version says)."""
    line = subprocess.run([os.path.join(ours_bin, "webarchive-index"), "--version"],
                          check=True, capture_output=True, text=True).stdout.strip()
    return line.partition("member walker: ")[2]


def pinning():
    """The command prefix that pins to one core, or [] when taskset is missing or fails."""
    prefix = ["taskset", "-c", "0"]
    if shutil.which("taskset") and subprocess.run(prefix + ["true"]).returncode == 0:
        return prefix
    return []


Timed = collections.namedtuple("Timed", "wall cpu stderr peak_kb")


def time_command(argv, stdout_path=os.devnull):
    """Timed(wall s, cpu s, stderr, peak KB) of one run of argv with stdout into
    stdout_path; exits on failure. CPU and peak cover the command and every process it
    waited for (peak: the largest resident set among them)."""
    with open(stdout_path, "wb") as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(argv)}\n{stderr[-2000:]}")
    return Timed(wall, usage.ru_utime + usage.ru_stime, stderr, usage.ru_maxrss)


def scratch(group, command):
    """Where the stdout of one command on one group goes."""
    return os.path.join(TMP, re.sub(r"\W+", "_", f"{group} {command}") + ".out")


def count_lines(path):
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def row(group, command, argv, paths, wall, cpu, lines):
    """One result: best and median wall time; MB/s, records/s (every record of the input,
    indexed or not) and lines/s (CDX lines written) from the best."""
    best = min(wall)
    mb, records = total_mb(paths), total_records(paths)
    return {"input": group, "command": command, "argv": argv, "mb": mb, "records": records,
            "wall": wall, "cpu": cpu, "best": best, "median": statistics.median(wall),
            "mb_s": mb / best, "records_s": records / best,
            "lines": lines, "lines_s": lines / best if lines else None}


def missing_tools():
    """What the timed commands need and the virtual environment lacks."""
    modules = [m for m in FLOORS.values() if importlib.util.find_spec(m.split(".")[0]) is None]
    tools = [t for t in ("cdxj-indexer", "cdx-indexer", "webarchive-index")
             if not os.path.exists(os.path.join(BIN, t))]
    return modules + tools


def floor(paths):
    """{name: argv} of the decompression-only commands."""
    return {name: [PYTHON, "-c", FLOOR_SCRIPT.format(module=module), *paths]
            for name, module in FLOORS.items()}


def measure(groups, pin, repeat, ours_bin):
    """Time each command of each group `repeat` times, interleaved round by round."""
    runs = {}
    for group, paths in groups.items():
        cmds = {**floor(paths), "cdxj-indexer": [os.path.join(BIN, "cdxj-indexer"), *paths],
                "ours": [os.path.join(ours_bin, "webarchive-index"), "cdx", *paths]}
        for name, argv in cmds.items():
            out = scratch(group, name)
            runs[group, name] = (pin + argv, out, [], [])
    for round_no in range(repeat):
        print(f"  round {round_no + 1}/{repeat}", flush=True)
        for argv, out, wall, cpu in runs.values():
            timed = time_command(argv, out)
            wall.append(timed.wall)
            cpu.append(timed.cpu)
    return {(group, name): row(group, name, argv, groups[group], wall, cpu,
                               None if name in FLOORS else count_lines(out))
            for (group, name), (argv, out, wall, cpu) in runs.items()}


def add_sums(rows, files):
    """Rows 'sum of files': each command's per-file best (and median) times added up."""
    for name in {n for _, n in rows}:
        parts = [rows[f, name] for f in files if (f, name) in rows]
        r = row("sum of files", name, None, [path for f in files for path in files[f]],
                [sum(p["best"] for p in parts)], [sum(min(p["cpu"]) for p in parts)],
                None if parts[0]["lines"] is None else sum(p["lines"] for p in parts))
        r["median"] = sum(p["median"] for p in parts)
        rows["sum of files", name] = r


def compare(groups, pin):
    """Our CDXJ of each file vs pywb's `cdx-indexer -s -j`: ({file: None or what differs}, rows)."""
    verdicts, rows = {}, {}
    for group, (path,) in groups.items():
        ours, theirs = scratch(group, "ours"), scratch(group, "pywb")  # ours: the last timed run
        argv = pin + [os.path.join(BIN, "cdx-indexer"), "-s", "-j", path]
        timed = time_command(argv, theirs)
        rows[group, PYWB] = row(group, PYWB, argv, [path], [timed.wall], [timed.cpu], count_lines(theirs))
        verdicts[group] = None if filecmp.cmp(ours, theirs, shallow=False) else first_difference(ours, theirs)
    return verdicts, rows


def first_difference(ours, theirs):
    with open(ours, "rb") as a, open(theirs, "rb") as b:
        for no, (x, y) in enumerate(zip(a, b), 1):
            if x != y:
                return f"line {no} differs:\n  ours: {x[:300]!r}\n  pywb: {y[:300]!r}"
    return f"line counts differ: ours {count_lines(ours)}, pywb {count_lines(theirs)}"


def build(paths, repeat, ours_bin):
    """Time `webarchive-index build` of the corpus directory (default engine, all cores),
    alone and with `--parquet` (the columnar table from the same run), round by round; the
    two rows. The cluster stays in TMP/build, the table in TMP/build-table."""
    out_dir, table = os.path.join(TMP, "build"), os.path.join(TMP, "build-table")
    argv = [os.path.join(ours_bin, "webarchive-index"), "build", os.path.dirname(paths[0]), "-o", out_dir,
            "--shards", "4", "--no-skip-existing", "--no-progress"]
    floor = [PYTHON, "-c", PARALLEL_FLOOR_SCRIPT, FLOOR_SCRIPT.format(module=FLOORS["floor isal"]),
             str(os.cpu_count()), *paths]
    commands = {f"build --shards 4 ({os.cpu_count()} cores)": argv,
                "build --shards 4 --parquet": argv + ["--parquet", table],
                f"floor isal, {os.cpu_count()} processes": floor}
    wall = {name: [] for name in commands}
    cpu = {name: [] for name in commands}
    lines = {}
    for _ in range(repeat):
        for name, command in commands.items():
            if command is not floor:
                shutil.rmtree(out_dir, ignore_errors=True)
            w, c, stderr, _ = time_command(command)
            wall[name].append(w)
            cpu[name].append(c)
            found = re.search(r"(\d+) CDX lines", stderr)
            lines[name] = int(found.group(1)) if found else None
    return [row("whole corpus", name, command, paths, wall[name], cpu[name], lines[name])
            for name, command in commands.items()]


def same_tables(ours, theirs):
    """Whether two tables hold the same files, byte for byte (but the mark saying which
    command wrote each: ``publish.TABLE_MARK``)."""
    from webarchive_indexing.build.publish import TABLE_MARK

    def names(table):
        return sorted(os.path.relpath(p, table) for p in _files(table)
                      if os.path.basename(p) != TABLE_MARK)
    names_ours = names(ours)
    if names_ours != names(theirs):
        return False
    return all(open(os.path.join(ours, n), "rb").read() == open(os.path.join(theirs, n), "rb").read()
               for n in names_ours)


# Runs a command and prints its peak memory (KiB, of its largest process) on stderr, last
PEAK_SCRIPT = """import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
sys.stderr.write("peak_kib %d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(code)
"""
# One query of a table in a fresh DuckDB: the rows it gave and the bytes the process read
QUERY_SCRIPT = """import json, sys
import duckdb
def rchar():
    with open("/proc/self/io") as fh:
        return int(fh.read().split("rchar: ")[1].split()[0])
con = duckdb.connect()
before = rchar()
result = con.sql(sys.argv[1]).fetchall()
print(json.dumps({"rows": len(result), "bytes_read": rchar() - before}))
"""


def export(cluster_dir, label, lines, repeat, ours_bin):
    """Time `webarchive-index export CLUSTER --format parquet` (one core's work: the export
    is one process), with its peak memory; the table stays in TMP/<label>."""
    table = os.path.join(TMP, label)
    argv = [PYTHON, "-c", PEAK_SCRIPT, os.path.join(ours_bin, "webarchive-index"), "export",
            cluster_dir, "--format", "parquet", "-o", table, "--no-progress"]
    wall, cpu, peaks = [], [], []
    for _ in range(repeat):
        w, c, stderr, _ = time_command(argv)
        wall.append(w)
        cpu.append(c)
        peaks.append(int(re.search(r"peak_kib (\d+)", stderr).group(1)))
    r = row(label, "export --format parquet", argv[3:], [], wall, cpu, lines)
    r.update(mb=0.0, mb_s=0.0, records=None, records_s=0.0, peak_mb=max(peaks) / 1024,
             table_mb=sum(os.path.getsize(p) for p in _files(table)) / 1e6)
    return r, table


def _files(directory):
    return [os.path.join(d, f) for d, _, names in os.walk(directory) for f in names]


def scaled_cluster(cluster_dir, copies):
    """A larger cluster for the columnar measurements: every line of ``cluster_dir`` once per
    copy, its host given one more label (``h7.example.com``), 4 shards; returns (its
    directory, its line count, a host of it)."""
    from webarchive_indexing.inputs.indexes import ZipNumCluster
    from webarchive_indexing.zipnum.places import cluster_index
    from webarchive_indexing.zipnum.layout import write_cluster
    base = [line.decode("utf-8") + "\n" for line in ZipNumCluster(cluster_index(cluster_dir)).lines()]
    url_host = re.compile(r'("url": "https?://)([^/:"]+)')
    lines = []
    for copy in range(copies):
        for line in base:
            key, bracket, rest = line.partition(")")
            if not bracket or not re.fullmatch(r"[a-z0-9-]+(,[a-z0-9-]+)+", key):
                continue  # an IP address or an odd key: kept out of the copies
            lines.append(f"{key},h{copy}){url_host.sub(lambda m: f'{m.group(1)}h{copy}.{m.group(2)}', rest, 1)}")
    lines.sort()
    data = [line.encode("utf-8") for line in lines]
    splits = sorted({data[len(data) * i // 4] for i in range(1, 4)})
    out = os.path.join(TMP, "scaled", "cluster")
    write_cluster(data, out, splits)
    key = lines[len(lines) // 2].split(")", 1)[0]
    return os.path.dirname(out), len(lines), key


def one_host_query(table, host_key):
    """What DuckDB reads of the table to answer for one host: bytes read by a fresh process
    (/proc/self/io rchar) against the table's size, and the row groups whose url_surtkey
    statistics admit the host."""
    import pyarrow.parquet as pq
    low, high = host_key + ")", host_key + "*"
    files = [p for p in _files(table) if p.endswith(".parquet")]
    groups = candidates = 0
    for path in files:
        meta = pq.ParquetFile(path).metadata
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(0).statistics
            groups += 1
            candidates += stats.min < high and stats.max >= low
    source = f"read_parquet('{table}/*/*/*.parquet', hive_partitioning = true)"
    where = f"url_surtkey >= '{low}' AND url_surtkey < '{high}'"
    size = sum(os.path.getsize(p) for p in files)
    result = {"host_key": host_key, "table_bytes": size, "row_groups": groups,
              "row_groups_admitting_host": candidates}
    for name, query in (("all_columns", f"SELECT * FROM {source} WHERE {where}"),
                        ("two_columns", f"SELECT url, warc_filename FROM {source} WHERE {where}")):
        done = json.loads(subprocess.run([PYTHON, "-c", QUERY_SCRIPT, query], check=True,
                                         capture_output=True, text=True).stdout)
        result[name] = {"rows": done["rows"], "bytes_read": done["bytes_read"],
                        "share_read": done["bytes_read"] / size}
    return result


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ratios(rows, groups, build_row, build_floor_row):
    """Per group, ours against cdxj-indexer (its time over ours: the speed-up) and against the
    isal floor (our time over the floor's); and the whole corpus' build against the floor on
    as many processes (``_ratio``)."""
    result = {group: {"speedup_vs_cdxj_indexer": _ratio(rows[group, "cdxj-indexer"], rows[group, "ours"]),
                      "ours_vs_floor": _ratio(rows[group, "ours"], rows[group, "floor isal"])}
              for group in groups}
    result["whole corpus"] = {"ours_vs_floor": _ratio(build_row, build_floor_row)}
    return result


def _ratio(numerator, denominator):
    """One row's times over another's: of best times, of medians and the lowest and highest
    of the runs of one round, in wall and in CPU time."""
    def per_round(key):
        quotients = [n / d for n, d in zip(numerator[key], denominator[key])]
        return [min(quotients), max(quotients)]
    return {"best": numerator["best"] / denominator["best"],
            "median": numerator["median"] / denominator["median"], "range": per_round("wall"),
            "cpu_median": statistics.median(numerator["cpu"]) / statistics.median(denominator["cpu"]),
            "cpu_range": per_round("cpu")}


def _shown(ratio, what, of):
    """A ``_ratio`` as the report shows it: its median and range (``of``: "" wall time,
    "cpu_" CPU time), and of wall times the ratio of the best."""
    text = f"{ratio[of + 'median']:.2f}x {what} [{ratio[of + 'range'][0]:.2f}-{ratio[of + 'range'][1]:.2f}]"
    return text if of else f"{text} ({ratio['best']:.2f}x)"


def report(rows, ratio, verdicts, meta):
    fmt = "{:<22} {:<26} {:>7} {:>7} {:>8} {:>7} {:>9} {:>8} {:>9}"
    print()
    print(f"corpus   {meta['corpus']}: {meta['files']} files x {meta['captures']} captures, "
          f"mean {meta['mean_kb']:g} KB, {meta['total_mb']:.1f} MB .warc.gz")
    print(f"machine  {meta['cpu']}, {meta['cores']} cores, Python {meta['python']}, {meta['date']}")
    load = meta["loadavg_1_5_15min"]
    print(f"load     1-min load average {load['start'][0]:.2f} at the start, {load['end'][0]:.2f} at the end "
          "(other processes share the cores: compare runs made at similar load)")
    pin = "yes (" + " ".join(meta["pinning"]) + ")" if meta["pinning"] else "NO (taskset unavailable)"
    print(f"pinned   {pin}, except build; best of {meta['repeat']} runs, median beside; "
          f"whole commands incl. Python start-up (ours from a regular install in {meta['ours_installed_in']})")
    print(f"walker   ours: {meta['ours_walker']}")
    print()
    print(fmt.format("input", "command", "MB", "best s", "median s", "MB/s", "records/s", "lines", "lines/s"))
    last = None
    for r in rows.values():
        if last is not None and r["input"] != last:
            print()
        shown = r["input"] if r["input"] != last else ""
        last = r["input"]
        print(fmt.format(shown, r["command"], f"{r['mb']:.1f}", f"{r['best']:.2f}",
                         f"{r['median']:.2f}", f"{r['mb_s']:.1f}", f"{r['records_s']:.0f}", r["lines"] or "-",
                         f"{r['lines_s']:.0f}" if r["lines_s"] else "-"))
    print()
    line = "{:<22} {:>36} {:>38} {:>14}"
    print("ratios of medians [range of the rounds' ratios] (best times); the floor: ISA-L inflate only,"
          " on as many processes as the command")
    print(line.format("", "ours vs cdxj-indexer", "ours vs isal floor", "floor's share"))
    for group, r in ratio.items():
        speedup, floor = r.get("speedup_vs_cdxj_indexer"), r["ours_vs_floor"]
        print(line.format(group, _shown(speedup, "faster", "") if speedup else "-",
                          _shown(floor, "the floor's time", ""), f"{100 / floor['median']:.0f}%"))
    print("the same, of CPU times (of each command and its children: steadier than wall time where other "
          "work shares the cores)")
    for group, r in ratio.items():
        speedup, floor = r.get("speedup_vs_cdxj_indexer"), r["ours_vs_floor"]
        print(line.format(group, _shown(speedup, "less CPU", "cpu_") if speedup else "-",
                          _shown(floor, "the floor's CPU", "cpu_"), f"{100 / floor['cpu_median']:.0f}%"))
    print()
    for group, note in verdicts.items():
        if note:
            print(f"CORRECTNESS FAILURE {group}: ours != pywb `cdx-indexer -s -j`\n{note}")
    if not any(verdicts.values()):
        print(f"correctness: ours == pywb `cdx-indexer -s -j` byte for byte, all {len(verdicts)} files")


def report_columnar(exports, pruning, build_row, parquet_row):
    print()
    print(f"build --parquet vs build, the same run (median of {len(build_row['wall'])}): "
          f"{statistics.median(parquet_row['wall']) / statistics.median(build_row['wall']):.2f}x "
          f"wall, {statistics.median(parquet_row['cpu']) / statistics.median(build_row['cpu']):.2f}x "
          "CPU (the table equals export's of the cluster, byte for byte)")
    print("{:<22} {:>9} {:>8} {:>9} {:>10} {:>12} {:>8} {:>9}".format(
        "columnar index", "lines", "best s", "median s", "lines/s", "lines/cpu-s", "peak MB",
        "table MB"))
    for r in exports:
        # CPU time as well: on a shared machine the export's own work, whatever the others do
        print("{:<22} {:>9} {:>8.2f} {:>9.2f} {:>10.0f} {:>12.0f} {:>8.0f} {:>9.1f}".format(
            f"export {r['input']}", r["lines"], r["best"], r["median"], r["lines_s"],
            r["lines"] / min(r["cpu"]), r["peak_mb"], r["table_mb"]))
    p = pruning
    print(f"one-host query (DuckDB, fresh process, url_surtkey range of {p['host_key']}; "
          f"{p['row_groups_admitting_host']} of the table's {p['row_groups']} row groups admit "
          "the host by their statistics):")
    for name, q in (("SELECT *", p["all_columns"]), ("SELECT url, warc_filename", p["two_columns"])):
        print(f"  {name:<26} {q['rows']} rows, read {q['bytes_read'] / 1e6:.2f} MB of the "
              f"{p['table_bytes'] / 1e6:.1f} MB table ({100 * q['share_read']:.1f}%)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--captures", type=int, default=5000, help="captures per file")
    parser.add_argument("--mean-kb", type=float, default=40, help="mean payload size")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (best and median reported)")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=False,
                        help="smoke run: 1 file x 1000 captures (--no-quick: the sizes above, "
                             "the default)")
    parser.add_argument("--scale", type=int, default=60,
                        help="copies of the corpus' lines (each with its hosts renamed) in the "
                             "larger cluster the columnar index is timed and queried on")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.captures, args.scale = 1, 1000, 20
    if args.files < 1 or args.captures < 1 or args.repeat < 1:
        parser.error("--files, --captures and --repeat must be at least 1")

    missing = missing_tools()
    if missing:
        sys.exit(f"bench: {', '.join(missing)} not installed in {VENV}: run `make bench`, or "
                 f"`{os.path.join(BIN, 'pip')} install -e '.[test,bench]'`")
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    paths = corpus(args.files, args.captures, args.mean_kb)
    for path in paths:  # warm the page cache, so that no command pays for the first read
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    ours_bin = install_project()
    pin, load_start = pinning(), os.getloadavg()
    files = {os.path.basename(p).removesuffix(".warc.gz"): [p] for p in paths}
    groups = dict(files)
    if len(paths) > 1:
        groups[f"all {len(paths)}, 1 command"] = paths
    print(f"timing {len(groups) * 5} commands x {args.repeat} ...", flush=True)
    rows = measure(groups, pin, args.repeat, ours_bin)
    print("checking correctness against pywb ...", flush=True)
    verdicts, pywb_rows = compare(files, pin)
    rows.update(pywb_rows)
    if len(files) > 1:
        add_sums(rows, files)
    print("timing build and build --parquet ...", flush=True)
    build_row, parquet_row, build_floor_row = build(paths, args.repeat, ours_bin)
    order = [*files, *(["sum of files"] if len(files) > 1 else []), *(g for g in groups if g not in files)]
    rows = {(g, n): rows[g, n] for g in order for n in ORDER if (g, n) in rows}
    rows["whole corpus", build_row["command"]] = build_row
    rows["whole corpus", "build --parquet"] = parquet_row
    rows["whole corpus", build_floor_row["command"]] = build_floor_row
    print("timing export --format parquet ...", flush=True)
    cluster_dir = os.path.join(TMP, "build")
    export_row, whole_table = export(cluster_dir, "whole corpus", build_row["lines"], args.repeat,
                                     ours_bin)
    exports = [export_row]
    if not same_tables(whole_table, os.path.join(TMP, "build-table")):
        sys.exit("build --parquet wrote another table than export of its cluster")
    scaled, scaled_lines, host_key = scaled_cluster(cluster_dir, args.scale)
    scaled_row, table = export(scaled, f"x{args.scale} hosts", scaled_lines, args.repeat, ours_bin)
    exports.append(scaled_row)
    pruning = one_host_query(table, host_key)
    ratio = ratios(rows, order, build_row, build_floor_row)

    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cpu": cpu_model(), "cores": os.cpu_count(),
            "pinning": pin, "repeat": args.repeat, "ours_installed_in": os.path.relpath(INSTALL, ROOT),
            "ours_walker": walker(ours_bin),
            "corpus": os.path.relpath(os.path.dirname(paths[0]), ROOT),
            "files": args.files, "captures": args.captures, "mean_kb": args.mean_kb,
            "total_mb": total_mb(paths), "loadavg_1_5_15min": {"start": load_start, "end": os.getloadavg()}}
    report(rows, ratio, verdicts, meta)
    report_columnar(exports, pruning, build_row, parquet_row)
    ok = not any(verdicts.values())
    with open(os.path.join(OUT, "results.json"), "w") as fh:
        json.dump({"meta": meta, "correct": ok, "mismatches": {g: v for g, v in verdicts.items() if v},
                   "ratios": ratio, "results": list(rows.values()), "exports": exports,
                   "one_host_query": pruning},
                  fh, indent=1)
    print(f"wrote {os.path.relpath(os.path.join(OUT, 'results.json'))}")
    return 0 if ok else 1


if __name__ == "__main__":
    if os.path.realpath(sys.prefix) != os.path.realpath(VENV) and os.path.exists(PYTHON):
        os.execv(PYTHON, [PYTHON, *sys.argv])  # the project and its tools live in the venv
    sys.exit(main())
