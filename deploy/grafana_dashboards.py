#!/usr/bin/env python3
"""deploy/grafana_dashboards.py: writes the Grafana dashboards of the router,
the vBNG, the vCMTS and the XDP steering function
(deploy/helm/edgeplane/dashboards/*.json, where the chart's ConfigMap picks
them up).

This file is their one source; the JSON is generated, never edited:
    deploy/grafana_dashboards.py          write them
    deploy/grafana_dashboards.py --check  exit 1 when a file differs from what
                                       this script writes (tests run it)
Every query names metrics the node agent and the XDP function export
(control/internal/dptelemetry, control/internal/reconcile,
control/internal/agent); tests/test_control.py asks a real Prometheus that
scrapes the agent for each name, tests/test_xdp_steer.py the XDP function's
/metrics.  docs/control.md describes the panels.
"""
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "helm" / "edgeplane" / "dashboards"
DS = {"type": "prometheus", "uid": "${datasource}"}
RI = "$__rate_interval"
METRIC = re.compile(r"\bedgeplane_[a-z0-9_]+")
# Label matchers used inside f-strings (Python 3.11 f-strings cannot nest
# the same quotes).
IN, UPLINK = 'direction="in"', 'pipeline="bng-uplink"'
BNG_REASONS, RED = 'reason=~"bng_.*"', 'reason="bng_policer_red"'
CMTS_REASONS, CMTS_DS = 'reason=~"cmts_.*"', 'pipeline="cmts-ds"'
# The drop reasons that mean a modem's frames are damaged or its keys are
# out of step (DOCSIS MAC and Upper Layer Interface, and the BPI+ Security
# specification's key sequence), as opposed to policy and congestion.
CMTS_INTEGRITY = ('reason=~"cmts_(hcs_bad|crc_bad|us_key_unknown|us_unencrypted|crypto_failed|'
                  'uepi_malformed|reassembly_failed)"')
STAGES = 'stage=~"crypto|framing|depi"'
CMTS_QUEUES = 'reason=~"cmts_(sf_queue_full|channel_queue_full)"'


class Board:
    """A dashboard being laid out: panels fill 24 columns, rows of 8."""

    def __init__(self, uid, title, description, pipelines=None):
        self.uid, self.title, self.description = uid, title, description
        self.panels, self.x, self.y = [], 0, 0
        self.variables = [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                           "query": "prometheus", "current": {}, "hide": 0}]
        if pipelines is not None:
            # The data planes shown: those running one of these pipelines
            # (the `dp` label is the control socket's file name, which a
            # deployment chooses; the pipeline is what the data plane does).
            q = f'label_values(edgeplane_dp_worker_rx_packets_total{{pipeline=~"{pipelines}"}}, dp)'
            self.variables.append({
                "name": "dp", "label": "data plane", "type": "query", "datasource": DS,
                "definition": q, "query": {"query": q, "refId": "dp"},
                "includeAll": True, "multi": True,
                "current": {"text": "All", "value": "$__all"}, "refresh": 2, "sort": 1, "hide": 0})

    def row(self, title):
        if self.x:
            self.x, self.y = 0, self.y + 8
        self.panels.append({"type": "row", "title": title, "collapsed": False, "panels": [],
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}})
        self.y += 1

    def panel(self, title, description, targets, unit="short", kind="timeseries", w=12, stack=False):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + 8
        p = {"type": kind, "title": title, "description": description, "datasource": DS,
             "gridPos": {"h": 8, "w": w, "x": self.x, "y": self.y},
             "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
             "targets": [{"refId": chr(ord("A") + i), "datasource": DS, "expr": expr, "legendFormat": legend}
                         for i, (expr, legend) in enumerate(targets)]}
        if kind == "timeseries":
            p["fieldConfig"]["defaults"]["custom"] = {"stacking": {"mode": "normal" if stack else "none"},
                                                      "fillOpacity": 10 if stack else 0}
            p["options"] = {"legend": {"displayMode": "table", "placement": "bottom",
                                       "calcs": ["mean", "max", "lastNotNull"]},
                            "tooltip": {"mode": "multi", "sort": "desc"}}
        else:
            p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                            "colorMode": "value", "graphMode": "none"}
        self.panels.append(p)
        self.x += w

    def json(self):
        for i, p in enumerate(self.panels, 1):
            p["id"] = i
        return {"uid": self.uid, "title": self.title, "description": self.description,
                "tags": ["edgeplane"], "editable": True, "graphTooltip": 1, "refresh": "10s",
                "schemaVersion": 39, "version": 1, "timezone": "browser",
                "time": {"from": "now-30m", "to": "now"},
                "templating": {"list": self.variables}, "annotations": {"list": []},
                "links": [], "panels": self.panels}


