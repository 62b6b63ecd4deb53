#!/usr/bin/env bash
# Step 1 of 3: index WARC/ARC files into one sorted CDX per archive (jobs/index_warcs.py).
# Settings come from index_env.sh; see --help and docs/hadoop-and-emr.md.
set -euo pipefail

PROG=$(basename "$0")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    cat <<EOF
Usage: $PROG [-r RUNNER] [-- JOB_ARGS...]

Run jobs/index_warcs.py over WARC_MANIFEST (one archive path or URI a line,
uncompressed): each map task indexes two archives (NLineInputFormat) into
CDX_DIR/<name>.cdx.gz, where <name> is the archive's path relative to
INPUT_ROOT (else its base name). Archives already indexed are skipped.

Options:
  -r, --runner RUNNER  emr, hadoop, local or inline (default: \$RUNNER)
  -h, --help           this help
  -- JOB_ARGS...       passed to the job as they are (e.g. --no-skip-existing)

Settings are read from \$INDEX_ENV (default ./index_env.sh; copy
index_env.sample.sh). Required here:
  WARC_MANIFEST    the list of archives (local file, or a URI the runner reads)
  CDX_DIR          where the CDX files go (local path, or s3://...)
  RUNNER           emr | hadoop | local | inline
  MRJOB_CONF       mrjob.conf of the emr and hadoop runners (see mrjob.conf.sample);
                   local and inline use it if it is there
Optional:
  INPUT_ROOT       archive names are relative to it (e.g. s3://commoncrawl/);
                   several roots separated by blanks
  CDX_FORMAT       cdxj (default) or cdx11
  ON_ERROR         fail (default: a bad archive fails its task) or skip
  PYTHON           interpreter for the job (default python3)
  EXTRA_ARGS, INDEX_ARGS    more job arguments (bash arrays or words)
  WHEEL_DIR, BUILD_WHEEL    emr: where the package wheel for bootstrap.sh is built
                   (default build/emr-wheels; BUILD_WHEEL=0 uses what is there)

Prints one JSON status line per archive. Exit status: 0 done, 1 the job failed,
2 bad usage or settings.
EOF
}

# the arguments, INDEX_ENV and the helpers every launcher shares
# shellcheck source-path=SCRIPTDIR source=launcher-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher-common.sh"

# the settings this step needs, checked before anything runs
require WARC_MANIFEST CDX_DIR RUNNER
check_runner
check_mrjob_conf

CMD=("${PYTHON:-python3}" "$REPO/jobs/index_warcs.py" -r "$RUNNER" "${CONF_ARGS[@]}"
     --cdx-dir "$CDX_DIR")
if [ -n "${INPUT_ROOT:-}" ]; then
    read -r -a ROOTS <<< "${INPUT_ROOT[*]}"
    for root in "${ROOTS[@]}"; do CMD+=(--input-root "$root"); done
fi
[ -z "${CDX_FORMAT:-}" ] || CMD+=(--cdx-format "$CDX_FORMAT")
[ -z "${ON_ERROR:-}" ] || CMD+=(--on-error "$ON_ERROR")
add_words EXTRA_ARGS
add_words INDEX_ARGS
CMD+=("${PASSTHRU[@]}" "$(hadoop_uri "$WARC_MANIFEST")")

build_wheel
show_cmd
"${CMD[@]}"
