"""Bad configuration files are refused with a clear message.

Each case is a whole file, the line the error must name (found by a marker
on that line) and words the message must contain.  Most run `edgeplane-dp
-c FILE --check`; the ones only a real start can find (a device that does
not exist, a control socket in use) start the binary for real, in a
namespace of their own.
"""
import socket
import subprocess

import pytest

from lab.dp import NO_HUGE_ARGS, binary, check_config, render
from lab.router_lab import router_sections
from lab.topology import Topology

HEADER = """\
# edgeplane-dp test config
[engine]
ctl_socket = {sock}
burst = 32
"""

PORTS = """\
[port pa]
device = net_af_packet0,iface=pa
mac = 02:00:00:00:01:01
[port pb]
device = net_af_packet1,iface=pb
"""

XC_WORKER = """\
[worker w0]
pipeline = xconnect
rx = pa, pb
pairs = pa:pb
"""

GOOD = HEADER + PORTS + XC_WORKER


def line_of(text, marker):
    """1-based line of the first line containing marker."""
    for i, line in enumerate(text.splitlines(), 1):
        if marker in line:
            return i
    raise AssertionError(f"marker {marker!r} not in config")


# (id, config text, marker of the line the message names or None, words)
ENGINE_CASES = [
    ("unknown_key_names_its_line",
     GOOD + "bursts = 4  # MARK\n", "MARK", ["unknown key 'bursts'"]),
    ("unknown_key_in_engine_section",
     HEADER + "idle_pols = 10 # MARK\n" + PORTS + XC_WORKER, "MARK", ["unknown key 'idle_pols'"]),
    ("port_without_device",
     HEADER + "[port pa] # MARK\nmac = 02:00:00:00:01:01\n" + XC_WORKER.replace("rx = pa, pb", "rx = pa")
     .replace("pa:pb", "pa:pa"), "MARK", ["[port pa]", "missing 'device'"]),
    ("unknown_pipeline_lists_known_ones",
     HEADER + PORTS + XC_WORKER.replace("pipeline = xconnect", "pipeline = routr # MARK"),
     "MARK", ["unknown pipeline 'routr'", "xconnect"]),
    ("worker_rx_names_missing_port",
     HEADER + PORTS + XC_WORKER.replace("rx = pa, pb", "rx = pa, pz # MARK"),
     "MARK", ["key 'rx'", "no [port pz]"]),
    ("worker_rx_lists_port_twice",
     HEADER + PORTS + XC_WORKER.replace("rx = pa, pb", "rx = pa, pa # MARK"),
     "MARK", ["port pa listed twice"]),
    ("xconnect_pairs_names_missing_port",
     HEADER + PORTS + XC_WORKER.replace("pairs = pa:pb", "pairs = pa:pq # MARK"),
     "MARK", ["key 'pairs'", "no [port pq]"]),
    ("worker_without_pipeline",
     HEADER + PORTS + "[worker w0] # MARK\nrx = pa\n", "MARK", ["missing 'pipeline'"]),
    ("worker_without_name",
     HEADER + PORTS + "[worker] # MARK\npipeline = xconnect\n", "MARK", ["needs a name"]),
    ("bad_mac_not_hex",
     GOOD.replace("mac = 02:00:00:00:01:01", "mac = 02:00:00:00:01:zz # MARK"),
     "MARK", ["key 'mac'", "not a unicast MAC"]),
    ("bad_mac_multicast",
     GOOD.replace("mac = 02:00:00:00:01:01", "mac = 01:00:5e:00:00:01 # MARK"),
     "MARK", ["not a unicast MAC"]),
    ("bad_port_address",
     GOOD.replace("mac = 02:00:00:00:01:01", "ipv4 = 198.18.0.300/24 # MARK"),
     "MARK", ["key 'ipv4'"]),
    ("ipv6_address_under_ipv4_key",
     GOOD.replace("mac = 02:00:00:00:01:01", "ipv4 = 2001:db8::1/64 # MARK"),
     "MARK", ["not an IPv4 address"]),
    ("burst_out_of_range",
     GOOD.replace("burst = 32", "burst = 1000 # MARK"), "MARK", ["key 'burst'", "outside [1, 64]"]),
    ("burst_not_a_number",
     GOOD.replace("burst = 32", "burst = lots # MARK"), "MARK", ["not a non-negative integer"]),
    ("negative_value",
     GOOD.replace("burst = 32", "burst = -1 # MARK"), "MARK", ["not a non-negative integer"]),
    ("rx_desc_out_of_range",
     GOOD.replace("mac = 02:00:00:00:01:01", "rx_desc = 9 # MARK"), "MARK", ["outside [64, 8192]"]),
    ("max_sleep_below_min_sleep",
     GOOD.replace("burst = 32", "burst = 32\nmin_sleep_us = 50\nmax_sleep_us = 10"),
     "[engine]", ["max_sleep_us is below min_sleep_us"]),
    ("single_key_given_twice",
     GOOD.replace("burst = 32", "burst = 32\nburst = 16 # MARK"), "MARK",
     ["given twice (first on line 4)"]),
    ("syntax_error_no_equals",
     GOOD.replace("burst = 32", "burst 32 # MARK"), "MARK", ["expected 'key = value'"]),
    ("syntax_error_unclosed_section",
     GOOD.replace("[port pb]", "[port pb # MARK"), "MARK", ["section header without ']'"]),
    ("syntax_error_unterminated_quote",
     GOOD.replace("burst = 32", 'burst = "32 # MARK'), "MARK", ["unterminated quote"]),
    ("key_before_any_section",
     "burst = 32 # MARK\n" + GOOD, "MARK", ["before any [section]"]),
    ("section_appears_twice",
     GOOD + "[port pa] # MARK\ndevice = net_af_packet2,iface=pc\n", "MARK", ["appears twice"]),
    ("unknown_section_type",
     GOOD + "[routr] # MARK\nroute = 198.18.5.0/24 via 198.18.1.2\n", "MARK",
     ["unknown section type 'routr'"]),
    ("two_workers_on_one_lcore",
     GOOD + "[worker w1] # MARK\npipeline = xconnect\nrx = pb\npairs = pa:pb\nlcore = 1\n",
     "MARK", ["lcore 1 already runs worker w0"]),
    ("ctl_socket_relative_path",
     GOOD.replace("ctl_socket = {sock}", "ctl_socket = dp.sock # MARK"), "MARK",
     ["absolute path"]),
    ("empty_file", "", None, ["no [worker NAME] section"]),
    ("only_comments", "# nothing here\n\n   # at all\n", None, ["no [worker NAME] section"]),
]


