"""scripts/go-fuzz, the Go fuzz targets' runner in `make test`: a finding
fails at once; a run whose only failure is the engine's end-of-time
"context deadline exceeded" (golang/go#75804) passes; another failure of
the engine without a failing input (golang/go#56238) is retried once, and
a second one fails.  A stand-in for `go` prints what the real one prints
in each case."""
import os
import stat
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "go-fuzz"


def fake_go(tmp_path, outcomes):
    """A `go` that answers its Nth call with outcomes[N]: 'pass', 'finding'
    or 'engine'; it counts its calls in a file beside it."""
    calls = tmp_path / "calls"
    calls.write_text("0")
    go = tmp_path / "go"
    go.write_text(f"""#!/bin/sh
n=$(cat {calls}); echo $((n + 1)) > {calls}
case $(echo {' '.join(outcomes)} | cut -d' ' -f$((n + 1))) in
pass) echo "ok  	edgeplane/x	1.0s"; exit 0;;
finding) echo "--- FAIL: FuzzX"; echo "    Failing input written to testdata/fuzz/FuzzX/0b1c"; exit 1;;
deadline) echo "fuzz: elapsed: 10s, execs: 988608 (91374/sec)"; echo "--- FAIL: FuzzX (10.1s)"
  echo "    context deadline exceeded"; echo FAIL; echo "exit status 1"; exit 1;;
panic) echo "--- FAIL: FuzzX (0.1s)"; echo "    context deadline exceeded"; echo "panic: boom"; exit 1;;
*) echo "--- FAIL: FuzzX (10.1s)"; echo "    fuzzing process hung or terminated unexpectedly: exit status 2"; exit 1;;
esac
""")
    go.chmod(go.stat().st_mode | stat.S_IEXEC)
    return go, calls


def run(tmp_path, outcomes):
    go, calls = fake_go(tmp_path, outcomes)
    r = subprocess.run([str(SCRIPT), "./x", "FuzzX", "1"], env={**os.environ, "GO": str(go)},
                       capture_output=True, text=True, timeout=30)
    return r, int(calls.read_text())


def test_a_passing_target_passes_after_one_run(tmp_path):
    r, calls = run(tmp_path, ["pass"])
    assert r.returncode == 0 and calls == 1 and "ok" in r.stdout


def test_a_finding_fails_without_a_retry(tmp_path):
    r, calls = run(tmp_path, ["finding", "pass"])
    assert r.returncode == 1 and calls == 1
    assert "Failing input written to" in r.stdout


def test_the_end_of_time_deadline_alone_passes(tmp_path):
    r, calls = run(tmp_path, ["deadline", "finding"])
    assert r.returncode == 0 and calls == 1
    assert "no finding" in r.stdout and "execs: 988608" in r.stdout


def test_a_deadline_beside_a_panic_is_not_ignored(tmp_path):
    r, calls = run(tmp_path, ["panic", "engine"])
    assert r.returncode == 1 and calls == 2
    assert "panic: boom" in r.stdout


def test_an_engine_failure_is_retried_once(tmp_path):
    r, calls = run(tmp_path, ["engine", "pass"])
    assert r.returncode == 0 and calls == 2
    assert "hung or terminated unexpectedly" in r.stdout and "once more" in r.stderr


def test_two_engine_failures_fail(tmp_path):
    r, calls = run(tmp_path, ["engine", "engine", "pass"])
    assert r.returncode == 1 and calls == 2
