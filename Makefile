# siemctl — see README.md. All targets are phony; the default is build.
GO        ?= go
PKG       := github.com/siemctl/siemctl
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X $(PKG)/internal/buildinfo.Version=$(VERSION)
BIN       := bin
LAB_DIR   ?= $(CURDIR)/.lab/demo
FUZZTIME  ?= 10s
E2E_TIMEOUT ?= 60m

export CGO_ENABLED ?= 0
export GOFLAGS ?= -buildvcs=false

.PHONY: build test test-unit test-e2e check demo demo-down lint vet fmt fmt-check tidy-check cover docs fuzz bench golden clean deps

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/siemctl ./cmd/siemctl
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/siemlab ./cmd/siemlab

## The README's test command: static checks, unit tests (-race), then the
## end-to-end tests against a real lab (OpenSearch, private systemd, apt/dpkg).
test: vet fmt-check test-unit test-e2e

test-unit:
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

test-e2e: build
	SIEMCTL_IT_REQUIRED=1 SIEMCTL_E2E_BIN=$(CURDIR)/$(BIN) $(GO) test -tags e2e -count=1 -p 1 -timeout $(E2E_TIMEOUT) -run 'E2E' ./...

check: test

## Install what the lab needs (Debian): dpkg-dev for dpkg-scanpackages, Maven
## and Java for OpenSearch, bsdutils for logger.
deps:
	./scripts/install-deps.sh

demo: build
	./scripts/demo.sh "$(LAB_DIR)"

demo-down:
	$(BIN)/siemlab down --dir "$(LAB_DIR)"

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

fmt:
	gofmt -w cmd internal runbooks

fmt-check:
	@out=$$(gofmt -l cmd internal runbooks); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: vet fmt-check
	@command -v golangci-lint >/dev/null && golangci-lint run ./... || echo "golangci-lint not installed; ran go vet and gofmt"

tidy-check:
	$(GO) mod tidy -diff

cover:
	$(GO) test -coverprofile=cover.out ./... && $(GO) tool cover -func=cover.out | tail -1

docs: build
	$(BIN)/siemctl docs man docs/man
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

golden:
	$(GO) test ./internal/... -run . -update

clean:
	rm -rf $(BIN) cover.out docs/man
