# The two commands a user needs:
#   make run    run the controller (against $KUBECONFIG, or a local control plane)
#   make test   everything CI runs: unit tests, verification, end-to-end tests
# "make help" lists every target: it prints the "## target: text" comment
# above each one, so a new target documents itself by carrying one.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c

BIN := _output/bin/sample-controller
E2E_TIMEOUT ?= 45m
# Inputs per fuzz target: a count, not a duration. Go 1.26's fuzzing
# coordinator can fail a target with a bare "context deadline exceeded" when
# a -fuzztime duration ends while a starved worker is mid-input
# (golang/go#75804, fixed in Go 1.27): seen here under load, no input at fault.
# How long the default count takes: docs/performance.md, make test.
FUZZTIME ?= 10000x
# How make runs go test: never from its result cache (-count=1), and
# without go test's own vet pass (-vet=off), as make lint's govet runs every
# analyzer that pass would, and more, on the same code. That pass is no
# small thing: to carry the printf checker's facts, it type-checks again
# every package the tests import (client-go, the API types), once per build
# mode: minutes of CPU with an empty Go cache (docs/performance.md, make test).
GO_TEST := go test -vet=off -count=1
# One way to compile, for everything make builds and tests: the image's,
# static (CGO_ENABLED=0) with reproducible paths (-trimpath), as
# hack/build-image.sh builds the controller. The Go cache keys each
# compile by both: built any other way, the tests and the control planes
# would leave the image's build every dependency to compile again, minutes
# of a fresh machine (docs/performance.md, make test). make race alone
# compiles with cgo, which -race needs.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)
# One Go release, for everything make builds: go.mod's toolchain line,
# which the go command fetches from the module proxy where an older Go is
# installed. A Go whose go.env says GOTOOLCHAIN=local would otherwise build
# with itself: its standard library's called vulnerabilities fail make
# verify (hack/verify-vulnerabilities.sh), as they would ship in the image.
export GOTOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)
KUBECTL ?= kubectl
# make uninstall ignore-not-found=true: no error when nothing is installed.
ignore-not-found ?= false

.PHONY: all help build test unit race fuzz verify lint e2e e2e-minors tools-minors generate run bench bench-sharded soak tools install uninstall deploy undeploy clean

## all: the default: build.
all: build

## help: list the targets and what they do.
help:
	@echo 'Usage: make [target]   (make run and make test are the two a user needs)'
	@awk '/^## [[:alnum:]_-]+: / { sub(/^## /, ""); name = $$0; sub(/: .*/, "", name); sub(/^[^:]*: /, ""); \
	  printf "  %-10s %s\n", name, $$0 }' $(MAKEFILE_LIST)

## build: compile the controller into _output/bin/sample-controller.
build:
	go build -o $(BIN) .

## test: the full suite (README's test command; .ci/run calls it).
# On a fresh machine make test is bound by the CPU (docs/testing.md): what
# matters is the work, and that both cores have some all along, which is
# what the order and the priorities are for. The longest chains are each
# minor's control-plane build and then its suite, so both builds start at
# once, in two lanes. The first builds the newest minor's control plane,
# then runs its suite (e2e): the scenarios on control planes of their own
# at once, the rest once Prometheus is built too. The second, at nice 5 so
# that the first lane gets the CPU when it asks, builds the oldest minor's
# control plane, then runs two jobs at once: that minor's contract, and, at
# nice 10, the fillers: the checks (make verify), the unit tests and
# TEMPLATE_CHECKS (the template's own checks; none in a controller made
# from it). The suites wait on their control planes more than they compute;
# the fillers take whatever CPU they leave. Last come the alerts' tests,
# with the Prometheus the first lane built: only that lane builds it, so
# that no suite waits on a lock held by a build at a lower priority. The
# checks come after the oldest minor's build, not before it, so that its
# contract does not start late and run alone at the end, the CPU partly
# idle (what each order cost: docs/performance.md, make test). The minors
# between are make e2e-minors' (TEST_CONTRACT_MINORS), and the race
# detector is make race's (below). Each step runs as step-<target>
# (hack/step.sh), its output kept in _output/steps; make test ends by
# printing the last lines of each that failed, which the other lane's
# output may have buried since.
test:
	rm -rf _output/steps
	$(MAKE) -j2 e2e contract-and-fillers CONTRACT_MINORS="$(TEST_CONTRACT_MINORS)" || { hack/step.sh -report; exit 1; }

