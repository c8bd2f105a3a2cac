//! The operations a plan is made of, as plain data: each knows the exact command it runs
//! (`argv`) and prints as a shell-like line for `--dry-run`.

use dualbench_common::shell_word;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// One step of building a testbed. Every step but the last five is one `ip`/`tc`/`sysctl`/
/// `ethtool` command, shown by [`Op::argv`]; `WriteHosts` writes a file, `AwaitLinks` waits
/// for a namespace's interfaces to be usable, `Start*` spawn a long-running process in a
/// namespace, `AwaitListen` waits for a service to be ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    AddNamespace {
        ns: String,
    },
    Sysctl {
        ns: String,
        key: String,
        value: String,
    },
    /// A sysctl the topology sets on `node` (its `sysctl` table): the same command as
    /// `Sysctl`, but the key is first looked for in the namespace, since it is the user's.
    NodeSysctl {
        ns: String,
        node: String,
        key: String,
        value: String,
    },
    AddBridge {
        ns: String,
        device: String,
    },
    AddVeth {
        ns: String,
        device: String,
        peer_ns: String,
        peer: String,
    },
    SetMaster {
        ns: String,
        device: String,
        bridge: String,
    },
    OffloadsOff {
        ns: String,
        device: String,
        checksum: bool,
    },
    AddAddress {
        ns: String,
        device: String,
        address: String,
        nodad: bool,
    },
    LinkUp {
        ns: String,
        device: String,
    },
    Tc {
        ns: String,
        args: Vec<String>,
    },
    /// A static route; `device` names the interface, which a link-local `via` needs.
    AddRoute {
        ns: String,
        network: String,
        via: IpAddr,
        device: Option<String>,
    },
    WriteHosts {
        ns: String,
        content: String,
    },
    /// Wait until each device is operationally up with its IPv6 link-local address and no
    /// tentative address: until the kernel's link watch has seen the carrier (up to 1 s
    /// after `ip link set up`), IPv6 answers no neighbour solicitation on the device.
    AwaitLinks {
        ns: String,
        devices: Vec<String>,
    },
    StartWire {
        ns: String,
        link: u32,
        argv: Vec<String>,
        log: PathBuf,
    },
    StartService {
        ns: String,
        node: String,
        name: String,
        argv: Vec<String>,
        log: PathBuf,
    },
    /// Wait until service `name` on `node` listens on TCP `port` (its `ready` key).
    AwaitListen {
        ns: String,
        node: String,
        name: String,
        port: u16,
    },
}

/// Where `ip netns exec` finds the files it bind-mounts over `/etc` for namespace `ns`.
pub fn etc_netns_dir(ns: &str) -> PathBuf {
    Path::new("/etc/netns").join(ns)
}

pub(crate) fn strings(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

impl Op {
    /// The command this step runs (for `Start*`, the process started in the background).
    pub fn argv(&self) -> Vec<String> {
        match self {
            Op::AddNamespace { ns } => strings(&["ip", "netns", "add", ns]),
            Op::Sysctl { ns, key, value } | Op::NodeSysctl { ns, key, value, .. } => strings(&[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                &format!("{key}={value}"),
            ]),
            Op::AddBridge { ns, device } => strings(&[
                "ip",
                "-n",
                ns,
                "link",
                "add",
                device,
                "type",
                "bridge",
                "mcast_snooping",
                "0",
            ]),
            Op::AddVeth {
                ns,
                device,
                peer_ns,
                peer,
            } => strings(&[
                "ip", "-n", ns, "link", "add", device, "type", "veth", "peer", "name", peer,
                "netns", peer_ns,
            ]),
            Op::SetMaster { ns, device, bridge } => {
                strings(&["ip", "-n", ns, "link", "set", device, "master", bridge])
            }
            Op::OffloadsOff {
                ns,
                device,
                checksum,
            } => {
                let mut argv = strings(&[
                    "ip", "netns", "exec", ns, "ethtool", "-K", device, "gro", "off", "gso", "off",
                    "tso", "off",
                ]);
                if *checksum {
                    argv.extend(strings(&["tx", "off"]));
                }
                argv
            }
            Op::AddAddress {
                ns,
                device,
                address,
                nodad,
            } => {
                let mut argv = strings(&["ip", "-n", ns, "addr", "add", address, "dev", device]);
                if *nodad {
                    argv.push("nodad".into());
                }
                argv
            }
            Op::LinkUp { ns, device } => strings(&["ip", "-n", ns, "link", "set", device, "up"]),
            Op::Tc { ns, args } => [strings(&["tc", "-n", ns]), args.clone()].concat(),
            Op::AddRoute {
                ns,
                network,
                via,
                device,
            } => {
                let mut argv = strings(&[
                    "ip",
                    "-n",
                    ns,
                    "route",
                    "add",
                    network,
                    "via",
                    &via.to_string(),
                ]);
                if let Some(device) = device {
                    argv.extend(strings(&["dev", device]));
                }
                argv
            }
            Op::WriteHosts { ns, .. } => strings(&[
                "write",
                &etc_netns_dir(ns).join("hosts").display().to_string(),
            ]),
            Op::AwaitLinks { ns, devices } => {
                [strings(&["wait-links", ns]), devices.clone()].concat()
            }
            Op::StartWire { ns, argv, .. } | Op::StartService { ns, argv, .. } => {
                [strings(&["ip", "netns", "exec", ns]), argv.clone()].concat()
            }
            Op::AwaitListen { ns, port, .. } => {
                strings(&["wait-listen", ns, &format!("tcp:{port}")])
            }
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line: Vec<String> = self.argv().iter().map(|w| shell_word(w)).collect();
        match self {
            Op::StartWire { log, .. } | Op::StartService { log, .. } => {
                write!(f, "{} >{} 2>&1 &", line.join(" "), log.display())
            }
            Op::AwaitLinks { ns, devices } => write!(
                f,
                "wait until {} of {ns} {} up, IPv6 ready",
                devices.join(", "),
                if devices.len() == 1 { "is" } else { "are" }
            ),
            Op::AwaitListen {
                ns,
                node,
                name,
                port,
            } => {
                write!(
                    f,
                    "wait until {name} on {node} listens on tcp port {port} (in {ns})"
                )
            }
            _ => f.write_str(&line.join(" ")),
        }
    }
}
