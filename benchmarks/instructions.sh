#!/usr/bin/env bash
# Instructions per event of one SDK's driver process, counted by valgrind
# (cachegrind, no cache simulation), against a sink outside valgrind: the
# figure that other load on the machine does not move, where CPU time does.
#
#   benchmarks/instructions.sh [SDK] [PRODUCERS] [EVENTS]     (ours 1 300000)
#
# GOMAXPROCS=1 for both processes: with more, the count includes the Go
# scheduler's spinning while goroutines wait, which depends on timing (one
# binary counted 14,000 to 24,000 instructions an event on a quiet machine).
# Needs valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")"
sdk=${1:-ours} producers=${2:-1} events=${3:-300000}
dir=$(mktemp -d)
trap 'exec 9>&- 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
go build -o "$dir/compare" ./cmd/compare
mkfifo "$dir/stdin"
GOMAXPROCS=1 "$dir/compare" -role sink -scenario clean -seed 1 <"$dir/stdin" >"$dir/sink" 2>/dev/null &
exec 9>"$dir/stdin" # the sink runs until its stdin closes
for _ in $(seq 100); do [ -s "$dir/sink" ] && break; sleep 0.1; done
endpoint=$(sed -n '1s/.*"endpoint":"\([^"]*\)".*/\1/p' "$dir/sink")
GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=cachegrind --cache-sim=no \
	--cachegrind-out-file=/dev/null "$dir/compare" -role driver -sdk "$sdk" -events "$events" \
	-endpoint "$endpoint" -on-full wait -producers "$producers" -shared-props=false \
	>/dev/null 2>"$dir/valgrind"
refs=$(sed -n 's/.*I *refs: *//p' "$dir/valgrind" | tr -d ,)
echo "$sdk, $producers producers, $events events: $refs instructions, $((refs / events)) an event"
