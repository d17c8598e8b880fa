"""The compressed day of `make bench BENCH=power` as a picture.

    .venv/bin/python -m bench.power_plot [build/bench/power.json] [out.png]

Three panels per DUT (router, BNG uplink): the load by hour (fraction of
the zero-loss rate), the DUT worker's CPU time per second of each policy
(the power proxy; RAPL watts when the JSON has them), and the sink's p99
latency.  docs/power.md shows the router's and the uplink's.
"""
import json
import sys
from pathlib import Path

from bench.common import OUT

COLORS = {"busy": "#444444", "sleep": "#1f77b4", "sleep-rx": "#2ca02c", "dpdk-pmgmt": "#d62728"}


def plot(result, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    days = result["metrics"]["day"]
    policies = list(result["config"]["policies"])
    fig, axes = plt.subplots(3, len(days), figsize=(6.5 * len(days), 8.5), sharex=True,
                             squeeze=False)
    for col, (dut, day) in enumerate(days.items()):
        hours = [r["hour"] for r in day["hours"]]
        ax_load, ax_cpu, ax_lat = axes[0][col], axes[1][col], axes[2][col]
        ax_load.bar(hours, [r["load"] * 100 for r in day["hours"]], color="#bbbbbb")
        ax_load.set_ylabel("load, % of zero-loss rate")
        ax_load.set_title(f"{dut}: a day compressed, "
                          f"{result['metrics'][f'zero_loss_pps_{dut}']} pps = 100 %")
        for p in policies:
            c = COLORS.get(p)
            ax_cpu.plot(hours, [r[p]["cpu"] for r in day["hours"]], marker="o", ms=3, color=c,
                        label=f"{p} ({day['cpu_seconds'][p] / 3600:.2f} CPU-h/day)")
            ax_lat.plot(hours, [r[p]["p99_us"] / 1000 for r in day["hours"]], marker="o",
                        ms=3, color=c, label=p)
        ax_cpu.set_ylabel("DUT worker CPU time, s/s")
        ax_cpu.legend(fontsize=8)
        ax_lat.set_ylabel("sink p99 latency, ms")
        ax_lat.set_yscale("log")
        ax_lat.set_xlabel("hour of the day")
        ax_lat.set_xticks(range(0, 24, 3))
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def plots(result, out_dir):
    """bench/report.py's hook: the plots of this benchmark beside its report."""
    return [plot(result, Path(out_dir) / f"{result['name']}-day.png")]


def main(argv):
    src = Path(argv[0]) if argv else OUT / "power.json"
    out = Path(argv[1]) if len(argv) > 1 else OUT / "power-day.png"
    print(plot(json.loads(src.read_text()), out))


if __name__ == "__main__":
    main(sys.argv[1:])
