# The two commands of the README: `make demo` runs the SDK's main job against
# the embedded local tracking API; `make test` runs every check CI runs.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 15s

.PHONY: test vet staticcheck unit demo bench fuzz

test: vet staticcheck unit

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 ./...

demo:
	$(GO) run ./examples/quickstart

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# A short run of every fuzz test; what they find is kept under testdata/fuzz.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./retryafter
	$(GO) test -run='^$$' -fuzz='^FuzzHTTPDateRoundTrip$$' -fuzztime=$(FUZZTIME) ./retryafter
	$(GO) test -run='^$$' -fuzz='^FuzzEncodeProperties$$' -fuzztime=$(FUZZTIME) .
