"""The Kubernetes chart's rendered manifests obey what a DPDK data plane needs.

`helm template` renders deploy/helm/edgeplane for the default values and each
variant in its ci/ directory; the rules below read the objects as the kubelet
would:

- every data-plane container sets requests equal to limits for every resource;
- its CPUs are whole (the static CPU manager gives exclusive CPUs only to a
  Guaranteed pod's containers with an integer CPU request);
- it requests hugepages of one size and has a memory limit, and its
  /dev/hugepages is a HugePages-<size> volume of that size;
- the SR-IOV VFs its pod requests match the pod's Multus attachments, pool by
  pool (each attachment's k8s.v1.cni.cncf.io/resourceName);
- its pod is in the Guaranteed QoS class, sidecars included (a pod's class
  is decided by all of its containers).

Each rule is also shown to refuse a rendering that breaks it. Where the
values schema already refuses the override, the test shows that too and then
renders past it (`--skip-schema-validation`) so the rule is judged on its own.
No cluster is involved (none runs on this machine); the objects are checked
against Kubernetes' schemas by deploy/validate (`make test-deploy`).
"""

import json
import os
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "deploy" / "helm" / "edgeplane"
HELM = ROOT / "build" / "tools" / "helm"
K8S_VERSION = "1.35.0"
VARIANTS = ["default"] + sorted(p.name.removesuffix("-values.yaml") for p in (CHART / "ci").glob("*-values.yaml"))
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet"}
HUGEPAGE_SIZES = {"2Mi", "1Gi"}


def helm_template(*args):
    """Objects `helm template` renders (a list of dicts); raises on failure."""
    if not HELM.is_file():
        pytest.fail(f"{HELM} is missing: `make setup` installs the pinned helm")
    cmd = [str(HELM), "template", "edge", str(CHART), "--namespace", "edge", "--kube-version", K8S_VERSION, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RenderError(out.stderr)
    return [d for d in yaml.load_all(out.stdout, Loader=UniqueKeyLoader) if d]


class RenderError(Exception):
    pass


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML whose mappings may not repeat a key: PyYAML, like the API server's
    decoder in most paths, keeps the last of two equal keys, so a template that
    writes `intel.com/sriov_access` twice would hide one VF request."""

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        dup = sorted({str(k) for k in keys if keys.count(k) > 1})
        if dup:
            raise RenderError(f"{node.start_mark}: repeated keys {dup}")
        return super().construct_mapping(node, deep=deep)


def render_variant(name):
    return helm_template() if name == "default" else helm_template("-f", str(CHART / "ci" / f"{name}-values.yaml"))


@pytest.fixture(scope="module")
def rendered():
    """Each variant rendered once for the module."""
    return {v: render_variant(v) for v in VARIANTS}


# --- reading the objects -------------------------------------------------------

def dataplane_configmap(objs):
    """The data planes' configuration (the chart's other ConfigMaps are
    Grafana dashboards)."""
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dataplane")]
    return cm


def pods(objs, component=None):
    """(workload name, pod spec, pod metadata) of each workload's template."""
    for o in objs:
        if o["kind"] not in WORKLOADS:
            continue
        tmpl = o["spec"]["template"]
        if component and tmpl["metadata"].get("labels", {}).get("app.kubernetes.io/component") != component:
            continue
        yield o["metadata"]["name"], tmpl["spec"], tmpl["metadata"]


def dataplane_pods(objs):
    found = list(pods(objs, "dataplane"))
    assert found, "no data-plane pod rendered"
    return found


def is_dataplane_container(c):
    return c.get("command", [""])[-1] in ("uplink", "downlink") or c["name"] in ("uplink", "downlink")


