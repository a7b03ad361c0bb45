# bichat's build entry points. `make test` is what CI runs (through .ci/run)
# and what the README tells users to run.
GO ?= go
GOFILES = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')

# staticcheck, pinned; `go run` fetches it through the module proxy once and
# keeps it in the build cache (nothing is added to go.mod).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test bench vet staticcheck fmt-check example setup sandbox-image

## test: format check, go vet, staticcheck, then install/start what the
## integration tests need (PostgreSQL, bubblewrap, Python, the sandbox
## image; see .ci/setup) and run every test with the race detector.
test: fmt-check vet staticcheck setup
	set -a; . ./.ci/test.env; set +a; $(GO) test -race -count=1 -timeout 20m ./...

## setup: install and start the services the tests use (idempotent).
setup:
	bash .ci/setup

## bench: every benchmark with allocation counts.
bench: setup
	set -a; . ./.ci/test.env; set +a; $(GO) test -run='^$$' -bench=. -benchmem -timeout 60m ./...

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

fmt-check:
	@out="$$(gofmt -l $(GOFILES))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## example: the quickstart, offline.
example:
	$(GO) run ./examples/quickstart

## sandbox-image: build the Docker sandbox image offline from Debian's
## packages (debootstrap + docker import); does nothing when it exists.
sandbox-image:
	bash .ci/sandbox-image.sh
