# Benchmark reports from the JSON in build/bench/ (bench/report.py):
#
#   make bench-report    <name>.md + plots beside each <name>.json, index.md
#
# `make bench` renders them as it goes; this re-renders without a benchmark
# run (after copying results in, or after a change to the renderer).

.PHONY: bench-report

bench-report: setup
	@$(PY) -m bench.report
