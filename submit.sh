#!/usr/bin/env bash
# Trawl's command line: maps a short command to a Spark job (as Nutch's bin/nutch does).
# On first use it bootstraps the checkout by itself: a virtual environment in .venv/ with
# the Python packages of setup.cfg; the Delta Lake jars come from Maven Central through
# Spark's Ivy before the first job and are cached under $TRAWL_CACHE (default
# ~/.cache/trawl), with the list of jars resolved, which every job passes as --jars.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$ROOT/.venv"
CACHE="${TRAWL_CACHE:-$HOME/.cache/trawl}"
export TRAWL_CACHE="$CACHE" TRAWL_CONF_DIR="${TRAWL_CONF_DIR:-$ROOT/conf}"
# Exit codes of its own: the environment could not be set up (no Java, or one too old; the
# Python packages or the Delta Lake jars could not be installed). Never 1, which
# generate returns when nothing is due, nor 2, a mistake in the command.
EXIT_SETUP=4
JAVA_NEEDED=17

usage() {
  cat <<'USAGE'
Usage: ./submit.sh COMMAND [options]

Crawl commands (each takes --data DIR, --conf KEY=VALUE, --conf-file FILE, --master URL,
and --verbose for Spark's log on the terminal instead of DIR/logs/; run a command with
--help for its own options):
  crawl      inject seeds, then run N rounds:  crawl [--seeds FILE] --rounds N --data DIR
  inject     merge a seed file into the crawldb
  generate   select due URLs into a new segment's fetch list
  fetch      fetch a segment (robots.txt, politeness, WARC files)
  parse      parse a segment's pages (text, outlinks, fingerprints)
  updatedb   merge a segment into the crawldb
  readdb     crawldb statistics (--stats [--json]), top hosts (--hosts N), top URLs by score
             (--topN N), dump (--dump OUT), one URL (--url URL)
  readseg    list segments (--list), dump one (--dump SEGMENT OUT), one URL (--get SEGMENT URL)
  dedup      mark exact (SHA-256), near (SimHash, MinHash) and canonical duplicates
  rank       PageRank over the link graph, written to the crawldb (pagerank)
  maintain   compact the crawldb, VACUUM old versions, retire old segments' tables

Other commands:
  api        serve the crawl-job HTTP API: api --data DIR [--host H] [--port P] [--conf ...]
  urlcheck   URLs on stdin: each one normalized, and accepted or why a filter refuses it
             (with --data DIR: whether the crawldb has it, and its status); no Spark
  parsechecker  fetch and parse one URL now as the crawl would: parsechecker [--json] URL
  readlinkdb a page's inlinks with their anchors: readlinkdb --data DIR (--url URL | --dump OUT)
  readhostdb the hostdb, one row per host: readhostdb --data DIR [--host H] [--json]
  demo       start the bundled test web, crawl it for 3 rounds, print stats
  test       run the test suite (arguments go to pytest)
  setup      only bootstrap the environment (.venv, packages)

Exit codes: 0 done; 1 nothing to do; 2 a mistake in what was given; 3 the data directory is
locked by another job; 4 the environment could not be set up (Java, packages, jars);
255 the job failed. (README.md, "Exit codes".)

Environment: TRAWL_CACHE (jar cache), TRAWL_DRIVER_MEMORY (default 2g), PYTHON (interpreter
used to create .venv, default python3.11 or python3).
USAGE
}

require_java() {
  # Checked before anything else: Spark needs Java $JAVA_NEEDED or later, and without it
  # every later step fails with a message about something else.
  local java="${JAVA_HOME:+$JAVA_HOME/bin/}java" version major
  if ! version="$("$java" -version 2>&1 | head -n 1)" || [[ "$version" != *version* ]]; then
    echo "submit.sh: Java $JAVA_NEEDED or later is needed and none was found (tried '$java';" \
      "install OpenJDK $JAVA_NEEDED, e.g. apt-get install openjdk-$JAVA_NEEDED-jre-headless, or set JAVA_HOME)" >&2
    exit "$EXIT_SETUP"
  fi
  major="$(sed -E 's/.*version "(1\.)?([0-9]+).*/\2/' <<<"$version")"
  if ! [[ "$major" =~ ^[0-9]+$ ]] || (( major < JAVA_NEEDED )); then
    echo "submit.sh: Java $JAVA_NEEDED or later is needed; '$java' is: $version" \
      "(install OpenJDK $JAVA_NEEDED, or set JAVA_HOME to it)" >&2
    exit "$EXIT_SETUP"
  fi
}

