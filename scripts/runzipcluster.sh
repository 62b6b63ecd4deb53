#!/usr/bin/env bash
# Step 3 of 3: sort every CDX line into the shards of a ZipNum cluster (jobs/zip_cluster.py).
# Settings come from index_env.sh; see --help and docs/hadoop-and-emr.md.
set -euo pipefail

PROG=$(basename "$0")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    cat <<EOF
Usage: $PROG [-r RUNNER] [-- JOB_ARGS...]

Run jobs/zip_cluster.py: every line of the per-archive CDX files goes to its
shard (split points from the sampling step); shard i is written as
CLUSTER_DIR/cdx-0000i.gz with its index CLUSTER_DIR/part-0000i. Then publish
the cluster with:  webarchive-index finalize CLUSTER_DIR --shards SHARDS
(scripts/runall.sh runs all three steps and that).

Options:
  -r, --runner RUNNER  emr, hadoop, local or inline (default: \$RUNNER)
  -h, --help           this help
  -- JOB_ARGS...       passed to the job as they are (any mrjob or job option)

Settings are read from \$INDEX_ENV (default ./index_env.sh; copy
index_env.sample.sh). Required here:
  CDX_DIR          where the per-archive CDX files are (local path, or s3://...)
  SPLITS_DIR       where runsample.sh wrote splits.txt and partitions.seq
  CLUSTER_DIR      where the shards go (must not hold a published cluster yet)
  SHARDS           number of shards (as given to runsample.sh)
  LINES_PER_BLOCK  CDX lines per gzip block (3000 in production)
  RUNNER           emr | hadoop | local | inline
  MRJOB_CONF       mrjob.conf to use (see mrjob.conf.sample)
Optional:
  CDX_INPUT        what the job reads instead of CDX_DIR (path, glob or URI; on
                   hadoop, s3:// in CDX_DIR is read as s3a://)
  PYTHON           interpreter for the job (default python3)
  EXTRA_ARGS, CLUSTER_ARGS  more job arguments (bash arrays or words)
  WHEEL_DIR, BUILD_WHEEL    emr: where the package wheel for bootstrap.sh is built
                   (default build/emr-wheels; BUILD_WHEEL=0 uses what is there)

On emr and hadoop the job gets --partitions SPLITS_DIR/partitions.seq#_partition.lst
(TotalOrderPartitioner: reducer i writes shard i). On local and inline,
shards that received no lines are written empty after the job.

Exit status: 0 done, 1 the job failed, 2 bad usage or settings.
EOF
}

fail_usage() { echo "$PROG: $*" >&2; exit 2; }

RUNNER_FLAG= PASSTHRU=()
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        -r|--runner) [ $# -ge 2 ] || fail_usage "$1 needs a value: emr, hadoop, local or inline"
                     RUNNER_FLAG=$2; shift 2 ;;
        --runner=*) RUNNER_FLAG=${1#--runner=}; shift ;;
        --) shift; PASSTHRU=("$@"); break ;;
        *) fail_usage "unknown argument '$1' (job arguments go after --; see --help)" ;;
    esac
done

