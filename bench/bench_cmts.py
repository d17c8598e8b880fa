"""`make bench BENCH=cmts`: the vCMTS data plane against the crypto work alone.

Ours, in-process (lab.cmts_lab.inproc_sections): one service group with the
default profile of Intel's vCMTS per-SG benchmarks (300 CMs with 4 CPE
addresses, 6 filter groups of 16 rules and 2 per CM, 16 classifiers per CM,
8 SFs per CM of which 4 carry traffic, 6 OFDM channels in 2 bonding groups,
100 % AES-128 BPI+, CRC-32 regenerated on every downstream frame), driven by
a cmts-gen worker through net_ring ports; the cmts-ds and cmts-us workers
send to net_null.  The generator aims 10 % of the downstream flows at the
CMs' classifiers and 10 % at their filter groups' rules (all permit, as the
profile's rules), the rest at no rule.  Channel rates are raised to 40 Gbit/s
so the schedulers meter every frame but never hold one back: the benchmark
measures the cost of the pipeline, as RFC 2544 throughput does.

Cases (each measured in rounds, the peer between our windows):
  ds     downstream only, iMix 84/256/1280 B at 15/10/75 %
  us     upstream only, iMix 84/256/1280 B at 65/18/17 %, bursts of 8 frames
         in 1500-byte UEPI packets (frames cut across packets)
  bidir  both at once (the two workers share a core, the generator has the
         other): cycles per frame of each direction with the other running

Per core = frames per CPU-second of the worker's thread (/proc), so a
neighbour's load on the shared cores does not count against us; cycles per
frame = TSC Hz over that.  Stage cycles are the engine's TSC per stage per
frame, scaled to add up to it (bench.bng_bench.summarize says why).

Peer: DPDK's dpdk-test-crypto-perf (scripts/peers/crypto_perf.sh builds it
from Debian's source package), throughput test, crypto_aesni_mb, DOCSIS
protocol (CRC-32 + AES-128 DOCSIS BPI), the same key size, buffers of our
17-byte downstream MAC header plus the frame (101, 273, 1297 B), the same
iMix, bursts of 32.  Its Cycles/Buf is TSC over wall time; it is scaled by
the CPU share its worker thread got during the run (/proc, sampled), the
same per-CPU-second footing as ours.  The upstream peer is the same in the
decrypt direction (the CMTS's CRC check) with the upstream iMix and the
6-byte upstream header (BPI EH v2 is 4 bytes: 6 + 4 = 10 B).

ratios.ds_vs_crypto_only = our downstream cycles per frame over the peer's
cycles per buffer at the downstream iMix (goal 1.25: everything but the
crypto costs a quarter of it).  metrics.bidir_gbps_per_core = downstream and
upstream bits per core at the mix of Intel's vCMTS reference data plane
benchmarks (upstream at least 10 % of downstream traffic), from the bidir case's cycles per frame.
"""
import math
import re
import statistics
import subprocess
import time
from pathlib import Path

from bench import ab, common
from bench.bng_bench import summarize
from bench.bng_measure import Window, find_threads, rate, thread_cpu
from lab.cmts_lab import SgProfile, inproc_sections
from lab.dp import Dp

PEERS = common.ROOT / "build" / "peers"
CRYPTO_PERF = PEERS / "crypto-perf" / "dpdk-test-crypto-perf"
CRYPTO_PERF_SCRIPT = common.ROOT / "scripts" / "peers" / "crypto_perf.sh"

