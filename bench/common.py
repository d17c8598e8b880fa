"""Shared result shape for every benchmark, what build/bench/<name>.json holds
(docs/benchmarks.md).

{"name", "machine", "config", "metrics": {"mpps_per_core", "cycles_per_pkt",
 "stages": {...}}, "peers": {peer: {...}}, "ratios": {"vs_<peer>": x}}
"""
import json
import os
import platform
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "bench"


def machine():
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cpus, {platform.release()}"


def result(name, config, metrics, peers=None, ratios=None, extra=None):
    r = {"name": name, "machine": machine(), "config": config,
         "metrics": metrics, "peers": peers or {}, "ratios": ratios or {}}
    if extra:
        r.update(extra)
    return r


def median(xs):
    return statistics.median(xs) if xs else 0.0


def write_result(r):
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{r['name']}.json"
    path.write_text(json.dumps(r, indent=2, sort_keys=False) + "\n")
    return path


def print_table(r):
    m = r.get("metrics", {})
    print(f"{r['name']}: " + ", ".join(
        f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
        for k, v in m.items() if not isinstance(v, dict)))
    for k, v in (m.get("stages") or {}).items():
        print(f"  stage {k:<16} {v:8.1f} cycles/pkt")
    for k, v in (r.get("peers") or {}).items():
        print(f"  peer {k}: {v}")
    for k, v in (r.get("ratios") or {}).items():
        print(f"  ratio {k}: {v:.3f}")
