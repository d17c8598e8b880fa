"""Shared result shape for every benchmark, what build/bench/<name>.json holds
(docs/benchmarks.md), and the one writer of it.

{"name", "machine", "host", "config",
 "metrics": {"mpps_per_core", "cycles_per_pkt", "stages": {...}},
 "peers": {peer: {...}}, "ratios": {"vs_<peer>": x},
 "comparisons": [{case, metric, ours, peer, peer_value, ratio_key, ratio}],
 "ratio_rounds": {"vs_<peer>": [per round]}, ...}

`comparisons` says which case and figure each ratio compares, so the table
and the report (bench/report.py) show ours beside the peer per case;
anything else a benchmark adds (top-level keys, metrics, config, a peer's
fields) is rendered generically, without code here knowing its name.
"""
import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "bench"

# CPU flags that change what the data planes and the peers run: rte_acl's
# classify method (sse, avx2, avx512x16/x32 need avx512f/bw/vl/cd), the
# aesni_mb crypto paths (aes, vaes, vpclmulqdq), the CRC helpers (pclmulqdq,
# sse4_2).
CPU_FLAGS = ("sse4_2", "avx2", "avx512f", "avx512bw", "avx512vl", "avx512cd", "aes",
             "pclmulqdq", "vaes", "vpclmulqdq")


def cpuinfo(path="/proc/cpuinfo"):
    """{"model", "flags": set, "mhz", "vendor", "family", "model_number",
    "stepping"} of the first CPU in cpuinfo."""
    out = {"model": "unknown", "flags": set(), "mhz": None, "vendor": None, "family": -1,
           "model_number": -1, "stepping": -1}
    numbers = {"cpu family": "family", "model": "model_number", "stepping": "stepping"}
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.split("\n\n", 1)[0].splitlines():
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "model name":
            out["model"] = v
        elif k == "vendor_id":
            out["vendor"] = v
        elif k == "cpu MHz":
            out["mhz"] = float(v)
        elif k == "flags":
            out["flags"] = set(v.split())
        elif k in numbers and v.isdigit():
            out[numbers[k]] = int(v)
    return out


def host(cpuinfo_path="/proc/cpuinfo"):
    """What a reader needs to compare figures between machines: CPU model,
    the flags that matter, CPUs, kernel, DPDK, load when written."""
    ci = cpuinfo(cpuinfo_path)
    try:
        usable = len(os.sched_getaffinity(0))
    except OSError:
        usable = os.cpu_count()
    # The hypervisor may show "AMD EPYC" only: family/model tell Zen 3
    # (25/1) from Zen 4 (25/17).
    h = {"cpu_model": ci["model"], "cpu_vendor": ci["vendor"], "cpu_mhz": ci["mhz"],
         "cpu_family": ci["family"], "cpu_model_number": ci["model_number"],
         "cpu_stepping": ci["stepping"],
         "flags": {f: f in ci["flags"] for f in CPU_FLAGS},
         "cpus": os.cpu_count(), "cpus_usable": usable,
         "kernel": platform.release(), "dpdk": _dpdk_version()}
    try:
        h["loadavg"] = [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        pass
    return h


def _dpdk_version():
    if not shutil.which("pkg-config"):
        return None
    r = subprocess.run(["pkg-config", "--modversion", "libdpdk"], capture_output=True,
                       text=True)
    return r.stdout.strip() or None


def machine(h=None):
    """The one-line form (kept for readers of older JSON)."""
    h = h or host()
    flags = " ".join(f for f, on in h["flags"].items() if on and f.startswith("avx"))
    return (f"{h['cpu_model']}, {h['cpus']} cpus, {h['kernel']}"
            + (f", {flags}" if flags else ", no AVX2/AVX-512"))


def result(name, config, metrics, peers=None, ratios=None, extra=None):
    r = {"name": name, "config": config, "metrics": metrics, "peers": peers or {},
         "ratios": ratios or {}}
    if extra:
        r.update(extra)
    return r


def comparison(case, ours, peer, peer_value, ratio_key=None, ratio=None,
               metric="mpps_per_core", unit="Mpps/core", higher_is_better=True, stages_of=None,
               ours_rounds=None, peer_rounds=None):
    """One row of "ours against the peer": the case, the figure compared
    (`metric` in `unit`), both values, the ratio's key in `ratios` and its
    value; stages_of: the dotted path of the dict whose "stages" are ours
    on this case (e.g. "cases.64/acl1000/routes100000"); *_rounds: the
    per-round values behind the two medians."""
    c = {"case": case, "metric": metric, "unit": unit, "ours": ours, "peer": peer,
         "peer_value": peer_value, "ratio_key": ratio_key,
         "ratio": ratio if ratio is not None else (ours / peer_value if ours and peer_value
                                                   else None),
         "higher_is_better": higher_is_better}
    if stages_of:
        c["stages_of"] = stages_of
    if ours_rounds:
        c["ours_rounds"] = ours_rounds
    if peer_rounds:
        c["peer_rounds"] = peer_rounds
    return c


def median(xs):
    return statistics.median(xs) if xs else 0.0


def write_result(r, out=None):
    """build/bench/<name>.json, with the host and the time it was written."""
    out = Path(out or OUT)
    out.mkdir(parents=True, exist_ok=True)
    h = host()
    r = {"name": r["name"], "machine": machine(h), "host": h,
         "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         **{k: v for k, v in r.items() if k != "name"}}
    path = out / f"{r['name']}.json"
    path.write_text(json.dumps(r, indent=2, sort_keys=False) + "\n")
    return path
