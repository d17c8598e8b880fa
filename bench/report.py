"""Benchmark results as a person reads them: aligned tables on the terminal,
a Markdown report with plots beside each JSON, and an index of the reports.

    .venv/bin/python -m bench.report                 # every build/bench/*.json
    .venv/bin/python -m bench.report build/bench/router.json --out /tmp/r

Everything is rendered from the JSON files alone (no benchmark runs), so a
result copied from another machine renders the same.  The shape is
bench/common.py's (name, config, metrics, peers, ratios, and host,
comparisons, ratio_rounds); the renderer knows no benchmark by name.  It shows:

- ours against the peer per case: `comparisons` (case, figure, ours, peer,
  ratio), and any ratio no comparison names, on a row of its own;
- per-stage cycles per packet: every dict in the result that has a
  "stages" dict of numbers (a case, a direction, the headline), one row
  each, the stages in columns;
- everything else -- metrics, config, peers, keys a benchmark adds later --
  as dotted-key tables, nested dicts flattened a few levels deep and long
  lists summarised (the JSON has them whole).

Plots (matplotlib, Agg): <name>-stages.png (cycles per packet per stage,
stacked bars per case) and <name>-vs-peer.png (ours and the peer per case,
per-round values as dots, the ratio above); a benchmark's own plots come
from bench/<name>_plot.py's plots(result, out_dir) when it has one, and
every other <name>-*.png beside the report is linked too.
"""
import argparse
import importlib
import json
import sys
from pathlib import Path

from bench.common import OUT

MAX_DEPTH = 3          # flattening depth of the generic tables
# A dict's key naming, for its None values, why they were not measured.
NOT_APPLICABLE = "not_applicable"
MAX_LIST = 12          # longer lists are summarised


# ---- values and tables ------------------------------------------------------