# A step of make test: make <target>, through hack/step.sh.
step-%:
	hack/step.sh $* $(MAKE) $*

# make test's second lane. Each step of two jobs is a make of its own (-j2
# resets the jobserver it was given), as the first lane holds one of make
# test's two.
.PHONY: contract-and-fillers fillers
contract-and-fillers:
	nice -n 5 $(MAKE) step-tools-minors
	nice -n 5 $(MAKE) -j2 step-e2e-minors fillers
	nice -n 5 $(MAKE) step-monitoring

# make verify, make unit and TEMPLATE_CHECKS, five steps further down in
# priority than the make that runs them, two at a time.
fillers:
	nice -n 5 $(MAKE) -j2 step-verify step-unit $(addprefix step-,$(TEMPLATE_CHECKS))

## unit: fast loop: the unit tests (fake clientsets), as make test runs them.
unit:
	$(GO_TEST) ./... 2>&1 | hack/summarize-failures.sh

## race: the unit tests with the race detector: run it when a change touches goroutines or what they share.
# Not part of make test, as make fuzz is not. -race compiles every package
# the tests import a second time, instrumented (the fake clientset of every
# API group among them). Plain, the unit tests share their compiles with
# the end-to-end suites. With it, a fresh make test on
# a slow two-core machine would not fit in the hour this project
# holds make test to (docs/performance.md, make test). The
# end-to-end suites run the concurrent code (the workers, the write fence,
# the fresh-first queue, the certificate reloader) against a real API
# server, but see a race only when it breaks what they check: make race
# sees it when it happens.
race: export CGO_ENABLED := 1
race:
	$(GO_TEST) -race ./...

## fuzz: each fuzz target for FUZZTIME beyond its seed corpus (which unit runs); findings land in pkg/desired/testdata/fuzz.
# Not part of make test, whose unit tests run the seed corpus: to fuzz, go
# test compiles every package the targets import again, with coverage
# instrumentation (client-go's packages among them): minutes of a fresh
# machine for seconds of fuzzing (docs/performance.md, make test). Run it
# when the validation or the mapping changes.
fuzz:
	go test -run '^$$' -fuzz '^FuzzValidateSpec$$' -fuzztime $(FUZZTIME) ./pkg/desired/
	go test -run '^$$' -fuzz '^FuzzDesiredDeployment$$' -fuzztime $(FUZZTIME) ./pkg/desired/

## verify: generated code and CRD are current, code is vetted, formatted and linted (make lint), no known vulnerability is called (govulncheck, offline), no tracked file is a compiled binary or too large (hack/verify-tracked-files.sh).
# Vetted by the linter: its govet runs every analyzer go vet does, and more.
verify: lint
	hack/verify-tracked-files.sh
	hack/verify-codegen.sh
	hack/verify-vulnerabilities.sh

## lint: golangci-lint with .golangci.yml (its formatters check gofmt and goimports), every build tag included.
GOLANGCI_LINT := _output/bin/golangci-lint
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...
# A module of its own (hack/tools/golangci-lint), so that the linters'
# dependencies move neither the controller's pins nor hack/tools'. Rebuilt
# when the pin changes, or go.mod (its toolchain line: a linter built by an
# older Go refuses to load a module that asks for a newer one). Linked
# without the symbol table and DWARF (-s -w), as the control planes are
# (hack/build-tools.sh): less link time on a fresh machine, and nobody
# debugs the linter.
$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod hack/tools/golangci-lint/go.sum go.mod
	cd hack/tools/golangci-lint && GOWORK=off go build -ldflags '-s -w' -o $(CURDIR)/$(GOLANGCI_LINT) \
	  github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	touch $(GOLANGCI_LINT)

