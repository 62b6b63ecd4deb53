"""Benchmark .warc.zst: sizes as a share of gzip, and indexing speed against .warc.gz and
against the zstd decompression floor, in one run.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/zstd.py                 # sizes: 4 files x 2000 captures, levels 1 3 8 19;
                                         # speed: bench/run.py's 4 files x 5000, repeat 5
    python bench/zstd.py --quick         # smoke run: 2 files x 300 captures, levels 1 3
    python bench/zstd.py --real DIR      # real WARCs of your own for the size table
    python bench/zstd.py --no-copy       # without timing copy
    python bench/zstd.py --baseline main # and `cdx` of the .warc.zst by the project at main

Sizes (in this process, with the package's own writer, `recompress`'s):

* generated corpus: the records of the second half of the files (held out), compressed as
  `recompress` compresses them, at each level, without a dictionary and with one that
  `webarchive-index zstd-dict` trained on the first half (--dict-size, default 1 MiB);
* real samples: each file of --real (default: the Common Crawl excerpts among the real
  samples in tests/data/real, from CC-MAIN-2017 to CC-MAIN-2024: WARC, WAT and WET) with a
  dictionary trained on the others (leave one out; a small one, as they are small).

Shares are of the same records in per-record gzip at level 6 (what most writers use; the
generator writes level 1, Common Crawl its own: their files' sizes are shown too). "with
dict" counts the records only (one dictionary serves a whole crawl), "+frame" each file
with its dictionary frame, as `recompress` writes it. MB/s is uncompressed MB compressed
per second, one core, python-zstandard.

Speed, as bench/run.py measures (whole commands, Python start-up included, from a regular
install in bench/out/venv, pinned to one core with taskset, the commands alternated round
after round, medians (and best) of --repeat), on files of --speed-captures (default 5000:
bench/run.py's corpus, ~74 MB .warc.gz files, the size the issue measured; the start of a
command, ~0.05 s, weighs more in smaller ones): `webarchive-index cdx` of each .warc.gz and of
the .warc.zst `recompress --dictionary --level 3` made of it, against the decompression
floors: isal.igzip for gzip, and python-zstandard's stream reader and the `zstd -dc -D` tool
(its output to /dev/null) for zstd. The ratios are of medians: the .warc.zst's speed-up over
the .warc.gz (target: 2x) and its time over `zstd -dc`'s (target: under 1), and the same of CPU
times (on a loaded machine the fairer measure). Peak memory is each
command's maximum resident set; CPU time, the command's and its children's. With --baseline
REV, `cdx` of each .warc.zst by that git revision of the project (installed alike, in
bench/out/venv-baseline) is timed in the same rounds. Our .warc.zst lines must equal our
.warc.gz lines but for offset, length and filename (and the baseline's must be ours), else
the run exits with status 1.

Copy (unless --no-copy): `webarchive-index copy copy` of the captures of every domain of the
first half of the speed files, from a cluster of the .warc.gz and from one of the .warc.zst, into
.warc.gz and into .warc.zst outputs (--runner inline, local source and output, pinned, best
of --repeat).

Results: the tables, and bench/out/zstd-results.json.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as speedbench  # noqa: E402  (the corpus, the install and the floors of bench/run.py)

ROOT, OUT, TMP, BIN, PYTHON = (speedbench.ROOT, speedbench.OUT, os.path.join(speedbench.OUT, "zstd"),
                               speedbench.BIN, speedbench.PYTHON)
REAL = os.path.join(ROOT, "tests", "data", "real")
# The Common Crawl excerpts among the real samples
CC_EXCERPTS = ("chatnoir-eu+chatnoir-resiliparse__warcfile.warc.gz",
               "commoncrawl+whirlwind-python__whirlwind.warc.gz",
               "commoncrawl+whirlwind-python__whirlwind.warc.wat.gz",
               "commoncrawl+whirlwind-python__whirlwind.warc.wet.gz",
               "iipc+jwarc__cc.warc.gz", "webrecorder+cdxj-indexer__cc.warc.gz")
# Decompress every .warc.zst named on the command line in 1 MiB chunks, discarding the
# output, with the dictionary of its dictionary frame (read here: no more imports than needed).
# GNU time, for each command's peak memory (Debian: the `time` package)
GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
ZSTD_FLOOR = """import sys, zstandard
for path in sys.argv[1:]:
    with open(path, "rb") as fh:
        head, zdict = fh.read(8), None
        if head[:4] == b"\\x5d\\x2a\\x4d\\x18":
            data = fh.read(int.from_bytes(head[4:], "little"))
            if data[:4] == b"\\x28\\xb5\\x2f\\xfd":
                data = zstandard.ZstdDecompressor().decompress(data)
            zdict = zstandard.ZstdCompressionDict(data)
        else:
            fh.seek(0)
        reader = zstandard.ZstdDecompressor(dict_data=zdict)
        with reader.stream_reader(fh, read_across_frames=True) as stream:
            while stream.read(1 << 20):
                pass