def sel(extra=""):
    """The label selector of the data planes chosen by $dp."""
    return '{dp=~"$dp"' + (f",{extra}" if extra else "") + "}"


def dataplane_panels(b, drop_filter=None):
    """What every edgeplane-dp exports: ports, workers, stages, drops."""
    b.row("Data plane")
    b.panel("Up", "1 when the data plane answered the agent's last scrape of its control socket.",
            [(f"edgeplane_dp_up{sel()}", "{{dp}}")], kind="stat", w=6)
    b.panel("Uptime", "Seconds since each data plane started: a restart resets it (the agent resyncs).",
            [(f"edgeplane_dp_uptime_seconds{sel()}", "{{dp}}")], unit="s", kind="stat", w=6)
    b.panel("Link", "1 when a port's link is up.",
            [(f"edgeplane_dp_port_link_up{sel()}", "{{dp}} {{port}}")], kind="stat", w=12)
    b.panel("Port packets per second", "ethdev counters of each port, received (rx) and sent (tx).",
            [(f"sum by (dp, port, direction) (rate(edgeplane_dp_port_packets_total{sel()}[{RI}]))",
              "{{dp}} {{port}} {{direction}}")], unit="pps")
    b.panel("Port throughput", "Bits per second of each port (ethdev byte counters, without the "
            "Ethernet preamble and inter-frame gap).",
            [(f"8 * sum by (dp, port, direction) (rate(edgeplane_dp_port_bytes_total{sel()}[{RI}]))",
              "{{dp}} {{port}} {{direction}}")], unit="bps")
    reason = f'reason=~"{drop_filter}"' if drop_filter else ""
    b.panel("Drops by reason", "Packets dropped per second, by the reason the dropping stage named "
            "(the data plane's one list of drop reasons).",
            [(f"sum by (dp, reason) (rate(edgeplane_dp_drops_total{sel(reason)}[{RI}])) > 0",
              "{{dp}} {{reason}}")], unit="pps", stack=True)
    b.panel("Port errors", "Packets the NIC or driver lost before a worker saw them (rx_missed: the "
            "receive ring was full) and transmit errors.",
            [(f"sum by (dp, port, kind) (rate(edgeplane_dp_port_errors_total{sel()}[{RI}])) > 0",
              "{{dp}} {{port}} {{kind}}")], unit="pps")
    b.panel("Worker busy", "Share of each worker's cycles spent on polls that returned packets; "
            "the rest is empty polls and power-aware sleep.",
            [("100 * sum by (dp, worker) (rate(edgeplane_dp_worker_busy_cycles_total" + sel() + f"[{RI}]))"
              " / (sum by (dp, worker) (rate(edgeplane_dp_worker_busy_cycles_total" + sel() + f"[{RI}]))"
              " + sum by (dp, worker) (rate(edgeplane_dp_worker_idle_cycles_total" + sel() + f"[{RI}]))"
              " + sum by (dp, worker) (rate(edgeplane_dp_worker_sleep_cycles_total" + sel() + f"[{RI}])))",
              "{{dp}} {{worker}}")], unit="percent")
    b.panel("Worker packets per second", "Packets each worker received and sent.",
            [(f"sum by (dp, worker) (rate(edgeplane_dp_worker_{d}_packets_total{sel()}[{RI}]))",
              "{{dp}} {{worker}} " + d) for d in ("rx", "tx")],
            unit="pps")
    b.panel("Cycles per packet by stage", "TSC cycles a stage spent per packet it received, over the "
            "interval (rx and tx include the driver's work).",
            [(f"sum by (dp, stage) (rate(edgeplane_dp_stage_cycles_total{sel()}[{RI}]))"
              f" / sum by (dp, stage) (rate(edgeplane_dp_stage_packets_total{sel(IN)}[{RI}]))",
              "{{dp}} {{stage}}")])
    b.panel("Stage drops", "Packets each stage dropped per second, by reason.",
            [(f"sum by (dp, stage, reason) (rate(edgeplane_dp_stage_drops_total{sel(reason)}[{RI}])) > 0",
              "{{dp}} {{stage}} {{reason}}")], unit="pps")


