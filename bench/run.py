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
(pywb's run is timed once, for reference).  Last, `webarchive-index build` of the whole
corpus (the local engine, all cores, not pinned) is timed.

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
PYWB = "pywb cdx-indexer (1 run)"
ORDER = (*FLOORS, "cdxj-indexer", PYWB, "ours")


def corpus(files, captures, mean_kb, seed=1):
    """The corpus' .warc.gz paths, generated on first use and cached by parameters."""
    from webarchive_indexing.corpus import make_corpus
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
    from webarchive_indexing.corpus import read_manifest
    return len(read_manifest(path))


def total_records(paths):
    return sum(map(records_in, paths))


def install_project():
    """A regular (not editable) install of the working tree in INSTALL, whose other
    packages come from .venv; returns its bin directory."""
    print("installing the working tree in bench/out/venv ...", flush=True)
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", "--clear", INSTALL], check=True)
    site = subprocess.run([os.path.join(INSTALL, "bin", "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "project-deps.pth"), "w") as fh:
        fh.write(sysconfig.get_path("purelib") + "\n")
    subprocess.run([os.path.join(BIN, "pip"), "--python", os.path.join(INSTALL, "bin", "python"),
                    "install", "--quiet", "--no-deps", "--no-build-isolation", ROOT], check=True)
    return os.path.join(INSTALL, "bin")


def walker(ours_bin):
    """Which member walker the install runs: the compiled one needs ISA-L's headers at install."""
    compiled = subprocess.run([os.path.join(ours_bin, "python"), "-c",
                               "from webarchive_indexing import records; print(bool(records.CompiledMembers))"],
                              check=True, capture_output=True, text=True).stdout.strip() == "True"
    return "compiled (ISA-L)" if compiled else "pure Python (no ISA-L headers at install: libisal-dev)"


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
    """Time `webarchive-index build` of the corpus directory (the local engine, all cores)."""
    out_dir = os.path.join(TMP, "build")
    argv = [os.path.join(ours_bin, "webarchive-index"), "build", os.path.dirname(paths[0]), "-o", out_dir,
            "--shards", "4", "--no-skip-existing", "--no-progress"]
    wall, cpu = [], []
    for _ in range(repeat):
        shutil.rmtree(out_dir, ignore_errors=True)
        timed = time_command(argv)
        wall.append(timed.wall)
        cpu.append(timed.cpu)
    lines = re.search(r"(\d+) CDX lines", timed.stderr)
    return row("whole corpus", f"build --shards 4 ({os.cpu_count()} cores)", argv, paths,
               wall, cpu, int(lines.group(1)) if lines else None)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ratios(rows, groups):
    """Per group, from best times: cdxj-indexer / ours (speed-up) and ours / isal floor."""
    result = {}
    for group in groups:
        ours, base, isal = (rows[group, n]["best"] for n in ("ours", "cdxj-indexer", "floor isal"))
        result[group] = {"speedup_vs_cdxj_indexer": base / ours, "ours_vs_floor": ours / isal}
    return result


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
    print("{:<22} {:>22} {:>26}".format("ratios (best times)", "ours vs cdxj-indexer", "ours vs isal floor"))
    for group, r in ratio.items():
        print("{:<22} {:>22} {:>26}".format(group, f"{r['speedup_vs_cdxj_indexer']:.2f}x faster",
                                           f"{r['ours_vs_floor']:.2f}x the floor's time"))
    print()
    for group, note in verdicts.items():
        if note:
            print(f"CORRECTNESS FAILURE {group}: ours != pywb `cdx-indexer -s -j`\n{note}")
    if not any(verdicts.values()):
        print(f"correctness: ours == pywb `cdx-indexer -s -j` byte for byte, all {len(verdicts)} files")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--captures", type=int, default=5000, help="captures per file")
    parser.add_argument("--mean-kb", type=float, default=40, help="mean payload size")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (best and median reported)")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=False,
                        help="smoke run: 1 file x 1000 captures (--no-quick: the sizes above, "
                             "the default)")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.captures = 1, 1000
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
    print("timing build ...", flush=True)
    build_row = build(paths, args.repeat, ours_bin)
    order = [*files, *(["sum of files"] if len(files) > 1 else []), *(g for g in groups if g not in files)]
    rows = {(g, n): rows[g, n] for g in order for n in ORDER if (g, n) in rows}
    rows["whole corpus", "build"] = build_row
    ratio = ratios(rows, order)

    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cpu": cpu_model(), "cores": os.cpu_count(),
            "pinning": pin, "repeat": args.repeat, "ours_installed_in": os.path.relpath(INSTALL, ROOT),
            "ours_walker": walker(ours_bin),
            "corpus": os.path.relpath(os.path.dirname(paths[0]), ROOT),
            "files": args.files, "captures": args.captures, "mean_kb": args.mean_kb,
            "total_mb": total_mb(paths), "loadavg_1_5_15min": {"start": load_start, "end": os.getloadavg()}}
    report(rows, ratio, verdicts, meta)
    ok = not any(verdicts.values())
    with open(os.path.join(OUT, "results.json"), "w") as fh:
        json.dump({"meta": meta, "correct": ok, "mismatches": {g: v for g, v in verdicts.items() if v},
                   "ratios": ratio, "results": list(rows.values())}, fh, indent=1)
    print(f"wrote {os.path.relpath(os.path.join(OUT, 'results.json'))}")
    return 0 if ok else 1


if __name__ == "__main__":
    if os.path.realpath(sys.prefix) != os.path.realpath(VENV) and os.path.exists(PYTHON):
        os.execv(PYTHON, [PYTHON, *sys.argv])  # the project and its tools live in the venv
    sys.exit(main())
