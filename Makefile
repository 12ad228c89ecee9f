# The two commands of the README: `make demo` runs the SDK's main job against
# the embedded local tracking API; `make test` runs every check CI runs.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 15s

.PHONY: test fmt vet staticcheck unit modules stress e2e demo bench bench-packages fleet fleet-quiet fuzz

test: fmt vet staticcheck unit modules

# Every Go file as gofmt writes it, in every module: it lists any that
# is not and fails.
fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

# Every package's tests, the e2e conformance suite (./e2e) included; then
# the tests of allocation counts again without the race detector, whose
# instrumentation allocates (they skip under it): queue/'s, and the root's
# that pin what Enqueue keeps off the heap.
unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 ./queue
	$(GO) test -count=1 -run 'CallersStack|AllocatesNothing' .

# The modules of their own, which ./... at the root leaves out: the
# benchmarks (benchmarks/) and the OpenTelemetry metrics bridge
# (otelmetrics/): vet, staticcheck and their tests, each in its module.
MODULES := benchmarks otelmetrics
modules:
	for m in $(MODULES); do \
		(cd $$m && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -race -count=1 ./...) || exit 1; \
	done

# The whole suite, shuffled, STRESS_COUNT runs in a row (5 by default)
# beside a busy loop on every core, for the tests whose outcome depends on
# scheduling: it prints how many runs passed and the tests that failed.
# .ci/stress lists the knobs (STRESS_TESTS, STRESS_LOGS, STRESS_MODULES, ...).
stress:
	GO=$(GO) bash .ci/stress

# The e2e conformance suite alone: the CLI against the mock tracking API.
e2e:
	$(GO) test -race -count=1 ./e2e/...

demo:
	$(GO) run ./examples/quickstart

# The comparison with segmentio/analytics-go v3, posthog-go and
# rudderlabs/analytics-go v4 (a module of its own, benchmarks/): one table,
# a fresh properties map per event, rows for 1 and 16 producers.
bench:
	cd benchmarks && $(GO) run ./cmd/compare

# The fleet simulation (benchmarks/cmd/fleet), short form: 50 clients ×
# 100 events/s against one mock API that fails for 10 s, once with 503 and
# once with 429 + Retry-After (about a minute).
fleet:
	cd benchmarks && $(GO) run ./cmd/fleet -healthy 5s -outage 10s -after 10s

# A quieter fleet in a longer outage: 20 clients × 20 events/s at the SDK's
# defaults (a batch every 5 s each) through a 5-minute 503 outage (about
# 7 minutes).
fleet-quiet:
	cd benchmarks && $(GO) run ./cmd/fleet -clients 20 -rate 20 -sdk-defaults -healthy 30s -outage 5m -after 90s -fault 503

# The go test benchmarks of the SDK's packages.
bench-packages:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# A short run of every fuzz test; what they find is kept under testdata/fuzz.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./retryafter
	$(GO) test -run='^$$' -fuzz='^FuzzHTTPDateRoundTrip$$' -fuzztime=$(FUZZTIME) ./retryafter
	$(GO) test -run='^$$' -fuzz='^FuzzEncodeProperties$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzInput$$' -fuzztime=$(FUZZTIME) ./e2e/cli
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./internal/decimal
	$(GO) test -run='^$$' -fuzz='^FuzzOpenSegment$$' -fuzztime=$(FUZZTIME) ./spool
	$(GO) test -run='^$$' -fuzz='^FuzzOpenAck$$' -fuzztime=$(FUZZTIME) ./spool
