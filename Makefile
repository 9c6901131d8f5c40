# The checks live in .ci/run, which CI runs and which needs only bash, Go and
# git; these targets are shortcuts to its steps.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

BUF := go tool -modfile=tools.mod buf

.PHONY: help
help: ## Describe the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## .*$$' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*?## "}; {printf "%-16s %s\n", $$1, $$2}'

# What `agentrunner version` prints, from git (empty outside a checkout):
# go build stamps the commit only with -buildvcs, and go run never does.
BIN ?= .tmp/bin/agentrunner
GIT_VERSION := $(shell git describe --tags --always --dirty 2>/dev/null)
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
GIT_TIME := $(shell git log -1 --format=%cI 2>/dev/null)
GIT_MODIFIED := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true)
LDFLAGS := -X main.stampedVersion=$(GIT_VERSION) -X main.stampedCommit=$(GIT_COMMIT) \
	-X main.stampedTime=$(GIT_TIME) -X main.stampedModified=$(GIT_MODIFIED)

.PHONY: build
build: ## Build .tmp/bin/agentrunner (BIN=path), stamped with the git commit
	go build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/agentrunner

.PHONY: serve
serve: ## Run the service on 127.0.0.1:50051 with ./agentrunner.db
	go run ./cmd/agentrunner serve

.PHONY: generate
generate: ## Regenerate gen/go from proto/ (needs only Go)
	$(BUF) generate

.PHONY: generate-clients
generate-clients: ## Regenerate gen/python and gen/ts (needs make clients-setup)
	$(BUF) generate --template buf.gen.clients.yaml

.PHONY: check-generate
check-generate: ## Fail if gen/ is not what buf generate makes (both templates)
	bash .ci/run generate clients-generate

.PHONY: lint
lint: ## gofmt, go vet, import direction, buf lint and buf format
	bash .ci/run gofmt vet deps lint

.PHONY: format
format: ## gofmt and buf format the sources in place
	git ls-files '*.go' | grep -v '^gen/' | xargs gofmt -w
	$(BUF) format -w

.PHONY: breaking
breaking: ## buf breaking against the previous main (BREAKING_AGAINST=<ref> to choose)
	bash .ci/run breaking

.PHONY: test
test: ## go test -race ./...
	bash .ci/run test

.PHONY: walkthrough
walkthrough: ## Run the grpcurl walkthroughs of README.md and docs/ against the built binary
	bash .ci/run walkthrough

.PHONY: embed
embed: ## Run the Go embedder example (examples/embed) and check its answers
	bash .ci/run embed

.PHONY: clients-setup
clients-setup: ## Install the apt packages and npm modules the clients need
	bash .ci/run clients-setup

.PHONY: clients
clients: ## Type-check the TS stubs, run the Python/TS/Go examples against a server
	bash .ci/run clients-typecheck clients

.PHONY: chat-test
chat-test: ## Drive agentrunner chat in tmux against a server
	bash .ci/run chat

.PHONY: ci
ci: ## Everything CI runs
	bash .ci/run
