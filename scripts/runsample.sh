#!/usr/bin/env bash
# Step 2 of 3: sample the split points of the ZipNum cluster (jobs/sample_splits.py).
# Settings come from index_env.sh; see --help and docs/hadoop-and-emr.md.
set -euo pipefail

PROG=$(basename "$0")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    cat <<EOF
Usage: $PROG [-r RUNNER] [-- JOB_ARGS...]

Run jobs/sample_splits.py over the per-archive CDX files: each mapper keeps
SHARDS x 100 sample lines, one reducer picks SHARDS-1 split points and writes
SPLITS_DIR/splits.txt, splits.seq (Hadoop SequenceFile) and partitions.seq
(shard boundaries for the cluster job's TotalOrderPartitioner).

Options:
  -r, --runner RUNNER  emr, hadoop, local or inline (default: \$RUNNER)
  -h, --help           this help
  -- JOB_ARGS...       passed to the job as they are (e.g. --scaler 50)

Settings are read from \$INDEX_ENV (default ./index_env.sh; copy
index_env.sample.sh). Required here:
  CDX_DIR          where the per-archive CDX files are (local path, or s3://...)
  SPLITS_DIR       where the split files go (local path, or s3://...)
  SHARDS           number of shards of the cluster (Common Crawl: 300)
  RUNNER           emr | hadoop | local | inline
  MRJOB_CONF       mrjob.conf of the emr and hadoop runners (see mrjob.conf.sample);
                   local and inline use it if it is there
Optional:
  CDX_INPUT        what the job reads instead of CDX_DIR (path, glob or URI; on
                   hadoop, s3:// in CDX_DIR is read as s3a://)
  PYTHON           interpreter for the job (default python3)
  EXTRA_ARGS, SAMPLE_ARGS   more job arguments (bash arrays or words)
  WHEEL_DIR, BUILD_WHEEL    emr: where the package wheel for bootstrap.sh is built
                   (default build/emr-wheels; BUILD_WHEEL=0 uses what is there)

Prints the split lines. Exit status: 0 done, 1 the job failed, 2 bad usage or settings.
EOF
}

# the arguments, INDEX_ENV and the helpers every launcher shares
# shellcheck source-path=SCRIPTDIR source=launcher-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher-common.sh"

# the settings this step needs, checked before anything runs
require CDX_DIR SPLITS_DIR SHARDS RUNNER
check_runner
check_mrjob_conf
require_whole_numbers SHARDS

CMD=("${PYTHON:-python3}" "$REPO/jobs/sample_splits.py" -r "$RUNNER" "${CONF_ARGS[@]}"
     --shards "$SHARDS" --splits-dir "$SPLITS_DIR")
add_words EXTRA_ARGS
add_words SAMPLE_ARGS
CMD+=("${PASSTHRU[@]}")
add_cdx_input

build_wheel
show_cmd
"${CMD[@]}"