def run_check(tmp_path, text, check=True):
    sock = tmp_path / "ctl.sock"
    text = text.replace("{sock}", str(sock))
    res, path = check_config(text, check=check, workdir=tmp_path, name="bad.conf")
    return res, path, text


def assert_refused(res, path, text, marker, words):
    msg = res.stderr
    assert res.returncode != 0, f"accepted:\n{text}\n{res.stdout}"
    assert "Traceback" not in msg and "Segmentation" not in msg
    assert res.returncode > 0, f"killed by signal {-res.returncode}"
    if marker is not None:
        where = f"{path}:{line_of(text, marker)}:"
    else:
        where = f"{path}:"
    assert where in msg, f"message does not name {where}:\n{msg}"
    for w in words:
        assert w in msg, f"message lacks {w!r}:\n{msg}"
    # One clear line from edgeplane-dp, not only DPDK noise.
    assert any(l.startswith("edgeplane-dp: ") and where in l for l in msg.splitlines()), msg


def test_good_config_passes_check(tmp_path):
    res, path, _ = run_check(tmp_path, GOOD)
    assert res.returncode == 0, res.stderr
    assert "configuration OK (2 ports, 1 workers)" in res.stdout


@pytest.mark.parametrize("text,marker,words", [c[1:] for c in ENGINE_CASES],
                         ids=[c[0] for c in ENGINE_CASES])
