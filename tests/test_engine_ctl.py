"""The control socket is hostile input: every bad request gets
{"ok": false, "error": ...} and the server keeps answering."""
import json
import os
import socket
import stat
import threading

import pytest

from lab.dp import CtlClient, CtlError

MAX_LINE = 8 << 20   # EP_CTL_MAX_LINE in dataplane/engine/ctl.c
MAX_CLIENTS = 32      # EP_CTL_MAX_CLIENTS in dataplane/engine/ctl.c


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


def test_ctl_connection_flood_is_bounded_and_server_survives(dp):
    dp.ctl("version")     # the lab's own connection is open: it holds one slot
    socks = []
    try:
        for _ in range(64):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            socks.append(s)
            # Blocking connect: waits while the listen backlog is full.
            s.connect(str(dp.ctl_path))
            s.settimeout(5)
        answered = 0
        for s in socks:
            try:
                s.sendall(b'{"cmd":"version"}\n')
                if s.recv(4096).startswith(b'{"ok":true'):
                    answered += 1
            except OSError:
                pass  # a connection over the server's limit is closed
        # Connections over the limit are accepted and closed at once; the
        # ones within it are served.
        assert answered == MAX_CLIENTS - 1, answered
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
