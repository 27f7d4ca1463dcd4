# siemctl — see README.md. All targets are phony; the default is build.
GO        ?= go
PKG       := github.com/siemctl/siemctl
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
# The commit's time, not the clock's, so two builds of one commit are identical.
DATE      ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null | grep . || TZ=UTC date +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -s -w -X $(PKG)/internal/buildinfo.Version=$(VERSION) -X $(PKG)/internal/buildinfo.Commit=$(COMMIT) -X $(PKG)/internal/buildinfo.Date=$(DATE)
BIN       := bin
LAB_DIR   ?= $(CURDIR)/.lab/demo
FUZZTIME  ?= 10s
E2E_TIMEOUT ?= 75m

export CGO_ENABLED ?= 0
export GOFLAGS ?= -buildvcs=false

.PHONY: dist build filebeat test test-unit test-e2e check demo demo-down lint vet fmt fmt-check tidy-check cover docs fuzz bench bench-upgrade golden golden-check clean deps

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/siemctl ./cmd/siemctl
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/siemlab ./lab/cmd/siemlab

## Release artifacts in dist/: .deb, .rpm, tarball and SHA256SUMS for ARCH
## (a GOARCH; default: this machine's), built with nfpm as a Go library
## (packaging/dist). Man pages and completions come from a host build.
ARCH      ?= $(shell $(GO) env GOARCH)
DIST      ?= dist
dist: deps
	GOARCH=$(ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/.build/siemctl-$(ARCH) ./cmd/siemctl
	GOARCH=$$($(GO) env GOHOSTARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/.build/siemctl-host ./cmd/siemctl
	GOARCH=$$($(GO) env GOHOSTARCH) $(GO) run ./packaging/dist -bin $(DIST)/.build/siemctl-$(ARCH) -gen-bin $(DIST)/.build/siemctl-host \
	  -version '$(VERSION)' -arch $(ARCH) -date '$(DATE)' -out $(DIST)

## Filebeat OSS 7.10.2, the lab's shipper: built from the Go module proxy into
## ~/.cache/siemlab/filebeat/7.10.2 once (a few minutes cold), then reused.
filebeat: build
	$(BIN)/siemlab filebeat

## The README's test command: the prerequisites (scripts/install-deps.sh), static
## checks, unit tests (-race), then the end-to-end tests against a real lab
## (OpenSearch, private systemd, apt/dpkg).
test: deps vet fmt-check test-unit test-e2e

test-unit: deps
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

## The end-to-end tests: every package against siem labs, then health, upgrade
## and rollback, agents, alerts, services and snapshot against wazuh labs, and the
## distributed lab with its rolling upgrade and rollback, in
## four lanes at once on separate port ranges (scripts/test-e2e.sh;
## SIEMCTL_E2E_LANES=1 runs them one after the other).
test-e2e: build filebeat
	GO='$(GO)' E2E_TIMEOUT=$(E2E_TIMEOUT) SIEMCTL_E2E_BIN=$(CURDIR)/$(BIN) ./scripts/test-e2e.sh

check: test

## Install what the build, the tests and the lab need (Debian): gcc and
## libc6-dev for -race, dpkg-dev, Java 17 and Maven for OpenSearch, systemd, ….
deps:
	./scripts/install-deps.sh

demo: deps build filebeat
	./scripts/demo.sh "$(LAB_DIR)"

demo-down:
	$(BIN)/siemlab down --dir "$(LAB_DIR)"

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

fmt:
	gofmt -w cmd internal runbooks lab packaging ansible

fmt-check:
	@out=$$(gofmt -l cmd internal runbooks lab packaging ansible); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: vet fmt-check
	@command -v golangci-lint >/dev/null && golangci-lint run ./... || echo "golangci-lint not installed; ran go vet and gofmt"

tidy-check:
	$(GO) mod tidy -diff

cover:
	$(GO) test -coverprofile=cover.out ./... && $(GO) tool cover -func=cover.out | tail -1

docs: build
	$(BIN)/siemctl docs man docs/man
	$(BIN)/siemctl docs markdown docs/commands
	mkdir -p docs/completion
	$(BIN)/siemctl completion bash > docs/completion/siemctl.bash
	$(BIN)/siemctl completion zsh > docs/completion/_siemctl
	$(BIN)/siemctl completion fish > docs/completion/siemctl.fish

## Every Fuzz* target of every package; a package whose tests do not build
## fails the run instead of silently contributing no targets.
fuzz:
	@n=0; for p in $$($(GO) list ./...); do \
	  fs=$$($(GO) test -list 'Fuzz.*' $$p) || { echo "fuzz: cannot list the tests of $$p" >&2; exit 1; }; \
	  for f in $$(echo "$$fs" | grep ^Fuzz); do \
	    n=$$((n+1)); echo "fuzz $$p $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
	  done; done; echo "fuzz: $$n targets"

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# upgrade + rollback of a loaded lab per data-safety mode, small and large volume (root; long)
bench-upgrade: build
	scripts/bench-upgrade.sh

golden:
	SIEMCTL_UPDATE_GOLDEN=1 $(GO) test -count=1 ./...

## CI: on a clean checkout, make golden passes and rewrites every golden file to what it already holds.
golden-check: golden
	@if [ -n "$$(git status --porcelain)" ]; then echo "make golden changed the tree:"; git status --short; exit 1; fi

clean:
	rm -rf $(BIN) $(DIST) cover.out docs/man