"""


class Counter:
    """A file that only counts what is written to it."""

    def __init__(self):
        self.size = 0

    def write(self, data):
        self.size += len(data)


def records_of(path):
    from webarchive_indexing.warc.raw import open_records
    with open_records(path) as records:
        return [list(record.pieces) for record in records]


def compressed_size(records, fmt, level, dictionary=None):
    """(bytes as `recompress` writes them, bytes of the dictionary frame, seconds)."""
    from webarchive_indexing.warc.raw import record_writer
    from webarchive_indexing.warc.zstdwarc import load_dictionary
    out = Counter()
    start = time.perf_counter()
    write = record_writer(out, fmt, level, load_dictionary(dictionary) if dictionary else None)
    framed = out.size  # the dictionary frame
    for pieces in records:
        write(pieces)
    return out.size, framed, time.perf_counter() - start


def train(paths, output, size):
    subprocess.run([os.path.join(BIN, "webarchive-index"), "zstd-dict", *paths, "-o", output,
                    "--size", str(size), "--no-progress"], check=True, capture_output=True)
    return output


def size_rows(group, files, dictionaries, levels):
    """A row per level: shares of per-record gzip -6, without and with a dictionary."""
    records = {path: records_of(path) for path in files}
    plain = sum(len(p) for recs in records.values() for pieces in recs for p in pieces)
    gz6 = sum(compressed_size(records[path], "gz", 6)[0] for path in files)
    rows = []
    for level in levels:
        row = {"group": group, "files": len(files), "uncompressed": plain, "gzip6": gz6,
               "original": sum(map(os.path.getsize, files)), "level": level}
        size, _, seconds = zip(*(compressed_size(records[p], "zst", level) for p in files))
        row.update(zst=sum(size), zst_mb_s=plain / 1e6 / sum(seconds))
        with_dict = [compressed_size(records[p], "zst", level, dictionaries[p]) for p in files]
        row.update(dict_records=sum(s - f for s, f, _ in with_dict),
                   dict_files=sum(s for s, _, _ in with_dict),
                   dict_mb_s=plain / 1e6 / sum(t for _, _, t in with_dict))
        rows.append(row)
        print(f"  {group}: level {level} done", flush=True)
    return rows


def sizes(paths, real, levels, dict_size):
    half = max(1, len(paths) // 2)
    work = os.path.join(TMP, "dicts")
    os.makedirs(work, exist_ok=True)
    held_out = paths[half:] or paths
    corpus_dict = train(paths[:half], os.path.join(work, "corpus.dict"), dict_size)
    rows = size_rows("generated, held out", held_out, {p: corpus_dict for p in held_out}, levels)
    # real samples: leave one out, a dictionary about 1/25 of what it is trained on
    plain = {p: sum(len(x) for pieces in records_of(p) for x in pieces) for p in real}
    dictionaries = {}
    for i, path in enumerate(real):
        others = [p for p in real if p != path]
        size = max(4096, min(dict_size, sum(plain[p] for p in others) // 25))
        dictionaries[path] = train(others, os.path.join(work, f"real-{i}.dict"), size)
    rows += size_rows("real samples, leave one out", real, dictionaries, levels)
    return rows


def make_zst(paths, dictionary, ours_bin):
    out = os.path.join(TMP, "warc.zst")
    subprocess.run([os.path.join(ours_bin, "webarchive-index"), "recompress", *paths, "-o", out,
                    "--dictionary", dictionary, "--level", "3", "--no-progress"], check=True,
                   capture_output=True)
    return [os.path.join(out, os.path.basename(p).replace(".warc.gz", ".warc.zst")) for p in paths]


def run_once(argv, stdout_path):
    """(wall s, cpu s, peak resident MB or None) of one run of argv, its stdout into
    stdout_path. The peak comes from GNU time (`time` package), whose child's count starts
    afresh: a command started from this process would count this process' pages too."""
    rss = stdout_path + ".rss"
    wrapped = [GNU_TIME, "-f", "%M", "-o", rss, *argv] if GNU_TIME else argv
    with open(stdout_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=out, stderr=subprocess.PIPE)
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(argv)}\n{stderr.decode()[-2000:]}")
    peak = None
    if GNU_TIME:
        with open(rss) as fh:
            peak = int(fh.read().split()[-1]) / 1024
    return wall, usage.ru_utime + usage.ru_stime, peak


