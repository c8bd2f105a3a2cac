//! The planner: a checked [`Topology`] becomes an ordered list of operations ([`Op`], plain
//! data: namespaces, sysctls, veths, bridges, addresses, qdiscs, routes, hosts files, wire
//! emulators, services) plus a [`Layout`] describing what will exist (saved for `status`).
//! Planning reads nothing from the system; `--dry-run` prints exactly these operations.

use crate::addressing::{self, Interface};
use crate::model::{Link, NodeKind, Shaper, Shaping, Sysctl, Topology};
use crate::ops::strings;
pub use crate::ops::{etc_netns_dir, Op};
use crate::routes::routes;
use crate::shaping::{self, Emulator};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// A node as built: its namespace, interfaces and own sysctls (from the topology).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLayout {
    pub name: String,
    pub kind: NodeKind,
    pub namespace: String,
    pub interfaces: Vec<Interface>,
    #[serde(default)]
    pub sysctls: Vec<Sysctl>,
}

/// A link as built: its ends, shaping per direction, and what does each part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkLayout {
    pub number: u32,
    pub a: String,
    pub b: String,
    pub shaper: Shaper,
    pub a_to_b: Shaping,
    pub b_to_a: Shaping,
    /// `netem` or `wire` when some direction has delay, jitter or loss.
    pub emulator: Option<Emulator>,
    pub wire_namespace: Option<String>,
    pub wire_stats: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceLayout {
    pub node: String,
    pub name: String,
    pub namespace: String,
    pub argv: Vec<String>,
    pub log: PathBuf,
    pub ready: Option<u16>,
}

/// What a testbed consists of, for `status` and `exec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    pub testbed: String,
    pub nodes: Vec<NodeLayout>,
    pub links: Vec<LinkLayout>,
    pub services: Vec<ServiceLayout>,
    pub hosts_file: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub ops: Vec<Op>,
    pub layout: Layout,
}

/// What the planner needs besides the topology: names, paths, and how to emulate delay.
pub struct Settings<'a> {
    pub testbed: &'a str,
    pub state_dir: &'a Path,
    pub emulator: Emulator,
}

/// Turn a topology into the ordered operations that build it.
pub fn plan(topology: &Topology, settings: &Settings) -> Plan {
    let layout = layout(topology, settings);
    let mut ops = Vec::new();
    namespaces(&layout, &mut ops);
    sysctls(&layout, &mut ops);
    for (link, built) in topology.links.iter().zip(&layout.links) {
        cables(&layout, link, built, &mut ops);
    }
    addresses_and_up(&layout, &mut ops);
    for (link, built) in topology.links.iter().zip(&layout.links) {
        qdiscs(&layout, link, built, &mut ops);
    }
    route_ops(topology, &layout, &mut ops);
    for node in layout.nodes.iter().filter(|n| n.kind != NodeKind::Switch) {
        ops.push(Op::WriteHosts {
            ns: node.namespace.clone(),
            content: layout.hosts_file.clone(),
        });
    }
    for node in layout.nodes.iter().filter(|n| n.kind != NodeKind::Switch) {
        if !node.interfaces.is_empty() {
            ops.push(Op::AwaitLinks {
                ns: node.namespace.clone(),
                devices: node.interfaces.iter().map(|i| i.device.clone()).collect(),
            });
        }
    }
    starts(&layout, settings.state_dir, &mut ops);
    Plan { ops, layout }
}

fn layout(topology: &Topology, settings: &Settings) -> Layout {
    let tb = settings.testbed;
    let mut interfaces = addressing::interfaces(topology);
    let nodes: Vec<NodeLayout> = topology
        .nodes
        .iter()
        .zip(interfaces.iter_mut())
        .map(|(n, ifs)| NodeLayout {
            name: n.name.clone(),
            kind: n.kind,
            namespace: addressing::namespace(tb, &n.name),
            interfaces: std::mem::take(ifs),
            sysctls: n.sysctls.clone(),
        })
        .collect();
    let links = topology
        .links
        .iter()
        .map(|l| link_layout(topology, l, settings))
        .collect();
    let services = topology
        .services
        .iter()
        .map(|s| {
            let node = &topology.nodes[s.node].name;
            let log = settings
                .state_dir
                .join("logs")
                .join(format!("{node}-{}.log", s.name));
            ServiceLayout {
                node: node.clone(),
                name: s.name.clone(),
                namespace: addressing::namespace(tb, node),
                argv: s.command.argv(),
                log,
                ready: s.ready,
            }
        })
        .collect();
    let hosts_file = hosts_file(&nodes);
    Layout {
        testbed: tb.to_string(),
        nodes,
        links,
        services,
        hosts_file,
    }
}

