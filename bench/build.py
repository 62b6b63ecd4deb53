"""Benchmark building a ZipNum cluster from sorted CDX files, and updating it.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/build.py                  # 2,000,000 lines in 80 files, at 1x, 2x and 4x
    python bench/build.py --quick          # smoke run: 100,000 lines in 8 files, 1x and 2x
    python bench/build.py --lines 500000 --files 40 --scales 1,2 --shards 8 --repeat 2

What it does, in one run, at each scale (lines and files times the scale):

1. **Input**: sorted CDXJ files shaped like Common Crawl's (a URL key, a timestamp and
   ten JSON fields, ~450 bytes a line; each file a random sample of the whole key
   space, as one WARC's CDX is), gzipped, generated once and cached in
   bench/out/cdx/<parameters>/; 5% more lines in 5% more files spread over the whole key
   space (new captures of the same sites: the worst case of an update), and as many
   under a new top-level domain (new sites: they fall in the last shard).
2. **Timings**, whole `webarchive-index build` commands (from a regular install, as in
   bench/run.py) run with subprocess, each with the peak resident memory of the largest
   of its processes (`wait4`: the command and every process it waited for) and its CPU
   time (of all its processes):
   - `baseline`: a hand-written single-core script, `heapq.merge` of the gzipped
     files and zlib blocks of 3000 lines (what the issue measured at 9.6 s for 2.4 M
     lines), pinned to one core;
   - `build all cores`: `build CDX... -o OUT --shards N` (the local engine, every core);
   - `build one core`: the same with `--workers 1`, pinned to one core (`taskset -c 0`);
   - `rebuild +5%`: `build` of the old and the new files with `--splits` of the first
     build (what an update must equal);
   - `update +5%`: `build NEW... -o OUT --update` on a copy of the first build;
   - `rebuild/update +5% new sites`: the same with the new sites' files.
   The updated clusters must equal the rebuilt ones byte for byte, and the engine's
   cluster the baseline's lines, or the run exits with status 1.
3. **Deflates** (at 1x): `build all cores` with each `--block-deflate` of `--deflates`,
   and its `rebuild +5%` and `update +5%`, alternated with the baseline round after
   round (`--rounds`): the median and range of wall and CPU time of each, its shards'
   bytes against zlib-6's, its build against the baseline and its update against its
   rebuild (what chose the default of `--block-deflate`).
4. **Report**: lines/s, ratios against the targets (build on all cores at most 0.75x
   the baseline's time; update at most 0.5x a rebuild's; peak memory under 1 GB) and the
   slope from one scale to the next (time per line; 1.00 is linear), and
   bench/out/build-results.json.

The machine may be shared: the report gives the load average at the start and end.
"""
import argparse
import datetime
import gzip
import json
import os
import platform
import random
import re
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: installing, pinning, timing whole commands)

OUT = os.path.join(run.OUT, "build")
TARGETS = {"build_vs_baseline": 0.75, "update_vs_rebuild": 0.5, "peak_mb": 1024}
# issue 26's targets for a deflate of the blocks: build (all cores) against the baseline,
# shards against zlib-6's
DEFLATE_TARGETS = {"build_vs_baseline": 0.35, "bytes_vs_zlib6": 1.05}
DEFLATES = "zlib-6,libdeflate-4,libdeflate-5,libdeflate-6,isal-2"

# The hand-written single-core baseline: merge the sorted gzipped files, zlib blocks.
BASELINE_SCRIPT = """import gzip, heapq, sys, zlib
out_dir, paths = sys.argv[1], sys.argv[2:]
def lines(path):
    with gzip.open(path, "rb") as fh:
        yield from fh
block, index, offset = [], [], 0
with open(out_dir + "/cdx-00000.gz", "wb") as out:
    def flush():
        global offset
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        data = z.compress(b"".join(block)) + z.flush()
        out.write(data)
        key = b" ".join(block[0].split(b" ", 2)[:2])
        index.append(b"%s\\tcdx-00000.gz\\t%d\\t%d\\n" % (key, offset, len(data)))
        offset += len(data)
        block.clear()
    for line in heapq.merge(*map(lines, paths)):
        block.append(line)
        if len(block) == 3000:
            flush()
    if block:
        flush()
with open(out_dir + "/cluster.idx", "wb") as out:
    out.write(b"".join(index))
"""