INDEX_ENV=${INDEX_ENV:-./index_env.sh}
case $INDEX_ENV in */*) ;; *) INDEX_ENV=./$INDEX_ENV ;; esac  # never searched in $PATH
[ -f "$INDEX_ENV" ] || fail_usage "settings file $INDEX_ENV not found: copy index_env.sample.sh to index_env.sh and edit it (or set INDEX_ENV)"
# shellcheck source=/dev/null
source "$INDEX_ENV"
[ -z "$RUNNER_FLAG" ] || RUNNER=$RUNNER_FLAG

require() {
    local name
    for name in "$@"; do
        [ -n "${!name:-}" ] || fail_usage "$name is not set: define it in $INDEX_ENV (see index_env.sample.sh)"
    done
}
require CDX_DIR SPLITS_DIR CLUSTER_DIR SHARDS LINES_PER_BLOCK RUNNER MRJOB_CONF
case $RUNNER in emr|hadoop|local|inline) ;; *) fail_usage "RUNNER is '$RUNNER': expected emr, hadoop, local or inline" ;; esac
for name in SHARDS LINES_PER_BLOCK; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || fail_usage "$name is '${!name}': expected a whole number of at least 1"
done

# append the words of variable $1 (a bash array, or a string split on blanks) to CMD
add_words() {
    if [[ $(declare -p "$1" 2>/dev/null) == "declare -a"* ]]; then
        eval 'CMD+=("${'"$1"'[@]}")'
    elif [ -n "${!1:-}" ]; then
        local words
        read -r -a words <<< "${!1}"
        CMD+=("${words[@]}")
    fi
}

# what Hadoop reads (inputs, -files) is s3a:// on plain Hadoop; the jobs' own files stay s3://
hadoop_uri() { if [ "$RUNNER" = hadoop ]; then echo "${1/#s3:\/\//s3a://}"; else echo "$1"; fi; }

show_cmd() {  # the command, shell-quoted (a long input list cut short)
    local more=
    [ ${#CMD[@]} -le 24 ] || more=" ... ($((${#CMD[@]} - 24)) more arguments)"
    echo "$PROG: running:$(printf ' %q' "${CMD[@]:0:24}")$more" >&2
}

build_wheel() {  # emr: the package wheel that bootstrap.sh installs on every node
    export WEBARCHIVE_INDEXING_HOME=$REPO
    export WEBARCHIVE_INDEXING_WHEELS=${WHEEL_DIR:-$REPO/build/emr-wheels}
    [ "$RUNNER" = emr ] && [ "${BUILD_WHEEL:-1}" != 0 ] || return 0
    mkdir -p "$WEBARCHIVE_INDEXING_WHEELS"
    rm -f "$WEBARCHIVE_INDEXING_WHEELS"/webarchive_indexing-*.whl
    echo "$PROG: building the package wheel into $WEBARCHIVE_INDEXING_WHEELS" >&2
    "${PYTHON:-python3}" -m pip wheel --quiet --no-deps --no-build-isolation \
        --wheel-dir "$WEBARCHIVE_INDEXING_WHEELS" "$REPO" >&2
}

if [[ $CLUSTER_DIR != *://* ]] && [ -e "$CLUSTER_DIR/cluster.idx" ]; then
    fail_usage "$CLUSTER_DIR already holds a published cluster (cluster.idx): use a new CLUSTER_DIR or remove that one"
fi

CMD=("${PYTHON:-python3}" "$REPO/jobs/zip_cluster.py" -r "$RUNNER" --conf-path "$MRJOB_CONF"
     --splits "$(hadoop_uri "$SPLITS_DIR/splits.txt")" --shards "$SHARDS"
     --lines-per-block "$LINES_PER_BLOCK" --cluster-dir "$CLUSTER_DIR")
if [ "$RUNNER" = emr ] || [ "$RUNNER" = hadoop ]; then
    CMD+=(--partitions "$(hadoop_uri "$SPLITS_DIR/partitions.seq")#_partition.lst")
fi
add_words EXTRA_ARGS
add_words CLUSTER_ARGS
CMD+=("${PASSTHRU[@]}")
if [ -n "${CDX_INPUT:-}" ]; then
    add_words CDX_INPUT
elif [ "$RUNNER" = emr ] || [ "$RUNNER" = hadoop ]; then
    CMD+=("$(hadoop_uri "$CDX_DIR")")
else
    # local and inline read local files: exactly the per-archive CDX files, as `build` does
    [ -d "$CDX_DIR" ] || fail_usage "CDX_DIR $CDX_DIR is not a local directory (the $RUNNER runner reads local files; set CDX_INPUT)"
    mapfile -t CDX_FILES < <(find "$CDX_DIR" -mindepth 1 -name '.*' -prune -o -type f -name '*.cdx.gz' -print | LC_ALL=C sort)
    [ ${#CDX_FILES[@]} -gt 0 ] || { echo "$PROG: no .cdx.gz files under $CDX_DIR" >&2; exit 1; }
    CMD+=("${CDX_FILES[@]}")
fi

build_wheel
show_cmd
if [ "$RUNNER" = emr ] || [ "$RUNNER" = hadoop ]; then
    "${CMD[@]}"
else
    # mrjob's local and inline runners ignore partitioners: a shard that got no line has no
    # reducer call. Write those empty, as `webarchive-index build` does, so finalize finds all.
    STATS=$(mktemp)
    trap 'rm -f "$STATS"' EXIT
    "${CMD[@]}" | tee "$STATS"
    "${PYTHON:-python3}" - "$CLUSTER_DIR" "$SHARDS" "$STATS" <<'EOF'
import json, sys
from webarchive_indexing.steps import write_shard
cluster_dir, shards, stats = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(stats) as fh:
    written = {json.loads(line)["shard"] for line in fh if line.strip()}
for shard in sorted(set(range(shards)) - written):
    write_shard(shard, [], cluster_dir)
EOF
fi
