"""Lossless and lossy Ethernet segments: how each behaves under congestion.

The seed asks for the storage segment that carries Lustre to be lossless (PFC and ECN) and for
Ceph/business traffic to be lossy. This kernel has no RED, fq_codel or prio qdisc and no PFC, so:

- *lossless* segment (the topology's `lossless: true`):
  - ECN: an nftables rule on every egress port of every switch namespace of the segment CE-marks
    ECT packets above the port's (scaled) rate: `oifname X ip ecn {ect0, ect1} limit rate over R
    ip ecn set ce`. It marks on a rate, not on a queue depth (what a real switch's WRED/ECN
    threshold does); senders' TCP (tcp_ecn=1 in every host) backs off on the echoed CE;
  - PFC: modelled as "no drop": every port of the segment (both ends of every wire) queues under
    its HTB class in a deep pfifo (DEEP_QUEUE packets) and no policer drops; a real PFC pause
    would hold the sender instead, which the deep queue stands in for.
- *lossy* segment: an nftables policer on every switch egress port drops what exceeds the port's
  scaled rate (`limit rate over R drop`), as a shallow-buffered switch tail-drops.

Both need shaped links (`build_network(..., bandwidth_scale=...)`): without shaping nothing is
congested at emulated rates, and the policy is reported as not applied. Every rule carries a
counter (marks, drops) that `counters()` reads, with the qdisc drops of the segment's ports.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from emulator.network import kernel
from emulator.network.errors import NetworkError
from emulator.network.kernel import Job, run_jobs
from emulator.network.plan import NetworkPlan

TABLE = "ctcong"
DEEP_QUEUE = 10000  # packets: the "no drop" queue that models PFC
MARK_COMMENT = "ecn-mark"
DROP_COMMENT = "police-drop"
FRAME = 1514  # bytes on the wire per full-size frame (MTU 1500 + Ethernet header)
MARK_FRACTION = 0.9  # ECN: a phantom queue drained at 90 % of the port rate marks before the real one fills
MARK_BURST = 8  # packets
POLICE_BURST = 32  # packets: a shallow switch buffer


def _bytes_per_s(rate_gbps: float, scale: float) -> int:
    return max(1000, round(rate_gbps * 1e9 * scale / 8))


def _rule_script(ports: list[tuple[str, int]], lossless: bool) -> str:
    """nftables limits in packets per second: a byte-mode limit's bucket holds a whole second of
    traffic (tokens_max = unit x (rate + burst) / rate), far too deep to act like a switch buffer,
    so the segment's ports carry full-size frames (gso_max_segs 1) and limits count frames."""
    lines = [f"add table inet {TABLE}", f"delete table inet {TABLE}", f"add table inet {TABLE}",
             f"add chain inet {TABLE} egress {{ type filter hook forward priority 0; }}"]
    for ifname, bps in ports:
        if lossless:
            pps = max(1, round(bps * MARK_FRACTION / FRAME))
            limit = f"limit rate over {pps}/second burst {MARK_BURST} packets"
        else:
            pps = max(1, round(bps / FRAME))
            limit = f"limit rate over {pps}/second burst {POLICE_BURST} packets"
        if lossless:
            lines.append(f'add rule inet {TABLE} egress oifname "{ifname}" ip ecn {{ ect0, ect1 }} {limit} '
                         f'counter ip ecn set ce comment "{MARK_COMMENT}"')
        else:
            lines.append(f'add rule inet {TABLE} egress oifname "{ifname}" {limit} counter drop '
                         f'comment "{DROP_COMMENT}"')
    return "\n".join(lines) + "\n"


def probe(ns: str) -> dict[str, str | None]:
    """What this kernel offers, tried in namespace `ns`: None when it works, else the error."""
    out: dict[str, str | None] = {}
    tries = {
        "ecn_mark": "ip ecn { ect0, ect1 } limit rate over 1000 bytes/second counter ip ecn set ce",
        "policer": "limit rate over 1000 bytes/second counter drop",
    }
    for what, rule in tries.items():
        script = (f"add table inet ctprobe\nadd chain inet ctprobe c {{ type filter hook forward priority 0; }}\n"
                  f"add rule inet ctprobe c {rule}\n")
        r = subprocess.run(["nsenter", f"--net={kernel.NETNS_DIR}/{ns}", "nft", "-f", "-"], input=script,
                           capture_output=True, text=True)
        subprocess.run(["nsenter", f"--net={kernel.NETNS_DIR}/{ns}", "nft", "delete", "table", "inet", "ctprobe"],
                       capture_output=True)
        out[what] = None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["nft failed"])[-1]
    return out


def segment_ports(plan: NetworkPlan, segment: str) -> dict[str, list[tuple[str, str, int]]]:
    """Namespace label -> [(ifname, "switch"|"host", rate_gbps)] for every wire end of a segment."""
    ports: dict[str, list[tuple[str, str, int]]] = {}
    for w in plan.wires:
        if w.plane != segment:
            continue
        for end in (w.a, w.b):
            kind = "host" if plan.namespaces[end.ns].kind == "host" else "switch"
            ports.setdefault(end.ns, []).append((end.ifname, kind, w.rate_gbps))
    return ports