/// netem has no order keeping, so a link that keeps jittered frames in order always gets
/// the wire; every other emulated link gets `settings.emulator`.
fn link_layout(topology: &Topology, l: &Link, settings: &Settings) -> LinkLayout {
    let emulated = l.a_to_b.needs_emulation() || l.b_to_a.needs_emulation();
    let by = if l.keeps_order() {
        Emulator::Wire
    } else {
        settings.emulator
    };
    let emulator = emulated.then_some(by);
    let wired = emulator == Some(Emulator::Wire);
    LinkLayout {
        number: l.number,
        a: topology.nodes[l.a].name.clone(),
        b: topology.nodes[l.b].name.clone(),
        shaper: l.shaper,
        a_to_b: l.a_to_b,
        b_to_a: l.b_to_a,
        emulator,
        wire_namespace: wired.then(|| addressing::wire_namespace(settings.testbed, l.number)),
        wire_stats: wired.then(|| settings.state_dir.join(format!("wire{}.json", l.number))),
    }
}

/// `/etc/hosts` for every namespace: each node by name (both families), `-v4` and `-v6`,
/// at the address of its first interface.
fn hosts_file(nodes: &[NodeLayout]) -> String {
    let mut text =
        String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    for node in nodes {
        let Some(first) = node.interfaces.first() else {
            continue;
        };
        if let (Some(v4), Some(v6)) = (first.v4, first.v6) {
            text.push_str(&format!(
                "{v4}\t{name} {name}-v4\n{v6}\t{name} {name}-v6\n",
                name = node.name
            ));
        }
    }
    text
}

fn namespaces(layout: &Layout, ops: &mut Vec<Op>) {
    for node in &layout.nodes {
        ops.push(Op::AddNamespace {
            ns: node.namespace.clone(),
        });
    }
    for wire in layout.links.iter().filter_map(|l| l.wire_namespace.clone()) {
        ops.push(Op::AddNamespace { ns: wire });
    }
}

fn sysctl(ns: &str, key: &str, value: &str) -> Op {
    Op::Sysctl {
        ns: ns.into(),
        key: key.into(),
        value: value.into(),
    }
}

/// DAD off everywhere addresses live, and no link-local address of the kernel's making
/// there (each interface gets `fe80::N`, see [`addressing::link_local`]); forwarding on in
/// routers; no IPv6 at all in the layer-2 namespaces (switches, wires), so they send
/// nothing of their own onto links.
/// Nodes keep quiet on their links once `up` is done, since studies capture those links:
/// no router solicitations (every route is static, so router advertisements are not taken
/// either), and the MLD reports Linux always sends for an interface's solicited-node groups
/// go out at once, not spread over the next second (no querier asks for more later).
/// These are `default` keys, copied by every interface made later; `lo` sends neither.
/// Each node's own sysctls (its `sysctl` table) follow the testbed's in its namespace.
fn sysctls(layout: &Layout, ops: &mut Vec<Op>) {
    for node in &layout.nodes {
        let ns = &node.namespace;
        if node.kind == NodeKind::Switch {
            ops.push(sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1"));
            ops.push(sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1"));
        } else {
            ops.push(sysctl(ns, "net.ipv6.conf.all.accept_dad", "0"));
            ops.push(sysctl(ns, "net.ipv6.conf.default.accept_dad", "0"));
            ops.push(sysctl(ns, "net.ipv6.conf.default.addr_gen_mode", "1"));
            ops.push(sysctl(
                ns,
                "net.ipv6.conf.default.router_solicitations",
                "0",
            ));
            ops.push(sysctl(ns, "net.ipv6.conf.default.accept_ra", "0"));
            ops.push(sysctl(
                ns,
                "net.ipv6.conf.default.mldv2_unsolicited_report_interval",
                "1",
            ));
        }
        if node.kind == NodeKind::Router {
            ops.push(sysctl(ns, "net.ipv4.ip_forward", "1"));
            ops.push(sysctl(ns, "net.ipv6.conf.all.forwarding", "1"));
        }
        for own in &node.sysctls {
            ops.push(Op::NodeSysctl {
                ns: ns.clone(),
                node: node.name.clone(),
                key: own.key.clone(),
                value: own.value.clone(),
            });
        }
    }
    for wire in layout
        .links
        .iter()
        .filter_map(|l| l.wire_namespace.as_deref())
    {
        ops.push(sysctl(wire, "net.ipv6.conf.all.disable_ipv6", "1"));
        ops.push(sysctl(wire, "net.ipv6.conf.default.disable_ipv6", "1"));
    }
}

fn node_of<'l>(layout: &'l Layout, name: &str) -> &'l NodeLayout {
    layout
        .nodes
        .iter()
        .find(|n| n.name == name)
        .expect("link ends are checked node names")
}

