# bichat's build entry points. `make test` is what CI runs (through .ci/run)
# and what the README tells users to run.
GO ?= go
GOFILES = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')

.PHONY: test bench vet fmt-check example

## test: format check, go vet, and every test with the race detector.
test: fmt-check vet
	$(GO) test -race -count=1 ./...

## bench: every benchmark with allocation counts.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $(GOFILES))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## example: the quickstart, offline.
example:
	$(GO) run ./examples/quickstart
