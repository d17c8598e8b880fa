"""`[engine] memory = auto` decides from what the configuration needs.

A vBNG whose HQoS has 65536 pipes needs over a GiB (rte_sched's queue
array alone is 512 MiB per downlink worker).  With 600 MiB of hugepages
free it must start on ordinary pages, not die half-way on hugepages.
EP_TEST_HUGEPAGES_FREE_MB is the engine's test hook for the free count, so
the test does not have to drain the machine's shared hugepage pool.
"""
import os
import re
import signal
import subprocess

from lab.dp import CtlClient, wait_for

NEED = re.compile(r"memory = (\w[\w-]*): this configuration needs about (\d+) MiB, "
                  r"(\d+) MiB of hugepages free: (hugepages|ordinary pages)")


def bng_config(sock, pipes):
    return f"""\
[engine]
ctl_socket = {sock}
[port access]
device = net_null0
ipv4 = 198.18.0.1/24
[port core]
device = net_null1
ipv4 = 198.18.1.1/24
[worker up]
pipeline = bng-uplink
rx = access
[worker down]
pipeline = bng-downlink
rx = core
[bng]
access_port = access
core_port = core
subport = 0 rate=1G pipes={pipes}
"""


def run(dp_binary, path, free_mb, *args, timeout=60):
    env = dict(os.environ, EP_TEST_HUGEPAGES_FREE_MB=str(free_mb))
    return subprocess.run([str(dp_binary), "-c", str(path), *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def decision(stdout):
    m = NEED.search(stdout)
    assert m, stdout
    return m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)


def test_check_shows_estimate_free_hugepages_and_choice(dp_binary, tmp_path):
    small, big = tmp_path / "small.conf", tmp_path / "big.conf"
    small.write_text(bng_config(tmp_path / "s.sock", 64))
    big.write_text(bng_config(tmp_path / "b.sock", 65536))
    res_small = run(dp_binary, small, 100000, "--check")
    res_big = run(dp_binary, big, 600, "--check")
    assert res_small.returncode == 0, res_small.stderr
    assert res_big.returncode == 0, res_big.stderr
    mode, need_small, free, choice = decision(res_small.stdout)
    assert (mode, free, choice) == ("auto", 100000, "hugepages")
    mode, need_big, free, choice = decision(res_big.stdout)
    assert (mode, free, choice) == ("auto", 600, "ordinary pages")
    # 65536 pipes x 16 queues x 64 packets x 8-byte pointers more.
    assert need_big >= need_small + 512


def test_bng_with_few_free_hugepages_starts_on_ordinary_pages(dp_binary, tmp_path):
    sock = tmp_path / "dp.sock"
    conf = tmp_path / "dp.conf"
    conf.write_text(bng_config(sock, 65536))
    out, err = open(tmp_path / "out", "w+"), open(tmp_path / "err", "w+")
    env = dict(os.environ, EP_TEST_HUGEPAGES_FREE_MB="600")
    proc = subprocess.Popen([str(dp_binary), "-c", str(conf)], stdout=out, stderr=err,
                            env=env, stdin=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: proc.poll() is not None or sock.is_socket(), timeout=60), \
            "no control socket"
        assert proc.poll() is None, (tmp_path / "err").read_text()
        client = CtlClient(sock)
        wait_for(lambda: "version" in client.request({"cmd": "version"}), timeout=20)
        client.close()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
    stdout = (tmp_path / "out").read_text()
    assert rc == 0, (tmp_path / "err").read_text()
    mode, need, free, choice = decision(stdout)
    assert (mode, free, choice) == ("auto", 600, "ordinary pages")
    assert need > 600
    assert "stopped cleanly" in stdout
