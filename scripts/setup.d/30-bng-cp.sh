# shellcheck shell=bash
# Sourced by scripts/setup: what the BNG control plane's tests and benchmark
# use -- real DHCP clients (ISC dhclient, busybox udhcpc), Debian's
# freeradius with radclient (RADIUS, CoA).  The freeradius service Debian
# starts is not used: the tests run their own instance in a namespace.
bngcp_pkgs=(isc-dhcp-client udhcpc freeradius freeradius-utils)
bngcp_missing=()
for p in "${bngcp_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || bngcp_missing+=("$p")
done
if [ ${#bngcp_missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${bngcp_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${bngcp_missing[@]}" >/dev/null
  # A fresh install starts the system's freeradius on 1812/1813 of every
  # address; the tests bind theirs in a namespace, but stop it anyway.
  command -v systemctl >/dev/null && $SUDO systemctl disable --now freeradius >/dev/null 2>&1 || true
fi