def reconcile_panels(b, kinds=None):
    """The agent's reconciliation; kinds: a regex of the object kinds the
    "Objects changed" panel shows (all when None)."""
    b.row("Reconciliation (edgeplane agent --node)")
    b.panel("Revisions", "The desired-state revision of the node and the one it last converged to: "
            "apart, the node has not converged.",
            [("edgeplane_agent_desired_revision", "desired {{instance}}"),
             ("edgeplane_agent_observed_revision", "observed {{instance}}")], w=8)
    b.panel("Drift", "Objects the last pass found different and could not fix (the data plane refused "
            "them); the node's status names each.",
            [("edgeplane_agent_drift_objects", "{{instance}}")], w=8)
    b.panel("Passes", "Reconciliation passes by what prompted them: a restart of a data plane shows "
            "as reason=restart.",
            [("sum by (reason) (increase(edgeplane_agent_resyncs_total[5m])) > 0", "{{reason}}")], w=8)
    ksel = f'{{kind=~"{kinds}"}}' if kinds else ""
    b.panel("Objects changed", "Data-plane objects reconciliation added, updated or removed.",
            [(f"sum by (kind, op) (rate(edgeplane_agent_changes_total{ksel}[{RI}])) > 0", "{{kind}} {{op}}")],
            unit="ops")
    b.panel("Pass duration", "Time of one pass (read every managed table, send what differs), p50 and p99.",
            [("histogram_quantile(0.5, sum by (le) (rate(edgeplane_agent_pass_duration_seconds_bucket[5m])))", "p50"),
             ("histogram_quantile(0.99, sum by (le) (rate(edgeplane_agent_pass_duration_seconds_bucket[5m])))", "p99")],
            unit="s")


def router():
    b = Board("edgeplane-router", "edgeplane: router",
              "The router pipeline (RFC 1812 forwarding with ACL): ports, workers, stages, drops, and "
              "the node agent keeping its routes and ACL as desired.", pipelines="router")
    dataplane_panels(b)
    reconcile_panels(b)
    return b


def bng():
    b = Board("edgeplane-bng", "edgeplane: vBNG",
              "The vBNG (bng-uplink / bng-downlink): subscriber traffic, policing and HQoS drops, "
              "per-stage cost, and subscribers programmed by reconciliation.", pipelines="bng-.*")
    dataplane_panels(b)
    b.row("Subscribers")
    b.panel("Subscriber drops", "The BNG's own drop reasons: unknown subscriber, spoofed source, "
            "policer red, HQoS queue full, punt ring full.",
            [(f"sum by (dp, reason) (rate(edgeplane_dp_drops_total{sel(BNG_REASONS)}[{RI}])) > 0",
              "{{dp}} {{reason}}")], unit="pps", stack=True)
    b.panel("Policed (red) share", "Uplink packets the subscribers' trTCM policers marked red, as a "
            "share of what the uplink workers received.",
            [(f"100 * sum by (dp) (rate(edgeplane_dp_drops_total{sel(RED)}[{RI}]))"
              f" / sum by (dp) (rate(edgeplane_dp_worker_rx_packets_total{sel(UPLINK)}[{RI}]))",
              "{{dp}}")], unit="percent")
    reconcile_panels(b, kinds="subscriber")
    return b


def cmts():
    b = Board("edgeplane-cmts", "edgeplane: vCMTS",
              "The DOCSIS MAC data plane (cmts-ds toward the Remote PHY Device over DEPI, cmts-us from "
              "it over UEPI): per-stage cost, drops by DOCSIS reason, and the cable modems, filters and "
              "service flows programmed by reconciliation.", pipelines="cmts-.*")
    dataplane_panels(b)
    b.row("Cable modems")
    b.panel("vCMTS drops", "The vCMTS's own drop reasons: unknown CPE, spoofed source, DOCSIS filter "
            "deny, service-flow and channel queues full, upstream HCS/CRC/key errors.",
            [(f"sum by (dp, reason) (rate(edgeplane_dp_drops_total{sel(CMTS_REASONS)}[{RI}])) > 0",
              "{{dp}} {{reason}}")], unit="pps", stack=True)
    b.panel("Integrity and keys", "Frames dropped because their HCS or CRC-32 did not verify, their key "
            "sequence was unknown (a key roll out of step), BPI+ was expected and missing, or the crypto "
            "device failed: any non-zero rate is worth a look.",
            [(f"sum by (dp, reason) (rate(edgeplane_dp_drops_total{sel(CMTS_INTEGRITY)}[{RI}])) > 0",
              "{{dp}} {{reason}}")], unit="pps")
    b.panel("Downstream queue drops share", "Downstream frames dropped because a service flow kept "
            "exceeding its max sustained rate or the bonding group's channels were backlogged, as a "
            "share of what the downstream workers received.",
            [(f"100 * sum by (dp) (rate(edgeplane_dp_drops_total{sel(CMTS_QUEUES)}[{RI}]))"
              f" / sum by (dp) (rate(edgeplane_dp_worker_rx_packets_total{sel(CMTS_DS)}[{RI}]))",
              "{{dp}}")], unit="percent")
    b.panel("Crypto and framing cost", "Cycles per frame of the BPI+/CRC-32 operation and of DOCSIS "
            "framing and DEPI encapsulation, the stages a cable operator sizes cores by.",
            [(f"sum by (dp, stage) (rate(edgeplane_dp_stage_cycles_total{sel(STAGES)}[{RI}]))"
              f" / sum by (dp, stage) (rate(edgeplane_dp_stage_packets_total{sel(IN + ',' + STAGES)}[{RI}]))",
              "{{dp}} {{stage}}")])
    reconcile_panels(b, kinds="modem|service-flow|classifier|filter")
    return b