test_tools() {
  # The suite runs Prometheus' promtool (the alerting rules' unit tests) and a headless
  # Chromium (the dashboard), Debian's packages: installed here when missing.
  local missing=() log="$CACHE/logs/apt-get.log"
  command -v promtool > /dev/null || missing+=(prometheus)
  command -v chromium > /dev/null || missing+=(chromium)
  [[ ${#missing[@]} -eq 0 ]] && return
  if [[ $EUID -ne 0 ]] || ! command -v apt-get > /dev/null; then
    echo "submit.sh: the tests need Debian's packages ${missing[*]} (promtool, chromium); install them" >&2
    exit "$EXIT_SETUP"
  fi
  echo "submit.sh: installing ${missing[*]} for the tests (apt-get, once)" >&2
  mkdir -p "$CACHE/logs"
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends "${missing[@]}"; } > "$log" 2>&1; then
    echo "submit.sh: apt-get could not install ${missing[*]}; the end of $log:" >&2
    tail -n 20 "$log" >&2
    exit "$EXIT_SETUP"
  fi
}

bootstrap() {
  local python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
  local stamp="$VENV/.trawl-setup"
  local wanted
  wanted="$(cat "$ROOT/setup.cfg" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
    return
  fi
  echo "submit.sh: setting up $VENV (first run, or setup.cfg changed)" >&2
  [[ -x "$VENV/bin/python" ]] || "$python" -m venv "$VENV"
  local log="$VENV/setup.log"
  if ! { "$VENV/bin/python" -m pip install --quiet --upgrade pip \
      && "$VENV/bin/python" -m pip install --quiet -e "$ROOT[test]"; } > "$log" 2>&1; then
    echo "submit.sh: installing the Python packages failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    exit "$EXIT_SETUP"
  fi
  echo "$wanted" > "$stamp"
}

delta_package() {
  # The Delta jar is named after the Spark minor version (delta-spark_4.2_2.13).
  "$VENV/bin/python" - <<'PY'
from importlib.metadata import version
spark = ".".join(version("pyspark").split(".")[:2])
print(f"io.delta:delta-spark_{spark}_2.13:{version('delta-spark')}")
PY
}

cached_jars() {
  # True when the file lists jars (comma-separated file: URIs) that all still exist.
  local list="$1" jar jars
  [[ -s "$list" ]] || return 1
  IFS=',' read -r -a jars < "$list"
  for jar in "${jars[@]}"; do
    [[ -f "${jar#file://}" ]] || return 1
  done
}

class_archive_options() {
  # Driver JVM options for a class-data-sharing archive (the JDK's AppCDS) of the classes
  # a Trawl job loads, which shortens each job's start (docs/benchmarks.md). The first job
  # for a given Java, Spark and set of jars writes the archive as its JVM exits (once;
  # ~190 MB under $CACHE/cds), under a name of its own, renamed by the next submit once
  # that JVM is gone. The JVM checks an archive against its class path and ignores one
  # that does not match.
  local jar_list="$1" dir="$CACHE/cds" key archive part
  local java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  key="$({ "$java" -version 2>&1; cat "$jar_list"; ls -l "$VENV"/lib/python*/site-packages/pyspark/jars; } \
    | sha256sum | cut -c1-16)"
  archive="$dir/trawl-$key.jsa"
  mkdir -p "$dir"
  for part in "$archive".part-*; do
    [[ -e "$part" ]] || continue
    kill -0 "${part##*.part-}" 2>/dev/null || mv -f "$part" "$archive"
  done
  if [[ -f "$archive" ]]; then
    echo "-XX:SharedArchiveFile=$archive -Xlog:cds=off -Xlog:cds+dynamic=off"
  else
    # $$ is the JVM's pid too: spark-submit and spark-class exec it in this process.
    echo "-XX:ArchiveClassesAtExit=$archive.part-$$ -Xlog:cds=off -Xlog:cds+dynamic=off"
  fi
}

resolve_jars() {
  # The Delta jars, once: Ivy resolves the package from Maven Central alone
  # (conf/ivysettings.xml) in a run of its own, its output in a log file, and
  # engine/runtime/jars.py records the list the jobs then pass with --jars.
  local package="$1" jar_list="$2" log="$CACHE/logs/resolve-jars.log"
  mkdir -p "$CACHE/logs"
  echo "submit.sh: fetching the Delta Lake jars ($package) from Maven Central, once" >&2
  if ! "$VENV/bin/spark-submit" --master "local[1]" --packages "$package" \
      --conf "spark.jars.ivy=$CACHE/ivy" --conf "spark.jars.ivySettings=$ROOT/conf/ivysettings.xml" \
      --driver-java-options "-Dlog4j2.configurationFile=file:$ROOT/conf/log4j2.properties" \
      "$ROOT/engine/runtime/jars.py" "$jar_list" > "$log" 2>&1 || ! cached_jars "$jar_list"; then
    echo "submit.sh: the Delta Lake jars could not be fetched; the end of $log:" >&2
    tail -n 20 "$log" >&2
    exit "$EXIT_SETUP"
  fi
}

spark_log() {
  # Where the job's Spark log goes, one file per job run: DIR/logs/ of a local data
  # directory that exists or that the job makes; else $CACHE/logs/ (an hdfs:// data
  # directory, or one mistyped: not made by the log).
  local job="$1" data="$2" folder
  if [[ -n "$data" && "$data" != *://* ]] && [[ -d "$data" || "$job" =~ ^(crawl|inject|demo)$ ]]; then
    folder="$data/logs"
  else
    folder="$CACHE/logs"
  fi
  mkdir -p "$folder"
  echo "$(cd "$folder" && pwd)/$job-$(date -u +%Y%m%d%H%M%S)-$$.log"
}

run_job() {
  local job="$1"; shift
  local master="local[*]" args=() data="" verbose=""
  [[ "$job" == demo ]] && data="data/demo"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --master) master="$2"; shift 2 ;;
      --master=*) master="${1#--master=}"; shift ;;
      --verbose) verbose=1; shift ;;
      --data) data="${2:-}"; args+=("$1" "${2:-}"); shift; [[ $# -gt 0 ]] && shift ;;
      --data=*) data="${1#--data=}"; args+=("$1"); shift ;;
      *) args+=("$1"); shift ;;
    esac
  done
  export PYSPARK_PYTHON="$VENV/bin/python" PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
  local package jar_list
  package="$(delta_package)"
  jar_list="$CACHE/jars/${package//:/_}.txt"
  cached_jars "$jar_list" || resolve_jars "$package" "$jar_list"
  local java_options log
  if [[ -n "$verbose" ]]; then
    java_options="-Dlog4j2.configurationFile=file:$ROOT/conf/log4j2.properties"
  else
    log="$(spark_log "$job" "$data")"
    echo "submit.sh: Spark's log: $log" >&2
    java_options="-Dlog4j2.configurationFile=file:$ROOT/conf/log4j2-file.properties -Dtrawl.log.file=$log"
  fi
  java_options+=" $(class_archive_options "$jar_list")"
  local submit=("$VENV/bin/spark-submit" --master "$master"
    --jars "$(cat "$jar_list")"
    --conf "spark.pyspark.python=$VENV/bin/python"
    --conf "spark.pyspark.driver.python=$VENV/bin/python"
    --driver-memory "${TRAWL_DRIVER_MEMORY:-2g}"
    --driver-java-options "$java_options")
  if [[ "$master" != local* ]]; then
    # Ship the project's code to the executors; built under a temporary name so that
    # two submits at once never ship a half-written archive.
    mkdir -p "$ROOT/build"
    (cd "$ROOT" && "$VENV/bin/python" -m zipfile -c "build/trawl-$$.zip" jobs engine crawldb lib testweb \
      && mv -f "build/trawl-$$.zip" build/trawl.zip)
    submit+=(--py-files "$ROOT/build/trawl.zip")
  fi
  # The JVM's own notice of the incubator module Spark enables is not Trawl's to show.
  # (fd 3: the terminal's stderr, where the filter writes; closed for the job itself.
  # The filter outlives a Ctrl-C, so that the job's last line still reaches the terminal.)
  exec 3>&2
  exec "${submit[@]}" "$ROOT/jobs/$job.py" ${args[@]+"${args[@]}"} \
    2> >(trap '' INT; exec grep --line-buffered -v '^WARNING: Using incubator modules' >&3) 3>&-
}

command="${1:-}"
[[ -n "$command" ]] && shift
case "$command" in
  crawl|inject|generate|fetch|parse|updatedb|readdb|readseg|dedup|rank|maintain|demo)
    require_java; bootstrap; run_job "$command" "$@" ;;
  api)
    bootstrap; PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$VENV/bin/python" -m api.server "$@" ;;
  urlcheck|parsechecker|readlinkdb|readhostdb)
    bootstrap; PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$VENV/bin/python" -m "jobs.$command" "$@" ;;
  test)
    require_java; bootstrap; test_tools; cd "$ROOT"; exec "$VENV/bin/python" -m pytest "$@" ;;
  setup)
    require_java; bootstrap ;;
  -h|--help|help|"")
    usage ;;
  *)
    echo "submit.sh: unknown command '$command'" >&2; usage >&2; exit 2 ;;
esac
