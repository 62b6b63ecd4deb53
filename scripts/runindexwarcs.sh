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
  MRJOB_CONF       mrjob.conf to use (see mrjob.conf.sample)
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
require WARC_MANIFEST CDX_DIR RUNNER MRJOB_CONF
case $RUNNER in emr|hadoop|local|inline) ;; *) fail_usage "RUNNER is '$RUNNER': expected emr, hadoop, local or inline" ;; esac

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

CMD=("${PYTHON:-python3}" "$REPO/jobs/index_warcs.py" -r "$RUNNER" --conf-path "$MRJOB_CONF"
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
