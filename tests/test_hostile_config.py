"""Hostile configuration files: a generated table, each refused with
file:line within a time bound, never a hang, by the release binary and (when
`make test-asan` built it) the ASAN+UBSAN one.

The cases are what a careless operator or a hostile local user writes:
side files that are devices, FIFOs, directories, huge, binary or with lines
longer than any rule; integers that overflow 32 or 64 bits, carry a sign,
hex or spaces; names with control characters; EAL arguments that the EAL
answers by exiting.  Each is a whole file with a marker on the line the
message must name, in the style of test_config_errors.py (whose helpers it
uses), run with `edgeplane-dp -c FILE --check`.  The ones only a real start
reaches (the control socket's path, the EAL's own refusal, what a running
router made of a side file) start the binary in a namespace of their own.
"""
import os
import subprocess
import time

import pytest

from lab.bng_lab import bng_sections
from lab.dp import ROOT, Dp, binary, render
from lab.router_lab import RouterLab, router_sections
from test_config_errors import GOOD, assert_refused, start_for_real

# A refusal takes one EAL start at most (~0.5 s here); anything near the
# bound is a loop, not a slow machine.
TIME_BOUND_S = 15
ASAN_BINARY = ROOT / "build" / "dp-asan" / "edgeplane-dp"
# Leaks on the refusal path are not what this suite hunts (the unit tests
# under ASAN do); an invalid read or write aborts with its own exit status.
ASAN_ENV = {"ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=0",
            "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}


def binaries():
    out = [pytest.param("release", id="release")]
    out.append(pytest.param("asan", id="asan", marks=pytest.mark.skipif(
        not ASAN_BINARY.exists(), reason="no ASAN build (make test-asan builds it)")))
    return out


def binary_path(kind):
    return str(binary()) if kind == "release" else str(ASAN_BINARY)


def base_text(base):
    """A configuration that passes --check, with {sock} for the socket path."""
    if base == "xc":
        return GOOD
    if base == "router":
        secs = router_sections()
    elif base == "bng":
        secs = bng_sections([])
    else:
        raise ValueError(base)
    return render(secs).replace("[engine]", "[engine]\nctl_socket = {sock}", 1)


def insert_after(text, header, lines):
    """Put lines into section [header]: each replaces the section's first
    line with the same key, or goes right after the header (the section is
    added if absent)."""
    rows = text.split("\n")
    try:
        start = rows.index(f"[{header}]")
    except ValueError:
        return text.rstrip("\n") + f"\n[{header}]\n" + "".join(l + "\n" for l in lines)
    end = next((i for i in range(start + 1, len(rows)) if rows[i].startswith("[")), len(rows))
    for line in lines:
        key = line.split("=", 1)[0].strip()
        same = [i for i in range(start + 1, end) if rows[i].split("=", 1)[0].strip() == key]
        if same:
            rows[same[0]] = line
        else:
            rows.insert(start + 1, line)
            end += 1
    return "\n".join(rows)


BIG = 1 << 20
# Side files, made in the test's directory as {dir}/NAME: bytes, or a kind.
FILES = {
    "routes_long_line": b"# " + b"x" * BIG + b"\n198.18.5.0/24 via 198.18.1.2\n",
    "routes_nul": b"198.18.5.0/24 via 198.18.1.2\n198.18.6.0/24\x00 via 198.18.1.2\n",
    "routes_bad_third_line": b"# routes\n\n198.18.5.0/24 via 198.18.1.2 extra\n",
    "acl_comment_tail": (b"#" + b" " * 508 + b" deny src 198.18.1.2/32 bogus\n"
                         b"permit proto udp\n"),
    "subs_comment_tail": b"#" + b" " * 1020 + b" id=5 vlan=5 bogus=1\n",
    "subs_long_line": b"id=1 vlan=5 " + b" " * 5000 + b"\n",
    "fifo": "fifo",
    "dir": "dir",
    "sparse_2g": "sparse",
}


def make_files(d):
    for name, what in FILES.items():
        p = d / name
        if what == "fifo":
            os.mkfifo(p)
        elif what == "dir":
            p.mkdir()
        elif what == "sparse":
            with open(p, "wb") as f:
                f.truncate(2 << 30)
        else:
            p.write_bytes(what)


# (id, base, section, lines (one has MARK), words the message must hold).
# {dir} is the test's directory.  Each id says what the file does.
CASES = [
    # -- side files: only regular files, lines whole or refused by file:line
    ("route_file_dev_zero_refused_not_hung", "router", "router",
     ["route_file = /dev/zero # MARK"], ["key 'route_file'", "/dev/zero", "not a regular file"]),
    ("route_file_fifo_refused_not_blocked", "router", "router",
     ["route_file = {dir}/fifo # MARK"], ["key 'route_file'", "fifo: not a regular file (a FIFO)"]),
    ("route_file_directory_refused", "router", "router",
     ["route_file = {dir}/dir # MARK"], ["key 'route_file'", "not a regular file (a directory)"]),
    ("route_file_missing_named", "router", "router",
     ["route_file = {dir}/nope # MARK"], ["key 'route_file'", "nope: No such file or directory"]),
    ("route_file_over_size_limit_refused_unread", "router", "router",
     ["route_file = {dir}/sparse_2g # MARK"], ["key 'route_file'", "MiB limit"]),
    ("route_file_1mb_line_refused_as_line_1", "router", "router",
     ["route_file = {dir}/routes_long_line # MARK"],
     ["key 'route_file'", "routes_long_line:1: line longer than 4095 bytes"]),
    ("route_file_nul_byte_named_by_line", "router", "router",
     ["route_file = {dir}/routes_nul # MARK"], ["routes_nul:2: NUL byte"]),
    ("route_file_error_names_its_own_line", "router", "router",
     ["route_file = {dir}/routes_bad_third_line # MARK"],
     ["key 'route_file'", "routes_bad_third_line:3:", "<prefix> via <gateway>"]),
    ("acl_file_dev_zero_refused_not_hung", "router", "router",
     ["acl_file = /dev/zero # MARK"], ["key 'acl_file'", "not a regular file"]),
    ("acl_file_fifo_refused_not_blocked", "router", "router",
     ["acl_file = {dir}/fifo # MARK"], ["key 'acl_file'", "a FIFO"]),
    ("subscriber_file_dev_zero_refused_not_hung", "bng", "bng",
     ["subscriber_file = /dev/zero # MARK"], ["key 'subscriber_file'", "not a regular file"]),
    ("subscriber_file_fifo_refused_not_blocked", "bng", "bng",
     ["subscriber_file = {dir}/fifo # MARK"], ["key 'subscriber_file'", "a FIFO"]),
    ("subscriber_file_directory_refused", "bng", "bng",
     ["subscriber_file = {dir}/dir # MARK"], ["key 'subscriber_file'", "a directory"]),
    ("subscriber_file_long_line_refused_whole", "bng", "bng",
     ["subscriber_file = {dir}/subs_long_line # MARK"],
     ["subs_long_line:1: line longer than 4095 bytes"]),
    # -- integers: never truncated, wrapped or read as something else
    ("subport_id_2_pow_32_plus_1_not_subport_1", "bng", "bng",
     ["subport = 4294967297 rate=100M pipes=64 # MARK"], ["key 'subport'", "4294967297 is outside"]),
    ("subport_id_negative_refused", "bng", "bng",
     ["subport = -1 rate=100M # MARK"], ["key 'subport'", "not a non-negative integer"]),
    ("pipe_wrr_weight_wrapping_32_bits_refused", "bng", "bng",
     ["pipe = slow rate=10M wrr=4294967297,1,1,1 # MARK"], ["key 'pipe'", "wrr"]),
    ("core_encap_vlan_negative_wrapping_refused", "bng", "bng",
     ["core_encap = vlan -18446744073709551615 # MARK"], ["key 'core_encap'"]),
    ("subscriber_vlan_2_pow_32_plus_5_refused", "bng", "bng",
     ["subscriber = id=1 vlan=4294967301 # MARK"], ["key 'subscriber'", "vlan"]),
    ("subscriber_pppoe_session_over_16_bits_refused", "bng", "bng",
     ["subscriber = id=1 vlan=5 pppoe=0x10012 mac=02:00:00:00:10:01 # MARK"],
     ["key 'subscriber'", "pppoe"]),
    ("burst_overflowing_64_bits_refused", "xc", "engine",
     ["burst = 18446744073709551648 # MARK"], ["key 'burst'", "outside [1, 64]"]),
    ("burst_hex_refused", "xc", "engine", ["burst = 0x20 # MARK"], ["not a non-negative integer"]),
    ("burst_plus_sign_refused", "xc", "engine", ["burst = +32 # MARK"], ["not a non-negative integer"]),
    ("burst_with_inner_space_refused", "xc", "engine", ["burst = 3 2 # MARK"],
     ["not a non-negative integer"]),
    ("idle_polls_2_pow_64_refused", "xc", "engine", ["idle_polls = 18446744073709551616 # MARK"],
     ["key 'idle_polls'", "outside"]),
    ("lcore_2_pow_32_plus_1_not_lcore_1", "xc", "worker w0", ["lcore = 4294967297 # MARK"],
     ["key 'lcore'", "outside"]),
    ("route_prefix_length_wrapping_32_bits_refused", "router", "router",
     ["route = 198.18.5.0/4294967320 via 198.18.1.2 # MARK"], ["key 'route'"]),
    ("acl_proto_wrapping_32_bits_refused", "router", "router",
     ["acl = deny proto 4294967302 # MARK"], ["key 'acl'", "proto"]),
    ("acl_port_wrapping_32_bits_refused", "router", "router",
     ["acl = deny proto udp dport 4294967376 # MARK"], ["key 'acl'"]),
    ("qpairs_over_16_bits_refused_with_device_line", "xc", "port pb",
     ["device = net_af_packet1,iface=pb,qpairs=65537 # MARK"], ["key 'device'", "qpairs"]),
    # -- names: one grammar for the file and the control socket
    ("policer_name_with_format_directives_refused", "bng", "bng",
     ["policer = %s%n cir=1M cbs=10K pir=2M pbs=20K # MARK"], ["key 'policer'", "is not a name"]),
    ("pipe_name_over_31_bytes_refused", "bng", "bng",
     ["pipe = " + "p" * 40 + " rate=10M # MARK"], ["key 'pipe'"]),
    ("section_name_with_control_byte_refused", "xc", None,
     ["[port p\x01] # MARK"], ["section must be [type] or [type name]"]),
    # -- EAL: checked here with the key's line, not "Invalid argument"
    ("cpus_beyond_this_machine_named", "xc", "engine", ["cpus = 0-1000 # MARK"],
     ["key 'cpus'", "is not one this process may run on"]),
    ("cpus_injecting_lcore_syntax_refused", "xc", "engine", ["cpus = 0)@(1 # MARK"],
     ["key 'cpus'", "not a CPU list"]),
    ("eal_help_would_exit_zero_refused", "xc", "eal", ["args = --no-pci -h # MARK"],
     ["key 'args'", "usage and exit"]),
    ("eal_refusing_args_names_key_and_command_line", "xc", "eal",
     ["args = --no-such-eal-option # MARK"],
     ["key 'args'", "EAL init failed", "--no-such-eal-option"]),
]


def case_text(case, d):
    _, base, section, lines, _ = case
    text = base_text(base)
    lines = [l.replace("{dir}", str(d)) for l in lines]
    if section is None:
        text = text.rstrip("\n") + "\n" + "".join(l + "\n" for l in lines)
    else:
        text = insert_after(text, section, lines)
    return text.replace("{sock}", str(d / "ctl.sock"))


def run_bounded(argv, kind):
    env = dict(os.environ, **(ASAN_ENV if kind == "asan" else {}))
    t0 = time.monotonic()
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=TIME_BOUND_S * 2,
                             env=env, errors="replace")
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv}: still running after {TIME_BOUND_S * 2} s (a hang)")
    took = time.monotonic() - t0
    assert took < TIME_BOUND_S, f"took {took:.1f} s"
    if kind == "asan":
        # Exit 1 is a refusal; ASAN or UBSAN findings exit otherwise.
        assert res.returncode == 1, res.stderr[-3000:]
    return res