TLDS = ["com", "org", "net", "de", "uk", "fr", "jp", "ru", "br", "it", "nl", "info", "io"]
WORDS = ["news", "shop", "blog", "forum", "wiki", "photo", "travel", "music", "sport", "food"]
MIMES = [("text/html", "text/html", "200")] * 8 + [("application/pdf", "application/pdf", "200"),
                                                  ("unk", "text/html", "301")]
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def cdx_line(rng, filename, tld=None):
    """One CDXJ line of a Common Crawl shape (host drawn from a skewed distribution)."""
    host = f"{rng.choice(WORDS)}{int(rng.paretovariate(0.7)) % 200000}"
    tld = tld or rng.choice(TLDS)
    sub = rng.choice(["www.", "", "", "m."])
    path = "/".join(f"{rng.choice(WORDS)}-{rng.randrange(1 << 16):x}" for _ in range(rng.randint(0, 4)))
    query = f"?id={rng.randrange(10 ** 6)}" if rng.random() < 0.2 else ""
    key = f"{tld},{host}{',m' if sub == 'm.' else ''})/{path}{query}".lower()
    stamp = f"2024{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randrange(240000):06d}"
    mime, detected, status = rng.choice(MIMES)
    digest = "".join(rng.choice(B32) for _ in range(32))
    return (f'{key} {stamp} {{"url": "https://{sub}{host}.{tld}/{path}{query}", "mime": "{mime}", '
            f'"mime-detected": "{detected}", "status": "{status}", "digest": "{digest}", '
            f'"length": "{rng.randrange(400, 90000)}", "offset": "{rng.randrange(1 << 30)}", '
            f'"filename": "{filename}", "charset": "UTF-8", "languages": "eng"}}\n')


def generate(files, lines, seed, tag, tld=None):
    """Paths of ``files`` sorted .cdx.gz files of ``lines`` lines in all, cached; all
    under the top-level domain ``tld`` if given."""
    key = f"{tag}-l{lines}-f{files}-s{seed}"
    directory = os.path.join(OUT, "cdx", key)
    done = directory + ".done.json"
    if os.path.exists(done):
        with open(done) as fh:
            return json.load(fh)["paths"]
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    print(f"generating {key} (once) ...", flush=True)
    from isal import igzip
    paths = []
    for n in range(files):
        rng = random.Random(f"{seed}-{n}")
        segment = f"crawl-data/CC-MAIN-2024-33/segments/1722640389685.{seed}/warc"
        filename = f"{segment}/CC-MAIN-20240804041019-{tag}-{n:05d}.warc.gz"
        count = lines // files + (n < lines % files)
        text = "".join(sorted(cdx_line(rng, filename, tld) for _ in range(count)))
        paths.append(os.path.join(directory, f"{tag}-{n:05d}.cdx.gz"))
        with open(paths[-1], "wb") as fh:
            fh.write(igzip.compress(text.encode(), 1))
    with open(done, "w") as fh:
        json.dump({"paths": paths}, fh)
    return paths


def published(cluster_dir):
    """``{name: path}`` of what the published index of ``cluster_dir`` is made of: its
    shards and part files (where the index says, in ``cluster/`` or a ``build-NNNNN/``
    directory of it; named without that directory), ``cluster.idx`` and ``contents.json``."""
    with open(os.path.join(cluster_dir, "cluster.idx"), "rb") as fh:
        shards = dict.fromkeys(line.split(b"\t")[1].decode() for line in fh)
    files = {"cluster.idx": os.path.join(cluster_dir, "cluster.idx")}
    for shard in shards:
        where, _, name = shard.rpartition("/")
        files[name] = os.path.join(cluster_dir, shard)
        part = "part-" + name[len("cdx-"):-len(".gz")]
        files[part] = os.path.join(cluster_dir, where, part)
        files["contents.json"] = os.path.join(cluster_dir, where, "contents.json")
    return files


