"""Benchmark packing WARC files into a WACZ: `webarchive-index wacz` against py-wacz's
`wacz create` of the same files, in one run, alternating round by round.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/wacz_pack.py               # 16 files x 1600 captures, mean 32 KB: ~290 MB
    python bench/wacz_pack.py --quick       # smoke run: 2 files x 400 captures (~25 MB)
    python bench/wacz_pack.py --repeat 5    # runs per command (default 3)

The corpus is bench/run.py's (generated once, cached in bench/out/corpus/). Ours is
installed regularly in bench/out/venv, as bench/run.py times it. Both write into
bench/out/tmp/wacz/; each run is a whole command (Python start-up included, all cores);
peak memory is its maximum resident set (GNU time). py-wacz indexes with cdxj-indexer in
one process; ours with `build`'s local engine. Both packages are checked by py-wacz's
`wacz validate` after the timed runs. Target (the WACZ issue): ours at least 3x faster,
peak memory under 500 MB.
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as speedbench  # noqa: E402  (the corpus and the install of bench/run.py)
import zstd as zstdbench  # noqa: E402  (run_once: wall, CPU and peak memory of a command)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--captures", type=int, default=1600)
    parser.add_argument("--mean-kb", type=float, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.captures, args.repeat = 2, 400, 1
    paths = speedbench.corpus(args.files, args.captures, args.mean_kb)
    ours_bin = speedbench.install_project()
    work = os.path.join(speedbench.TMP, "wacz")
    os.makedirs(work, exist_ok=True)
    commands = {
        "py-wacz create": [os.path.join(speedbench.BIN, "wacz"), "create", "-o",
                           os.path.join(work, "theirs.wacz"), *paths],
        "webarchive-index wacz": [os.path.join(ours_bin, "webarchive-index"), "wacz", *paths,
                                  "-o", os.path.join(work, "ours.wacz"), "--no-progress"],
    }
    runs = {name: [] for name in commands}
    for round_ in range(args.repeat):
        for name, argv in commands.items():
            output = argv[argv.index("-o") + 1]
            if os.path.exists(output):
                os.remove(output)
            runs[name].append(zstdbench.run_once(argv, os.path.join(work, "stdout")))
            print(f"  round {round_ + 1}: {name} {runs[name][-1][0]:.1f} s", flush=True)
    for name in ("ours.wacz", "theirs.wacz"):
        done = subprocess.run([os.path.join(speedbench.BIN, "wacz"), "validate", "-f",
                               os.path.join(work, name)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"bench: {name} does not validate:\n{done.stdout[-2000:]}")
    mb = speedbench.total_mb(paths)
    print(f"\n{len(paths)} WARC files, {mb:.0f} MB; median of {args.repeat} "
          f"(all cores: {os.cpu_count()})\n")
    print(f"{'command':24} {'wall s':>8} {'CPU s':>8} {'MB/s':>7} {'peak MB':>8}")
    medians = {}
    for name, rows in runs.items():
        wall, cpu = (statistics.median(r[i] for r in rows) for i in (0, 1))
        peak = max((r[2] for r in rows if r[2] is not None), default=float("nan"))
        medians[name] = wall
        print(f"{name:24} {wall:8.2f} {cpu:8.2f} {mb / wall:7.1f} {peak:8.0f}")
    ratio = medians["py-wacz create"] / medians["webarchive-index wacz"]
    print(f"\nours is {ratio:.2f}x faster than py-wacz (target: at least 3x)")


if __name__ == "__main__":
    if os.path.realpath(sys.executable) != os.path.realpath(speedbench.PYTHON) and os.path.exists(
            speedbench.PYTHON):
        os.execv(speedbench.PYTHON, [speedbench.PYTHON, *sys.argv])
    main()
