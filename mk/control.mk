# The control plane (control/model, control/internal/{controller,reconcile,
# dptelemetry}): `edgeplane controller` and `edgeplane agent --node`.
#
#   make gen-control   regenerate control/model/types.gen.go from
#                      control/model/openapi.yaml (oapi-codegen, pinned in
#                      control/go.mod's tool block); TestGeneratedTypesAreCurrent
#                      fails when they differ.
#
# Its Go tests run with test-xdp (go test ./... under control/), its pytest
# (tests/test_control.py) with test-integration.

.PHONY: gen-control

gen-control:
	@cd control && $(GO) generate ./model
	@cd control && $(GO) run ./cmd/model-docs ../docs/control.md
