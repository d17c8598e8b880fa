# Lint gates, the first step of `make test` (well under a minute: each tool
# reads the tree once; Go's build and staticcheck caches make reruns cheap).
#
#   make lint             all of them
#   make lint-python      ruff on every Python file (ruff.toml)
#   make lint-go          gofmt, go vet and staticcheck on control/ (staticcheck
#                         pinned, scripts/setup.d/30-lint.sh)
#   make lint-dataplane   no volatile or sleeps on worker paths, no include
#                         of another pipeline's header (scripts/check-dataplane)
#   make lint-vocabulary  cite RFCs, specifications and papers by title
#                         (scripts/check-vocabulary)
#   make lint-doc-links   every relative markdown link and #anchor resolves
#                         (scripts/check-doc-links)

.PHONY: lint lint-python lint-go lint-dataplane lint-vocabulary lint-doc-links

lint: lint-python lint-go lint-dataplane lint-vocabulary lint-doc-links

lint-python: setup
	@$(VENV)/bin/ruff check --quiet .

# go vet type-checks the generated BPF bindings too: generate them first.
lint-go: setup control/internal/steer/steer_bpfel.o control/internal/xdpfwd/fwd_bpfel.o control/internal/xdpfwd/tcfwd_bpfel.o
	@cd control && $(GO) vet ./... && $(BUILD)/tools/staticcheck ./...
	@out=$$("$$(dirname "$$(command -v $(GO))")/gofmt" -l control lab/subemu) && \
	  if [ -n "$$out" ]; then echo "gofmt: not formatted (gofmt -w them):"; echo "$$out"; exit 1; fi

lint-dataplane:
	@scripts/check-dataplane

lint-vocabulary:
	@scripts/check-vocabulary

lint-doc-links:
	@scripts/check-doc-links
