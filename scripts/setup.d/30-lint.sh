# shellcheck shell=bash
# Sourced by scripts/setup: the Go linter `make lint` runs (ruff comes with
# the venv, lab/requirements.txt).  staticcheck is pinned to a release that
# supports control/go.mod's Go (2026.2.2 = module v0.8.2, Go 1.26) and built
# from the Go module proxy into build/tools/, never from @latest.
STATICCHECK_VERSION=v0.8.2
if [ -f control/go.mod ] && command -v go >/dev/null; then
  sc="$ROOT/build/tools/staticcheck"
  if ! [ -x "$sc" ] || ! "$sc" -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; then
    log "installing staticcheck $STATICCHECK_VERSION into build/tools"
    mkdir -p "$ROOT/build/tools"
    GOBIN="$ROOT/build/tools" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
  fi
fi
