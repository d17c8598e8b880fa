"""cmts-gen drives a service group in-process, as `make bench BENCH=cmts`
does (lab.cmts_lab.inproc_sections): a short run of both directions at
full speed must lose nothing and hit the profile's rules as aimed.

  - every upstream frame the generator sent in its UEPI bursts (cut across
    packets, encrypted per CM) comes out of cmts-us: reassembly, HCS, BPI+
    decryption and CRC all pass, no sequence error;
  - every downstream frame is counted by cmts-ds (lookup matched, permitted,
    a CRC generated for each), with the generator's shares: 10 % of the
    flows at a classifier, 10 % at a filter rule;
  - cmts-gen-set turns a direction off and the counters stop.
"""
import time

import pytest

from lab.cmts_lab import SgProfile, inproc_sections
from lab.dp import CtlError, Dp, check_config
from lab.topology import Topology


@pytest.fixture(scope="module")
def dp(dp_binary):
    with Topology("cgen") as t:
        h = t.host("dut")
        d = Dp(h, None, name="cmts-gen")
        d.sections = inproc_sections(SgProfile(ch_rate="40G"), d.dir, d.ctl_path,
                                     lcores="0@0,1@1,2@0,3@0",
                                     gen={"ds": "off", "us": "off"},
                                     sg_extra={"crc_verify": "on"})
        with d:
            yield d


def stage_drops(dp, worker):
    for w in dp.ctl("stages")["workers"]:
        if w["name"] == worker:
            return {f"{s['name']}/{k}": v for s in w["stages"]
                    for k, v in s.get("drops", {}).items() if v}
    raise KeyError(worker)


def settle(dp, key):
    """Wait until the pipelines caught up with what the generator sent."""
    last = None
    for _ in range(50):
        now = key()
        if now == last:
            return now
        last = now
        time.sleep(0.1)
    return last


def test_generator_both_directions_nothing_lost(dp):
    dp.ctl("cmts-gen-set", ds="on", us="on")
    # Until both directions have sent a few thousand frames (a second on a
    # quiet host; a loaded CI host may give the generator less of a core).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(0.5)
        w = dp.ctl("cmts-gen-stats")["workers"][0]
        if min(w["upstream"]["sent_frames"], w["downstream"]["sent_frames"]) > 3000:
            break
    dp.ctl("cmts-gen-set", ds="off", us="off")
    gen = settle(dp, lambda: dp.ctl("cmts-gen-stats")["workers"][0])
    st = settle(dp, lambda: dp.ctl("cmts-stats"))
    up, down = gen["upstream"], gen["downstream"]
    assert up["sent_frames"] > 1000 and down["sent_frames"] > 1000, gen
    assert up["alloc_failed_pkts"] == 0 and down["alloc_failed_pkts"] == 0

    u = st["upstream"]
    workers = {w["name"]: w for w in dp.ctl("stats")["workers"]}
    # The last burst may be cut by the stop: at most one burst in flight.
    assert 0 <= up["sent_frames"] - workers["us"]["tx_pkts"] <= 8, (up, workers["us"])
    assert u["hcs_fail"] == 0 and u["crc_failed"] == 0, u
    assert u["decrypted"] == u["crc_verified"] >= workers["us"]["tx_pkts"], u
    assert all(c["seq_errors"] == 0 and c["reassembly_fail"] == 0 for c in u["channels"]), u
    assert sum(c["reassembly_success"] for c in u["channels"]) > 0, u
    assert stage_drops(dp, "us") == {}

    d = st["downstream"]
    assert d["lookup_matched"] == down["sent_frames"] and d["lookup_unmatched"] == 0, d
    assert d["filter_deny"] == 0 and d["sched_dropped"] == 0, d
    assert d["crc_generated"] + d["crypto_in_flight"] == down["sent_frames"], d
    hit = 1 - d["filter_unmatched"] / down["sent_frames"]    # frames that matched a rule
    assert 0.08 < hit < 0.12, d
    assert stage_drops(dp, "ds") == {}


def test_generator_direction_off_stops(dp):
    dp.ctl("cmts-gen-set", ds="on", us="off")
    time.sleep(0.3)
    dp.ctl("cmts-gen-set", ds="off")
    a = settle(dp, lambda: dp.ctl("cmts-gen-stats")["workers"][0])
    time.sleep(0.3)
    b = dp.ctl("cmts-gen-stats")["workers"][0]
    assert a["downstream"]["sent_frames"] == b["downstream"]["sent_frames"]
    assert a["upstream"]["sent_frames"] == b["upstream"]["sent_frames"]
    assert not b["downstream"]["on"] and not b["upstream"]["on"]