@pytest.fixture(scope="module")
def side_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("side")
    make_files(d)
    return d


@pytest.mark.parametrize("kind", binaries())
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_config_refused_with_line_in_time(side_dir, case, kind):
    text = case_text(case, side_dir)
    path = side_dir / f"{case[0]}.conf"
    path.write_text(text)
    res = run_bounded([binary_path(kind), "-c", str(path), "--check"], kind)
    assert_refused(res, path, text, "MARK", case[4])


# -- the configuration file itself ------------------------------------------------

@pytest.mark.parametrize("kind", binaries())
@pytest.mark.parametrize("what", ["dev_zero", "fifo", "dir", "nul_bytes", "line_over_4095"])
def test_hostile_config_file_itself_refused_in_time(side_dir, what, kind):
    path = {"dev_zero": "/dev/zero", "fifo": side_dir / "fifo", "dir": side_dir / "dir"}.get(what)
    if what == "nul_bytes":
        path = side_dir / "nul.conf"
        path.write_bytes(GOOD.encode() + b"\x00\xff\n")
    elif what == "line_over_4095":
        path = side_dir / "long.conf"
        path.write_text("[engine]\nburst = " + "9" * 5000 + "\n")
    res = run_bounded([binary_path(kind), "-c", str(path), "--check"], kind)
    assert res.returncode == 1 and f"edgeplane-dp: {path}:" in res.stderr, res.stderr
    want = {"dev_zero": "not a regular file (a character device)",
            "fifo": "not a regular file (a FIFO)", "dir": "not a regular file (a directory)",
            "nul_bytes": "NUL byte", "line_over_4095": ":2: line longer than 4095 bytes"}[what]
    assert want in res.stderr, res.stderr