def fmt(v):
    """A number as a person reads it: 3 decimals below 100, 1 below 10^4."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        a = abs(v)
        if a >= 1e4:
            return f"{v:.0f}"
        if a >= 100:
            return f"{v:.1f}"
        if a >= 0.001 or a == 0:
            return f"{v:.3f}"
        return f"{v:.2e}"
    if isinstance(v, list):
        if len(v) <= MAX_LIST and all(not isinstance(x, (dict, list)) for x in v):
            return ", ".join(fmt(x) for x in v)
        return f"({len(v)} values, see the JSON)"
    if isinstance(v, dict):
        return f"({len(v)} entries, see the JSON)"
    return str(v)


def aligned(headers, rows, numeric=None):
    """A text table, columns padded; numeric columns right-aligned."""
    cells = [[fmt(c) if not isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h))
              for i, h in enumerate(headers)]
    numeric = numeric if numeric is not None else [
        i > 0 and all(not isinstance(r[i], str) or r[i] == "-" for r in rows)
        for i in range(len(headers))]

    def line(cols):
        return "  ".join(c.rjust(w) if numeric[i] else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cols, widths))).rstrip()
    out = [line([str(h) for h in headers]), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


def markdown(headers, rows):
    cells = [[(fmt(c) if not isinstance(c, str) else c).replace("|", "\\|") for c in r]
             for r in rows]
    out = ["| " + " | ".join(str(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in cells]
    return "\n".join(out)


def flatten(obj, prefix="", depth=MAX_DEPTH):
    """[(dotted key, value)] of a nested dict, dicts below `depth` and long
    lists left as one summarised value.  A dict's `not_applicable` ({key:
    reason}) is shown on the keys it names, "n/a: reason" for their None,
    not as a row of its own."""
    rows = []
    na = obj.get(NOT_APPLICABLE) if isinstance(obj.get(NOT_APPLICABLE), dict) else {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if na and k == NOT_APPLICABLE:
            continue
        if v is None and k in na:
            rows.append((key, f"n/a: {na[k]}"))
            continue
        if isinstance(v, dict) and v and depth > 1:
            rows += flatten(v, key + ".", depth - 1)
        else:
            rows.append((key, v))
    return rows


def _deep(v):
    return isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, (dict, list))
                                                                 for x in v))


def key_values(obj, depth=MAX_DEPTH):
    """flatten() without what is nested deeper than a table shows: those
    keys are named on a last row, pointing at the JSON."""
    rows = flatten(obj, depth=depth)
    deeper = [k for k, v in rows if _deep(v)]
    rows = [(k, v) for k, v in rows if not _deep(v)]
    if deeper:
        shown = ", ".join(deeper[:8]) + (f" and {len(deeper) - 8} more" if len(deeper) > 8 else "")
        rows.append(("(nested, in the JSON)", shown))
    return rows


# ---- what the result holds --------------------------------------------------

def stage_rows(r):
    """[(label, cycles_per_pkt, {stage: cycles})] of every dict in the
    result with a "stages" dict of numbers; metrics' own (the headline
    case again) only when nothing else has stages."""
    rows = []

    def walk(obj, path):
        if not isinstance(obj, dict):
            return
        st = obj.get("stages")
        if isinstance(st, dict) and st and all(isinstance(v, (int, float)) for v in st.values()):
            rows.append((path, obj.get("cycles_per_pkt"), st))
        for k, v in obj.items():
            if k not in ("stages", "stages_tsc") and isinstance(v, dict):
                walk(v, f"{path}.{k}" if path else k)

    for k, v in r.items():
        if k not in ("metrics", "config", "host", "peers"):
            walk(v, k)
    if not rows:
        walk(r.get("metrics", {}), "metrics")
    return [(_stage_label(p), c, s) for p, c, s in rows]


def _stage_label(path):
    """A case's own name; a peer's stages (a result's `peer_stages`) as
    "<peer> (peer)", beside the cases they compare with."""
    if path.startswith("cases."):
        return path[len("cases."):]
    if path.startswith("peer_stages."):
        return path[len("peer_stages."):] + " (peer)"
    return path


def comparison_rows(r):
    """The comparisons, then every ratio none of them names (ours and the
    peer unknown: the ratio's key says what it compares)."""
    comps = [dict(c) for c in r.get("comparisons") or []]
    named = {c.get("ratio_key") for c in comps}
    for k, v in (r.get("ratios") or {}).items():
        if k not in named:
            comps.append({"case": "", "metric": k, "unit": "", "ours": None, "peer": "",
                          "peer_value": None, "ratio_key": k, "ratio": v})
    return comps


def host_line(r):
    h = r.get("host")
    if not h:
        return r.get("machine", "host not recorded")
    flags = [f for f, on in (h.get("flags") or {}).items() if on and f.startswith("avx")]
    fam = (f" (family {h['cpu_family']} model {h['cpu_model_number']})"
           if h.get("cpu_family", -1) not in (-1, None) else "")
    return (f"{h.get('cpu_model')}{fam}; {h.get('cpus')} CPUs; "
            f"{' '.join(flags) if flags else 'no AVX2/AVX-512'}; kernel {h.get('kernel')}"
            + (f"; DPDK {h['dpdk']}" if h.get("dpdk") else "")
            + (f"; load {h['loadavg'][0]:.1f}" if h.get("loadavg") else ""))


def _figure(c):
    fig = c.get("unit") or c.get("metric") or ""
    return fig + (" (lower is better)" if c.get("higher_is_better") is False else "")


def _ratio_cell(c):
    if c.get("ratio") is None:
        return "-"
    return fmt(c["ratio"]) + (f" ({c['ratio_key']})" if c.get("ratio_key") else "")


def _stage_table(rows):
    names = []
    for _, _, st in rows:
        names += [s for s in st if s not in names]
    def c(v):
        return f"{v:.1f}" if isinstance(v, (int, float)) else "-"
    return (["case", "cycles/pkt"] + names,
            [[label, c(tot)] + [c(st.get(s)) for s in names] for label, tot, st in rows])


def _case_table(cases):
    """One row per case, a column per scalar figure (two levels deep)."""
    flat = {c: [(k, v) for k, v in flatten(d, depth=2)
                if not isinstance(v, (dict, list)) and "stages" not in k]
            for c, d in cases.items()}
    cols = []
    for rows in flat.values():
        cols += [k for k, _ in rows if k not in cols]
    return (["case"] + cols,
            [[c] + [dict(rows).get(k) for k in cols] for c, rows in flat.items()])


def _scalars(d):
    """Top-level and nested scalar metrics, without the stages (shown apart)."""
    return key_values({k: v for k, v in d.items() if k not in ("stages", "stages_tsc")})


def table(r):
    """The terminal form: comparisons, stages, the other metrics."""
    out = [f"== {r.get('name')}: {host_line(r)}"]
    comps = comparison_rows(r)
    if comps:
        out.append(aligned(["case", "figure", "ours", "peer", "peer's", "ratio"],
                           [[c.get("case") or "", _figure(c), c.get("ours"), c.get("peer") or "",
                             c.get("peer_value"), _ratio_cell(c)] for c in comps],
                           numeric=[False, False, True, False, True, False]))
    st = stage_rows(r)
    if st:
        headers, rows = _stage_table(st)
        out += ["", "cycles per packet, per stage",
                aligned(headers, rows, numeric=[False] + [True] * (len(headers) - 1))]
    m = _scalars(r.get("metrics") or {})
    if m:
        out += ["", "metrics", aligned(["key", "value"], m, numeric=[False, False])]
    return "\n".join(out)


# ---- plots ----------------------------------------------------------------------

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_stages(rows, path, title):
    """Stacked horizontal bars: cycles per packet per stage, one bar a case."""
    plt = _plt()
    from matplotlib.patches import Patch
    headers, table_rows = _stage_table(rows)
    names = headers[2:]
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.45 * max(len(rows), len(names) / 3)))
    cmap = plt.get_cmap("tab20")
    labels = [row[0] for row in table_rows]
    left = [0.0] * len(rows)
    # Each bar stacks its own stages in its own order (a peer's differ from
    # ours), a stage's colour the same in every bar.
    for y, (_, _, st) in enumerate(rows):
        for s, v in st.items():
            ax.barh(labels[y], v or 0.0, left=left[y], color=cmap(names.index(s) % 20))
            left[y] += v or 0.0
    for y, tot in enumerate(left):
        ax.text(tot, y, f" {tot:.0f}", va="center", fontsize=8)
    ax.set_xlim(0, max(left + [1.0]) * 1.12)
    ax.invert_yaxis()
    ax.set_xlabel("cycles per packet (the bar's number: the stages' sum)")
    ax.set_title(title, fontsize=10)
    ax.legend(handles=[Patch(color=cmap(i % 20), label=s) for i, s in enumerate(names)],
              fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
              ncol=1 if len(names) <= 12 else 2)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_vs_peer(comps, path, title):
    """Ours and the peer per case, one panel per unit; the rounds as dots."""
    plt = _plt()
    units = []
    for c in comps:
        if c.get("unit") not in units:
            units.append(c.get("unit"))
    fig, axes = plt.subplots(1, len(units), figsize=(max(5, 3.2 * len(comps)), 4),
                             squeeze=False)
    for ax, unit in zip(axes[0], units):
        cs = [c for c in comps if c.get("unit") == unit]
        xs = range(len(cs))
        for off, key, rounds_key, color, label in (
                (-0.2, "ours", "ours_rounds", "#2ca02c", "ours"),
                (0.2, "peer_value", "peer_rounds", "#7f7f7f", "peer")):
            ax.bar([x + off for x in xs], [c[key] for c in cs], width=0.38, color=color,
                   label=label)
            for x, c in zip(xs, cs):
                pts = c.get(rounds_key) or []
                ax.plot([x + off] * len(pts), pts, "k.", ms=4)
        for x, c in zip(xs, cs):
            top = max(c["ours"], c["peer_value"])
            if c.get("ratio") is not None:
                ax.text(x, top * 1.02, f"x{c['ratio']:.2f}", ha="center", fontsize=9)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{c.get('case') or c.get('metric')}\nvs {c.get('peer')}"
                            for c in cs], fontsize=7)
        ax.set_ylabel(unit or "")
        ax.set_ylim(0, max(max(c["ours"], c["peer_value"]) for c in cs) * 1.15)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# ---- the report -------------------------------------------------------------------