## helm: build Helm v4 (hack/tools/helm's pin) into _output/bin/helm.
.PHONY: helm
HELM := _output/bin/helm
helm: $(HELM)
# A module of its own (hack/tools/helm), as golangci-lint's is: Helm's
# dependencies (k8s.io at its own patch release, oras-go, ...) move neither
# the controller's pins nor hack/tools'. Rebuilt when the pin changes, or
# go.mod (its toolchain line, which builds it). Linked without the symbol
# table and DWARF (-s -w), as the linter is. helm version reports what
# helm's own Makefile sets at link time, else its source's default (v4.3):
# set here to the pin, read from go.mod so that it is written once.
HELM_VERSION = $(shell sed -n 's|^[[:space:]]*helm\.sh/helm/v4 \(v[^ ]*\).*|\1|p' hack/tools/helm/go.mod)
# make test's two lanes both ask for it (the suite, and the copy's chart
# tests in new-controller-check): one build at a time, the second a cached
# relink.
$(HELM): hack/tools/helm/go.mod hack/tools/helm/go.sum go.mod
	mkdir -p $(dir $(HELM))
	cd hack/tools/helm && GOWORK=off flock $(CURDIR)/$(HELM).lock go build \
	  -ldflags '-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)' \
	  -o $(CURDIR)/$(HELM) helm.sh/helm/v4/cmd/helm
	touch $(HELM)

## e2e: the whole end-to-end suite on local control planes (kwokctl) of Kubernetes K8S_MINOR (default: the newest supported), built from source; the tests that start control planes of their own run beside the rest, their lines marked [own control planes].
# Two go test side by side, as the tests of one run one at a time (they
# share one control plane): E2E_OWN_CONTROL_PLANE_TESTS, which start
# control planes of their own (useOwnCluster in test/e2e) and spend most of
# their minutes waiting on the faults they make there, beside all the others
# on the suite's. Each keeps its own output directory (E2E_OUT_DIR), and
# the first starts no suite control plane (E2E_NO_SUITE_CONTROL_PLANE),
# which would sit idle. One after the other, they made the suite the
# longest chain of make test (docs/performance.md, make test). The test
# binary's packages compile first, once for both. The scenarios start as
# soon as the control plane is built; the rest, which runs Prometheus
# (TestMonitoringOnRealPrometheus), once it is built too. -k: the one runs
# to its end when the other failed.
E2E_OWN_CONTROL_PLANE_TESTS := TestControllerSurvivesFaults|TestChaosKeepsInvariants|TestShardedChaosKeepsInvariants|$\
  TestControlPlaneStartsAgainAComponentThatExitsAsItStarts|TestPausedShardHolderWritesNothingAfterItsShardsAreTaken|$\
  TestRollingUpdatesBetweenShardingsKeepOneWriterAndNoShardUnheld
E2E_OWN_CONTROL_PLANES := ^($(E2E_OWN_CONTROL_PLANE_TESTS))$$
e2e: control-plane-and-real-node
	$(GO_TEST) -tags e2e -c -o /dev/null ./test/e2e/
	$(MAKE) -k -j2 step-e2e-own-control-planes step-e2e-suite

.PHONY: e2e-own-control-planes e2e-suite
e2e-own-control-planes:
	E2E_OUT_DIR=_output/e2e-$(or $(K8S_MINOR),$(firstword $(K8S_MINORS)))-own-control-planes E2E_NO_SUITE_CONTROL_PLANE=true \
	  $(GO_TEST) -tags e2e -v -timeout $(E2E_TIMEOUT) -run '$(E2E_OWN_CONTROL_PLANES)' ./test/e2e/ 2>&1 \
	  | hack/summarize-failures.sh '[own control planes] '