# -- a commented-out line stays a comment, however long --------------------------

def test_side_file_long_comment_tail_is_not_parsed(side_dir, router_pipeline):
    """A 509-character comment followed by rule words was split at 512 bytes
    and its tail parsed as a rule; whole, the line is a comment."""
    text = insert_after(base_text("router"), "router", [f"acl_file = {side_dir}/acl_comment_tail"])
    path = side_dir / "acl_tail.conf"
    path.write_text(text.replace("{sock}", str(side_dir / "ctl.sock")))
    res = run_bounded([str(binary()), "-c", str(path), "--check"], "release")
    assert res.returncode == 0, res.stderr


def test_subscriber_file_long_comment_tail_is_not_a_subscriber(side_dir):
    text = insert_after(base_text("bng"), "bng", [f"subscriber_file = {side_dir}/subs_comment_tail"])
    path = side_dir / "subs_tail.conf"
    path.write_text(text.replace("{sock}", str(side_dir / "ctl.sock")))
    res = run_bounded([str(binary()), "-c", str(path), "--check"], "release")
    assert res.returncode == 0, res.stderr


def test_acl_file_commented_rule_never_goes_live(router_pipeline, tmp_path):
    """The probe's case on a running router: the tail of a commented-out
    line (a deny rule) must not be in the ACL."""
    acl = tmp_path / "acl.rules"
    acl.write_text("#" + " " * 508 + " deny src 198.18.1.2/32\npermit proto udp\n")
    with RouterLab(tag="hx", router={"acl_file": str(acl)}) as lab:
        rules = [r["rule"] for r in lab.dp.ctl("acl-list")["rules"]]
    assert rules == ["permit proto udp"], rules


