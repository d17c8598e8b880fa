"""The preload library's ASAN/UBSAN build (`make test-asan` builds it in
build/dp-asan) and the environment that loads it into an uninstrumented
program: the sanitizer runtime must come first in LD_PRELOAD, since the
library leaves its symbols undefined (-Db_lundef=false)."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASAN_LIBRARY = ROOT / "build" / "dp-asan" / "preload" / "libedgeplane-preload.so"
# Leak checks at exit as in `make test-asan`; any other error aborts the
# program at once.  Callers that load the library into a program with leaks
# of its own (an interpreter) turn detect_leaks off.
ASAN_OPTIONS = "detect_leaks=1:halt_on_error=1:exitcode=86"
UBSAN_OPTIONS = "halt_on_error=1:print_stacktrace=1:exitcode=87"


def asan_runtime():
    """clang's shared ASAN runtime (it carries UBSAN's handlers too)."""
    out = subprocess.run(["clang", "-print-file-name=libclang_rt.asan-x86_64.so"],
                         capture_output=True, text=True, timeout=60).stdout.strip()
    return Path(out)


def asan_library():
    """The ASAN/UBSAN-built library and runtime, or FileNotFoundError."""
    rt = asan_runtime()
    if not ASAN_LIBRARY.exists() or not rt.is_absolute() or not rt.exists():
        raise FileNotFoundError(f"{ASAN_LIBRARY} or {rt} missing: run `make test-asan`")
    return ASAN_LIBRARY, rt


def asan_env(*libraries):
    """Environment entries preloading the runtime, then `libraries` in order."""
    lib, rt = asan_library()
    return {"LD_PRELOAD": " ".join(str(p) for p in (rt, *(libraries or (lib,)))),
            "ASAN_OPTIONS": ASAN_OPTIONS, "UBSAN_OPTIONS": UBSAN_OPTIONS}
