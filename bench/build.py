"""Benchmark building a ZipNum cluster from sorted CDX files, and updating it.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/build.py                  # 2,000,000 lines in 80 files, at 1x, 2x and 4x
    python bench/build.py --quick          # smoke run: 100,000 lines in 8 files, 1x and 2x
    python bench/build.py --lines 500000 --files 40 --scales 1,2 --shards 8 --repeat 2
    python bench/build.py --slope --scales 1,10,50   # the slope: up to 100 M lines (~9 GB)
    python bench/build.py --warcs 2        # a ~2 GB WARC corpus built end to end

What it does, in one run, at each scale (lines and files times the scale):

1. **Input**: sorted CDXJ files shaped like Common Crawl's (a URL key, a timestamp and
   ten JSON fields, ~450 bytes a line; each file a random sample of the whole key
   space, as one WARC's CDX is), gzipped, generated once and cached in
   bench/out/cdx/<parameters>/; 5% more lines in 5% more files spread over the whole key
   space (new captures of the same sites: the worst case of an update), and as many
   under a new top-level domain (new sites: they fall in the last shard). One process a
   core writes them a file at a time (each file written aside and renamed: an
   interrupted generation resumes). Before each scale, the disk it needs (inputs not
   yet there, the sorted runs at their peak and the clusters, per line as measured at
   the scale before) is printed and checked against the free disk: short, the run stops
   saying how much is missing.
2. **Timings**, whole `webarchive-index build` commands (from a regular install, as in
   bench/run.py) run with subprocess, each with the peak resident memory of the largest
   of its processes (`wait4`: the command and every process it waited for) and its CPU
   time (of all its processes):
   - `baseline`: a hand-written single-core script, `heapq.merge` of the gzipped
     files and zlib blocks of 3000 lines (what the issue measured at 9.6 s for 2.4 M
     lines), pinned to one core;
   - `floor`: inflate every input (ISA-L) and deflate zlib-6 blocks of 3000 lines, one
     core: what any builder pays for a line, with no merge;
   - `build all cores`: `build CDX... -o OUT --shards N` (the local engine, every core),
     its work directory's disk use (the sorted runs) sampled every 0.2 s for its peak;
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
   slope from one scale to the next (time per line; 1.00 is linear): per scale, wall and
   CPU time per line, peak memory (target < 512 MB), the runs' peak disk, the cluster's
   size, and lines/s per core (CPU time of all its processes) against the floor's; and
   bench/out/build-results.json.
4. `--slope`: only the floor and `build all cores` at each scale (for 10x and 50x, where
   the other commands would take hours and 8 clusters' disk).
5. `--warcs GB`: instead, WARC files of ~70 MB (`webarchive-index corpus`'s generator,
   5000 captures of 20 KB mean, a seed a file; cached in bench/out/build/warcs/) to about
   GB gigabytes, `build` of them on all cores (index, sample, cluster) against the floor
   of inflating them with ISA-L on one core, in MB/s per core (CPU time);
   bench/out/build-warcs-results.json.

The machine may be shared: the report gives the load average at the start and end.
"""
import argparse
import base64
import datetime
import gzip
import json
import multiprocessing
import os
import platform
import random
import re
import shutil
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: installing, pinning, timing whole commands)

OUT = os.path.join(run.OUT, "build")
TARGETS = {"build_vs_baseline": 0.75, "update_vs_rebuild": 0.5, "peak_mb": 512}
# issue 26's targets for a deflate of the blocks: build (all cores) against the baseline,
# shards against zlib-6's
DEFLATE_TARGETS = {"build_vs_baseline": 0.35, "bytes_vs_zlib6": 1.05}
DEFLATES = "zlib-6,libdeflate-4,libdeflate-5,libdeflate-6,isal-2"
# The WARC corpus of --warcs: files of WARC_CAPTURES captures (about 70 MB each)
WARC_CAPTURES, WARC_MEAN_KB = 5000, 20.0
# Disk a line takes, for the estimate made before a scale starts (a run's own figures,
# once it has them, replace the last two): generated gzipped CDXJ, the sorted runs in the
# work directory at their peak, a cluster
GZ_BYTES_PER_LINE, WORK_BYTES_PER_LINE, CLUSTER_BYTES_PER_LINE = 90, 500, 90