def quantity(text):
    """A Kubernetes quantity as an exact Fraction (the units the API accepts)."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?", str(text))
    if not m:
        raise ValueError(f"not a quantity: {text!r}")
    scale = {None: 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]
    return Fraction(m.group(1)) * scale


def pod_qos(spec):
    """The pod's QoS class, as the kubelet computes it (pkg/apis/core/helper/qos).

    Guaranteed: every container, init containers included, has CPU and memory
    limits, and requests (defaulted to the limits when absent) equal them.
    BestEffort: no container requests or limits CPU or memory. Otherwise
    Burstable."""
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources", {})
        req, lim = res.get("requests", {}), res.get("limits", {})
        for r in ("cpu", "memory"):
            if r in req or r in lim:
                any_set = True
            if r not in lim:
                guaranteed = False
            elif quantity(req.get(r, lim[r])) != quantity(lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# --- the rules: each returns what it found wrong ----------------------------------

def requests_not_equal_limits(objs):
    bad = []
    for wl, spec, _ in dataplane_pods(objs):
        for c in spec["containers"]:
            res = c.get("resources", {})
            req, lim = res.get("requests", {}), res.get("limits", {})
            if not req or not lim:
                bad.append(f"{wl}/{c['name']}: requests or limits missing")
                continue
            for r in sorted(set(req) | set(lim)):
                if r not in req or r not in lim or quantity(req[r]) != quantity(lim[r]):
                    bad.append(f"{wl}/{c['name']}: {r} request {req.get(r)} != limit {lim.get(r)}")
    return bad


def non_integer_cpus(objs):
    bad = []
    for wl, spec, _ in dataplane_pods(objs):
        for c in filter(is_dataplane_container, spec["containers"]):
            cpu = c.get("resources", {}).get("requests", {}).get("cpu")
            if cpu is None:
                bad.append(f"{wl}/{c['name']}: no CPU request")
            elif quantity(cpu).denominator != 1 or quantity(cpu) < 1:
                bad.append(f"{wl}/{c['name']}: CPU {cpu} is not a whole number of CPUs")
    return bad


def hugepages_without_memory_limit(objs):
    bad = []
    for wl, spec, _ in dataplane_pods(objs):
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in filter(is_dataplane_container, spec["containers"]):
            res = c.get("resources", {})
            sizes = [r.removeprefix("hugepages-") for r in res.get("limits", {}) if r.startswith("hugepages-")]
            if len(sizes) != 1 or sizes[0] not in HUGEPAGE_SIZES:
                bad.append(f"{wl}/{c['name']}: hugepages {sizes or 'none'}, want one of {sorted(HUGEPAGE_SIZES)}")
                continue
            if "memory" not in res.get("limits", {}):
                bad.append(f"{wl}/{c['name']}: hugepages without a memory limit")
            mount = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/dev/hugepages"]
            medium = volumes.get(mount[0]["name"], {}).get("emptyDir", {}).get("medium") if mount else None
            if medium != f"HugePages-{sizes[0]}":
                bad.append(f"{wl}/{c['name']}: /dev/hugepages is {medium or 'not mounted'}, "
                           f"want a HugePages-{sizes[0]} volume")
    return bad


def sriov_mismatches(objs):
    """VFs requested per pool against the pod's attachments of that pool."""
    nads = {o["metadata"]["name"]: o for o in objs if o["kind"] == "NetworkAttachmentDefinition"}
    bad = []
    for name, nad in nads.items():
        cfg = json.loads(nad["spec"]["config"])
        for key in ("cniVersion", "type", "name"):
            if key not in cfg:
                bad.append(f"attachment {name}: CNI config has no {key}")
        if not nad["metadata"].get("annotations", {}).get("k8s.v1.cni.cncf.io/resourceName"):
            bad.append(f"attachment {name}: no k8s.v1.cni.cncf.io/resourceName")
    for wl, spec, meta in dataplane_pods(objs):
        requested = {}
        for c in spec["containers"]:
            for r, n in c.get("resources", {}).get("limits", {}).items():
                if "/" in r:                      # an extended resource: a device plugin's pool
                    requested[r] = requested.get(r, 0) + int(quantity(n))
        attached = {}
        annotation = meta.get("annotations", {}).get("k8s.v1.cni.cncf.io/networks", "[]")
        for att in json.loads(annotation):
            nad = nads.get(att["name"])
            if nad is None:
                bad.append(f"{wl}: attachment {att['name']} is not rendered by the chart")
                continue
            pool = nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]
            attached[pool] = attached.get(pool, 0) + 1
        for pool in sorted(set(requested) | set(attached)):
            if requested.get(pool, 0) != attached.get(pool, 0):
                bad.append(f"{wl}: {requested.get(pool, 0)} VFs of {pool} requested, "
                           f"{attached.get(pool, 0)} attachments of it")
    return bad