/// The veth pairs (one, or two through a wire namespace), bridge ports, and offloads.
fn cables(layout: &Layout, link: &Link, built: &LinkLayout, ops: &mut Vec<Op>) {
    let (a, b) = (node_of(layout, &built.a), node_of(layout, &built.b));
    let dev = addressing::interface(link.number);
    let mut ends = vec![
        (a.namespace.clone(), dev.clone()),
        (b.namespace.clone(), dev.clone()),
    ];
    match &built.wire_namespace {
        None => ops.push(Op::AddVeth {
            ns: a.namespace.clone(),
            device: dev.clone(),
            peer_ns: b.namespace.clone(),
            peer: dev.clone(),
        }),
        Some(wire) => {
            let (wa, wb) = (
                addressing::wire_interface(link.number, 'a'),
                addressing::wire_interface(link.number, 'b'),
            );
            ops.push(Op::AddVeth {
                ns: a.namespace.clone(),
                device: dev.clone(),
                peer_ns: wire.clone(),
                peer: wa.clone(),
            });
            ops.push(Op::AddVeth {
                ns: wire.clone(),
                device: wb.clone(),
                peer_ns: b.namespace.clone(),
                peer: dev.clone(),
            });
            ends.extend([(wire.clone(), wa), (wire.clone(), wb)]);
        }
    }
    for node in [a, b].into_iter().filter(|n| n.kind == NodeKind::Switch) {
        if first_link_of(layout, &node.name) == link.number {
            ops.push(Op::AddBridge {
                ns: node.namespace.clone(),
                device: addressing::BRIDGE.into(),
            });
        }
        ops.push(Op::SetMaster {
            ns: node.namespace.clone(),
            device: dev.clone(),
            bridge: addressing::BRIDGE.into(),
        });
    }
    let shaped = link.a_to_b.is_shaped() || link.b_to_a.is_shaped();
    if shaped {
        let wired = built.wire_namespace.is_some();
        for (i, (ns, device)) in ends.into_iter().enumerate() {
            ops.push(Op::OffloadsOff {
                ns,
                device,
                checksum: wired && i < 2,
            });
        }
    }
}

fn first_link_of(layout: &Layout, node: &str) -> u32 {
    layout
        .links
        .iter()
        .find(|l| l.a == node || l.b == node)
        .map_or(0, |l| l.number)
}

fn addresses_and_up(layout: &Layout, ops: &mut Vec<Op>) {
    for node in layout.nodes.iter().filter(|n| n.kind != NodeKind::Switch) {
        for i in &node.interfaces {
            let (Some(v4), Some(v6), Some(ll)) = (i.v4, i.v6, i.link_local) else {
                continue;
            };
            let ns = node.namespace.clone();
            ops.push(Op::AddAddress {
                ns: ns.clone(),
                device: i.device.clone(),
                address: format!("{v4}/{}", addressing::V4_PREFIX_LEN),
                nodad: false,
            });
            ops.push(Op::AddAddress {
                ns: ns.clone(),
                device: i.device.clone(),
                address: format!("{v6}/{}", addressing::V6_PREFIX_LEN),
                nodad: true,
            });
            ops.push(Op::AddAddress {
                ns,
                device: i.device.clone(),
                address: format!("{ll}/{}", addressing::V6_PREFIX_LEN),
                nodad: true,
            });
        }
    }
    for node in &layout.nodes {
        let ns = &node.namespace;
        if node.kind == NodeKind::Switch {
            // A switch's bridge is made with its first link: one with no links has none.
            if node.interfaces.is_empty() {
                continue;
            }
            ops.push(Op::LinkUp {
                ns: ns.clone(),
                device: addressing::BRIDGE.into(),
            });
        } else {
            ops.push(Op::LinkUp {
                ns: ns.clone(),
                device: "lo".into(),
            });
        }
        for i in &node.interfaces {
            ops.push(Op::LinkUp {
                ns: ns.clone(),
                device: i.device.clone(),
            });
        }
    }
    for link in &layout.links {
        if let Some(wire) = &link.wire_namespace {
            for side in ['a', 'b'] {
                ops.push(Op::LinkUp {
                    ns: wire.clone(),
                    device: addressing::wire_interface(link.number, side),
                });
            }
        }
    }
}