# The floor of a build from CDX files, on one core: what any builder pays for every line
# (inflate the inputs, deflate zlib-6 blocks of 3000 lines), with no merge at all
FLOOR_SCRIPT = """import sys, zlib
from isal import igzip
for path in sys.argv[1:]:
    with open(path, "rb") as fh:
        lines = igzip.decompress(fh.read()).split(b"\\n")
    for i in range(0, len(lines), 3000):
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        z.compress(b"\\n".join(lines[i:i + 3000]))
        z.flush()
"""

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
    digest = base64.b32encode(rng.getrandbits(160).to_bytes(20, "big")).decode()
    return (f'{key} {stamp} {{"url": "https://{sub}{host}.{tld}/{path}{query}", "mime": "{mime}", '
            f'"mime-detected": "{detected}", "status": "{status}", "digest": "{digest}", '
            f'"length": "{rng.randrange(400, 90000)}", "offset": "{rng.randrange(1 << 30)}", '
            f'"filename": "{filename}", "charset": "UTF-8", "languages": "eng"}}\n')


def _write_file(job):
    """One generated .cdx.gz (of a pool's worker): written aside and renamed, so that a
    file that exists is whole and an interrupted generation resumes where it stopped."""
    path, seed, n, tag, count, tld = job
    if os.path.exists(path):
        return
    from isal import igzip
    rng = random.Random(f"{seed}-{n}")
    segment = f"crawl-data/CC-MAIN-2024-33/segments/1722640389685.{seed}/warc"
    filename = f"{segment}/CC-MAIN-20240804041019-{tag}-{n:05d}.warc.gz"
    text = "".join(sorted(cdx_line(rng, filename, tld) for _ in range(count)))
    with open(path + ".part", "wb") as fh:
        fh.write(igzip.compress(text.encode(), 1))
    os.replace(path + ".part", path)


