"""The control socket is hostile input: every bad request gets
{"ok": false, "error": ...} and the server keeps answering."""
import json
import os
import select
import socket
import stat
import subprocess
import threading
import time

import pytest

from lab.dp import CtlClient, CtlError, binary

MAX_LINE = 8 << 20   # EP_CTL_MAX_LINE in dataplane/engine/ctl_server.c
MAX_CLIENTS = 64      # EP_CTL_MAX_CLIENTS in dataplane/engine/ctl_server.c


@pytest.fixture
def dp(shared_xconnect_lab):
    dp = shared_xconnect_lab.dp
    yield dp
    assert dp.running(), f"edgeplane-dp died:\n{dp.output()}"


@pytest.fixture
def conn(dp):
    c = CtlClient(dp.ctl_path)
    c.connect()
    yield c
    c.close()


def assert_refused(resp, *words):
    assert resp.get("ok") is False, resp
    assert isinstance(resp.get("error"), str) and resp["error"], resp
    for w in words:
        assert w in resp["error"], resp


def assert_alive(conn):
    resp = conn.request({"cmd": "version"})
    assert resp["ok"] is True and "dpdk" in resp["result"], resp


def test_ctl_socket_mode_is_0600(dp):
    st = os.stat(dp.ctl_path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)


BAD_REQUESTS = [
    ("truncated_json", b'{"cmd": "stats"', ["bad JSON"]),
    ("not_json", b"route-add 198.18.5.0/24", ["bad JSON"]),
    ("binary_garbage", b"\x00\xff\xfe\x01", ["bad JSON"]),
    ("duplicate_keys", b'{"cmd": "stats", "cmd": "shutdown"}', ["bad JSON"]),
    ("array_not_object", b'["stats"]', ["must be a JSON object"]),
    ("string_not_object", b'"stats"', ["bad JSON"]),
    ("missing_cmd", b'{"command": "stats"}', ["missing field 'cmd'"]),
    ("cmd_is_integer", b'{"cmd": 7}', ["field 'cmd' must be a string"]),
    ("cmd_is_null", b'{"cmd": null}', ["field 'cmd' must be a string"]),
    ("unknown_command", b'{"cmd": "frobnicate"}', ["unknown command 'frobnicate'"]),
    ("empty_command", b'{"cmd": ""}', ["unknown command"]),
]


@pytest.mark.parametrize("line,words", [(b, w) for _, b, w in BAD_REQUESTS],
                         ids=[n for n, _, _ in BAD_REQUESTS])
def test_ctl_bad_request_is_refused_and_server_answers_next(conn, line, words):
    assert_refused(conn.send_line(line), *words)
    assert_alive(conn)


def test_ctl_engine_command_with_wrong_field_type_still_answers(dp, conn):
    # Engine commands take no fields; extra ones of any type are ignored,
    # never a crash.
    resp = conn.request({"cmd": "stats", "worker": {"nested": [1, 2]}, "x": None})
    assert resp["ok"] is True
    assert_alive(conn)


def test_ctl_pipelined_requests_answered_in_order(conn):
    conn.sock.sendall(b'{"cmd":"version"}\n{"cmd":"nope"}\n\n{"cmd":"drop-reasons"}\n')
    r1, r2, r3 = (json.loads(conn.rfile.readline()) for _ in range(3))
    assert r1["ok"] and "edgeplane_dp" in r1["result"]
    assert_refused(r2, "unknown command 'nope'")
    assert r3["ok"] and any(r["name"] == "no_route" for r in r3["result"]["reasons"])


def test_ctl_line_over_8mib_refused_and_server_survives(dp):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(str(dp.ctl_path))
    blob = b'{"cmd": "stats", "pad": "' + b"x" * (MAX_LINE + 4096) + b'"}\n'

    def send():
        try:
            s.sendall(blob)
        except OSError:
            pass  # the server hung up once the line passed the limit

    t = threading.Thread(target=send, daemon=True)
    t.start()
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    t.join(timeout=20)
    s.close()
    assert_refused(json.loads(data), "longer than 8 MiB")
    c = CtlClient(dp.ctl_path)
    assert_alive(c)
    c.close()


def test_ctl_client_vanishing_mid_line_does_not_disturb_others(dp, conn):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(dp.ctl_path))
    s.sendall(b'{"cmd": "sta')
    s.close()
    assert_alive(conn)


def test_ctl_connection_flood_evicts_oldest_idle_and_server_survives(dp):
    """More connections than client slots: each one over the limit takes
    the slot of the connection idle the longest, which is told why; the
    newest MAX_CLIENTS are served."""
    dp.ctl("version")     # the lab's own connection: the oldest idle one
    socks = []
    extra = 36
    try:
        for _ in range(MAX_CLIENTS + extra):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            socks.append(s)
            # Blocking connect: waits while the listen backlog is full.
            s.connect(str(dp.ctl_path))
            s.settimeout(5)
        time.sleep(0.5)   # every connection accepted
        answered = evicted = 0
        for s in socks:
            readable = select.select([s], [], [], 0)[0]
            pending = s.recv(4096) if readable else b""
            if b"client slots full" in pending:
                evicted += 1
                continue
            s.sendall(b'{"cmd":"version"}\n')
            if s.recv(4096).startswith(b'{"ok":true'):
                answered += 1
        assert answered == MAX_CLIENTS, answered
        assert evicted == extra, evicted
    finally:
        for s in socks:
            s.close()
    c = CtlClient(dp.ctl_path)
    assert_alive(c)
    c.close()


def test_ctl_error_raises_ctlerror_with_text(dp):
    with pytest.raises(CtlError, match="unknown command 'bogus'"):
        dp.ctl("bogus")


def test_cli_exit_status_and_error_text(dp):
    ok = dp.cli("version")
    assert ok.returncode == 0 and '"dpdk"' in ok.stdout
    bad = dp.cli("bogus", check=False)
    assert bad.returncode == 1 and "unknown command 'bogus'" in bad.stderr
    usage = dp.cli("version", "notkeyvalue", check=False)
    assert usage.returncode == 2 and "not key=value" in usage.stderr


def test_cli_missing_socket_is_a_clear_error(tmp_path):
    sock = tmp_path / "nobody-here.sock"
    res = subprocess.run([str(binary()), "ctl", "-s", str(sock), "stats"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1, res
    assert f"ctl: cannot connect to {sock}: No such file or directory" in res.stderr
    assert "is edgeplane-dp running?" in res.stderr


@pytest.mark.parametrize("args", [["top", "--watch", "1"], ["--watch", "1", "top"]],
                         ids=["watch_after_top", "watch_before_top"])
def test_cli_survives_server_closing_the_connection(xconnect_lab, args):
    """`ctl top --watch` while the data plane stops: its next request meets
    a closed connection.  A message and exit status 1, not death by SIGPIPE."""
    dp = xconnect_lab.dp
    cli = subprocess.Popen([str(binary()), "ctl", "-s", str(dp.ctl_path), *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "worker w0" in cli.stdout.readline() + cli.stdout.readline()
        dp.stop()
        rc = cli.wait(timeout=10)
        err = cli.stderr.read()
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert rc == 1, f"exit status {rc} (negative: killed by a signal)\n{err}"
    assert "the data plane closed the connection" in err or \
           "cannot connect" in err, err