/// Rate and queue on each end's egress (a→b leaves through a's interface); delay, jitter and
/// loss there too when netem does them.
fn qdiscs(layout: &Layout, link: &Link, built: &LinkLayout, ops: &mut Vec<Op>) {
    let dev = addressing::interface(link.number);
    let directions = [(&built.a, &link.a_to_b), (&built.b, &link.b_to_a)];
    let netem = built.emulator == Some(Emulator::Netem);
    for (sender, shaping) in directions {
        let ns = &node_of(layout, sender).namespace;
        for args in shaping::tc_commands(&dev, link.shaper, shaping, netem) {
            ops.push(Op::Tc {
                ns: ns.clone(),
                args,
            });
        }
    }
}

fn route_ops(topology: &Topology, layout: &Layout, ops: &mut Vec<Op>) {
    let interfaces: Vec<Vec<Interface>> =
        layout.nodes.iter().map(|n| n.interfaces.clone()).collect();
    for (node, routes) in layout.nodes.iter().zip(routes(topology, &interfaces)) {
        for r in &routes {
            ops.push(Op::AddRoute {
                ns: node.namespace.clone(),
                network: addressing::v4_network(r.subnet),
                via: IpAddr::V4(r.via_v4),
                device: None,
            });
        }
        for r in &routes {
            ops.push(Op::AddRoute {
                ns: node.namespace.clone(),
                network: addressing::v6_network(r.subnet),
                via: IpAddr::V6(r.via_v6),
                device: Some(r.device.clone()),
            });
        }
    }
}

fn starts(layout: &Layout, state_dir: &Path, ops: &mut Vec<Op>) {
    for link in &layout.links {
        let (Some(ns), Some(stats)) = (&link.wire_namespace, &link.wire_stats) else {
            continue;
        };
        let mut argv = strings(&[
            "dualbench",
            "wire",
            "--a",
            &addressing::wire_interface(link.number, 'a'),
            "--b",
            &addressing::wire_interface(link.number, 'b'),
        ]);
        for (flag, shaping) in [("--a-to-b", &link.a_to_b), ("--b-to-a", &link.b_to_a)] {
            if shaping.needs_emulation() {
                argv.extend([flag.to_string(), shaping::wire_spec(shaping)]);
            }
        }
        argv.extend(["--stats".to_string(), stats.display().to_string()]);
        let log = state_dir
            .join("logs")
            .join(format!("wire{}.log", link.number));
        ops.push(Op::StartWire {
            ns: ns.clone(),
            link: link.number,
            argv,
            log,
        });
    }
    for s in &layout.services {
        ops.push(Op::StartService {
            ns: s.namespace.clone(),
            node: s.node.clone(),
            name: s.name.clone(),
            argv: s.argv.clone(),
            log: s.log.clone(),
        });
    }
    for s in &layout.services {
        if let Some(port) = s.ready {
            ops.push(Op::AwaitListen {
                ns: s.namespace.clone(),
                node: s.node.clone(),
                name: s.name.clone(),
                port,
            });
        }
    }
}

/// The plan as `--dry-run` prints it: a header, one operation per line, then the hosts file.
pub fn render(plan: &Plan, state_dir: &Path) -> String {
    let l = &plan.layout;
    let mut out = format!(
        "# testbed {}: {}, {}, {}; state in {}\n",
        l.testbed,
        crate::plural(l.nodes.len(), "node"),
        crate::plural(l.links.len(), "link"),
        crate::plural(l.services.len(), "service"),
        state_dir.display()
    );
    for op in &plan.ops {
        out.push_str(&format!("{op}\n"));
    }
    out.push_str("# hosts file written above:\n");
    for line in l.hosts_file.lines() {
        out.push_str(&format!("#   {line}\n"));
    }
    out
}
