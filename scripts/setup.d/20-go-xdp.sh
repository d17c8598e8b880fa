# shellcheck shell=bash
# Sourced by scripts/setup: the XDP steering agent (control/) needs a Go
# toolchain at least as new as control/go.mod's `go` line (cilium/ebpf
# follows recent Go releases; Debian 12's golang-go is 1.19). The machines
# ship Go in /usr/local/go; a fresh Debian 12 without it gets this message.
if [ -f control/go.mod ]; then
  need=$(awk '/^go /{print $2; exit}' control/go.mod)
  PATH="$PATH:/usr/local/go/bin"
  if ! command -v go >/dev/null; then
    log "Go $need or newer is needed for control/ (install it to /usr/local/go)"; return 1
  fi
  have=$(go env GOVERSION | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    log "Go $have is older than the $need control/go.mod needs"; return 1
  fi
fi
# bpffs for pinned maps (scripts/setup mounts it too; harmless twice).
mountpoint -q /sys/fs/bpf 2>/dev/null || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