def shard_lines(cluster_dir):
    """Every line of a cluster's shards, in shard order."""
    files = published(cluster_dir)
    for name in sorted(n for n in files if n.startswith("cdx-")):
        with gzip.open(files[name], "rb") as fh:
            yield from fh


def same_lines(a, b):
    return all(x == y for x, y in zip(shard_lines(a), shard_lines(b), strict=True))


def _read(path, name):
    with open(path, "rb") as fh:
        data = fh.read()
    # the index names each shard with the directory of its build, which differs between
    # a first build (build-00001/) and an update of it (build-00002/)
    return re.sub(rb"\tbuild-\d+/", b"\t", data) if name == "cluster.idx" else data


def same_cluster(a, b):
    """Whether two clusters' published shards, part files, index and record are the same
    bytes (but for the directory of their build)."""
    files_a, files_b = published(a), published(b)
    return files_a.keys() == files_b.keys() and all(
        _read(files_a[name], name) == _read(files_b[name], name) for name in files_a)


def measure(argv, repeat, before=None):
    """Best wall time (and its CPU, peak) of ``repeat`` runs; ``before()`` runs untimed first."""
    runs = []
    for _ in range(repeat):
        if before:
            before()
        runs.append(run.time_command(argv))
    best = min(runs, key=lambda timed: timed.wall)
    return {"argv": argv, "wall": [t.wall for t in runs], "best": best.wall, "cpu": best.cpu,
            "peak_mb": max(t.peak_kb for t in runs) / 1024}


def scale_run(scale, args, ours_bin, pin):
    lines, files = args.lines * scale, args.files * scale
    new_lines, new_files = round(lines * args.new), max(1, round(files * args.new))
    old = generate(files, lines, 1, "old")
    new = generate(new_files, new_lines, 2, "new")
    sites = generate(new_files, new_lines, 3, "sites", tld="zz")
    for path in old + new + sites:  # a warm page cache for every command
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    tmp = os.path.join(OUT, "tmp", f"x{scale}")
    shutil.rmtree(tmp, ignore_errors=True)
    names = ("baseline", "all", "one", "rebuild", "update", "rebuild-sites", "update-sites")
    outs = {name: os.path.join(tmp, name) for name in names}
    os.makedirs(outs["baseline"])
    splits = os.path.join(outs["all"], "splits.txt")

    def build(name, *args):
        return [os.path.join(ours_bin, "webarchive-index"), "build", *args, "-o", outs[name],
                "--no-progress"]

    def fresh(name):
        return lambda: shutil.rmtree(outs[name], ignore_errors=True)

    def copy_built(name):
        def copy():
            shutil.rmtree(outs[name], ignore_errors=True)
            shutil.copytree(outs["all"], outs[name], symlinks=True)
        return copy

    shards = ["--shards", str(args.shards)]
    rows = {
        "baseline": measure(pin + [os.path.join(ours_bin, "python"), "-c", BASELINE_SCRIPT,
                                   outs["baseline"], *old], args.repeat),
        "build all cores": measure(build("all", *old, *shards), args.repeat, fresh("all")),
        "build one core": measure(pin + build("one", *old, *shards, "--workers", "1"),
                                  args.repeat, fresh("one")),
        "rebuild +5%": measure(build("rebuild", *old, *new, "--splits", splits), args.repeat,
                               fresh("rebuild")),
        "update +5%": measure(build("update", *new, "--update"), args.repeat,
                              copy_built("update")),
        "rebuild +5% new sites": measure(build("rebuild-sites", *old, *sites, "--splits", splits),
                                         args.repeat, fresh("rebuild-sites")),
        "update +5% new sites": measure(build("update-sites", *sites, "--update"), args.repeat,
                                        copy_built("update-sites")),
    }
    for name, row in rows.items():
        row["lines"] = lines + (new_lines if "5%" in name else 0)
        row["lines_s"] = row["lines"] / row["best"]

    def cluster(name):
        return os.path.join(outs[name], "cluster")

    checks = {
        "engine == baseline (lines)": same_lines(cluster("all"), outs["baseline"]),
        "one core == all cores": same_cluster(cluster("one"), cluster("all")),
        "update == rebuild (bytes)": same_cluster(cluster("update"), cluster("rebuild")),
        "update == rebuild, new sites (bytes)": same_cluster(cluster("update-sites"),
                                                             cluster("rebuild-sites")),
    }
    mb = sum(map(os.path.getsize, old)) / 1e6
    return {"scale": scale, "lines": lines, "files": files, "input_mb": mb, "rows": rows,
            "checks": checks,
            "ratios": {"build_vs_baseline": rows["build all cores"]["best"] / rows["baseline"]["best"],
                       "one_core_vs_baseline": rows["build one core"]["best"] / rows["baseline"]["best"],
                       "update_vs_rebuild": rows["update +5%"]["best"] / rows["rebuild +5%"]["best"],
                       "update_sites_vs_rebuild": rows["update +5% new sites"]["best"]
                       / rows["rebuild +5% new sites"]["best"]}}


