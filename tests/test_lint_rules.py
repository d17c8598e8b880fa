"""The repository's own lint rules (make lint): scripts/check-dataplane,
scripts/check-vocabulary and scripts/check-doc-links refuse each kind of
violation in a fixture tree and accept the real tree.  No network
namespace, no binary: a few seconds."""
import importlib.util
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK_DP = ROOT / "scripts" / "check-dataplane"
CHECK_VOCAB = ROOT / "scripts" / "check-vocabulary"
CHECK_LINKS = ROOT / "scripts" / "check-doc-links"


def run(script, *args):
    """The script as make lint runs it: exit code and printed findings."""
    return subprocess.run([sys.executable, str(script), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def load(path):
    """The script as a module, for the many small cases (no process each)."""
    loader = SourceFileLoader(path.name.replace("-", "_"), str(path))
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    return mod


dataplane_rules = load(CHECK_DP)
vocabulary_rules = load(CHECK_VOCAB)
link_rules = load(CHECK_LINKS)


def tree(tmp_path, files, allow=""):
    """A fixture repository: {relative path: text}, plus the allow-list."""
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / "scripts").mkdir(exist_ok=True)
    (tmp_path / "scripts" / "check-dataplane.allow").write_text(allow)
    return tmp_path


# Headers the fixture's includes resolve to, as in the real tree.
HEADERS = {
    "dataplane/router/router.h": "#pragma once\n",
    "dataplane/bng/bng.h": "#pragma once\n",
    "dataplane/hoststack/hs_ring.h": "#pragma once\n",
    "dataplane/engine/ep_engine.h": "#pragma once\n",
    "dataplane/engine/engine_internal.h": "#pragma once\n",
    "dataplane/fib/fib_private.h": "#pragma once\n",
    "dataplane/fib/ep_fib_node.h": "#pragma once\n",
}


class Found:
    """check-dataplane's findings, printed as the script prints them."""

    def __init__(self, findings):
        self.returncode = 1 if findings else 0
        self.stdout = "".join(f"{rel}:{no}: {rule}: {why}\n" if no else f"{rel}: {rule}: {why}\n"
                              for rel, no, rule, why in findings)


def dp_check(tmp_path, files, allow=""):
    root = tree(tmp_path, {**HEADERS, **files}, allow)
    return Found(dataplane_rules.check(str(root), str(root / "scripts" / "check-dataplane.allow")))


# ---- check-dataplane ---------------------------------------------------------

def test_dataplane_volatile_on_worker_path_refused(tmp_path):
    r = dp_check(tmp_path, {"dataplane/router/route_node.c": "static volatile int stop;\n"})
    assert r.returncode == 1, r.stdout
    assert "dataplane/router/route_node.c:1: volatile:" in r.stdout


@pytest.mark.parametrize("call", ["usleep(10)", "nanosleep(&ts, NULL)", "clock_nanosleep(0, 0, &ts, NULL)",
                                  "sleep(1)", "rte_delay_us(5)", "rte_delay_ms(1)", "rte_delay_us_block(5)",
                                  "rte_delay_us_sleep(5)"])
def test_dataplane_sleep_on_worker_path_refused(tmp_path, call):
    src = f"void f(void)\n{{\n\t{call};\n}}\n"
    r = dp_check(tmp_path, {"dataplane/bng/bng_up.c": src})
    assert r.returncode == 1, r.stdout
    assert "dataplane/bng/bng_up.c:3: sleep:" in r.stdout


@pytest.mark.parametrize("include", ['"router.h"', '"router/router.h"', '"../router/router.h"'])
def test_dataplane_include_of_another_pipelines_header_refused(tmp_path, include):
    r = dp_check(tmp_path, {"dataplane/bng/bng_up.c": f"#include {include}\n"})
    assert r.returncode == 1, r.stdout
    assert "a header of the router pipeline" in r.stdout


def test_dataplane_shared_module_including_a_pipeline_header_refused(tmp_path):
    r = dp_check(tmp_path, {"dataplane/fib/fib.c": '#include "bng/bng.h"\n'})
    assert r.returncode == 1, r.stdout
    assert "shared module fib includes" in r.stdout


@pytest.mark.parametrize("header", ["engine_internal.h", "fib/fib_private.h"])
def test_dataplane_pipeline_including_a_module_private_header_refused(tmp_path, header):
    r = dp_check(tmp_path, {"dataplane/cmts/cmts_us.c": f'#include "{header}"\n'})
    assert r.returncode == 1, r.stdout
    assert "private to the" in r.stdout


def test_dataplane_public_headers_own_headers_and_words_in_comments_accepted(tmp_path):
    src = ('#include <rte_mbuf.h>\n#include "ep_engine.h"\n#include "fib/ep_fib_node.h"\n'
           '#include "router.h"\n'
           "/* no volatile here, and no usleep() either */\n"
           'static const char *doc = "volatile sleep(1)"; // nanosleep(x)\n')
    r = dp_check(tmp_path, {"dataplane/router/route_node.c": src})
    assert r.returncode == 0, r.stdout


def test_dataplane_control_test_and_preload_files_are_off_the_worker_path(tmp_path):
    files = {f"dataplane/{p}": "void f(void) { usleep(1); }\nstatic volatile int x;\n"
             for p in ("bng/bng_ctl.c", "cmts/cmts_config.c", "engine/cli.c", "engine/main.c",
                       "router/test_route.c", "hoststack/fuzz_hs_rx.c", "preload/preload_io.c")}
    r = dp_check(tmp_path, files)
    assert r.returncode == 0, r.stdout


def test_dataplane_allow_list_admits_exactly_its_line(tmp_path):
    src = "void f(void)\n{\n\tnanosleep(&ts, NULL);\n\tusleep(1);\n}\n"
    allow = "dataplane/engine/worker.c | sleep | nanosleep(&ts, NULL) | bounded idle wait\n"
    r = dp_check(tmp_path, {"dataplane/engine/worker.c": src}, allow)
    assert r.returncode == 1
    assert "worker.c:4: sleep: usleep()" in r.stdout and "worker.c:3:" not in r.stdout


def test_dataplane_allow_list_entry_matching_nothing_refused(tmp_path):
    allow = "dataplane/engine/worker.c | sleep | usleep(1) | gone\n"
    r = dp_check(tmp_path, {"dataplane/engine/worker.c": "int x;\n"}, allow)
    assert r.returncode == 1
    assert "entry matches nothing" in r.stdout


def test_dataplane_script_exits_1_and_names_the_line(tmp_path):
    root = tree(tmp_path, {**HEADERS, "dataplane/gen/gen_node.c": "int f(void)\n{\n\treturn usleep(1);\n}\n"})
    r = run(CHECK_DP, "--root", root)
    assert r.returncode == 1
    assert r.stdout.startswith("dataplane/gen/gen_node.c:3: sleep: usleep() on a worker path"), r.stdout


# ---- check-vocabulary --------------------------------------------------------
# The refused phrases are assembled here so that this file passes the check.
W = "se" + "ed"
ISSUE = "iss" + "ue"
REFUSED = [
    f"after the {W}'s appendix",
    f"the {W} says 150 filters",
    f"the\n{W} rewrote the rx queue",
    f"{W.capitalize()} 003's per-instance configuration",
    f"as in {W} 3",
    f"the {W}s' iMix profiles",
    f"iMix profiles are the {W}s (vCMTS)",
    f"the {W} paper's scenarios",
    f'format: {{type: string, enum: ["{W}", mec011]}}',
    f'"intentId": "{W}-listing-1"',
    f"{W.upper()}_INTENT_A = {{}}",
    f"type {W.capitalize()}Intent struct",
    f'mixed = {{"{W}_mix_89_11_by_volume": mix}}',
    f"| {W.capitalize()} (Algorithm 1) | Here |",
    f"see {ISSUE} 10",
    f"fixed in {ISSUE} #3",
    f"the #3 {ISSUE} said so",
    "in the result shape of " + "DESIGN" + ".md",
    "it supersedes `notes/" + "BNG_SPEC.md`",
    "see ../" + "shared/research/xdp.md",
]
ACCEPTED = [
    "rng = random.Random(seed * 1000003 + n)",
    "def flows(n_pkts, table, seed=7):",
    "shuffled with a fixed seed",
    "Everything is deterministic (fixed random seeds)",
    "Write the seed corpus of the `cmts_us` fuzz target",
    "hashSeed = 0x45505344",
    'metrics = {"rng_seed": 7}',
    "EDGEPLANE_SCHEMATHESIS_SEED picks another",
    "With BBF Outer Header Creation on the FAR (TR-459 Issue 2),",
    '"Control and User Plane Separation for a disaggregated BNG", Issue 1',
    "an issue with the af_packet PMD",
]


@pytest.mark.parametrize("text", REFUSED, ids=range(len(REFUSED)))
def test_vocabulary_planning_and_tracker_references_refused(text):
    found = vocabulary_rules.findings_in("A line.\n" + text + "\n")
    assert [no for no, _, _ in found] == [2], (text, found)


@pytest.mark.parametrize("text", ACCEPTED, ids=range(len(ACCEPTED)))
def test_vocabulary_random_seeds_and_specification_issues_accepted(text):
    assert vocabulary_rules.findings_in(text + "\n") == []


# ---- check-doc-links ---------------------------------------------------------
LINKED = {
    "docs/a.md": "# A\n\n## What bounds `vs_linux-forwarding`: the veth floor (2026-11-26 00:47 UTC)\n\n"
                 "## Notes\n\n## Notes\n\n```\n# not a heading\n```\n",
    "docs/sub/b.md": "# B\n",
}


@pytest.mark.parametrize("link", [
    "[a](../a.md)",
    "[a](../a.md#what-bounds-vs_linux-forwarding-the-veth-floor-2026-11-26-0047-utc)",
    "[the second notes](../a.md#notes-1)",
    "[a\nlink over two lines](../a.md#notes)",
    "[here](#b)",
    "[the folder](../)",
    "[web](https://example.org/missing.md)",
    "`[in code](missing.md)`",
    "```\n[in a fence](missing.md)\n```",
])
def test_doc_links_that_resolve_accepted(tmp_path, link):
    tree(tmp_path, LINKED)
    (tmp_path / "docs/sub/c.md").write_text("# B\n\n" + link + "\n")
    assert link_rules.check(str(tmp_path), ["docs/sub/c.md"]) == []


@pytest.mark.parametrize("link, why", [
    ("[gone](../gone.md)", "no such file"),
    ("[moved](b.md#a)", "no such heading"),
    ("[a third notes](../a.md#notes-2)", "no such heading"),
    ("[fenced](../a.md#not-a-heading)", "no such heading"),
    ("[self](#nowhere)", "no such heading"),
])
def test_doc_links_that_do_not_resolve_refused(tmp_path, link, why):
    tree(tmp_path, LINKED)
    (tmp_path / "docs/sub/c.md").write_text("# C\n\n" + link + "\n")
    found = link_rules.check(str(tmp_path), ["docs/sub/c.md"])
    assert [(no, w) for _, no, _, w in found] == [(3, why)], found


# ---- the scripts as make lint runs them ---------------------------------------
@pytest.mark.parametrize("script, text, first", [
    (CHECK_VOCAB, "A line.\n" + REFUSED[0] + "\n", "doc.md:2: planning-doc:"),
    (CHECK_LINKS, "A line.\n\nSee [x](x.md#y).\n", "doc.md:3: x.md#y: no such file"),
], ids=["vocabulary", "doc-links"])
def test_script_exits_1_and_names_the_line(tmp_path, script, text, first):
    (tmp_path / "doc.md").write_text(text)
    r = run(script, "--root", tmp_path, "doc.md")
    assert r.returncode == 1
    assert r.stdout.startswith(first), r.stdout


@pytest.mark.parametrize("script", [CHECK_DP, CHECK_VOCAB, CHECK_LINKS],
                         ids=["dataplane", "vocabulary", "doc-links"])
def test_real_tree_accepted(script):
    r = run(script)
    assert r.returncode == 0, r.stdout + r.stderr