DS_MIX = ((84, 15), (256, 10), (1280, 75))
US_MIX = ((84, 65), (256, 18), (1280, 17))
DS_HDR = 17        # 6 + BPI EH (5) + DS EH with the bonded flow's sequence (6)
US_HDR = 10        # 6 + BPI EH version 2 (4)
US_SHARE = 0.10    # upstream traffic per downstream traffic (bits), Intel vCMTS's
LCORES = "0@0,1@1,2@0,3@0"   # main, gen on cpu 1; ds and us on cpu 0
WORKER_THREADS = {"gen": "rte-worker-1", "ds": "rte-worker-2", "us": "rte-worker-3"}
# The generator is slower than the worker it feeds (it writes every byte of
# every frame into lines the worker owned last), so the measured worker runs
# dry and pauses.  Each pause is a nanosleep whose kernel time (timer
# programming, two context switches: ~5 us of CPU in this KVM guest) counts
# in the thread's CPU time, though a saturated data plane never pays it: with
# the engine's default 1 us first pause the downstream paused ~9000 times a
# second and the kernel's share was ~17 % of its samples (perf).  Pauses of
# 50-400 us keep that out of the per-frame figure; the net_ring holds 1024
# frames, 400 us of the generator's output, so nothing is lost meanwhile.
IDLE_SLEEP = {"min_sleep_us": 50, "max_sleep_us": 400}
# Where the workers find their input: in the shared L3, as a NIC's DMA
# leaves received frames where the platform injects I/O writes into the LLC
# (Intel's DDIO, AMD's SDCI), not in the generator's core's L1/L2 in the
# Modified state, which is what a packet handed over at once is.  The
# generator holds each packet back until enough newer ones were written to
# fill twice its core's L2 (gen_hold_pkts below: 2048 on Zen's 1 MiB L2,
# ~2.3 MB of downstream frames and mbufs; 3262 on a 2 MiB L2): its L2 has
# written the packet back to L3 by then (cmts_gen.c says more,
# docs/cmts.md has the measurement).  Not warmer than DDIO: nothing is in
# the worker's own L1/L2, and the mbuf's first line, which a NIC's rx
# routine writes on the worker's core, arrives from L3 as well.
GEN_INPUT = {"poll_policy": "busy"}
GEN_CPU = 1                  # the generator's CPU in LCORES
HOLD_MIN, HOLD_MAX = 2048, 4096   # cmts_gen.c refuses more than 4096 (GEN_MAX_HOLD)
MBUF_OVERHEAD = 128 + 32 + 128    # rte_mbuf, private area (EP_META_SIZE), headroom: bytes a held packet


def l2_bytes(cpu=GEN_CPU):
    """The L2 size of `cpu` from sysfs (None when the kernel does not say)."""
    base = Path(f"/sys/devices/system/cpu/cpu{cpu}/cache")
    for idx in sorted(base.glob("index*")):
        try:
            if (idx / "level").read_text().strip() != "2":
                continue
            size = (idx / "size").read_text().strip()
        except OSError:
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
    return None


def gen_hold_pkts(l2=None):
    """Packets the generator holds back: twice its core's L2 of downstream
    frames (the iMix mean) and their mbufs, within cmts-gen's bounds."""
    l2 = l2 if l2 is not None else l2_bytes()
    if not l2:
        return HOLD_MIN
    per_pkt = mean_size(DS_MIX) + MBUF_OVERHEAD
    return max(HOLD_MIN, min(HOLD_MAX, math.ceil(2 * l2 / per_pkt)))


def mean_size(mix):
    return sum(s * w for s, w in mix) / sum(w for _, w in mix)


def ensure_crypto_perf():
    res = subprocess.run([str(CRYPTO_PERF_SCRIPT)], capture_output=True, text=True)
    if res.returncode != 0 or not CRYPTO_PERF.exists():
        raise RuntimeError("scripts/peers/crypto_perf.sh failed (run `make peers`): "
                           + (res.stdout + res.stderr)[-2000:])


# ---- ours -------------------------------------------------------------------

