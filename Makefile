# The two commands a user needs:
#   make run    run the controller (against $KUBECONFIG, or a local control plane)
#   make test   everything CI runs: unit tests, verification, end-to-end tests
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c

BIN := _output/bin/sample-controller
E2E_TIMEOUT ?= 45m

.PHONY: all build test unit verify e2e generate run bench tools clean

all: build

build:
	go build -o $(BIN) .

## test: the full suite (README's test command; .ci/run calls it).
test: verify unit fuzz e2e

## unit: fast loop: unit tests with the race detector.
unit:
	go test -race -count=1 ./...

## fuzz: each fuzz target for FUZZTIME beyond its seed corpus (which unit runs); findings land in testdata/fuzz.
FUZZTIME ?= 10s
.PHONY: fuzz
fuzz:
	go test -run '^$$' -fuzz '^FuzzValidateFooSpec$$' -fuzztime $(FUZZTIME) .
	go test -run '^$$' -fuzz '^FuzzNewDeployment$$' -fuzztime $(FUZZTIME) .

## verify: generated code is current, code is formatted and vetted.
verify:
	hack/verify-codegen.sh
	@unformatted="$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go' | grep -v -e '^pkg/generated/' -e 'zz_generated' -e '^hack/tools/'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	go vet ./...
	go vet -tags e2e,bench ./test/...

## e2e: end-to-end tests on a local control plane built from source.
e2e: tools
	go test -tags e2e -count=1 -v -timeout $(E2E_TIMEOUT) ./test/e2e/

## generate: regenerate deep-copy functions, clientset, listers, informers, apply configurations.
generate:
	hack/update-codegen.sh

## run: the controller in the foreground; a local control plane if KUBECONFIG is unset.
run: build tools
	hack/run.sh

## bench: the benchmark of docs/performance.md on a local control plane.
bench: tools
	go test -tags bench -count=1 -v -timeout 60m -run TestBenchmark ./test/bench/

## tools: build the control-plane binaries (etcd, kube-*, kwok) into _output/bin.
tools:
	hack/build-tools.sh

clean:
	rm -rf _output