def install_baseline(rev):
    """The bin directory of a regular install of the git revision ``rev`` of this project
    (its files as committed, in bench/out/zstd/baseline-src), in bench/out/venv-baseline."""
    source = os.path.join(TMP, "baseline-src")
    shutil.rmtree(source, ignore_errors=True)
    os.makedirs(source)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], capture_output=True)
    if archive.returncode:
        sys.exit(f"bench: --baseline {rev}: git cannot archive it ({archive.stderr.decode().strip()}): "
                 "give a branch, tag or commit of this repository")
    subprocess.run(["tar", "-x", "-C", source], input=archive.stdout, check=True)
    return speedbench.install_project(source, os.path.join(OUT, "venv-baseline"))


def speed(gz, zst, dictionary, pin, repeat, ours_bin, baseline_bin=None):
    groups = {os.path.basename(g).removesuffix(".warc.gz"): ([g], [z]) for g, z in zip(gz, zst)}
    if len(gz) > 1:
        groups[f"all {len(gz)}, 1 command"] = (gz, zst)
    cmds = {}
    for group, (g, z) in groups.items():
        cmds[group, "floor isal (.warc.gz)"] = [PYTHON, "-c", speedbench.FLOOR_SCRIPT.format(module="isal.igzip"), *g]
        cmds[group, "floor zstd (.warc.zst)"] = [PYTHON, "-c", ZSTD_FLOOR, *z]
        cmds[group, "zstd -dc -D (tool)"] = ["sh", "-c", 'zstd -qdc -D "$0" "$@" >/dev/null', dictionary, *z]
        cmds[group, "ours .warc.gz"] = [os.path.join(ours_bin, "webarchive-index"), "cdx", *g]
        cmds[group, "ours .warc.zst"] = [os.path.join(ours_bin, "webarchive-index"), "cdx", *z]
        if baseline_bin:
            cmds[group, "baseline .warc.zst"] = [os.path.join(baseline_bin, "webarchive-index"), "cdx", *z]
    runs = {key: ([], [], []) for key in cmds}
    for round_no in range(repeat):
        print(f"  round {round_no + 1}/{repeat}", flush=True)
        for key, argv in cmds.items():
            for value, into in zip(run_once(pin + argv, scratch(*key)), runs[key]):
                into.append(value)
    rows = []
    for (group, command), (wall, cpu, rss) in runs.items():
        g, z = groups[group]
        mb = sum(map(os.path.getsize, z if ".warc.zst" in command or "zstd" in command else g)) / 1e6
        records = sum(map(speedbench.records_in, g))
        rows.append({"input": group, "command": command, "mb": mb, "records": records,
                     "best": min(wall), "median": statistics.median(wall), "wall": wall, "cpu": cpu,
                     "best_cpu": min(cpu),
                     "peak_mb": max(rss) if rss[0] is not None else None,
                     "records_s": records / statistics.median(wall)})
    return groups, rows


