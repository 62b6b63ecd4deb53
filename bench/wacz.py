"""Benchmark indexing WACZ files in place against indexing the same WARC files outside a ZIP.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/wacz.py               # 4 files x 5000 captures (~280 MB .warc.gz), repeat 3
    python bench/wacz.py --quick       # smoke run: 2 files x 1000 captures, repeat 2

The corpus is bench/run.py's (generated once, cached in bench/out/corpus/). Each of its
.warc.gz files is packed, stored as the WACZ format asks, into a WACZ of its own
(``archive/NAME.warc.gz`` and a ``datapackage.json``), and all of them into one WACZ
(bench/out/wacz/<parameters>/). Timed, as bench/run.py times (whole commands, Python
start-up included, from a regular install in bench/out/venv, pinned to one core with
taskset, interleaved round by round, best and median of --repeat), each with its peak
resident memory:

* `cdx WARC...`        the .warc.gz files
* `cdx WACZ...`        the WACZ files, one WARC each
* `cdx ALL.wacz`       the one WACZ of every file
* `cdx OWN.wacz`       the package `webarchive-index wacz` makes of every file (with its
                       own index and hashes), read in place
* `cdx OWN.wacz trusted`  the same with --trust-wacz-index: its hashes checked (every
                       byte of it read), its own index's lines taken

("x WARCs": best wall time against the WARC files'; "cpu x": the same of CPU time, the
steadier on a shared machine.)

The lines of the WACZ files must be the lines of the WARC files, their offsets moved by
where each WARC's bytes start in the WACZ, their filename the WACZ and each with its
"entry" (and the trusted lines those read in place), else the run exits with status 1.
Results: the table, and bench/out/wacz-results.json.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: the corpus, installing, pinning, timing whole commands)

OUT = os.path.join(run.OUT, "wacz")


def pack(paths, wacz):
    """``wacz``: the WARC files ``paths`` stored in archive/, and a datapackage.json."""
    if os.path.exists(wacz):
        return wacz
    with zipfile.ZipFile(wacz + ".tmp", "w", allowZip64=True) as zf:
        for path in paths:
            zf.write(path, "archive/" + os.path.basename(path), compress_type=zipfile.ZIP_STORED)
        resources = [{"name": os.path.basename(p), "path": "archive/" + os.path.basename(p),
                      "bytes": os.path.getsize(p)} for p in paths]
        zf.writestr("datapackage.json", json.dumps({"profile": "data-package",
                                                    "wacz_version": "1.1.1",
                                                    "resources": resources}))
    os.rename(wacz + ".tmp", wacz)
    return wacz


def entry_starts(wacz):
    """{entry name: where its bytes start in the WACZ}."""
    from webarchive_indexing.warc import wacz as reader
    with open(wacz, "rb") as fh:
        entries, _ = reader.archive_entries(fh, wacz)
    return {e.name: e.start for e in entries}


def as_in_warcs(path, waczs):
    """The lines of ``path`` (a command's output), each as the WARC file's line would be."""
    starts = {os.path.basename(w): entry_starts(w) for w in waczs}
    lines = []
    with open(path) as fh:
        for line in fh:
            key, stamp, data = line.split(" ", 2)
            fields = json.loads(data)
            if "entry" in fields:
                entry = fields.pop("entry")
                fields["offset"] = str(int(fields["offset"]) - starts[fields["filename"]][entry])
                fields["filename"] = entry.split("/", 1)[1]
            lines.append((key, stamp, json.dumps(fields)))
    return sorted(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--captures", type=int, default=5000)
    parser.add_argument("--mean-kb", type=float, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 files x 1000 captures, repeat 2")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.captures, args.repeat = 2, 1000, 2
    warcs = run.corpus(args.files, args.captures, args.mean_kb)
    place = os.path.join(OUT, f"f{args.files}-c{args.captures}-kb{args.mean_kb:g}-s1")
    os.makedirs(place, exist_ok=True)
    os.makedirs(run.TMP, exist_ok=True)
    waczs = [pack([p], os.path.join(place, os.path.basename(p)[:-len(".warc.gz")] + ".wacz"))
             for p in warcs]
    os.makedirs(os.path.join(place, "all"), exist_ok=True)
    whole = pack(warcs, os.path.join(place, "all", "ALL.wacz"))
    ours = os.path.join(run.install_project(), "webarchive-index")
    own = os.path.join(place, "own", "OWN.wacz")
    if not os.path.exists(own):
        os.makedirs(os.path.dirname(own), exist_ok=True)
        subprocess.run([ours, "wacz", *warcs, "-o", own, "--no-progress"], check=True)
    pin = run.pinning()
    commands = {"cdx WARC...": warcs, "cdx WACZ...": waczs, "cdx ALL.wacz": [whole],
                "cdx OWN.wacz": [own], "cdx OWN.wacz trusted": [own, "--trust-wacz-index"]}
    timings = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, inputs in commands.items():
            out = run.scratch("wacz", name)
            timings[name].append(run.time_command([*pin, ours, "cdx", *inputs], out))
    reference = as_in_warcs(run.scratch("wacz", "cdx WARC..."), [])
    for name in ("cdx WACZ...", "cdx ALL.wacz", "cdx OWN.wacz"):
        if as_in_warcs(run.scratch("wacz", name), commands[name]) != reference:
            sys.exit(f"{name}: its lines are not the WARC files' lines moved into the WACZ")
    with open(run.scratch("wacz", "cdx OWN.wacz")) as fh, \
            open(run.scratch("wacz", "cdx OWN.wacz trusted")) as trusted:
        if fh.read() != trusted.read():
            sys.exit("cdx OWN.wacz trusted: its lines are not those read in place")
    mb = run.total_mb(warcs)
    records = run.total_records(warcs)
    rows = []
    for name, timed in timings.items():
        walls = sorted(t.wall for t in timed)
        rows.append({"command": name, "best_s": walls[0], "median_s": statistics.median(walls),
                     "cpu_s": min(t.cpu for t in timed), "mb_per_s": mb / walls[0],
                     "records_per_s": records / walls[0],
                     "peak_mb": max(t.peak_kb for t in timed) / 1024,
                     "vs_warcs": walls[0] / min(t.wall for t in timings["cdx WARC..."]),
                     "cpu_vs_warcs": min(t.cpu for t in timed) / min(
                         t.cpu for t in timings["cdx WARC..."])})
    print(f"\n{len(warcs)} files, {mb:.1f} MB .warc.gz, {records} records; "
          f"walker: {run.walker(os.path.dirname(ours))}; pinned: {bool(pin)}; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'command':<20} {'best s':>8} {'median s':>9} {'cpu s':>7} {'MB/s':>7} "
          f"{'records/s':>10} {'peak MB':>8} {'x WARCs':>8} {'cpu x':>6}")
    for r in rows:
        print(f"{r['command']:<20} {r['best_s']:8.2f} {r['median_s']:9.2f} {r['cpu_s']:7.2f} "
              f"{r['mb_per_s']:7.1f} {r['records_per_s']:10.0f} {r['peak_mb']:8.1f} "
              f"{r['vs_warcs']:8.2f} {r['cpu_vs_warcs']:6.2f}")
    with open(os.path.join(run.OUT, "wacz-results.json"), "w") as fh:
        json.dump({"when": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                   "files": len(warcs), "mb": mb, "records": records, "rows": rows}, fh,
                  indent=1)


if __name__ == "__main__":
    if os.path.realpath(sys.prefix) != os.path.realpath(run.VENV) and os.path.exists(run.PYTHON):
        os.execv(run.PYTHON, [run.PYTHON, *sys.argv])  # the project and its tools live there
    main()