def apply(plan: NetworkPlan, scale: float | None, lossless: dict[str, bool]) -> dict[str, Any]:
    """Install each segment's congestion behaviour on links shaped at `scale` (Network.bandwidth_scale);
    returns the report `show()` prints."""
    report: dict[str, Any] = {}
    for seg in plan.segments:
        mode = "lossless" if lossless.get(seg) else "lossy"
        entry: dict[str, Any] = {"mode": mode}
        report[seg] = entry
        if not scale:
            entry["applied"] = False
            entry["why"] = ("links are not shaped (no bandwidth_scale), so nothing congests at emulated rates; "
                            + ("PFC/ECN modelled only" if mode == "lossless" else "tail drop modelled only"))
            continue
        ports = segment_ports(plan, seg)
        switches = [label for label in ports if plan.namespaces[label].kind != "host"]
        if not switches:
            entry.update(applied=False, why="the segment has no switch")
            continue
        caps = probe(plan.ns_name(switches[0]))
        need = "ecn_mark" if mode == "lossless" else "policer"
        if caps[need] is not None:
            entry.update(applied=False, why=f"this kernel's nftables cannot do it: {caps[need]}")
            continue
        rate = next(r for es in ports.values() for _i, _k, r in es)
        bps = _bytes_per_s(rate, scale)
        nft_jobs = [Job(plan.ns_name(label), "nft",
                        _rule_script([(i, _bytes_per_s(r, scale)) for i, k, r in es if k == "switch"],
                                     mode == "lossless"))
                    for label, es in ports.items() if label in switches]
        run_jobs(nft_jobs)
        run_jobs([Job(plan.ns_name(label), "ip", "".join(f"link set dev {i} gso_max_segs 1\n" for i, _k, _r in es))
                  for label, es in ports.items()])
        mbit = f"{bps * 8 / 1e6:g} Mbit/s"
        if mode == "lossless":
            tc_jobs = [Job(plan.ns_name(label), "tc", "".join(
                f"qdisc replace dev {i} parent 1:1 handle 10: pfifo limit {DEEP_QUEUE}\n" for i, _k, _r in es))
                for label, es in ports.items()]
            run_jobs(tc_jobs)
            hosts = sorted({plan.ns_name(label) for label in ports if label not in switches})
            kernel.set_sysctls({ns: {"net.ipv4.tcp_ecn": "1"} for ns in hosts})
            entry.update(
                applied=True,
                ecn=(f"nftables on every switch egress port ({len(nft_jobs)} switch namespaces): ECT packets above "
                     f"{MARK_FRACTION:.0%} of the port rate ({mbit}) are CE-marked (`limit rate over N/second "
                     "ip ecn set ce`: a phantom queue, marking on rate, not queue depth); hosts run tcp_ecn=1; "
                     "full-size frames (gso_max_segs 1) so limits count frames"),
                pfc=(f"modelled as no drop: every port of the segment queues in a deep pfifo ({DEEP_QUEUE} "
                     "packets) under its HTB class, no policer"),
                summary=(f"lossless: ECN CE-marking (nftables) above {MARK_FRACTION:.0%} of {mbit}, "
                         "PFC modelled as a no-drop deep queue"))
        else:
            entry.update(
                applied=True,
                policer=(f"nftables on every switch egress port ({len(nft_jobs)} switch namespaces): what exceeds "
                         f"the port rate ({mbit}) is dropped beyond a {POLICE_BURST}-frame burst "
                         "(`limit rate over N/second drop`); full-size frames (gso_max_segs 1) so limits count frames"),
                summary=f"lossy: nftables policer drops above {mbit}")
    return report


def _nft_counter(ns: str, comment: str) -> int:
    r = subprocess.run(["nsenter", f"--net={kernel.NETNS_DIR}/{ns}", "nft", "-j", "list", "table", "inet", TABLE],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return 0
    total = 0
    for item in json.loads(r.stdout).get("nftables", []):
        rule = item.get("rule")
        if not rule or rule.get("comment") != comment:
            continue
        for expr in rule.get("expr", []):
            if "counter" in expr:
                total += int(expr["counter"].get("packets", 0))
    return total


def _qdisc_drops(ns: str, ifnames: set[str]) -> int:
    r = subprocess.run(["tc", "-n", ns, "-s", "-j", "qdisc", "show"], capture_output=True, text=True)
    if r.returncode != 0:
        raise NetworkError(f"tc in {ns}: {r.stderr.strip()}")
    return sum(int(q.get("drops", 0)) for q in json.loads(r.stdout) if q.get("dev") in ifnames)


def _link_drops(ns: str, ifnames: set[str]) -> int:
    r = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show"], capture_output=True, text=True)
    if r.returncode != 0:
        raise NetworkError(f"ip in {ns}: {r.stderr.strip()}")
    total = 0
    for link in json.loads(r.stdout):
        if link.get("ifname") in ifnames:
            stats = link.get("stats64", {})
            total += int(stats.get("rx", {}).get("dropped", 0)) + int(stats.get("tx", {}).get("dropped", 0))
    return total


def counters(plan: NetworkPlan, segment: str) -> dict[str, int]:
    """Since the build: CE marks and policer drops (nftables counters) on the segment's switches,
    queue drops (tc) and interface drops (`ip -s link`) on every port of the segment."""
    if segment not in plan.segments:
        raise NetworkError(f"no Ethernet segment {segment!r} (segments: {', '.join(plan.segments)})")
    marks = drops = qdrops = ldrops = 0
    for label, es in segment_ports(plan, segment).items():
        ns = plan.ns_name(label)
        if plan.namespaces[label].kind != "host":
            marks += _nft_counter(ns, MARK_COMMENT)
            drops += _nft_counter(ns, DROP_COMMENT)
        qdrops += _qdisc_drops(ns, {i for i, _k, _r in es})
        ldrops += _link_drops(ns, {i for i, _k, _r in es})
    return {"ce_marked": marks, "policer_dropped": drops, "queue_dropped": qdrops, "link_dropped": ldrops}