def test_filters_and_classifiers_are_instances_of_the_shared_acl(dp):
    """The SG's filter groups and classifiers live in two instances of the
    ACL module: acl-tables and acl-list show them (the filter lines as
    rules with set = group and value = order, two lanes), and the generic
    edit commands refuse them, naming the commands that edit them."""
    fl = dp.ctl("filter-list")
    ftab, ctab = fl["filter_table"], fl["classifier_table"]
    tables = {t["table"]: t for t in dp.ctl("acl-tables")["tables"]}
    assert tables[ftab]["lanes"] == 2 and tables[ctab]["lanes"] == 1
    assert tables[ftab]["rules"] == len(fl["filters"]) == 6 * 16
    assert tables[ctab]["rules"] == fl["classifier_rules"] == 300 * 16
    rules = dp.ctl("acl-list", table=ftab)["rules"]
    first = fl["filters"][0]
    assert f"set {first['group']} value {first['order']}" in rules[0]["rule"]
    with pytest.raises(CtlError, match="filter-add"):
        dp.ctl("acl-add", table=ftab, rule="deny proto udp set 1")
    with pytest.raises(CtlError, match="cls-set"):
        dp.ctl("acl-replace", table=ctab, rules=[])
    assert dp.ctl("acl-tables")["tables"] == list(tables.values())


def test_sf_and_cls_fields_with_blanks_cannot_smuggle_a_key(dp):
    """sf-set and cls-set turn their fields into a configuration line's
    "k=v k=v" text (the engine's ep_ctl_spec, which the BNG's profile
    commands use too): a value with a blank would add a key of its own, so
    the request is refused and the CM keeps its SFs and classifiers."""
    def shaping(cm):
        return ([(s["sf"], s["rate"], s["burst"], s["prio"]) for s in cm["sf"]],
                [(c["cls"], c["sf"], c["prio"]) for c in cm["cls"]])

    before = shaping(dp.ctl("cm-get", id=5)["cm"])
    with pytest.raises(CtlError, match="values have no blanks"):
        dp.ctl("sf-set", cm=5, sf=2, rate="100M prio=7", burst=100000)
    with pytest.raises(CtlError, match="values have no blanks"):
        dp.ctl("cls-set", cm=5, cls=3, sf=2, proto="17 sf=1", dport=5000)
    with pytest.raises(CtlError, match="rate: must be a string, an integer or a list"):
        dp.ctl("sf-set", cm=5, sf=2, rate={"bps": 1})
    assert shaping(dp.ctl("cm-get", id=5)["cm"]) == before
    dp.ctl("sf-set", cm=5, sf=2, rate="100M", burst=100000, prio=5)
    assert (2, 100_000_000, 100000, 5) in shaping(dp.ctl("cm-get", id=5)["cm"])[0]


def test_cmts_gen_worker_refuses_rx(dp_binary, tmp_path):
    # Only a source whose pipeline receives itself (the gen worker with
    # rx, a one-worker tester) may have `rx`; the engine's loop polls the
    # source, never the rx queues, so on cmts-gen the frames would rot.
    s = inproc_sections(SgProfile(ch_rate="40G"), tmp_path, tmp_path / "ctl.sock")
    s["worker gen"]["rx"] = "us_out"
    res, _ = check_config(s, binary_path=dp_binary, workdir=tmp_path)
    assert res.returncode != 0, res.stdout
    assert "pipeline cmts-gen generates packets: no 'rx'" in res.stderr, res.stderr


def check_gen_pool(dp_binary, tmp_path, hold, pool):
    s = inproc_sections(SgProfile(ch_rate="40G"), tmp_path, tmp_path / "ctl.sock")
    s["worker gen"]["hold_pkts"] = str(hold)
    s["worker gen"]["pool_mbufs"] = str(pool)
    res, _ = check_config(s, binary_path=dp_binary, workdir=tmp_path)
    return res


def test_cmts_gen_pool_too_small_for_its_hold_is_refused(dp_binary, tmp_path):
    # pool_mbufs sizes the generator's pool; one that the held-back packets
    # of both directions would empty (2 x hold_pkts + the rings and caches)
    # is a configuration error, not a generator that stalls on alloc.
    res = check_gen_pool(dp_binary, tmp_path, 2048, 6142)
    assert res.returncode != 0, res.stdout
    assert "pool_mbufs must be at least twice hold_pkts and 2047 more" in res.stderr, res.stderr


def test_cmts_gen_pool_of_twice_the_hold_and_2047_starts(dp_binary, tmp_path):
    res = check_gen_pool(dp_binary, tmp_path, 2048, 6143)
    assert res.returncode == 0, res.stderr