# Helm for the chart's tests (test/e2e/chart_test.go, the real node's install).
e2e-suite: prometheus-tools $(HELM)
	$(GO_TEST) -tags e2e -v -timeout $(E2E_TIMEOUT) -skip '$(E2E_OWN_CONTROL_PLANES)' ./test/e2e/ 2>&1 \
	  | hack/summarize-failures.sh

# The supported Kubernetes minors, newest first: one module hack/tools/k8s-<minor> each.
K8S_MINORS := $(shell ls -d hack/tools/k8s-1.* | sed 's|.*/k8s-||' | sort -t. -k2,2nr)
# The end-to-end tests e2e-minors leaves out: those that disturb a control
# plane of their own for minutes (faults, chaos, the zombie leader, the slow
# start, the paused shard holder) or run for an hour (the soak), and those that load the
# controller's own servers and queue (hostile and amplifying conversion
# reviews, a metrics flood, the cold start's backlog) or read its metrics on
# Prometheus; and the chart's, which render it with helm, against no API
# server. What
# they prove is the controller's, not the API's: they run on the newest
# minor, and leaving the second five out spares make test minutes of CPU
# (docs/performance.md, make test).
# The chart's tests, which the copy's check runs too (its own chart).
CHART_TESTS := TestChartRendersWhatTheManifestsInstall|TestChartValuesCombinationsLintAndRender|$\
  TestChartRefusesValuesItCannotRenderWithAClearAnswer|TestChartRendersWithoutAdmissionPoliciesOnlyWhenAcknowledged
E2E_MINORS_SKIP := ^($(E2E_OWN_CONTROL_PLANE_TESTS)|TestPausedLeaderWritesNothingAfterStandbyTakesOver|$\
  TestSoakKeepsResourcesFlatAndInvariants|$\
  TestHostileConversionReviewsCannotExhaustAReplica|TestConversionReviewsBuiltToAmplifyAreBoundedByWhatTheyWrite|$\
  TestLeaderKeepsLeaseThroughMetricsFlood|TestFreshFooIsSyncedAheadOfTheColdStartBacklog|TestMonitoringOnRealPrometheus|$\
  TestPlantedCAOfTheControllersKindNeverReachesTheCABundleAndTheAlertFires|$(CHART_TESTS))$$

# The older minors whose contract e2e-minors proves: all of them, unless
# told otherwise.
CONTRACT_MINORS ?= $(wordlist 2,$(words $(K8S_MINORS)),$(K8S_MINORS))
# Those make test proves: the oldest. The minor between would push a fresh
# make test on a 2-core machine past the hour it is held to
# (docs/performance.md, make test). The newest and the oldest bracket
# what the controller asks of the API; make e2e-minors proves the one between.
TEST_CONTRACT_MINORS := $(lastword $(K8S_MINORS))

## tools-minors: build the control planes of the older minors (CONTRACT_MINORS; make tools builds the newest).
tools-minors:
	for minor in $(CONTRACT_MINORS); do K8S_MINOR=$$minor hack/build-tools.sh; done

## e2e-minors: the end-to-end contract (every e2e test but E2E_MINORS_SKIP) on each older supported minor (CONTRACT_MINORS="1.36" for one), side by side; each line starts with its minor.
# Side by side because a contract run leaves much of two cores idle (it
# waits on its control plane more than it computes). Each suite keeps
# its control plane, logs and binary in _output/e2e-<minor>, and its
# control plane listens on ports of its own. A suite's result is its exit
# status: the recipe fails if any failed, after all have ended.
e2e-minors: tools-minors
	pids=(); \
	for minor in $(CONTRACT_MINORS); do \
	  ( K8S_MINOR=$$minor $(GO_TEST) -tags e2e -v -timeout $(E2E_TIMEOUT) -skip '$(E2E_MINORS_SKIP)' ./test/e2e/ 2>&1 \
	    | hack/summarize-failures.sh "[$$minor] " ) & pids+=($$!); \
	done; \
	failed=0; for pid in "$${pids[@]}"; do wait "$$pid" || failed=1; done; exit "$$failed"

