#!/usr/bin/env bash
# The benchmark run reported in BENCHMARKS.md; writes its figures into docs/bench/.
# Usage: docs/bench/run.sh            (shipped checkpoints, encoder/checkpoints/<mode>.pt)
#        CHECKPOINTS=random docs/bench/run.sh   (random-init readers of the default size)
# Needs the data set (`cheapqa data build`). Every step is bounded (durations, request caps).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-docs/bench}
CQ=.venv/bin/cheapqa
INIT=()
if [[ "${CHECKPOINTS:-shipped}" == random ]]; then INIT=(--random-init); fi
DURATION=${DURATION:-15}

log() { echo "## $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg): $*" | tee -a "$OUT/run.log"; }
: > "$OUT/run.log"
log "start; $(nproc) cores; torch $(.venv/bin/python -c 'import torch; print(torch.__version__)')"

log "bench lookup"
$CQ bench lookup "${INIT[@]}" --out "$OUT" | tee -a "$OUT/run.log"

log "loadtest: linear vs softmax, n=5000, 32 queries per request"
$CQ loadtest --spawn "${INIT[@]}" --modes linear,softmax --documents 8 --tokens 5000 \
  --queries 32 --concurrency 4 --duration "$DURATION" --max-requests 20000 --quiet \
  --json "$OUT/loadtest-modes.json" | tee -a "$OUT/run.log"

log "loadtest: answers (1 query, linear) vs GET /healthz, same app, same run"
$CQ loadtest --spawn "${INIT[@]}" --modes linear --documents 8 --tokens 5000 \
  --queries 1 --concurrency 8 --duration "$DURATION" --max-requests 50000 --trivial --quiet \
  --json "$OUT/loadtest-ceiling.json" | tee -a "$OUT/run.log"

log "loadtest: open loop, linear, 1 query per request at a fixed rate"
$CQ loadtest --spawn "${INIT[@]}" --modes linear --documents 8 --tokens 5000 \
  --queries 1 --rate "${RATE:-100}" --concurrency 256 --duration "$DURATION" --quiet \
  --json "$OUT/loadtest-open.json" | tee -a "$OUT/run.log"

for spec in "linear 1" "linear 32" "softmax 32"; do
  set -- $spec
  log "bench stages: $1, $2 queries, n=5000"
  $CQ bench stages "${INIT[@]}" --mode "$1" --queries "$2" --tokens 5000 --repeats 200 \
    --json-out "$OUT/stages-$1-q$2.json" | tee -a "$OUT/run.log"
done
log "bench stages: linear, 1 query, with the batcher's gathering wait off (an experiment)"
CHEAPQA_QUERY_MAX_WAIT_MS=0 $CQ bench stages "${INIT[@]}" --mode linear --queries 1 \
  --tokens 5000 --repeats 200 --json-out "$OUT/stages-linear-q1-wait0.json" | tee -a "$OUT/run.log"
if [[ -n "${STORE_URL:-}" ]]; then  # e.g. STORE_URL=redis://127.0.0.1:6379/0 (the Redis rows)
  for n in 5000 50000; do
    log "loadtest over Redis: linear vs softmax, n=$n, 32 queries per request"
    $CQ loadtest --spawn --store-url "$STORE_URL" "${INIT[@]}" --modes linear,softmax \
      --documents 8 --tokens "$n" --queries 32 --concurrency 4 --duration "$DURATION" \
      --max-requests 20000 --quiet --json "$OUT/loadtest-redis-n$n.json" | tee -a "$OUT/run.log"
  done
  log "loadtest over Redis: the same at n=5000 with two server processes (CHEAPQA_WORKERS=2)"
  $CQ loadtest --spawn --store-url "$STORE_URL" --server-workers 2 "${INIT[@]}" \
    --modes linear,softmax --documents 8 --tokens 5000 --queries 32 --concurrency 4 \
    --duration "$DURATION" --max-requests 20000 --quiet \
    --json "$OUT/loadtest-redis-n5000-workers2.json" | tee -a "$OUT/run.log"
  log "bench stages over Redis: linear and softmax, 32 queries, n=5000"
  for mode in linear softmax; do
    $CQ bench stages "${INIT[@]}" --store-url "$STORE_URL" --mode "$mode" --queries 32 \
      --tokens 5000 --repeats 200 --json-out "$OUT/stages-redis-$mode-q32.json" \
      | tee -a "$OUT/run.log"
  done
fi
log "done"