def _plot_hook(name):
    """plots(result, out_dir) of bench/<name>_plot.py, if the benchmark has
    plots of its own (power: the compressed day)."""
    try:
        mod = importlib.import_module(f"bench.{name.replace('-', '_')}_plot")
    except ImportError:
        return None
    return getattr(mod, "plots", None)


def render(json_path, out_dir=None):
    """<name>.md and its plots in out_dir (default: beside the JSON; a
    copy of the JSON goes there otherwise)."""
    json_path = Path(json_path)
    r = json.loads(json_path.read_text())
    name = r.get("name") or json_path.stem
    out_dir = Path(out_dir) if out_dir else json_path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    if out_dir.resolve() != json_path.parent.resolve():
        # The report's directory holds its JSON too (what the index reads).
        (out_dir / f"{name}.json").write_text(json_path.read_text())
    md = [f"# Benchmark `{name}`", "",
          f"From `{json_path.name}`, written {r.get('written', '(time not recorded)')}. "
          f"Host: {host_line(r)}.", ""]
    if r.get("config", {}).get("quick"):
        md += ["**A `--quick` smoke run: its figures are not measurements.**", ""]
    comps = comparison_rows(r)
    plotted = [c for c in comps if isinstance(c.get("ours"), (int, float))
               and isinstance(c.get("peer_value"), (int, float))]
    if comps:
        md += ["## Ours against the peers", "",
               markdown(["case", "figure", "ours", "peer", "peer's", "ratio"],
                        [[c.get("case") or "", _figure(c), c.get("ours"), c.get("peer") or "",
                          c.get("peer_value"), _ratio_cell(c)] for c in comps]), ""]
        if plotted:
            png = plot_vs_peer(plotted, out_dir / f"{name}-vs-peer.png", f"{name}: ours and the peer")
            md += [f"![ours against the peer]({png.name})", ""]
    rr = r.get("ratio_rounds") or {}
    if rr:
        md += ["Ratios per round (each round's pair measured back to back; the ratio is "
               "their median):", "",
               markdown(["ratio", "rounds"], [[k, v] for k, v in rr.items()]), ""]
    st = stage_rows(r)
    if st:
        headers, rows = _stage_table(st)
        png = plot_stages(st, out_dir / f"{name}-stages.png", f"{name}: cycles per packet per stage")
        md += ["## Cycles per packet, per stage", "", markdown(headers, rows), "",
               f"![cycles per packet per stage]({png.name})", ""]
    cases = r.get("cases")
    if isinstance(cases, dict) and cases and all(isinstance(v, dict) for v in cases.values()):
        headers, rows = _case_table(cases)
        if len(headers) > 1:
            md += ["## Cases", "", markdown(headers, rows), ""]
    hook = _plot_hook(name)
    if hook is not None:
        hook(r, out_dir)
    own = sorted(p for p in out_dir.glob(f"{name}-*.png")
                 if p.name not in (f"{name}-vs-peer.png", f"{name}-stages.png"))
    if own:
        md += ["## Other plots", ""] + [f"![{p.stem}]({p.name})" for p in own] + [""]
    for title, key in (("Metrics", "metrics"), ("Peers", "peers"), ("Configuration", "config"),
                       ("Host", "host")):
        rows = key_values(r.get(key) or {})
        if rows:
            md += [f"## {title}", "", markdown(["key", "value"], rows), ""]
    rest = {k: v for k, v in r.items() if k not in (
        "name", "machine", "host", "written", "config", "metrics", "peers", "ratios",
        "comparisons", "ratio_rounds", "cases")}
    if rest:
        md += ["## More", "", markdown(["key", "value"], key_values(rest)), ""]
    path = out_dir / f"{name}.md"
    path.write_text("\n".join(md))
    return path