## image: build the controller's image with no daemon, as ko does (hack/build-image.sh): _output/image/<name>.tar; IMAGE_PUSH=REGISTRY/REPO:TAG pushes it instead, and writes _output/image/pushed, the manifests and chart values of it by digest (docs/deploying.md).
# The end-to-end suite builds it too, and runs it on a real node
# (docs/testing.md, The real node).
.PHONY: image
image:
	hack/build-image.sh $(if $(IMAGE_PUSH),-push $(IMAGE_PUSH))

## generate: regenerate deep-copy functions, clientset, listers, informers, apply configurations, and the CRD.
generate:
	hack/update-codegen.sh

## run: the controller in the foreground; a local control plane (kwokctl) of Kubernetes K8S_MINOR (default: the newest supported) if KUBECONFIG is unset.
# hack/run.sh builds the control plane (hack/build-tools.sh) only when it
# starts one, and only what it starts: not Prometheus, which make tools
# builds too, nor the real node's kubelet and kube-proxy, which make e2e
# builds.
run: build
	hack/run.sh

## bench: the benchmark of docs/performance.md on a local control plane (kwokctl), at BENCH_SCALE Foos (a list; default 1000), BENCH_RUNS runs per size (default 3); the curve into BENCH_CURVE_DIR (default _output/bench-logs; docs for the page's).
BENCH_SCALE ?= 1000
BENCH_RUNS ?= 3
# Not docs/ by default: the page's table quotes the curve there, and a run
# at other sizes would replace it (docs/performance.md, How it is measured).
BENCH_CURVE_DIR ?= _output/bench-logs
bench: tools
	BENCH_SCALE="$(BENCH_SCALE)" BENCH_RUNS="$(BENCH_RUNS)" BENCH_CURVE_DIR="$(BENCH_CURVE_DIR)" $(GO_TEST) -tags bench -v -timeout 240m -run '^TestBenchmark$$' ./test/bench/

## bench-sharded: the sharded bench of docs/performance.md: BENCH_SHARDED_FOOS Foos (default 10000) over BENCH_SHARDED_NAMESPACES namespaces (1000) named BENCH_SHARDED_NAMES (numbered, or tenant: the number last), one replica, then three with -shards=BENCH_SHARDED_SHARDS (12) and -shard-boundaries=BENCH_SHARDED_BOUNDARIES (equal, or weighted).
BENCH_SHARDED_FOOS ?= 10000
BENCH_SHARDED_NAMESPACES ?= 1000
BENCH_SHARDED_SHARDS ?= 12
BENCH_SHARDED_NAMES ?= numbered
BENCH_SHARDED_BOUNDARIES ?= equal
bench-sharded: tools
	BENCH_SHARDED_FOOS="$(BENCH_SHARDED_FOOS)" BENCH_SHARDED_NAMESPACES="$(BENCH_SHARDED_NAMESPACES)" \
	  BENCH_SHARDED_SHARDS="$(BENCH_SHARDED_SHARDS)" BENCH_SHARDED_NAMES="$(BENCH_SHARDED_NAMES)" \
	  BENCH_SHARDED_BOUNDARIES="$(BENCH_SHARDED_BOUNDARIES)" \
	  $(GO_TEST) -tags bench -v -timeout 120m -run '^TestShardedBenchmark$$' ./test/bench/