def xdp():
    b = Board("edgeplane-xdp", "edgeplane: XDP steering",
              "The XDP steering function: verdicts, steering paths, prioritised flows, overload "
              "offload and the CPUs' load that drives it.")
    b.row("Verdicts")
    b.panel("Packets by verdict", "XDP verdicts per second: pass (to the host or edgeplane-dp), "
            "tx (offloaded to the alternative node), drop, redirect.",
            [(f"sum by (verdict) (rate(edgeplane_xdp_packets_total[{RI}]))", "{{verdict}}")],
            unit="pps", stack=True)
    b.panel("Throughput by verdict", "Bits per second by verdict.",
            [(f"8 * sum by (verdict) (rate(edgeplane_xdp_bytes_total[{RI}]))", "{{verdict}}")], unit="bps")
    b.panel("Steering paths", "Why each verdict: prioritised flow, offloaded under overload, not a "
            "tunnel, ...", [(f"sum by (path) (rate(edgeplane_xdp_path_packets_total[{RI}])) > 0", "{{path}}")],
            unit="pps", stack=True)
    b.panel("Drops by reason", "Packets the program dropped, by reason.",
            [(f"sum by (reason) (rate(edgeplane_xdp_drops_total[{RI}])) > 0", "{{reason}}")], unit="pps")
    b.row("Prioritised flows and overload")
    b.panel("Prioritised flows", "Packets per second of each intent's flows.",
            [(f"sum by (intent) (rate(edgeplane_xdp_flow_packets_total[{RI}]))", "{{intent}}")], unit="pps")
    b.panel("Intents", "Intents applied.", [("edgeplane_xdp_intents", "intents")], kind="stat", w=6)
    b.panel("Overloaded", "1 while the host is in overload (non-prioritised traffic offloaded).",
            [("edgeplane_xdp_overloaded", "overloaded")], kind="stat", w=6)
    b.panel("CPU load", "Busy fraction of each CPU over the agent's last sample (overload enters "
            "above --load-high, leaves below --load-low).",
            [("edgeplane_xdp_cpu_load_ratio", "cpu {{cpu}}")], unit="percentunit")
    b.panel("API latency", "Northbound request latency (p99), map writes included.",
            [("histogram_quantile(0.99, sum by (le, method) "
              "(rate(edgeplane_xdp_api_request_duration_seconds_bucket[5m])))", "{{method}}")], unit="s")
    return b


DASHBOARDS = {"router": router, "bng": bng, "cmts": cmts, "xdp": xdp}


def render():
    """{file name: JSON text} of every dashboard."""
    return {f"edgeplane-{name}.json": json.dumps(make().json(), indent=1, sort_keys=True) + "\n"
            for name, make in DASHBOARDS.items()}


def metric_names(dashboard):
    """Every metric name a dashboard's queries (and variables) use."""
    names = set()
    for p in dashboard["panels"]:
        for t in p.get("targets", []):
            names |= set(METRIC.findall(t["expr"]))
    for v in dashboard["templating"]["list"]:
        names |= set(METRIC.findall(v.get("definition", "")))
    return names


def main(argv):
    check = "--check" in argv
    stale = []
    for name, text in render().items():
        path = OUT / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("out of date (run deploy/grafana_dashboards.py): " + " ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
