"""`make bench [BENCH=name]`: run one benchmark or all of them.

A benchmark is a module bench/bench_<name with - as _>.py that defines
`run(args) -> dict` returning the result shape of bench/common.py; this
runner writes build/bench/<name>.json (bench/common.write_result adds the
host), prints it as tables and renders its report with plots beside it,
then the index of every report (bench/report.py; `python -m bench.report`
re-renders them from the JSON without running anything).
"""
import argparse
import importlib
import json
import pkgutil
import sys

from bench import common, report


def available():
    import bench
    names = []
    for mod in pkgutil.iter_modules(bench.__path__):
        if mod.name.startswith("bench_"):
            names.append(mod.name[len("bench_"):].replace("_", "-"))
    return sorted(names)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench")
    ap.add_argument("name", nargs="?", default="all")
    ap.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    args = ap.parse_args(argv)
    names = available() if args.name == "all" else [args.name]
    failed = []
    for name in names:
        if name not in available():
            print(f"bench: unknown benchmark {name!r}; have: {', '.join(available())}")
            return 2
        mod = importlib.import_module("bench.bench_" + name.replace("-", "_"))
        print(f"== bench {name}")
        try:
            result = mod.run(args)
        except Exception as exc:  # report and go on with the others
            print(f"bench {name}: FAILED: {exc}")
            failed.append(name)
            continue
        result.setdefault("config", {}).setdefault("quick", args.quick)
        path = common.write_result(result)
        print(report.table(json.loads(path.read_text())))
        print(f"wrote {path}, report {report.render(path)}")
    if len(failed) < len(names):
        print(f"reports: {report.index(common.OUT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
