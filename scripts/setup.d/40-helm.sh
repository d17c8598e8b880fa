# shellcheck shell=bash
# Sourced by scripts/setup: helm for the Kubernetes chart's offline checks
# (make test-deploy, tests/test_deploy_manifests.py). Debian 12 packages no
# helm, so a pinned release is built from the Go module proxy into
# build/tools/, never from @latest (kubernetes-validate, the schema check,
# is pinned in lab/requirements.txt). docs/deploy.md gives its cost.
HELM_VERSION=v3.21.4
if command -v go >/dev/null; then
  helm_bin="$ROOT/build/tools/helm"
  if ! [ -x "$helm_bin" ] || [ "$("$helm_bin" version --template '{{.Version}}' 2>/dev/null)" != "$HELM_VERSION" ]; then
    log "installing helm $HELM_VERSION into build/tools"
    mkdir -p "$ROOT/build/tools"
    GOBIN="$ROOT/build/tools" go install -ldflags "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  fi
fi