# -- refused only by a real start ----------------------------------------------------

@pytest.fixture
def scratch_ns(request):
    from lab.topology import Topology
    topo = Topology("hc").__enter__()
    request.addfinalizer(topo.close)
    h = topo.host("dut")
    topo.link(h, "pa", h, "pb")
    return h


def test_ctl_socket_naming_a_regular_file_leaves_it_alone(scratch_ns, tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("operator notes\n")
    text = GOOD.replace("ctl_socket = {sock}", f"ctl_socket = {victim} # MARK")
    res, path, text = start_for_real(scratch_ns, tmp_path, text)
    assert_refused(res, path, text, "MARK", ["key 'ctl_socket'", "is not a socket"])
    assert victim.read_text() == "operator notes\n"


def test_ctl_socket_stale_socket_is_replaced(scratch_ns, tmp_path):
    """A socket file whose server is gone (a crash) is taken over."""
    import socket
    sock = tmp_path / "ctl.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(sock))
    s.close()                       # the file stays, nobody listens
    dp = Dp(scratch_ns, GOOD.replace("{sock}", str(sock)), name="stale")
    dp.ctl_path = sock
    try:
        dp.start()
        assert dp.ctl("version")["edgeplane_dp"]
        dp.stop()
    finally:
        dp.close()