def shard_bytes(cluster_dir):
    return sum(os.path.getsize(path) for name, path in published(cluster_dir).items()
               if name.startswith("cdx-"))


def deflate_run(args, ours_bin, pin):
    """Each deflate of ``args.deflates``: build, rebuild +5% and update +5%, every command
    once a round, the baseline too, in an order that turns round by round (the machine
    may be shared: alternated runs meet the same load); medians and ranges."""
    old = generate(args.files, args.lines, 1, "old")
    new = generate(max(1, round(args.files * args.new)), round(args.lines * args.new), 2, "new")
    tmp = os.path.join(OUT, "tmp", "deflates")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "baseline"))
    commands = {("baseline", "build"): (pin + [os.path.join(ours_bin, "python"), "-c",
                                               BASELINE_SCRIPT, os.path.join(tmp, "baseline"),
                                               *old], None)}
    deflates = args.deflates.split(",")

    def build(out, *argv):
        return [os.path.join(ours_bin, "webarchive-index"), "build", *argv, "-o", out,
                "--no-progress"]

    def fresh(out):
        return lambda: shutil.rmtree(out, ignore_errors=True)

    def copy_of(built, out):
        def copy():
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(built, out, symlinks=True)
        return copy

    for deflate in deflates:
        built = os.path.join(tmp, deflate, "build")
        option = ["--block-deflate", deflate]
        commands[deflate, "build"] = (build(built, *old, "--shards", str(args.shards), *option),
                                      fresh(built))
        commands[deflate, "rebuild +5%"] = (
            build(os.path.join(tmp, deflate, "rebuild"), *old, *new, "--splits",
                  os.path.join(built, "splits.txt"), *option),
            fresh(os.path.join(tmp, deflate, "rebuild")))
        commands[deflate, "update +5%"] = (build(os.path.join(tmp, deflate, "update"), *new,
                                                 "--update"),
                                           copy_of(built, os.path.join(tmp, deflate, "update")))
    timed = {key: [] for key in commands}
    keys = list(commands)
    for number in range(args.rounds):
        print(f"deflates: round {number + 1} of {args.rounds} ...", flush=True)
        turn = number * len(keys) // max(1, args.rounds)
        for key in keys[turn:] + keys[:turn]:
            argv, before = commands[key]
            if before:  # (round 1 runs each build before its update and rebuild)
                before()
            timed[key].append(run.time_command(argv))

    def stats(key):
        walls, cpus = [t.wall for t in timed[key]], [t.cpu for t in timed[key]]
        return {"wall": statistics.median(walls), "wall_range": [min(walls), max(walls)],
                "cpu": statistics.median(cpus), "cpu_range": [min(cpus), max(cpus)]}

    baseline = stats(("baseline", "build"))
    zlib6 = shard_bytes(os.path.join(tmp, "zlib-6", "build", "cluster")) \
        if "zlib-6" in deflates else None
    rows = {}
    for deflate in deflates:
        size = shard_bytes(os.path.join(tmp, deflate, "build", "cluster"))
        row = rows[deflate] = {name: stats((deflate, name))
                               for name in ("build", "rebuild +5%", "update +5%")}
        row["shard_bytes"] = size
        row["bytes_vs_zlib6"] = size / zlib6 if zlib6 else None
        row["build_vs_baseline"] = row["build"]["wall"] / baseline["wall"]
        row["update_vs_rebuild"] = row["update +5%"]["wall"] / row["rebuild +5%"]["wall"]
        row["update == rebuild (bytes)"] = same_cluster(
            os.path.join(tmp, deflate, "update", "cluster"),
            os.path.join(tmp, deflate, "rebuild", "cluster"))
    return {"lines": args.lines, "files": args.files, "rounds": args.rounds,
            "baseline": baseline, "rows": rows}


