"""Calls that reach libedgeplane-preload.so before its constructor has run.

Another preloaded library (ASAN's runtime installs its signal handlers from
the first constructor that runs), or any ELF constructor that the loader runs
before ours, may call socket, read, close or sigaction first.  The library
resolves libc's functions on first use, so such a call reaches libc instead
of a NULL pointer.  libepl-early-caller.so (dataplane/preload/early_caller.c)
makes two dozen interposed calls from its constructor; preloaded after the
library it runs first (the loader runs preloaded objects' constructors in the
reverse of their LD_PRELOAD order), which LD_DEBUG=files shows and the tests
check, so that they cannot pass by running in the harmless order.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from lab.hoststack_lab import preload_library
from lab.preload_asan import asan_env, asan_library

EARLY_CALLS = 24


def _early_caller(lib):
    p = Path(lib).parent / "libepl-early-caller.so"
    if not p.exists():
        pytest.fail(f"{p} not built: run `make build`", pytrace=False)
    return p


def _run(extra_env, argv=("/bin/true",)):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LD_", "EDGEPLANE_", "ASAN_", "UBSAN_"))}
    env.update(extra_env)
    env["LD_DEBUG"] = "files"
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, env=env)


def _init_order(stderr):
    return [Path(m).name for m in re.findall(r"calling init: (\S+)", stderr)]


def _check_early(res, lib):
    order = _init_order(res.stderr)
    assert "libepl-early-caller.so" in order and lib.name in order, order
    assert order.index("libepl-early-caller.so") < order.index(lib.name), \
        f"the early caller's constructor did not run first: {order}"
    assert res.returncode == 0, f"exit {res.returncode}: {res.stdout} {res.stderr[-2000:]}"
    assert f"early-calls: ok {EARLY_CALLS}" in res.stdout, res.stdout


@pytest.mark.parametrize("enabled", ["1", "0"])
def test_calls_before_the_library_constructor_reach_libc(enabled):
    lib = preload_library()
    res = _run({"LD_PRELOAD": f"{lib} {_early_caller(lib)}", "EDGEPLANE_PRELOAD": enabled,
                "EDGEPLANE_HOSTSTACK": "/nonexistent/hoststack.sock"})
    _check_early(res, lib)


@pytest.mark.parametrize("enabled", ["1", "0"])
def test_asan_library_loads_with_the_sanitizer_runtime_first(enabled):
    # ASAN's runtime calls sigaction from libstdc++'s constructor, before
    # ours: this crashed on a NULL function pointer before lazy resolution.
    lib, _ = asan_library()
    env = asan_env(lib)
    env.update(EDGEPLANE_PRELOAD=enabled, EDGEPLANE_HOSTSTACK="/nonexistent/hoststack.sock")
    res = _run(env)
    assert res.returncode == 0, f"exit {res.returncode}: {res.stderr[-2000:]}"
    assert lib.name in _init_order(res.stderr)


def test_asan_library_takes_calls_before_its_constructor():
    lib, _ = asan_library()
    env = asan_env(lib, _early_caller(lib))
    env["EDGEPLANE_HOSTSTACK"] = "/nonexistent/hoststack.sock"
    _check_early(_run(env), lib)