def not_guaranteed(objs):
    return [f"{wl}: QoS class {q}" for wl, spec, _ in dataplane_pods(objs)
            if (q := pod_qos(spec)) != "Guaranteed"]


RULES = {
    "requests_equal_limits": requests_not_equal_limits,
    "integer_cpus": non_integer_cpus,
    "hugepages_with_memory_limit": hugepages_without_memory_limit,
    "sriov_matches_networks": sriov_mismatches,
    "guaranteed_qos": not_guaranteed,
}


# --- every variant obeys every rule ---------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("rule", sorted(RULES))
def test_rendered_manifests_obey(rendered, rule, variant):
    assert RULES[rule](rendered[variant]) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_uplink_and_downlink_are_separate_containers(rendered, variant):
    names = sorted(c["name"] for _, spec, _ in dataplane_pods(rendered[variant])
                   for c in filter(is_dataplane_container, spec["containers"]))
    assert names == ["downlink", "uplink"]


def test_pods_layout_scales_pipelines_independently(rendered):
    deps = {o["metadata"]["name"]: o["spec"]["replicas"] for o in rendered["sidecar-agent"]
            if o["kind"] == "Deployment" and "bng" in o["metadata"]["name"]}
    assert deps == {"edge-edgeplane-bng-uplink": 2, "edge-edgeplane-bng-downlink": 1}


def test_agent_is_a_sidecar_or_a_daemonset(rendered):
    def agents(objs):
        return [(o["kind"], c["name"]) for o in objs if o["kind"] in WORKLOADS
                for c in o["spec"]["template"]["spec"]["containers"] if c["name"] == "agent"]
    assert agents(rendered["default"]) == [("Deployment", "agent")]
    assert agents(rendered["daemonset-agent"]) == [("DaemonSet", "agent")]


def test_controller_embedded_etcd_is_a_statefulset_with_a_volume(rendered):
    (ctl,) = [o for o in rendered["default"] if o["metadata"]["name"] == "edge-edgeplane-controller"
              and o["kind"] in WORKLOADS]
    assert ctl["kind"] == "StatefulSet" and ctl["spec"]["replicas"] == 1
    assert ctl["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "etcd-data"
    (c,) = ctl["spec"]["template"]["spec"]["containers"]
    assert "--data-dir=/var/lib/edgeplane/etcd/data" in c["args"]
    assert "--etcd-listen=http://$(POD_IP):2379" in c["args"]
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in c["env"]


def test_controller_token_file_is_not_readable_by_others(rendered):
    # `edgeplane controller --api-token-file` refuses a file with any of
    # 0o027 set; a secret volume's files are 0644 unless told otherwise.
    (ctl,) = [o for o in rendered["default"] if o["kind"] == "StatefulSet"]
    (vol,) = [v for v in ctl["spec"]["template"]["spec"]["volumes"] if v["name"] == "api-token"]
    assert vol["secret"]["defaultMode"] & 0o027 == 0
    assert ctl["spec"]["template"]["spec"]["securityContext"]["fsGroup"] == 65532


def test_agents_reach_the_embedded_etcd_through_the_controller_service(rendered):
    objs = rendered["default"]
    (svc,) = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == "edge-edgeplane-controller"]
    assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {"rest": 8443, "etcd": 2379}
    (ctl,) = [o for o in objs if o["kind"] == "StatefulSet"]
    (c,) = ctl["spec"]["template"]["spec"]["containers"]
    assert {p["name"] for p in c["ports"]} == {"rest", "etcd"}
    for _, sub, args in edgeplane_invocations(objs):
        if sub == "agent":
            assert "--etcd-endpoints=http://edge-edgeplane-controller.edge.svc:2379" in args