def report_deflates(found):
    print()
    print(f"deflates: build of {found['lines']} lines in {found['files']} files on all cores "
          f"(--block-deflate), medians of {found['rounds']} alternated rounds [range]; the "
          f"baseline (one core, zlib-6): {found['baseline']['wall']:.2f} s wall, "
          f"{found['baseline']['cpu']:.2f} s CPU")
    fmt = "{:<14} {:>20} {:>8} {:>12} {:>13} {:>11} {:>10} {:>10} {:>17}"
    print(fmt.format("deflate", "build s", "cpu s", "x baseline", "shard MB", "x zlib-6",
                     "rebuild s", "update s", "update / rebuild"))
    target = DEFLATE_TARGETS
    for deflate, row in found["rows"].items():
        build = row["build"]
        print(fmt.format(
            deflate, f"{build['wall']:.2f} [{build['wall_range'][0]:.2f}-{build['wall_range'][1]:.2f}]",
            f"{build['cpu']:.2f}", f"{row['build_vs_baseline']:.2f} (<= {target['build_vs_baseline']})",
            f"{row['shard_bytes'] / 1e6:.1f}",
            "" if row["bytes_vs_zlib6"] is None else f"{row['bytes_vs_zlib6']:.3f}",
            f"{row['rebuild +5%']['wall']:.2f}", f"{row['update +5%']['wall']:.2f}",
            f"{row['update_vs_rebuild']:.2f} (<= {TARGETS['update_vs_rebuild']})"))
    print()
    for deflate, row in found["rows"].items():
        ok = row["update == rebuild (bytes)"]
        print(f"{'ok  ' if ok else 'FAILED'} {deflate} update == rebuild (bytes)")