class Ours(ab.DpProcess):
    """edgeplane-dp with the in-process SG under SIGSTOP/SIGCONT control."""

    label = "ours"

    def __init__(self, work, quick, binary=None, engine=None, gen=None):
        self.work = work
        self.dp = self.proc = Dp(None, None, name="cmts", workdir=work, start_timeout=180,
                                 ctl_timeout=30, log=print, binary_path=binary)
        self.dp.sections = inproc_sections(SgProfile(ch_rate="40G"), work, self.dp.ctl_path,
                                           lcores=LCORES,
                                           gen={"ds": "off", "us": "off", **GEN_INPUT,
                                                "hold_pkts": gen_hold_pkts(),
                                                **(gen or {})},
                                           memory="hugepages")
        self.dp.sections["engine"].update(IDLE_SLEEP, **(engine or {}))

    def _ready(self):
        self.pid = self.dp.pid
        st = self.dp.ctl("stats")
        self.hz = st["tsc_hz"]
        self.tids = find_threads(self.pid, list(WORKER_THREADS.values()))
        return self

    def set_case(self, case):
        self.dp.ctl("cmts-gen-set", ds="on" if case in ("ds", "bidir") else "off",
                    us="on" if case in ("us", "bidir") else "off")

    def _snapshot(self):
        out = {}
        for w in self.dp.ctl("stages")["workers"]:
            out[w["name"]] = {"rx": w["rx_pkts"], "tx": w["tx_pkts"],
                              "stages": {s["name"]: (s["cycles"], s["pkts_in"],
                                                     sum(s.get("drops", {}).values()))
                                         for s in w["stages"]},
                              "busy": w["busy_cycles"], "idle": w["idle_cycles"],
                              "rx_pkts": w["rx_pkts"], "polls": w["polls"] - w["empty_polls"]}
        return out

    def measure(self, seconds):
        """{ds: {...}, us: {...}}: frames per CPU-second, per-stage TSC cycles
        per frame.  Downstream frames are what the worker received (a DEPI
        packet carries several); upstream frames what it forwarded (a UEPI
        packet carries several)."""
        tids = {n: self.tids[t] for n, t in WORKER_THREADS.items()}
        r = Window(self.pid, tids, self._snapshot).run(seconds)
        res = {}
        for name, field in (("ds", "rx"), ("us", "tx")):
            a, b = r["c0"][name], r["c1"][name]
            frames = b[field] - a[field]
            cpu = r["cpu_s"][name]
            stages, drops = {}, 0
            for sname, (cyc, _, pdrop) in b["stages"].items():
                c0, _, d0 = a["stages"].get(sname, (0, 0, 0))
                stages[sname] = (cyc - c0) / frames if frames else 0.0
                drops += pdrop - d0
            rx = b["rx_pkts"] - a["rx_pkts"]
            busy, idle = b["busy"] - a["busy"], b["idle"] - a["idle"]
            polls = b["polls"] - a["polls"]
            res[name] = {"mpps_per_core": rate(frames, cpu), "mpps_wall": rate(frames, r["wall_s"]),
                         "rx_mpps_per_core": rate(rx, cpu),
                         # The worker's loop iterations that found nothing,
                         # as a share of its TSC, and packets per rx burst
                         # that found any: a worker its generator starves
                         # shows in both (bench.bng_bench.summarize).
                         "idle_share": idle / (idle + busy) if idle + busy else 0.0,
                         "rx_burst": rx / polls if polls > 0 else 0.0,
                         "cpu_s": cpu, "frames": frames, "drops": drops,
                         "cycles_per_pkt": (b["busy"] - a["busy"]) / frames if frames else 0.0,
                         "stages": stages}
        res["gen_cpu_s"] = r["cpu_s"]["gen"]
        res["wall_s"] = r["wall_s"]
        return res

    def counters(self):
        return self.dp.ctl("cmts-stats"), self.dp.ctl("cmts-gen-stats")


# ---- the peer ---------------------------------------------------------------