def test_bad_config_refused_by_check(tmp_path, text, marker, words):
    res, path, text = run_check(tmp_path, text)
    assert_refused(res, path, text, marker, words)


def test_missing_config_file_is_named(tmp_path):
    path = tmp_path / "nope.conf"
    res = subprocess.run([str(binary()), "-c", str(path), "--check"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0 and f"{path}: No such file or directory" in res.stderr


def test_binary_config_file_is_refused(tmp_path):
    path = tmp_path / "bin.conf"
    path.write_bytes(b"[engine]\nburst = 32\x00\x01\x02\n")
    res = subprocess.run([str(binary()), "-c", str(path), "--check"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0 and str(path) in res.stderr and "NUL byte" in res.stderr


# -- refused only by a real start ----------------------------------------------

@pytest.fixture
def scratch_ns(request):
    """A namespace to start edgeplane-dp in, so a real start touches nothing else."""
    topo = Topology("cf").__enter__()
    request.addfinalizer(topo.close)
    return topo.host("dut")


def start_for_real(host, tmp_path, text):
    """Start edgeplane-dp on text (which must fail before it runs); returns
    (CompletedProcess, path, the text as written).  Ordinary memory, not the
    shared hugepage pool: a short pool must not mask the error under test."""
    text = f"[eal]\nargs = {NO_HUGE_ARGS}\n" + text
    path = tmp_path / "bad.conf"
    path.write_text(text)
    return host.run([str(binary()), "-c", str(path)], check=False, timeout=60), path, text


def test_start_refuses_device_that_does_not_exist(scratch_ns, tmp_path):
    sock = tmp_path / "ctl.sock"
    text = GOOD.replace("{sock}", str(sock)).replace("iface=pa", "iface=nosuchif0")
    res, path, text = start_for_real(scratch_ns, tmp_path, text)
    assert res.returncode == 1, res.stdout + res.stderr
    # Probe failures come after parsing, from DPDK: the message names the
    # device's line, the port and the device string.
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "nosuchif0" in l)
    assert (f"edgeplane-dp: {path}:{line}: key 'device': port pa: cannot probe device "
            "'net_af_packet0,iface=nosuchif0") in res.stderr
    assert "stopped cleanly" not in res.stdout
    assert not sock.exists()


def test_start_refuses_control_socket_in_use(scratch_ns, tmp_path):
    # Two links so the ports exist and the start reaches the control socket.
    scratch_ns.topo.link(scratch_ns, "pa", scratch_ns, "pb")
    sock = tmp_path / "ctl.sock"
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.bind(str(sock))
    holder.listen(1)
    try:
        res, path, _ = start_for_real(scratch_ns, tmp_path, GOOD.replace("{sock}", str(sock)))
    finally:
        holder.close()
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"control socket {sock} is in use by another edgeplane-dp" in res.stderr


# -- the [router] section ----------------------------------------------------------
#
# Run with a real start: a router's tables are created before its keys are
# read, so these cases need the memory of a real start (see
# test_standard_router_config_passes_check).

def router_text(*extra_lines, **opts):
    """The standard lab's router config with extra lines in [router]."""
    text = render(router_sections(**opts)).replace("[engine]", "[engine]\nctl_socket = {sock}", 1)
    return text.rstrip("\n") + "\n" + "".join(l + "\n" for l in extra_lines)


ROUTER_CASES = [
    ("route_bad_prefix_length", ["route = 198.18.5.0/33 via 198.18.1.2 # MARK"],
     ["key 'route'", "198.18.5.0/33"]),
    ("route_prefix_host_bits_set", ["route = 198.18.5.1/24 via 198.18.1.2 # MARK"],
     ["key 'route'", "host bits"]),
    ("route_not_a_prefix", ["route = elsewhere via 198.18.1.2 # MARK"], ["key 'route'"]),
    ("route_gateway_not_an_address", ["route = 198.18.5.0/24 via 198.18.1.256 # MARK"],
     ["key 'route'", "not an IP address"]),
    ("route_gateway_not_connected", ["route = 198.18.5.0/24 via 198.18.9.9 # MARK"],
     ["key 'route'", "not on a connected subnet"]),
    ("route_missing_via", ["route = 198.18.5.0/24 198.18.1.2 # MARK"],
     ["key 'route'", "<prefix> via <gateway>"]),
    ("route_v6_prefix_v4_gateway", ["route = 2001:db8:5::/48 via 198.18.1.2 # MARK"],
     ["key 'route'", "prefix is IPv6"]),
    ("neighbor_bad_mac", ["neighbor = 198.18.1.9 02:00:00:00:00:zz # MARK"],
     ["key 'neighbor'", "not a MAC address"]),
    ("neighbor_not_connected", ["neighbor = 198.18.9.9 02:00:00:00:00:09 # MARK"],
     ["key 'neighbor'", "not on a connected subnet"]),
    ("neighbor_is_own_address", ["neighbor = 198.18.1.1 02:00:00:00:00:09 # MARK"],
     ["key 'neighbor'", "address of this router"]),
    ("acl_bad_action", ["acl = allow proto tcp # MARK"], ["key 'acl'", "permit or deny"]),
    ("acl_unknown_word", ["acl = deny protocol tcp # MARK"], ["key 'acl'", "unknown word 'protocol'"]),
    ("acl_port_out_of_range", ["acl = deny proto udp dport 65536 # MARK"], ["key 'acl'", "65536"]),
    ("acl_default_bad", ["acl_default = maybe # MARK"], ["key 'acl_default'", "permit or deny"]),
    ("acl_classify_unknown", ["acl_classify = fastest # MARK"],
     ["key 'acl_classify'", "avx512x16, avx2, sse or scalar"]),
    ("router_unknown_key", ["routes = 198.18.5.0/24 via 198.18.1.2 # MARK"],
     ["[router]", "unknown key 'routes'"]),
    ("router_size_out_of_range", ["max_nexthops = 2 # MARK"], ["key 'max_nexthops'", "outside"]),
]


@pytest.fixture(scope="module")
def router_ns(request, router_pipeline):
    """A namespace with the veths the router config names, for real starts."""
    topo = Topology("cr").__enter__()
    request.addfinalizer(topo.close)
    h = topo.host("dut")
    topo.link(h, "pa", h, "pb")
    return h


@pytest.mark.parametrize("lines", [c[1] for c in ROUTER_CASES], ids=[c[0] for c in ROUTER_CASES])
def test_bad_router_config_refused_at_start(router_ns, tmp_path, lines):
    sock = tmp_path / "ctl.sock"
    text = router_text(*lines).replace("{sock}", str(sock))
    res, path, text = start_for_real(router_ns, tmp_path, text)
    words = next(c[2] for c in ROUTER_CASES if c[1] == lines)
    assert_refused(res, path, text, "MARK", words)
    assert not sock.exists()


def test_router_section_without_router_worker_is_refused(router_pipeline, tmp_path):
    res, path, text = run_check(tmp_path, GOOD + "[router] # MARK\nacl_default = permit\n")
    assert_refused(res, path, text, "MARK", ["no worker runs pipeline router"])


def test_standard_router_config_passes_check(router_pipeline, tmp_path):
    res, path, _ = run_check(tmp_path, router_text())
    assert res.returncode == 0, res.stderr
    assert "configuration OK (2 ports, 1 workers)" in res.stdout


def test_check_config_removes_the_folder_it_made_and_keeps_a_workdir(tmp_path):
    """check_config without a workdir writes the file in a folder of its
    own and removes it before returning (it left one epcheck-* folder in
    /tmp per call); a workdir given is the caller's and keeps the file."""
    res, path = check_config(router_sections())
    assert res.returncode == 0, res.stderr
    assert path.parent.name.startswith("epcheck-") and not path.parent.exists(), path
    res, path = check_config(router_sections(), workdir=tmp_path)
    assert res.returncode == 0 and path == tmp_path / "dp.conf" and path.exists(), path