def report(results, meta):
    print()
    print(f"machine  {meta['cpu']}, {meta['cores']} cores, Python {meta['python']}, {meta['date']}")
    load = meta["loadavg_1_5_15min"]
    print(f"load     1-min load average {load['start'][0]:.2f} at the start, {load['end'][0]:.2f} "
          "at the end (other processes share the cores: compare runs made at similar load)")
    print(f"runs     best of {meta['repeat']}; --shards {meta['shards']}; one core: "
          f"{' '.join(meta['pinning']) or 'NOT pinned (no taskset)'}")
    fmt = "{:<7} {:<22} {:>10} {:>8} {:>8} {:>11} {:>8}"
    print()
    print(fmt.format("scale", "command", "lines", "best s", "cpu s", "lines/s", "peak MB"))
    for result in results:
        for n, (name, row) in enumerate(result["rows"].items()):
            print(fmt.format(f"{result['scale']}x" if n == 0 else "", name, row["lines"],
                             f"{row['best']:.2f}", f"{row['cpu']:.2f}", f"{row['lines_s']:.0f}",
                             f"{row['peak_mb']:.0f}"))
        print()
    ratios = "{:<7} {:>21} {:>20} {:>19} {:>22} {:>13}"
    print(ratios.format("scale", "all cores / baseline", "one core / baseline",
                        "update / rebuild", "(new sites) update /", "peak MB"))
    for result in results:
        r = result["ratios"]
        peak = max(row["peak_mb"] for row in result["rows"].values())
        print(ratios.format(
            f"{result['scale']}x", f"{r['build_vs_baseline']:.2f} (<= 0.75)",
            f"{r['one_core_vs_baseline']:.2f}", f"{r['update_vs_rebuild']:.2f} (<= 0.50)",
            f"{r['update_sites_vs_rebuild']:.2f} (<= 0.50)", f"{peak:.0f} (< 1024)"))
    if len(results) > 1:
        print()
        print("slope: seconds per line at each scale over the first scale's (1.00 = linear)")
        first = results[0]
        for result in results[1:]:
            print(f"  {result['scale']}x: " + ", ".join(
                f"{name} {(row['best'] / row['lines']) / (first['rows'][name]['best'] / first['rows'][name]['lines']):.2f}"
                for name, row in result["rows"].items()))
    print()
    for result in results:
        for check, ok in result["checks"].items():
            print(f"{'ok  ' if ok else 'FAILED'} {result['scale']}x {check}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2_000_000, help="CDX lines at 1x")
    parser.add_argument("--files", type=int, default=80, help="CDX files at 1x")
    parser.add_argument("--scales", default="1,2,4", help="sizes, as multiples of --lines and --files")
    parser.add_argument("--new", type=float, default=0.05, help="the update's share of new lines")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1, help="runs per command (the best is kept)")
    parser.add_argument("--deflates", default=DEFLATES,
                        help=f"the --block-deflate settings compared at 1x (default {DEFLATES}; "
                             "none: '')")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternated runs of each deflate's commands (medians are reported)")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=False,
                        help="smoke run: 100,000 lines in 8 files at 1x and 2x (--no-quick: "
                             "the sizes above, the default)")
    args = parser.parse_args(argv)
    if args.quick:
        args.lines, args.files, args.scales = 100_000, 8, "1,2"
    try:
        scales = [int(s) for s in args.scales.split(",")]
    except ValueError:
        parser.error(f"--scales takes whole numbers separated by commas, not {args.scales!r}")
    if args.lines < 1 or args.files < 1 or args.shards < 1 or args.repeat < 1 or min(scales) < 1 \
            or args.rounds < 1 \
            or not 0 < args.new < 1:
        parser.error("--lines, --files, --shards, --repeat, --rounds and scales must be at least 1, "
                     "--new between 0 and 1")
    ours_bin = run.install_project()
    pin, load_start = run.pinning(), os.getloadavg()
    results = [scale_run(scale, args, ours_bin, pin) for scale in scales]
    deflates = deflate_run(args, ours_bin, pin) if args.deflates else None
    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cpu": run.cpu_model(), "cores": os.cpu_count(),
            "pinning": pin, "repeat": args.repeat, "shards": args.shards, "targets": TARGETS,
            "loadavg_1_5_15min": {"start": load_start, "end": os.getloadavg()}}
    report(results, meta)
    if deflates:
        report_deflates(deflates)
    with open(os.path.join(run.OUT, "build-results.json"), "w") as fh:
        json.dump({"meta": meta, "results": results, "deflates": deflates}, fh, indent=1)
    print(f"wrote {os.path.relpath(os.path.join(run.OUT, 'build-results.json'))}")
    return 0 if all(ok for result in results for ok in result["checks"].values()) and all(
        row["update == rebuild (bytes)"] for row in (deflates or {"rows": {}})["rows"].values()) \
        else 1


if __name__ == "__main__":
    if os.path.realpath(sys.prefix) != os.path.realpath(run.VENV) and os.path.exists(run.PYTHON):
        os.execv(run.PYTHON, [run.PYTHON, *sys.argv])
    sys.exit(main())