def test_controller_external_etcd_names_endpoints_and_tls(rendered):
    (ctl,) = [o for o in rendered["external-etcd"] if o["metadata"]["name"] == "edge-edgeplane-controller"
              and o["kind"] in WORKLOADS]
    assert ctl["kind"] == "Deployment"
    args = ctl["spec"]["template"]["spec"]["containers"][0]["args"]
    assert any(a.startswith("--etcd-endpoints=https://etcd-0") and a.count(",") == 2 for a in args)
    assert "--etcd-cert=/etc/edgeplane/etcd/tls.crt" in args
    assert "--api-client-ca=/etc/edgeplane/tls/ca.crt" in args
    assert not any(a.startswith(("--data-dir", "--etcd-listen")) for a in args)
    (svc,) = [o for o in rendered["external-etcd"] if o["kind"] == "Service"
              and o["metadata"]["name"] == "edge-edgeplane-controller"]
    assert [p["name"] for p in svc["spec"]["ports"]] == ["rest"]
    # The agents use the same cluster with the same client certificate.
    for wl, spec, _ in pods(rendered["external-etcd"]):
        for c in spec["containers"]:
            if c["name"] != "agent":
                continue
            assert any(a.startswith("--etcd-endpoints=https://etcd-0") and a.count(",") == 2 for a in c["args"])
            assert "--etcd-key=/etc/edgeplane/etcd/tls.key" in c["args"]
            (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/edgeplane/etcd"]
            (vol,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
            assert vol["secret"]["secretName"] == "edgeplane-etcd-client", wl


def test_external_etcd_without_endpoints_is_refused():
    with pytest.raises(RenderError, match="endpoints"):
        helm_template("--set", "controller.etcd.mode=external")


def test_no_container_is_privileged_by_default(rendered):
    for variant, objs in rendered.items():
        for wl, spec, _ in pods(objs):
            for c in spec["containers"]:
                sc = c.get("securityContext", {})
                assert not sc.get("privileged"), f"{variant}: {wl}/{c['name']}"
                assert sc.get("capabilities", {}).get("drop") == ["ALL"], f"{variant}: {wl}/{c['name']}"


def test_service_monitor_selects_the_metrics_service(rendered):
    objs = rendered["daemonset-agent"]
    (sm,) = [o for o in objs if o["kind"] == "ServiceMonitor"]
    (svc,) = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"].endswith("agent-metrics")]
    labels = svc["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
    assert sm["spec"]["endpoints"][0]["port"] in {p["name"] for p in svc["spec"]["ports"]}


@pytest.mark.parametrize("variant", VARIANTS)
def test_metrics_service_selects_the_agents(rendered, variant):
    objs = rendered[variant]
    (svc,) = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"].endswith("agent-metrics")]
    sel = svc["spec"]["selector"]
    selected = [(wl, c) for wl, spec, meta in pods(objs)
                if all(meta.get("labels", {}).get(k) == v for k, v in sel.items())
                for c in spec["containers"] if c["name"] == "agent"]
    assert selected, "the metrics Service selects no agent"
    for _, c in selected:
        assert "metrics" in {p["name"] for p in c.get("ports", [])}


def test_dataplane_config_names_every_port_and_worker(rendered):
    cm = dataplane_configmap(rendered["default"])
    up = cm["data"]["uplink.conf"]
    assert "[port access]\ndevice = @DEV_access@" in up
    assert "[worker uplink0]\npipeline = bng-uplink\nrx = access" in up
    assert "[worker uplink1]" not in up                      # cpus: 2 = control thread + one worker
    assert cm["data"]["uplink.ports"].split() == [
        "access", "PCIDEVICE_INTEL_COM_SRIOV_ACCESS", "1", "core", "PCIDEVICE_INTEL_COM_SRIOV_CORE", "1"]


# --- the chart against the real edgeplane binary ----------------------------------

EDGEPLANE = Path(os.environ.get("EDGEPLANE_BIN", ROOT / "build" / "bin" / "edgeplane"))


def edgeplane_invocations(objs):
    """(workload/container, subcommand, flags) of each container that runs
    `edgeplane controller` or `edgeplane agent` (the image's entrypoint is
    the edgeplane binary; the chart passes the subcommand first)."""
    for wl, spec, _ in pods(objs):
        for c in spec["containers"]:
            args = c.get("args", [])
            if args and args[0] in ("controller", "agent"):
                yield f"{wl}/{c['name']}", args[0], args[1:]


def flags_refused(sub, args):
    """What the built edgeplane binary says of `edgeplane SUB ARGS -h`: ""
    when it accepts every flag and value, else its complaint. Go's flag
    package parses every flag before -h (exit 0 on -h, 2 on an unknown flag
    or a bad value), so nothing is started; but it stops at the first
    argument that is not a flag, after which -h would be an argument and the
    command would run: every argument must be --name=value."""
    if not EDGEPLANE.is_file():
        pytest.fail(f"{EDGEPLANE} is missing: `make build` builds it")
    loose = [a for a in args if not re.fullmatch(r"--[a-z0-9][a-z0-9-]*=.*", a)]
    if loose:
        return f"not --name=value: {loose}"
    res = subprocess.run([str(EDGEPLANE), sub, *args, "-h"], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        return res.stderr.splitlines()[0] if res.stderr else f"exit {res.returncode}"
    return ""


@pytest.mark.parametrize("variant", VARIANTS)
def test_chart_passes_only_flags_the_edgeplane_binary_accepts(rendered, variant):
    runs = list(edgeplane_invocations(rendered[variant]))
    assert {sub for _, sub, _ in runs} == {"controller", "agent"}
    assert {where: flags_refused(sub, args) for where, sub, args in runs} == {where: "" for where, _, _ in runs}


def test_flag_check_refuses_a_flag_the_binary_lacks():
    # The flags the chart passed before the controller landed.
    objs = helm_template("--set-json", 'controller.extraArgs=["--grpc-listen=tcp:0.0.0.0:9443"]',
                         "--set-json", 'agent.extraArgs=["--controller=edge-edgeplane-controller:9443"]')
    refused = {where: flags_refused(sub, args) for where, sub, args in edgeplane_invocations(objs)}
    assert refused == {"edge-edgeplane-controller/controller": "flag provided but not defined: -grpc-listen",
                       "edge-edgeplane-bng/agent": "flag provided but not defined: -controller"}
    assert flags_refused("agent", ["--dp-check=soon"]).startswith('invalid value "soon" for flag -dp-check')
    assert flags_refused("agent", ["--node=a", "positional"]) == "not --name=value: ['positional']"


@pytest.mark.parametrize("variant", VARIANTS)
def test_agent_bng_socket_is_a_data_plane_control_socket(rendered, variant):
    # The agent's --bng-socket flags name the ctl_socket of every
    # edgeplane-dp that shares its socket directory: its own pod's (sidecar)
    # or, for the DaemonSet, the release's pipelines on its node.
    objs = rendered[variant]
    cm = dataplane_configmap(objs)
    sockets = {name.removesuffix(".conf"): re.search(r"^ctl_socket = (.*)$", text, re.M).group(1)
               for name, text in cm["data"].items() if name.endswith(".conf")}
    daemonset = any(o["kind"] == "DaemonSet" for o in objs)
    for wl, spec, _ in pods(objs):
        for c in spec["containers"]:
            if c["name"] != "agent":
                continue
            bng = sorted(a.removeprefix("--bng-socket=") for a in c["args"] if a.startswith("--bng-socket="))
            beside = sockets if daemonset else {
                d["command"][-1]: sockets[d["command"][-1]] for d in filter(is_dataplane_container, spec["containers"])}
            # Every edgeplane-dp beside it, each once: a split uplink/downlink
            # pair is programmed on both processes.
            assert bng == sorted(beside.values()), f"{wl}: {bng} != {beside}"


def test_daemonset_data_plane_pods_do_not_share_a_node(rendered):
    # Their sockets are on the node, one name per pipeline.
    for _, spec, meta in dataplane_pods(rendered["daemonset-agent"]):
        (term,) = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"].items() <= meta["labels"].items()


def run_start_script(objs, tmp_path, pipeline, env, *dp_args):
    """The ConfigMap's start.sh, run as the container would, with the
    ConfigMap's files in a directory of the test's and a real edgeplane-dp."""
    cm = dataplane_configmap(objs)
    etc, run = tmp_path / "etc", tmp_path / "run"
    etc.mkdir()
    run.mkdir()
    for name, text in cm["data"].items():
        (etc / name).write_text(text)
    full_env = {"PATH": "/usr/bin:/bin", "POD_NAME": "edge-edgeplane-bng-7d9f",
                "EDGEPLANE_CONF_DIR": str(etc), "EDGEPLANE_RUN_DIR": str(run),
                "EDGEPLANE_DP": os.environ.get("EDGEPLANE_DP", str(ROOT / "build/dp/edgeplane-dp")), **env}
    res = subprocess.run(["/bin/sh", str(etc / "start.sh"), pipeline, *dp_args],
                         capture_output=True, text=True, env=full_env, timeout=60)
    return res, run / f"edge-edgeplane-bng-7d9f-{pipeline}.conf"


VFS = {"PCIDEVICE_INTEL_COM_SRIOV_ACCESS": "0000:18:02.1", "PCIDEVICE_INTEL_COM_SRIOV_CORE": "0000:18:0a.3"}


@pytest.mark.parametrize("pipeline", ["uplink", "downlink"])
def test_start_script_config_passes_edgeplane_dp_check(rendered, tmp_path, pipeline):
    # The device plugin's variables as it sets them; edgeplane-dp parses the
    # whole file (--check: no hugepages, no PCI probe, no socket).
    res, conf = run_start_script(rendered["default"], tmp_path, pipeline, VFS, "--check")
    assert res.returncode == 0, res.stdout + res.stderr
    text = conf.read_text()
    assert "[port access]\ndevice = 0000:18:02.1\n" in text
    assert "[port core]\ndevice = 0000:18:0a.3\n" in text
    assert f"ctl_socket = /run/edgeplane/{pipeline}.sock" in text
    assert "@" not in text


def test_start_script_refuses_a_missing_vf(rendered, tmp_path):
    res, conf = run_start_script(rendered["default"], tmp_path, "uplink",
                                 {"PCIDEVICE_INTEL_COM_SRIOV_ACCESS": "0000:18:02.1"}, "--check")
    assert res.returncode == 1
    assert "PCIDEVICE_INTEL_COM_SRIOV_CORE is empty" in res.stderr
    assert not conf.exists()


# --- each rule refuses a rendering that breaks it --------------------------------

def broken(*overrides):
    """Render the defaults with overrides, past the values schema."""
    args = ["--skip-schema-validation"]
    for o in overrides:
        args += ["--set-json", o]
    return helm_template(*args)


def test_schema_refuses_fractional_cpus():
    with pytest.raises(RenderError, match="cpus"):
        helm_template("--set-json", "dataplane.pipelines.uplink.cpus=1.5")


def test_integer_cpus_refuses_fractional_cpus():
    assert non_integer_cpus(broken("dataplane.pipelines.uplink.cpus=1.5")) == [
        "edge-edgeplane-bng/uplink: CPU 1.5 is not a whole number of CPUs"]


def test_schema_refuses_a_missing_memory_limit():
    with pytest.raises(RenderError, match="memory"):
        helm_template("--set-json", "dataplane.pipelines.downlink.memory=null")


def test_hugepages_rule_refuses_a_missing_memory_limit():
    assert hugepages_without_memory_limit(broken("dataplane.pipelines.downlink.memory=null")) == [
        "edge-edgeplane-bng/downlink: hugepages without a memory limit"]


def test_hugepages_rule_refuses_an_unknown_page_size():
    bad = hugepages_without_memory_limit(broken('dataplane.pipelines.uplink.hugepages={"size":"4Mi","amount":"2Gi"}'))
    assert bad == ["edge-edgeplane-bng/uplink: hugepages ['4Mi'], want one of ['1Gi', '2Mi']"]


def test_guaranteed_qos_refuses_a_container_without_memory():
    assert not_guaranteed(broken("dataplane.pipelines.downlink.memory=null")) == [
        "edge-edgeplane-bng: QoS class Burstable"]


def test_guaranteed_qos_refuses_a_sidecar_without_limits():
    assert not_guaranteed(broken("agent.resources.memory=null")) == [
        "edge-edgeplane-bng: QoS class Burstable"]


def test_sriov_rule_refuses_a_vf_without_its_attachment():
    # Schema-valid: an operator adds a VF of the access pool by hand.
    objs = helm_template("--set-json", 'dataplane.pipelines.uplink.extraResources={"intel.com/sriov_access":1}')
    assert sriov_mismatches(objs) == [
        "edge-edgeplane-bng: 3 VFs of intel.com/sriov_access requested, 2 attachments of it"]


def test_sriov_rule_refuses_an_attachment_the_chart_does_not_render():
    objs = helm_template("--set", "networks.core.create=false")
    assert sriov_mismatches(objs) == [
        "edge-edgeplane-bng: attachment edge-edgeplane-core is not rendered by the chart",
        "edge-edgeplane-bng: attachment edge-edgeplane-core is not rendered by the chart",
        "edge-edgeplane-bng: 2 VFs of intel.com/sriov_core requested, 0 attachments of it"]


def test_requests_equal_limits_refuses_a_raised_limit(rendered):
    # No value of the chart sets a request apart from its limit (each is
    # written once and rendered into both), so the break is made in the
    # rendered object: a limit raised after rendering, as a post-renderer or
    # a hand edit would.
    objs = json.loads(json.dumps(rendered["default"]))
    for _, spec, _ in dataplane_pods(objs):
        spec["containers"][0]["resources"]["limits"]["cpu"] = "3"
    assert requests_not_equal_limits(objs) == ["edge-edgeplane-bng/downlink: cpu request 2 != limit 3"]
    assert not_guaranteed(objs) == ["edge-edgeplane-bng: QoS class Burstable"]


def test_strict_validation_refuses_an_unknown_field(rendered):
    # deploy/validate's kubernetes-validate runs strict: a field Kubernetes
    # does not define (here a misspelt `limit`) is an error, not ignored.
    objs = json.loads(json.dumps(rendered["default"]))
    (dep,) = [o for o in objs if o["kind"] == "Deployment"]
    kubernetes_validate.validate(dep, K8S_VERSION, strict=True)
    dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limit"] = {"cpu": "2"}
    with pytest.raises(kubernetes_validate.ValidationError, match="limit"):
        kubernetes_validate.validate(dep, K8S_VERSION, strict=True)


def test_grafana_dashboards_are_generated_and_shipped(rendered):
    # The JSON is deploy/grafana_dashboards.py's output (its one source),
    # and with metrics.grafanaDashboards on, the chart ships each file whole
    # in a ConfigMap carrying the Grafana sidecar's label.
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "deploy" / "grafana_dashboards.py"),
                        "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    files = {p.name: p.read_text() for p in (CHART / "dashboards").glob("*.json")}
    assert set(files) == {"edgeplane-router.json", "edgeplane-bng.json", "edgeplane-cmts.json", "edgeplane-xdp.json"}
    assert not [o for o in rendered["default"] if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]]
    shipped = {}
    for o in rendered["daemonset-agent"]:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dashboard"):
            assert o["metadata"]["labels"]["grafana_dashboard"] == "1"
            shipped.update(o["data"])
    assert {k: json.loads(v) for k, v in shipped.items()} == {k: json.loads(v) for k, v in files.items()}