## soak: the chaos scenario for SOAK_DURATION (default 1h) over SOAK_FOOS Foos (default 2000), a fault every SOAK_FAULT_EVERY (4m); samples in _output/soak (docs/failure-modes.md, The soak).
SOAK_DURATION ?= 1h
SOAK_FOOS ?= 2000
SOAK_FAULT_EVERY ?= 4m
soak: tools
	SOAK_DURATION="$(SOAK_DURATION)" SOAK_FOOS="$(SOAK_FOOS)" SOAK_FAULT_EVERY="$(SOAK_FAULT_EVERY)" \
	  $(GO_TEST) -tags e2e -v -timeout 6h -run '^TestSoakKeepsResourcesFlatAndInvariants$$' ./test/e2e/

## tools: build kwokctl and the control-plane binaries it runs (etcd, kwok; kube-* of K8S_MINOR, default the newest) into _output/bin.
tools: control-plane

# The control plane alone, without the Prometheus make tools builds too:
# what make tools (make bench, make soak) and the copy's check start, as
# make run's hack/run.sh builds it too. Not the real node's kubelet and
# kube-proxy, which none of them starts.
.PHONY: control-plane control-plane-and-real-node
control-plane:
	hack/build-tools.sh
# make e2e's: the control plane and the real node's kubelet and kube-proxy
# (for the newest minor), in one build that compiles their shared packages
# once, before the suite starts; the real-node tests would build them
# otherwise (StartRealNode), while the suite waits.
control-plane-and-real-node:
	BUILD_REAL_NODE=true hack/build-tools.sh

## monitoring: promtool checks and unit-tests the alerts of artifacts/monitoring (test/monitoring/rules_test.yaml).
# The rest is proven elsewhere: the artifacts' strict decoding in unit
# (test/monitoring), the alerts and dashboard on a real Prometheus in e2e
# (test/e2e/monitoring_test.go).
monitoring: prometheus-tools
	$(PROMTOOL) check rules artifacts/monitoring/prometheus-rules.yaml
	$(PROMTOOL) test rules test/monitoring/rules_test.yaml

## prometheus-tools: build Prometheus and promtool, pinned in hack/tools/prometheus, into _output/bin (make tools does too).
PROMTOOL := _output/bin/promtool
PROMETHEUS_BINS := _output/bin/prometheus $(PROMTOOL)
.PHONY: monitoring prometheus-tools
tools: prometheus-tools
prometheus-tools: $(PROMETHEUS_BINS)
# A module of their own, so that Prometheus' dependencies move neither the
# controller's nor hack/tools' pins. Rebuilt when the pins change.
# remove_all_sd is Prometheus' own build tag that leaves out every service
# discovery plugin but the file and HTTP ones: the tests give Prometheus a
# static target, and the cloud SDKs behind the plugins (AWS, Azure, GCE,
# OpenStack, ...) are much of what a build without the tag compiles
# (docs/performance.md, make test).
# Linked -s -w, as the linter is.
# In make test, make e2e builds it and make monitoring finds it built; run
# by hand at once, one builds while the other waits, then finds nothing
# to do.
$(PROMETHEUS_BINS) &: hack/tools/prometheus/go.mod hack/tools/prometheus/go.sum
	mkdir -p _output/bin
	cd hack/tools/prometheus && flock $(CURDIR)/_output/bin/.prometheus.lock env GOWORK=off go build -tags remove_all_sd -ldflags '-s -w' -o $(CURDIR)/_output/bin/ \
	  github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
	touch $(PROMETHEUS_BINS)

## install: install the Foo CRD into the current kubectl cluster, and wait until it is served.
install:
	$(KUBECTL) apply -f artifacts/examples/crd.yaml
	$(KUBECTL) wait --for=condition=Established --timeout=60s crd/foos.samplecontroller.k8s.io

## uninstall: delete the Foo CRD, and with it every Foo and their Deployments.
uninstall:
	$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f artifacts/examples/crd.yaml

## deploy: install the CRD and the controller (kubectl apply -k artifacts/deploy; for the image see docs/deploying.md).
deploy:
	$(KUBECTL) apply -k artifacts/deploy