def crypto_perf(sizes, imix=None, decrypt=False, hdr=DS_HDR, ops=3_000_000, burst=32):
    """One dpdk-test-crypto-perf run: {buffer size or "imix": cycles per
    buffer}, scaled by the CPU share its worker thread got."""
    # --no-telemetry: DPDK's telemetry probes the default runtime directory's
    # socket, which our (SIGSTOPped) process holds, and the connect would
    # wait for it for ever.
    cmd = [str(CRYPTO_PERF), "-l", "0,1", "--in-memory", "--no-telemetry",
           "--vdev", "crypto_aesni_mb_peer",
           "--log-level", "*:error", "--",
           "--ptest", "throughput", "--devtype", "crypto_aesni_mb", "--optype", "docsis",
           "--cipher-algo", "aes-docsisbpi", "--cipher-op", "decrypt" if decrypt else "encrypt",
           "--cipher-key-sz", "16", "--cipher-iv-sz", "16", "--docsis-hdr-sz", str(hdr),
           "--buffer-sz", ",".join(str(s + hdr) for s in sizes), "--burst-sz", str(burst),
           "--total-ops", str(ops)]
    if imix:
        cmd += ["--imix", ",".join(str(w) for w in imix)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    share = _cpu_share(proc.pid)
    out, _ = proc.communicate(timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"dpdk-test-crypto-perf failed ({proc.returncode}): {out[-1500:]}")
    rows = {}
    for line in out.splitlines():
        f = line.split()
        # lcore, buf size, burst, enq, deq, failed enq, failed deq, MOps, Gbps, Cycles/Buf
        if len(f) == 10 and all(re.fullmatch(r"[0-9.]+", x) for x in f):
            if int(f[4]) != int(f[3]) or int(f[5]) or int(f[6]):
                raise RuntimeError(f"dpdk-test-crypto-perf: failed operations: {line}")
            key = "imix" if imix else int(f[1]) - hdr
            rows[key] = float(f[9]) * share
    if not rows:
        raise RuntimeError("dpdk-test-crypto-perf printed no results:\n" + out[-1500:])
    return rows, share


def _cpu_share(pid, name="rte-worker-1", period=0.05):
    """CPU seconds / wall seconds of a process's worker thread while it
    worked: from the first sample where its CPU time grew to the last (it
    idles while the main thread sets up, and is gone before the process)."""
    tid, samples = None, []
    while True:
        try:
            if tid is None:
                tid = find_threads(pid, [name])[name]
            samples.append((time.monotonic(), thread_cpu(pid, tid)))
        except (RuntimeError, OSError, ValueError, IndexError):
            if tid is not None or _gone(pid):
                break
            time.sleep(0.01)
            continue
        time.sleep(period)
    grew = [i for i in range(1, len(samples)) if samples[i][1] > samples[i - 1][1]]
    if not grew:
        raise Starved("the worker thread never ran")
    a, b = samples[grew[0] - 1], samples[grew[-1]]
    if b[1] - a[1] < 0.1:
        # The scheduler's tick is 10 ms: too little CPU time to tell.
        raise Starved(f"worker thread ran {b[1] - a[1]:.2f} CPU-s in {b[0] - a[0]:.2f} s")
    return min(1.0, (b[1] - a[1]) / (b[0] - a[0]))


class Starved(RuntimeError):
    pass


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def retried(fn, *a, **kw):
    for i in range(3):
        try:
            return fn(*a, **kw)
        except Starved as exc:
            if i == 2:
                raise
            print(f"  (crypto-perf: {exc}; again)")
            time.sleep(2)


def peer_round(quick):
    ops = 3_000_000 if quick else 8_000_000
    imix, s1 = retried(crypto_perf, [s for s, _ in DS_MIX], imix=[w for _, w in DS_MIX], ops=ops)
    sizes, s2 = retried(crypto_perf, [s for s, _ in DS_MIX], ops=ops)
    up, s3 = retried(crypto_perf, [s for s, _ in US_MIX], imix=[w for _, w in US_MIX],
                     decrypt=True, hdr=US_HDR, ops=ops)
    return {"ds_imix": imix["imix"], "ds_sizes": sizes, "us_imix": up["imix"],
            "cpu_share": round(min(s1, s2, s3), 3)}


# ---- the run ----------------------------------------------------------------

def bits_per_core(c_ds, c_us, hz, share=US_SHARE):
    """Gbit/s per core with upstream traffic `share` of downstream's (bits),
    from cycles per frame of each direction."""
    b_ds, b_us = mean_size(DS_MIX) * 8, mean_size(US_MIX) * 8
    cyc_per_bit = (c_ds / b_ds + share * c_us / b_us) / (1 + share)
    return hz / cyc_per_bit / 1e9


def run(args):
    quick = getattr(args, "quick", False)
    rounds, seconds, warmup = (2, 1.0, 0.5) if quick else (5, 2.0, 1.0)
    ensure_crypto_perf()
    work = common.OUT / "cmts"
    work.mkdir(parents=True, exist_ok=True)
    med = statistics.median
    cases, peer_rounds, ratios_ds, ratios_us = {}, [], [], []
    crypto = ab.Call("crypto-perf", lambda: peer_round(quick),
                   lambda p: f"{p['ds_imix']:.0f} cycles/buf (DS iMix)")
    with Ours(work, quick) as ours:
        hz = ours.hz
        for case in ("ds", "us", "bidir"):
            print(f"-- {case}")
            ours.set_case(case)
            with_peer = case == "ds" or (case == "us" and not quick)
            rr = ab.alternate([ours, crypto] if with_peer else [ours], rounds, warmup_s=warmup,
                              window_s=seconds)
            res = rr[ours]
            if with_peer:
                peer_rounds += rr[crypto]
                # Cycles per frame, ours over the peer's, round by round.
                (ratios_ds if case == "ds" else ratios_us).extend(
                    hz / (o[case]["mpps_per_core"] * 1e6) / p[f"{case}_imix"]
                    for o, p in zip(res, rr[crypto]) if o[case]["mpps_per_core"])
            out = {}
            for d in ("ds", "us"):
                if case != "bidir" and d != case:
                    continue
                s = summarize(res, d, hz)
                # Each round's TSC cycles per frame by stage, beside its
                # windows' Mpps: which stages move from round to round.
                s["stage_rounds"] = [{k: round(v, 1) for k, v in r[d]["stages"].items()}
                                     for r in res]
                s["gbps_per_core"] = s["mpps_per_core"] * mean_size(DS_MIX if d == "ds"
                                                                     else US_MIX) * 8 / 1e3
                out[d] = s
            out["generator_cpu_s"] = round(med(r["gen_cpu_s"] for r in res), 3)
            stats, gen = ours.counters()
            out["counters"] = {"cmts": stats, "gen": gen}
            cases[case] = out
    ds, us, bd = cases["ds"]["ds"], cases["us"]["us"], cases["bidir"]
    peer = {"ds_imix_cycles_per_buf": med(p["ds_imix"] for p in peer_rounds),
            "us_imix_cycles_per_buf": med(p["us_imix"] for p in peer_rounds),
            "cycles_per_buf": {str(s): med(p["ds_sizes"][s] for p in peer_rounds)
                               for s, _ in DS_MIX},
            "worker_cpu_share_min": min(p["cpu_share"] for p in peer_rounds),
            "rounds": len(peer_rounds)}
    peer["mpps_per_core"] = hz / peer["ds_imix_cycles_per_buf"] / 1e6
    bidir = bits_per_core(bd["ds"]["cycles_per_pkt"], bd["us"]["cycles_per_pkt"], hz)
    ghz = hz / 1e9
    metrics = {
        "mpps_per_core": ds["mpps_per_core"], "cycles_per_pkt": ds["cycles_per_pkt"],
        "stages": ds["stages"],
        "ds_mpps_per_core": ds["mpps_per_core"], "ds_gbps_per_core": ds["gbps_per_core"],
        "us_mpps_per_core": us["mpps_per_core"], "us_gbps_per_core": us["gbps_per_core"],
        "us_cycles_per_pkt": us["cycles_per_pkt"], "us_stages": us["stages"],
        "bidir_gbps_per_core": bidir,
        "bidir_gbps_per_core_ghz": bidir / ghz,
    }
    ratios = {
        "ds_vs_crypto_only": med(ratios_ds),
        "vs_dpdk-test-crypto-perf": med(ratios_ds),
    }
    ratio_rounds = {"ds_vs_crypto_only": [round(x, 4) for x in ratios_ds]}
    comparisons = [common.comparison(
        "ds", ds["cycles_per_pkt"], "dpdk-test-crypto-perf", peer["ds_imix_cycles_per_buf"],
        "ds_vs_crypto_only", ratios["ds_vs_crypto_only"], metric="cycles_per_pkt",
        unit="cycles/frame", higher_is_better=False, stages_of="cases.ds.ds")]
    if ratios_us:
        ratios["us_vs_crypto_only"] = med(ratios_us)
        ratio_rounds["us_vs_crypto_only"] = [round(x, 4) for x in ratios_us]
        comparisons.append(common.comparison(
            "us", us["cycles_per_pkt"], "dpdk-test-crypto-perf", peer["us_imix_cycles_per_buf"],
            "us_vs_crypto_only", ratios["us_vs_crypto_only"], metric="cycles_per_pkt",
            unit="cycles/frame", higher_is_better=False, stages_of="cases.us.us"))
    return common.result(
        "cmts",
        config={"profile": "300 CMs x 4 CPE addresses, 6 filter groups x 16 rules (2 per CM), "
                           "16 classifiers and 8 SFs per CM, 6 OFDM channels in 2 bonding "
                           "groups, 100 % AES-128, CRC on every frame",
                "channel_rate": "40G (schedulers meter, never hold)",
                "ds_imix": "84:15,256:10,1280:75", "us_imix": "84:65,256:18,1280:17",
                "ds_share": "10 % of flows at a classifier, 10 % at a filter rule",
                "us_bursts": "8 frames per burst, 1500-byte UEPI packets",
                "input": "cmts-gen -> net_ring -> worker -> net_null, one process",
                "lcores": LCORES, "tsc_hz": hz,
                "gen_hold_pkts": gen_hold_pkts(), "gen_cpu_l2_bytes": l2_bytes(), "rounds": rounds, "window_s": seconds,
                "quick": quick, "per_core": "frames per CPU-second of the worker thread",
                "bidir_mix": f"upstream {US_SHARE:.0%} of downstream bits"},
        metrics=metrics,
        peers={"dpdk-test-crypto-perf": peer},
        ratios=ratios,
        extra={"cases": cases, "comparisons": comparisons, "ratio_rounds": ratio_rounds,
               "reference": {"intel_vcmts_per_sg_bidir_gbps": 7.32, "vcpus": 3, "ghz": 2.4,
                             "per_vcpu_gbps": round(7.32 / 3, 3),
                             "per_vcpu_ghz_gbps": round(7.32 / 3 / 2.4, 3)}})
