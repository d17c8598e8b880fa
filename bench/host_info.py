"""What a benchmark JSON records about the host and the classifier, so that
figures from different machines are read apart: the project's machines are
AMD EPYC VMs that are Zen 3 (no AVX-512) one day and Zen 4 (AVX-512) the
next, and rte_acl's classify method, the largest single cost of the router
and the vBNG uplink, follows the CPU.

  cpu()            model name, family/model/stepping (the hypervisor shows
                   "AMD EPYC" only; family 25 model 1 is Zen 3 Milan, model
                   17 Zen 4 Genoa), the SIMD extensions rte_acl chooses by
  acl_methods(dp)  {ACL table: the rte_acl method in use}, from edgeplane-dp's
                   acl-tables (what `acl_classify = auto` resolved to)
  parse_x8(dp)     the eight-frame parse's loads (lines or gathers, timed on
                   this CPU) and the figures they were chosen by, parse-x8
  mitigations()    the kernel's speculative-execution mitigations that tax a
                   kernel `ret` (the XDP program's helper calls): SRSO, Retbleed
"""
from pathlib import Path

from bench import common
from lab.dp import CtlError

SIMD_FLAGS = ("sse4_1", "avx2", "avx512f", "avx512bw", "avx512vl")


def cpu():
    ci = common.cpuinfo()
    return {"model_name": ci["model"], "family": ci["family"], "model": ci["model_number"],
            "stepping": ci["stepping"], "simd": [f for f in SIMD_FLAGS if f in ci["flags"]]}


def acl_methods(dp):
    """{table: classify_method} of a running edgeplane-dp (lab.dp.Dp)."""
    return {t["table"]: t.get("classify_method", "unknown")
            for t in dp.ctl("acl-tables")["tables"]}


def parse_x8(dp):
    """The eight-frame parse of a running edgeplane-dp: whether it runs here,
    its loads' form (lines or gathers, timed per CPU) and the figures; for
    a build from before the command (an A/B's older side), "unknown"."""
    try:
        return dp.ctl("parse-x8")
    except CtlError:
        return {"loads": "unknown"}


def mitigations():
    out = {}
    for name in ("spec_rstack_overflow", "retbleed", "spectre_v2"):
        try:
            out[name] = (Path("/sys/devices/system/cpu/vulnerabilities") / name).read_text().strip()
        except OSError:
            pass
    return out