def generate(files, lines, seed, tag, tld=None):
    """Paths of ``files`` sorted .cdx.gz files of ``lines`` lines in all, cached; all
    under the top-level domain ``tld`` if given. One process a core, one file at a time
    each (memory: one file's lines, whatever the scale)."""
    key = f"{tag}-l{lines}-f{files}-s{seed}"
    directory = os.path.join(OUT, "cdx", key)
    done = directory + ".done.json"
    paths = generated(directory)
    if paths is not None:
        return paths
    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, f"{tag}-{n:05d}.cdx.gz") for n in range(files)]
    have = sum(map(os.path.exists, paths))
    print(f"generating {key} ({have} of {files} files there) ...", flush=True)
    started = time.perf_counter()
    jobs = [(path, seed, n, tag, lines // files + (n < lines % files), tld) for n, path in enumerate(paths)]
    with multiprocessing.Pool(os.cpu_count()) as pool:
        for _ in pool.imap_unordered(_write_file, jobs):
            pass
    print(f"  {sum(map(os.path.getsize, paths)) / 1e9:.2f} GB in {time.perf_counter() - started:.0f} s",
          flush=True)
    with open(done, "w") as fh:
        json.dump({"paths": paths}, fh)
    return paths


def generated(directory):
    """The paths of the inputs cached in ``directory``, or None where they were not all
    made (or some were removed since: the advice of ``check_disk``)."""
    try:
        with open(directory + ".done.json") as fh:
            paths = json.load(fh)["paths"]
    except FileNotFoundError:
        return None
    return paths if all(map(os.path.exists, paths)) else None


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


def count_lines(cluster_dir):
    """Lines in a cluster's shards, counted in 16 MiB pieces (fast at 100 M lines)."""
    from isal import igzip
    count = 0
    for name, path in published(cluster_dir).items():
        if name.startswith("cdx-"):
            with igzip.open(path, "rb") as fh:
                while piece := fh.read(1 << 24):
                    count += piece.count(b"\n")
    return count


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


def disk_used(directory):
    """Bytes the files under ``directory`` take on disk (files going as it is read skipped)."""
    total = 0
    for where, _, names in os.walk(directory):
        for name in names:
            try:
                total += os.lstat(os.path.join(where, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def timed_watching(argv, watch):
    """run.time_command of argv, and the peak disk use under ``watch``, sampled every 0.2 s."""
    peak, stop = [0], threading.Event()

    def sample():
        while not stop.wait(0.2):
            peak[0] = max(peak[0], disk_used(watch))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        return run.time_command(argv), peak[0]
    finally:
        stop.set()
        sampler.join()


def measure(argv, repeat, before=None, watch=None):
    """Best wall time (and its CPU, peak) of ``repeat`` runs; ``before()`` runs untimed first;
    with ``watch``, the peak disk use of that directory (the sorted runs) while running."""
    runs, disk = [], []
    for _ in range(repeat):
        if before:
            before()
        if watch:
            timed, used = timed_watching(argv, watch)
            disk.append(used)
        else:
            timed = run.time_command(argv)
        runs.append(timed)
    best = min(runs, key=lambda timed: timed.wall)
    row = {"argv": argv, "wall": [t.wall for t in runs], "best": best.wall, "cpu": best.cpu,
           "peak_mb": max(t.peak_kb for t in runs) / 1024}
    if watch:
        row["work_peak_mb"] = max(disk) / 1e6
    return row


def disk_needed(scale, args, per_line):
    """Bytes a scale will add to bench/out: its inputs not yet generated, the sorted runs
    at their peak and the clusters it writes (``per_line``: the work and cluster bytes a
    line, measured at a smaller scale or assumed)."""
    lines = args.lines * scale
    extra = 0 if args.slope else 2 * round(lines * args.new)
    inputs = [("old", lines, 1)] + ([] if args.slope else [("new", extra // 2, 2), ("sites", extra // 2, 3)])
    files = args.files * scale
    missing = 0
    for tag, count, seed in inputs:
        n = files if tag == "old" else max(1, round(files * args.new))
        key = os.path.join(OUT, "cdx", f"{tag}-l{count}-f{n}-s{seed}")
        if generated(key) is None:
            there = disk_used(key) if os.path.isdir(key) else 0
            missing += max(0, count * GZ_BYTES_PER_LINE - there)
    clusters = 1 if args.slope else 8  # the baseline's, all cores, one core, two each of the updates
    work, cluster = per_line
    return missing + (lines + extra) * work + clusters * (lines + extra) * cluster


def check_disk(scale, args, per_line):
    need, free = disk_needed(scale, args, per_line), shutil.disk_usage(OUT).free
    print(f"{scale}x: {args.lines * scale:,} lines need about {need / 1e9:.1f} GB of disk "
          f"(inputs not yet generated, the sorted runs at their peak, clusters); "
          f"{free / 1e9:.1f} GB free in {os.path.relpath(OUT, run.ROOT)}", flush=True)
    if need > free:
        sys.exit(f"bench/build.py: not enough free disk for {scale}x ({need / 1e9:.1f} GB needed, "
                 f"{free / 1e9:.1f} GB free on the disk of {OUT}): free space there (e.g. remove "
                 "bench/out/build/tmp or the cached inputs of other scales in bench/out/build/cdx) "
                 "or leave that scale out of --scales")


def scale_run(scale, args, ours_bin, pin, per_line):
    lines, files = args.lines * scale, args.files * scale
    new_lines, new_files = round(lines * args.new), max(1, round(files * args.new))
    check_disk(scale, args, per_line)
    tmp = os.path.join(OUT, "tmp", f"x{scale}")
    shutil.rmtree(tmp, ignore_errors=True)
    old = generate(files, lines, 1, "old")
    new = [] if args.slope else generate(new_files, new_lines, 2, "new")
    sites = [] if args.slope else generate(new_files, new_lines, 3, "sites", tld="zz")
    for path in old + new + sites:  # a warm page cache for every command (as far as it holds)
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    names = ("baseline", "all", "one", "rebuild", "update", "rebuild-sites", "update-sites", "work")
    outs = {name: os.path.join(tmp, name) for name in names}
    os.makedirs(outs["baseline"])
    os.makedirs(outs["work"])
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
    rows = {"floor": measure(pin + [os.path.join(ours_bin, "python"), "-c", FLOOR_SCRIPT, *old], args.repeat),
            "build all cores": measure(build("all", *old, *shards, "--work-dir", outs["work"]), args.repeat,
                                       fresh("all"), watch=outs["work"])}
    if not args.slope:
        rows.update({
            "baseline": measure(pin + [os.path.join(ours_bin, "python"), "-c", BASELINE_SCRIPT,
                                       outs["baseline"], *old], args.repeat),
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
        })
    for name, row in rows.items():
        row["lines"] = lines + (new_lines if "5%" in name else 0)
        row["lines_s"] = row["lines"] / row["best"]

    def cluster(name):
        return os.path.join(outs[name], "cluster")

    built = rows["build all cores"]
    cores = len(os.sched_getaffinity(0))
    # per core: CPU time (of every process of the command), steadier than wall time on a
    # shared machine; the wall time over the cores for comparison
    slope = {"cores": cores, "us_per_line": built["best"] / lines * 1e6, "cpu_us_per_line": built["cpu"] / lines * 1e6,
             "lines_s_per_core": lines / built["cpu"], "lines_s_per_core_wall": lines / built["best"] / cores,
             "floor_lines_s_per_core": lines / rows["floor"]["cpu"],
             "peak_mb": built["peak_mb"], "work_peak_mb": built["work_peak_mb"],
             "cluster_mb": disk_used(cluster("all")) / 1e6}
    slope["share_of_floor"] = slope["lines_s_per_core"] / slope["floor_lines_s_per_core"]
    mb = sum(map(os.path.getsize, old)) / 1e6
    result = {"scale": scale, "lines": lines, "files": files, "input_mb": mb, "rows": rows, "slope": slope}
    if args.slope:
        result["checks"] = {"a cluster of every line": count_lines(cluster("all")) == lines}
        return result
    result["checks"] = {
        "engine == baseline (lines)": same_lines(cluster("all"), outs["baseline"]),
        "one core == all cores": same_cluster(cluster("one"), cluster("all")),
        "update == rebuild (bytes)": same_cluster(cluster("update"), cluster("rebuild")),
        "update == rebuild, new sites (bytes)": same_cluster(cluster("update-sites"),
                                                             cluster("rebuild-sites")),
    }
    result["ratios"] = {
        "build_vs_baseline": rows["build all cores"]["best"] / rows["baseline"]["best"],
        "one_core_vs_baseline": rows["build one core"]["best"] / rows["baseline"]["best"],
        "update_vs_rebuild": rows["update +5%"]["best"] / rows["rebuild +5%"]["best"],
        "update_sites_vs_rebuild": rows["update +5% new sites"]["best"] / rows["rebuild +5% new sites"]["best"]}
    return result


def _write_warc(seed):
    """One WARC file of the corpus (its own seed: a crawl of its own), made aside and
    moved in with its manifest, so that a file that is there is whole."""
    from webarchive_indexing.commands.corpus import make_corpus
    directory = os.path.join(OUT, "warcs", f"c{WARC_CAPTURES}-kb{WARC_MEAN_KB:g}")
    name = f"CORPUS-{seed:03d}-00000.warc.gz"
    if not os.path.exists(os.path.join(directory, name)):
        aside = os.path.join(OUT, "warcs", f"making-{seed}")
        shutil.rmtree(aside, ignore_errors=True)
        make_corpus(aside, files=1, captures=WARC_CAPTURES, seed=seed, mean_kb=WARC_MEAN_KB)
        os.replace(os.path.join(aside, name + ".manifest.jsonl"), os.path.join(directory, name + ".manifest.jsonl"))
        os.replace(os.path.join(aside, name), os.path.join(directory, name))
        shutil.rmtree(aside)
    return os.path.join(directory, name)


def warc_corpus(gb):
    """Paths of WARC files of about ``gb`` GB in all (`webarchive-index corpus`'s generator,
    a seed a file, one process a core), cached and resumed file by file."""
    os.makedirs(os.path.join(OUT, "warcs", f"c{WARC_CAPTURES}-kb{WARC_MEAN_KB:g}"), exist_ok=True)
    first = _write_warc(1)
    files = max(1, round(gb * 1e9 / os.path.getsize(first)))
    # the files, and 15% more for the runs at their peak, the CDX files and the cluster
    # (2026-11-27: 0.85 GB of runs and 0.37 GB of output for 23.7 GB of WARCs)
    need = (files - 1) * os.path.getsize(first) * 1.15
    free = shutil.disk_usage(OUT).free
    print(f"WARC corpus: {files} files of about {os.path.getsize(first) / 1e6:.0f} MB; needs about "
          f"{need / 1e9:.1f} GB more disk (files not yet made, the runs, the cluster), {free / 1e9:.1f} GB free",
          flush=True)
    if need > free:
        sys.exit(f"bench/build.py: not enough free disk for --warcs {gb:g} ({need / 1e9:.1f} GB needed, "
                 f"{free / 1e9:.1f} GB free on the disk of {OUT}): free space there or ask for fewer GB")
    started = time.perf_counter()
    with multiprocessing.Pool(os.cpu_count()) as pool:
        paths = pool.map(_write_warc, range(1, files + 1))
    print(f"  {sum(map(os.path.getsize, paths)) / 1e9:.2f} GB there after {time.perf_counter() - started:.0f} s",
          flush=True)
    return paths


def warc_run(gb, args, ours_bin, pin):
    """A build from WARC files, end to end (index, sample, cluster) on all cores, against
    the floor of inflating them with ISA-L on one core."""
    paths = warc_corpus(gb)
    for path in paths:  # a warm page cache, as far as it holds
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    tmp = os.path.join(OUT, "tmp", "warcs")
    shutil.rmtree(tmp, ignore_errors=True)
    out, work = os.path.join(tmp, "out"), os.path.join(tmp, "work")
    os.makedirs(work)
    floor = measure(pin + [os.path.join(ours_bin, "python"), "-c",
                           run.FLOOR_SCRIPT.format(module="isal.igzip"), *paths], args.repeat)
    built = measure([os.path.join(ours_bin, "webarchive-index"), "build", *paths, "-o", out, "--shards",
                     str(args.shards), "--work-dir", work, "--no-progress"], args.repeat,
                    lambda: shutil.rmtree(out, ignore_errors=True), watch=work)
    mb, cores = sum(map(os.path.getsize, paths)) / 1e6, len(os.sched_getaffinity(0))
    result = {"files": len(paths), "mb": mb, "cores": cores, "floor": floor, "build": built,
              "mb_s_per_core": mb / built["cpu"], "mb_s_per_core_wall": mb / built["best"] / cores,
              "floor_mb_s_per_core": mb / floor["cpu"],
              "cluster_lines": count_lines(os.path.join(out, "cluster"))}
    result["share_of_floor"] = result["mb_s_per_core"] / result["floor_mb_s_per_core"]
    return result


def report_warcs(result):
    print(f"\nWARC corpus built end to end: {result['files']} files, {result['mb'] / 1e3:.2f} GB, "
          f"{result['cluster_lines']:,} CDX lines, {result['cores']} cores")
    fmt = "{:<32} {:>8} {:>8} {:>13} {:>9} {:>8} {:>12}"
    print(fmt.format("command", "best s", "cpu s", "MB/s/core cpu", "(wall)", "peak MB", "runs peak GB"))
    floor, built = result["floor"], result["build"]
    print(fmt.format("floor: isal inflate, one core", f"{floor['best']:.2f}", f"{floor['cpu']:.2f}",
                     f"{result['floor_mb_s_per_core']:.1f}", f"{result['mb']/floor['best']:.1f}", f"{floor['peak_mb']:.0f}", ""))
    print(fmt.format("build (all cores)", f"{built['best']:.2f}", f"{built['cpu']:.2f}",
                     f"{result['mb_s_per_core']:.1f}", f"{result['mb_s_per_core_wall']:.1f}", f"{built['peak_mb']:.0f}",
                     f"{built['work_peak_mb'] / 1e3:.2f}"))
    print(f"build: {100 * result['share_of_floor']:.0f}% of the floor's MB/s per core (CPU time; MB: compressed "
          "input, 10^6 bytes)")


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
    print("slope (build on all cores): time per line (wall; CPU of all its processes), the largest "
          "process, the sorted runs' peak in the work directory, the cluster, lines/s per core "
          "(CPU time; wall x cores) against the floor's (inflate + zlib-6 blocks, one core, CPU time)")
    fmt = "{:<6} {:>11} {:>8} {:>8} {:>8} {:>9} {:>10} {:>12} {:>12} {:>8} {:>9}"
    print(fmt.format("scale", "lines", "wall us", "cpu us", "peak MB", "runs GB", "cluster GB",
                     "l/s/core cpu", "(wall)", "floor", "of floor"))
    first = results[0]["slope"]
    for result in results:
        sl = result["slope"]
        print(fmt.format(f"{result['scale']}x", result["lines"], f"{sl['us_per_line']:.2f}",
                         f"{sl['cpu_us_per_line']:.2f}", f"{sl['peak_mb']:.0f}", f"{sl['work_peak_mb'] / 1e3:.2f}",
                         f"{sl['cluster_mb'] / 1e3:.2f}", f"{sl['lines_s_per_core']:.0f}",
                         f"{sl['lines_s_per_core_wall']:.0f}", f"{sl['floor_lines_s_per_core']:.0f}",
                         f"{100 * sl['share_of_floor']:.0f}%"))
    print("  time per line over the first scale's (wall, cpu): " + ", ".join(
        f"{r['scale']}x {r['slope']['us_per_line'] / first['us_per_line']:.2f} "
        f"{r['slope']['cpu_us_per_line'] / first['cpu_us_per_line']:.2f}" for r in results)
          + f"; peak memory target < {TARGETS['peak_mb']} MB")
    print()
    if any("ratios" not in result for result in results):
        report_checks(results)
        return
    ratios = "{:<7} {:>21} {:>20} {:>19} {:>22} {:>13}"
    print(ratios.format("scale", "all cores / baseline", "one core / baseline",
                        "update / rebuild", "(new sites) update /", "peak MB"))
    for result in results:
        r = result["ratios"]
        peak = max(row["peak_mb"] for row in result["rows"].values())
        print(ratios.format(
            f"{result['scale']}x", f"{r['build_vs_baseline']:.2f} (<= 0.75)",
            f"{r['one_core_vs_baseline']:.2f}", f"{r['update_vs_rebuild']:.2f} (<= 0.50)",
            f"{r['update_sites_vs_rebuild']:.2f} (<= 0.50)", f"{peak:.0f} (< {TARGETS['peak_mb']})"))
    if len(results) > 1:
        print()
        print("slope: seconds per line at each scale over the first scale's (1.00 = linear)")
        first = results[0]
        for result in results[1:]:
            print(f"  {result['scale']}x: " + ", ".join(
                f"{name} {(row['best'] / row['lines']) / (first['rows'][name]['best'] / first['rows'][name]['lines']):.2f}"
                for name, row in result["rows"].items()))
    print()
    report_checks(results)


def report_checks(results):
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
    parser.add_argument("--slope", action=argparse.BooleanOptionalAction, default=False,
                        help="only the floor and the build on all cores at each scale, for "
                             "large scales: --scales 1,10,50 (100 M lines at 50x; --no-slope: "
                             "every command, the default)")
    parser.add_argument("--warcs", type=float, metavar="GB",
                        help="instead: a WARC corpus of about GB gigabytes (generated, cached) "
                             "built end to end on all cores, in MB/s per core against inflating it")
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
    os.makedirs(OUT, exist_ok=True)
    if args.warcs:
        result = warc_run(args.warcs, args, ours_bin, pin)
        meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "python": platform.python_version(), "cpu": run.cpu_model(), "cores": os.cpu_count(),
                "pinning": pin, "repeat": args.repeat, "shards": args.shards,
                "loadavg_1_5_15min": {"start": load_start, "end": os.getloadavg()}}
        print(f"\nmachine  {meta['cpu']}, {meta['cores']} cores, Python {meta['python']}, {meta['date']}; "
              f"1-min load average {load_start[0]:.2f} at the start, {meta['loadavg_1_5_15min']['end'][0]:.2f} at the end")
        report_warcs(result)
        with open(os.path.join(run.OUT, "build-warcs-results.json"), "w") as fh:
            json.dump({"meta": meta, "result": result}, fh, indent=1)
        print(f"wrote {os.path.relpath(os.path.join(run.OUT, 'build-warcs-results.json'))}")
        return 0
    per_line, results = (WORK_BYTES_PER_LINE, CLUSTER_BYTES_PER_LINE), []
    for scale in scales:
        results.append(scale_run(scale, args, ours_bin, pin, per_line))
        done = results[-1]
        print(f"{scale}x done: build {done['slope']['us_per_line']:.2f} us a line (wall), "
              f"{done['slope']['cpu_us_per_line']:.2f} (CPU), peak {done['slope']['peak_mb']:.0f} MB, "
              f"runs {done['slope']['work_peak_mb'] / 1e3:.2f} GB", flush=True)
        per_line = (done["slope"]["work_peak_mb"] * 1e6 / done["lines"], done["slope"]["cluster_mb"] * 1e6 / done["lines"])
    deflates = deflate_run(args, ours_bin, pin) if args.deflates else None
    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cpu": run.cpu_model(), "cores": os.cpu_count(),
            "pinning": pin, "repeat": args.repeat, "slope_only": args.slope, "shards": args.shards, "targets": TARGETS,
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