## undeploy: delete the CRD (and so every Foo), then the controller.
# In that order: the API server deletes the Foos through the controller's
# conversion webhook, which a Foo still stored in v1alpha1 needs
# (docs/api-versions.md). Deleted together, the webhook may go first, and
# the CRD's deletion then waits for it forever.
undeploy:
	$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f artifacts/examples/crd.yaml
	$(KUBECTL) delete --ignore-not-found=true -k artifacts/deploy

# new-controller:template-only:begin (hack/new-controller leaves this out of the copies it makes)
## new-controller-check: make a Policy controller with hack/new-controller into NEW_CONTROLLER_DIR and prove it: the README walkthrough on a local control plane; then apply the recipes (RECIPES) to it and prove them: lint (vet included), unit tests, each recipe's end-to-end test.
# The plural is irregular (policies) on purpose. The copy's _output/bin is
# this one's, so the linter and control plane are built once. The copy's
# govulncheck is left out: its module graph is this one's, which make verify
# checks. The recipes are the changes docs/recipes.md walks a fork
# through, each a patch in docs/recipes that the copy has under its own
# names: owning a Service beside the Deployment and adding a field the
# controller sets on the Deployment; one that no longer applies, or no
# longer works, fails here. Lint and unit tests run once, on the copy with
# the recipes: they only add to the copy. The copy's unit tests run as make
# unit's do, without the race detector (make race). The copy's
# hack/verify-codegen.sh does not run: hack/new-controller has just
# generated the copy's code with the copy's own generators, and running
# them again would only regenerate it, minutes of CPU (docs/performance.md,
# make test). Each phase prints its seconds.
NEW_CONTROLLER_DIR := _output/new-controller/policy-operator
# The recipes, in the copy.
RECIPES := docs/recipes/own-a-service.patch docs/recipes/add-a-field.patch
# The recipes' end-to-end tests, in the copy's test/e2e.
RECIPE_TESTS := TestPolicyOwnsItsService|TestPolicyContainerPortReachesItsDeployment
# What make test runs of this block; a copy has neither.
TEMPLATE_CHECKS := new-controller-check
.PHONY: new-controller-check
new-controller-check: control-plane $(GOLANGCI_LINT) $(HELM)
	rm -rf $(NEW_CONTROLLER_DIR)
	phase() { local start=$$SECONDS; "$$@"; echo "new-controller-check: $$* ($$((SECONDS - start)) s)"; }; \
	phase go run ./hack/new-controller -verify=false -module example.com/policy-operator \
	  -group policies.example.com -kind Policy $(NEW_CONTROLLER_DIR); \
	mkdir -p $(NEW_CONTROLLER_DIR)/_output; ln -s $(CURDIR)/_output/bin $(NEW_CONTROLLER_DIR)/_output/bin; \
	(cd $(NEW_CONTROLLER_DIR) && \
	  phase $(GO_TEST) -tags e2e -v -timeout $(E2E_TIMEOUT) -run '^TestReadmeWalkthrough$$' ./test/e2e/ 2>&1 \
	    | $(CURDIR)/hack/summarize-failures.sh); \
	for recipe in $(RECIPES); do phase git apply --directory=$(NEW_CONTROLLER_DIR) $(NEW_CONTROLLER_DIR)/$$recipe; done; \
	cd $(NEW_CONTROLLER_DIR); \
	phase hack/update-codegen.sh; \
	phase _output/bin/golangci-lint run ./...; \
	phase $(GO_TEST) ./... 2>&1 | $(CURDIR)/hack/summarize-failures.sh; \
	phase $(GO_TEST) -tags e2e -v -timeout $(E2E_TIMEOUT) -run '^($(RECIPE_TESTS)|$(CHART_TESTS))$$' ./test/e2e/ 2>&1 \
	  | $(CURDIR)/hack/summarize-failures.sh
# new-controller:template-only:end

## clean: remove all build output (_output), kwokctl clusters included: delete running ones first (README, Cleanup).
clean:
	rm -rf _output