def copy_speed(gz, zst, pin, repeat, ours_bin):
    """Rows of ``copy copy`` timed from each kind of source into each output format: the
    captures of every domain of the first half of the files, from clusters built
    from the .warc.gz and from the .warc.zst, local source and output, --runner inline."""
    exe = os.path.join(ours_bin, "webarchive-index")
    half = max(1, len(gz) // 2)
    domains = os.path.join(TMP, "copy-domains.txt")
    with open(scratch("copy", "index"), "wb") as out:
        subprocess.run([exe, "cdx", *gz[:half]], stdout=out, check=True)
    with open(scratch("copy", "index"), encoding="utf-8") as fh:
        hosts = [line.split(")", 1)[0].split(":")[0].split(",") for line in fh if ")" in line]
    with open(domains, "w") as out:  # com,example:8080,www -> example.com
        out.writelines(sorted({f"{host[1]}.{host[0]}\n" for host in hosts if len(host) > 1}))
    clusters = {}
    for source, paths in (("gz", gz), ("zst", zst)):
        clusters[source] = os.path.join(TMP, f"copy-index-{source}")
        shutil.rmtree(clusters[source], ignore_errors=True)  # a CDX of an earlier corpus's file
        subprocess.run([exe, "build", *paths, "-o", clusters[source], "--runner", "inline",
                        "--no-progress"], check=True, capture_output=True)
    cmds = {}
    for source, paths in (("gz", gz), ("zst", zst)):
        for fmt in ("gz", "zst"):
            out = os.path.join(TMP, f"copy-{source}-to-{fmt}")
            cmds[f".warc.{source} -> .warc.{fmt}"] = (out, [
                exe, "copy", "copy", clusters[source], "--domains-file", domains, "-o", out,
                "--warc-prefix", os.path.dirname(paths[0]), "--output-format", fmt,
                "--runner", "inline", "--no-progress"])
    runs = {key: ([], [], []) for key in cmds}
    for round_no in range(repeat):
        print(f"  copy round {round_no + 1}/{repeat}", flush=True)
        for key, (out, argv) in cmds.items():
            shutil.rmtree(out, ignore_errors=True)
            for value, into in zip(run_once(pin + argv, scratch("copy", key)), runs[key]):
                into.append(value)
    rows = []
    for key, (wall, cpu, rss) in runs.items():
        out = cmds[key][0]
        written = [os.path.join(out, n) for n in os.listdir(out) if n.endswith((".warc.gz", ".warc.zst"))]
        records = 0
        for name in os.listdir(out):
            if name.endswith(".cdxj"):
                with open(os.path.join(out, name), encoding="utf-8") as fh:
                    records += sum(1 for _ in fh)
        rows.append({"command": key, "records": records, "best": min(wall),
                     "median": statistics.median(wall), "cpu": cpu,
                     "output_mb": sum(map(os.path.getsize, written)) / 1e6,
                     "peak_mb": max(rss) if rss[0] is not None else None})
    return rows


def scratch(group, command):
    return os.path.join(TMP, "".join(c if c.isalnum() else "_" for c in f"{group} {command}") + ".out")


def check(groups, baseline=False):
    """Per group: None if our .warc.zst lines are our .warc.gz lines (offset, length and
    filename aside), and the ``baseline``'s .warc.zst lines ours, else what differs."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from helpers import fields_but_place
    verdicts = {}
    for group in groups:
        lines = {}
        for command in ("ours .warc.gz", "ours .warc.zst") + (("baseline .warc.zst",) * baseline):
            with open(scratch(group, command), encoding="utf-8") as fh:
                lines[command] = fh.read().splitlines()
        if lines.get("baseline .warc.zst", lines["ours .warc.zst"]) != lines["ours .warc.zst"]:
            verdicts[group] = "the baseline's .warc.zst lines are not ours"
            continue
        lines = {command: fields_but_place(found) for command, found in lines.items()}
        same = lines["ours .warc.gz"] == lines["ours .warc.zst"] and lines["ours .warc.gz"]
        verdicts[group] = None if same else (f"{len(lines['ours .warc.gz'])} lines from .warc.gz, "
                                             f"{len(lines['ours .warc.zst'])} from .warc.zst, "
                                             "not the same")
    return verdicts


def ratios(rows, groups):
    median = {(r["input"], r["command"]): r["median"] for r in rows}
    cpu = {(r["input"], r["command"]): statistics.median(r["cpu"]) for r in rows}
    ratio = {g: {"zst_vs_gz_speedup": median[g, "ours .warc.gz"] / median[g, "ours .warc.zst"],
                 "zst_vs_gz_cpu": cpu[g, "ours .warc.zst"] / cpu[g, "ours .warc.gz"],
                 "zst_vs_zstd_tool": median[g, "ours .warc.zst"] / median[g, "zstd -dc -D (tool)"],
                 "zst_vs_zstd_tool_cpu": cpu[g, "ours .warc.zst"] / cpu[g, "zstd -dc -D (tool)"],
                 "zst_vs_zstd_floor": median[g, "ours .warc.zst"] / median[g, "floor zstd (.warc.zst)"],
                 "gz_vs_isal_floor": median[g, "ours .warc.gz"] / median[g, "floor isal (.warc.gz)"],
                 "zstd_floor_vs_isal_floor": median[g, "floor isal (.warc.gz)"] / median[g, "floor zstd (.warc.zst)"]}
             for g in groups}
    for g in groups:
        if (g, "baseline .warc.zst") in median:
            ratio[g]["zst_vs_baseline_cpu"] = cpu[g, "ours .warc.zst"] / cpu[g, "baseline .warc.zst"]
    return ratio


def report_copy(rows, meta):
    print()
    print(f"copy copy (--runner inline, local source and output, pinned "
          f"{' '.join(meta['pinning']) or 'NO'}, best of {meta['repeat']}; the captures of "
          "every domain of the first half of the files)")
    fmt = "{:<24} {:>8} {:>7} {:>9} {:>10} {:>8}"
    print(fmt.format("source -> output", "records", "best s", "median s", "output MB", "peak MB"))
    for r in rows:
        print(fmt.format(r["command"], r["records"], f"{r['best']:.2f}", f"{r['median']:.2f}",
                         f"{r['output_mb']:.1f}", f"{r['peak_mb']:.0f}" if r["peak_mb"] else "-"))


def report(size_table, speed_rows, ratio, verdicts, meta):
    print()
    print(f"machine  {meta['cpu']}, {meta['cores']} cores, Python {meta['python']}, zstd "
          f"{meta['zstd']}, {meta['date']}")
    load = meta["loadavg_1_5_15min"]
    print(f"load     1-min load average {load['start'][0]:.2f} at the start, {load['end'][0]:.2f} at "
          "the end (other processes share the cores: compare ratios from one run)")
    print(f"corpus   sizes: {meta['corpus']}: {meta['files']} files x {meta['captures']} captures; "
          f"dictionary {meta['dict_size']} bytes; real samples: {', '.join(meta['real'])}")
    print(f"         speed and copy: {meta['speed_corpus']}: {meta['files']} files x "
          f"{meta['speed_captures']} captures")
    print()
    fmt = "{:<28} {:>5} {:>10} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}"
    print("sizes as a share of per-record gzip -6 (the same records)")
    print(fmt.format("records", "level", "gzip -6 B", "no dict", "MB/s", "dict", "+frame",
                     "dict MB/s", "original"))
    for r in size_table:
        print(fmt.format(f"{r['group']} ({r['files']})", r["level"], r["gzip6"],
                         f"{r['zst'] / r['gzip6']:.1%}", f"{r['zst_mb_s']:.1f}",
                         f"{r['dict_records'] / r['gzip6']:.1%}", f"{r['dict_files'] / r['gzip6']:.1%}",
                         f"{r['dict_mb_s']:.1f}", f"{r['original'] / r['gzip6']:.1%}"))
    print()
    fmt = "{:<24} {:<24} {:>7} {:>7} {:>8} {:>8} {:>9} {:>8}"
    print(f"indexing speed: pinned {' '.join(meta['pinning']) or 'NO'}, {meta['repeat']} rounds "
          "alternating the commands, "
          f"whole commands (ours from {meta['ours_installed_in']}, walker: {meta['ours_walker']}"
          + (f"; baseline: {meta['baseline']}" if meta.get("baseline") else "") + ")")
    print(fmt.format("input", "command", "MB", "best s", "median s", "med. CPU", "records/s",
                     "peak MB"))
    last = None
    for r in speed_rows:
        if last is not None and r["input"] != last:
            print()
        print(fmt.format(r["input"] if r["input"] != last else "", r["command"], f"{r['mb']:.1f}",
                         f"{r['best']:.2f}", f"{r['median']:.2f}",
                         f"{statistics.median(r['cpu']):.2f}", f"{r['records_s']:.0f}",
                         f"{r['peak_mb']:.0f}" if r["peak_mb"] else "-"))
        last = r["input"]
    print()
    fmt = "{:<24} {:>16} {:>14} {:>14} {:>18} {:>16} {:>15} {:>18} {:>16}"
    print(fmt.format("ratios (medians)", ".zst vs .gz", ".zst/zstd -dc", ".zst/.gz CPU",
                     ".zst/zstd -dc CPU", "ours .zst/floor", "ours .gz/floor",
                     "zstd vs isal floor", ".zst CPU/baseline"))
    print(fmt.format("(targets)", ">= 2x faster", "< 1", "<= 0.5", "< 1", "", "", "", ""))
    for group, r in ratio.items():
        print(fmt.format(
            group, f"{r['zst_vs_gz_speedup']:.2f}x faster", f"{r['zst_vs_zstd_tool']:.2f}",
            f"{r['zst_vs_gz_cpu']:.2f}", f"{r['zst_vs_zstd_tool_cpu']:.2f}",
            f"{r['zst_vs_zstd_floor']:.2f}x", f"{r['gz_vs_isal_floor']:.2f}x",
            f"{r['zstd_floor_vs_isal_floor']:.2f}x faster",
            f"{r['zst_vs_baseline_cpu']:.2f}" if "zst_vs_baseline_cpu" in r else "-"))
    print()
    for group, note in verdicts.items():
        if note:
            print(f"CORRECTNESS FAILURE {group}: {note}")
    if not any(verdicts.values()):
        print(f"correctness: .warc.zst lines == .warc.gz lines but for offset, length and "
              f"filename, all {len(verdicts)} inputs")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--captures", type=int, default=2000,
                        help="captures per file of the sizes' corpus (default 2000)")
    parser.add_argument("--speed-captures", type=int, default=5000,
                        help="captures per file of the timed files (default 5000: bench/run.py's "
                             "corpus, ~74 MB .warc.gz files)")
    parser.add_argument("--mean-kb", type=float, default=40, help="mean payload size")
    parser.add_argument("--levels", default="1,3,8,19", help="zstd levels of the size table")
    parser.add_argument("--dict-size", type=int, default=1 << 20,
                        help="dictionary size for the generated corpus (default 1 MiB)")
    parser.add_argument("--real", metavar="DIR",
                        help="a directory of real WARC files for the size table (default: the "
                             "Common Crawl excerpts in tests/data/real)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="rounds of every command, alternated (median and best; default 5)")
    parser.add_argument("--baseline", metavar="REV",
                        help="also time `cdx` of the .warc.zst files from this git revision of "
                             "the project (e.g. main), installed alike, in the same rounds")
    parser.add_argument("--copy", action=argparse.BooleanOptionalAction, default=True,
                        help="time copy copy from .warc.gz and .warc.zst sources into both "
                             "output formats too (default)")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=False,
                        help="smoke run: 2 files x 300 captures, levels 1 and 3, a 64 KiB "
                             "dictionary (--no-quick: the sizes above, the default)")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.captures, args.speed_captures, args.levels, args.dict_size = (
            2, 300, 300, "1,3", 64 << 10)
    levels = [int(x) for x in args.levels.split(",")]
    if args.files < 2 or min(args.captures, args.speed_captures, args.repeat) < 1:
        parser.error("--files must be at least 2 (half train the dictionary), --captures, "
                     "--speed-captures and --repeat at least 1")
    missing = speedbench.missing_tools()
    if missing or not shutil.which("zstd"):
        sys.exit(f"bench: {', '.join(missing) or 'the zstd tool'} missing: run `make bench` "
                 "(and apt-get install zstd)")
    os.makedirs(TMP, exist_ok=True)
    baseline_bin = install_baseline(args.baseline) if args.baseline else None  # (a bad REV: at once)
    paths = speedbench.corpus(args.files, args.captures, args.mean_kb)
    real = ([os.path.join(args.real, n) for n in sorted(os.listdir(args.real))
             if ".warc" in n and not n.endswith(".jsonl")] if args.real
            else [os.path.join(REAL, n) for n in CC_EXCERPTS])
    load_start = os.getloadavg()
    print("sizes ...", flush=True)
    size_table = sizes(paths, real, levels, args.dict_size)
    ours_bin = speedbench.install_project()
    print("making the .warc.zst files ...", flush=True)
    timed = speedbench.corpus(args.files, args.speed_captures, args.mean_kb)
    dictionary = train(timed[:max(1, len(timed) // 2)], os.path.join(TMP, "speed.dict"), args.dict_size)
    zst = make_zst(timed, dictionary, ours_bin)
    for path in [*timed, *zst]:  # a warm page cache for every command
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    pin = speedbench.pinning()
    print("timing ...", flush=True)
    groups, speed_rows = speed(timed, zst, dictionary, pin, args.repeat, ours_bin, baseline_bin)
    copy_rows = copy_speed(timed, zst, pin, args.repeat, ours_bin) if args.copy else []
    verdicts = check(groups, bool(args.baseline))
    ratio = ratios(speed_rows, groups)
    import zstandard
    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cpu": speedbench.cpu_model(),
            "cores": os.cpu_count(), "zstd": zstandard.ZSTD_VERSION, "pinning": pin,
            "repeat": args.repeat, "ours_installed_in": os.path.relpath(speedbench.INSTALL, ROOT),
            "ours_walker": speedbench.walker(ours_bin), "baseline": args.baseline,
            "corpus": os.path.relpath(os.path.dirname(paths[0]), ROOT), "files": args.files,
            "captures": args.captures, "dict_size": args.dict_size,
            "speed_corpus": os.path.relpath(os.path.dirname(timed[0]), ROOT),
            "speed_captures": args.speed_captures,
            "real": [os.path.basename(p) for p in real],
            "loadavg_1_5_15min": {"start": load_start, "end": os.getloadavg()}}
    report(size_table, speed_rows, ratio, verdicts, meta)
    if copy_rows:
        report_copy(copy_rows, meta)
    ok = not any(verdicts.values())
    with open(os.path.join(OUT, "zstd-results.json"), "w") as fh:
        json.dump({"meta": meta, "correct": ok, "sizes": size_table, "speed": speed_rows,
                   "ratios": ratio, "copy": copy_rows}, fh, indent=1)
    print(f"wrote {os.path.relpath(os.path.join(OUT, 'zstd-results.json'))}")
    return 0 if ok else 1


if __name__ == "__main__":
    if os.path.realpath(sys.prefix) != os.path.realpath(speedbench.VENV) and os.path.exists(PYTHON):
        os.execv(PYTHON, [PYTHON, *sys.argv])  # the project and its tools live in the venv
    sys.exit(main())