def index(out_dir=None):
    """index.md: one line per report in out_dir, with its headline ratios."""
    out_dir = Path(out_dir or OUT)
    rows = []
    for js in sorted(out_dir.glob("*.json")):
        try:
            r = json.loads(js.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(r, dict) or "metrics" not in r:
            continue
        name = r.get("name") or js.stem
        if not (out_dir / f"{name}.md").exists():
            continue
        ratios = ", ".join(f"{k} {fmt(v)}" for k, v in list((r.get("ratios") or {}).items())[:3])
        rows.append([f"[{name}]({name}.md)", r.get("written", "-"), ratios or "-",
                     (r.get("host") or {}).get("cpu_model", r.get("machine", "-")),
                     "quick" if (r.get("config") or {}).get("quick") else "full"])
    text = ["# Benchmark reports", "",
            "Rendered by `.venv/bin/python -m bench.report` from the JSON beside each "
            "report (`make bench` does it after each benchmark).", "",
            markdown(["benchmark", "written", "ratios", "CPU", "run"], rows), ""]
    path = out_dir / "index.md"
    path.write_text("\n".join(text))
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="*", help="result files (default: build/bench/*.json)")
    ap.add_argument("--out", help="directory for the reports (default: beside each JSON)")
    ap.add_argument("--table", action="store_true", help="print the terminal tables too")
    args = ap.parse_args(argv)
    paths = [Path(p) for p in args.json] or sorted(OUT.glob("*.json"))
    if not paths:
        print(f"bench.report: no JSON in {OUT}: run `make bench` first", file=sys.stderr)
        return 1
    dirs = set()
    for p in paths:
        md = render(p, args.out)
        dirs.add(md.parent)
        print(md)
        if args.table:
            print(table(json.loads(p.read_text())) + "\n")
    for d in sorted(dirs):
        print(index(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
