//! Every name and address in a testbed, derived from numbers alone (docs/testbed.md has
//! the scheme): node N on subnet S has IPv4 `198.18.0.0 + 256·S + N` (a /24 per subnet,
//! spilling into 198.19.x.y past subnet 255) and IPv6 `2001:2:0:S::N` (a /64 per subnet),
//! where S and N are written with the same decimal digits in both families, and the IPv6
//! link-local address `fe80::N` on every link. A link's
//! subnet is its own number, except that all links of a switch share the subnet of the
//! switch's first link. The interface of link L is `ethL` in every namespace.

use crate::model::{NodeKind, Topology};
use serde::{Deserialize, Serialize};
use std::net::{Ipv4Addr, Ipv6Addr};

pub const V4_PREFIX_LEN: u8 = 24;
pub const V6_PREFIX_LEN: u8 = 64;

/// The namespace of a node: `db-<testbed>-<node>`.
pub fn namespace(testbed: &str, node: &str) -> String {
    format!("db-{testbed}-{node}")
}

/// The namespace in the middle of link L when the userspace wire emulator carries it.
pub fn wire_namespace(testbed: &str, link: u32) -> String {
    format!("db-{testbed}-wire{link}")
}

/// The interface of link L inside a node's (or a switch's) namespace.
pub fn interface(link: u32) -> String {
    format!("eth{link}")
}

/// The wire namespace's interfaces of link L: `ethLa` faces end a, `ethLb` faces end b.
pub fn wire_interface(link: u32, side: char) -> String {
    format!("eth{link}{side}")
}

/// The bridge device inside a switch's namespace.
pub const BRIDGE: &str = "br0";

/// The decimal digits of `n` read as hexadecimal, so 10 prints as `10` in an IPv6 group.
fn same_digits(n: u32) -> u16 {
    u16::from_str_radix(&n.to_string(), 16).unwrap_or(0)
}

/// IPv4 address of node `node` on subnet `subnet` (1..=511, 1..=254).
pub fn v4(subnet: u32, node: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 0, 0)) + subnet * 256 + node)
}

/// IPv6 address of node `node` on subnet `subnet`: `2001:2:0:S::N`.
pub fn v6(subnet: u32, node: u32) -> Ipv6Addr {
    Ipv6Addr::new(
        0x2001,
        2,
        0,
        same_digits(subnet),
        0,
        0,
        0,
        same_digits(node),
    )
}

/// IPv6 link-local address of node `node` on every link: `fe80::N`. The testbed sets
/// these instead of the kernel's (from random MACs) so routes can name them: an IPv6
/// router asks neighbours from its link-local address, and a host whose next hop is that
/// address learns it from the question, as an IPv4 host learns its gateway from an ARP
/// request. A next hop at the router's global address needed a neighbour solicitation of
/// its own, a round trip IPv4 never pays, before the first reply could go back.
pub fn link_local(node: u32) -> Ipv6Addr {
    Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, same_digits(node))
}

/// The subnet's networks: `198.18.S.0/24` and `2001:2:0:S::/64`.
pub fn v4_network(subnet: u32) -> String {
    format!("{}/{V4_PREFIX_LEN}", v4(subnet, 0))
}

pub fn v6_network(subnet: u32) -> String {
    format!("{}/{V6_PREFIX_LEN}", v6(subnet, 0))
}

/// One end of a link inside a node: its device and, for hosts and routers, its addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    pub link: u32,
    pub device: String,
    pub subnet: u32,
    pub v4: Option<Ipv4Addr>,
    pub v6: Option<Ipv6Addr>,
    /// The IPv6 link-local address (`fe80::N`, the same on every link of node N).
    #[serde(default)]
    pub link_local: Option<Ipv6Addr>,
}

/// The subnet of every link, in link order.
pub fn subnets(topology: &Topology) -> Vec<u32> {
    let mut first_of_switch = vec![None; topology.nodes.len()];
    topology
        .links
        .iter()
        .map(|link| {
            let switch = [link.a, link.b]
                .into_iter()
                .find(|&n| topology.nodes[n].kind == NodeKind::Switch);
            match switch {
                Some(s) => *first_of_switch[s].get_or_insert(link.number),
                None => link.number,
            }
        })
        .collect()
}

/// The interfaces of every node, indexed like `topology.nodes`, each in link order.
pub fn interfaces(topology: &Topology) -> Vec<Vec<Interface>> {
    let subnets = subnets(topology);
    let mut all = vec![Vec::new(); topology.nodes.len()];
    for (link, &subnet) in topology.links.iter().zip(&subnets) {
        for end in [link.a, link.b] {
            let node = &topology.nodes[end];
            let addressed = node.kind != NodeKind::Switch;
            all[end].push(Interface {
                link: link.number,
                device: interface(link.number),
                subnet,
                v4: addressed.then(|| v4(subnet, node.number)),
                v6: addressed.then(|| v6(subnet, node.number)),
                link_local: addressed.then(|| link_local(node.number)),
            });
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse;

    #[test]
    fn numbers_read_the_same_in_both_families() {
        assert_eq!(v4(3, 2).to_string(), "198.18.3.2");
        assert_eq!(v6(3, 2).to_string(), "2001:2:0:3::2");
        assert_eq!(v4(10, 12).to_string(), "198.18.10.12");
        assert_eq!(v6(10, 12).to_string(), "2001:2:0:10::12");
        assert_eq!(v4(300, 250).to_string(), "198.19.44.250");
        assert_eq!(v6(300, 250).to_string(), "2001:2:0:300::250");
        assert_eq!(v4_network(511), "198.19.255.0/24");
        assert_eq!(v6_network(7), "2001:2:0:7::/64");
        assert_eq!(link_local(3).to_string(), "fe80::3");
        assert_eq!(link_local(250).to_string(), "fe80::250");
    }

    #[test]
    fn all_addresses_stay_in_the_benchmarking_ranges() {
        for subnet in [1, 255, 256, 511] {
            for node in [1, 250] {
                assert!(
                    u32::from(v4(subnet, node)) >> 17
                        == u32::from(Ipv4Addr::new(198, 18, 0, 0)) >> 17
                );
                assert_eq!(v6(subnet, node).segments()[..3], [0x2001, 2, 0]);
            }
        }
    }

    #[test]
    fn switch_links_share_one_subnet() {
        let text = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[router]]\nname = \"r\"\n[[switch]]\nname = \"sw\"\n\
            [[link]]\na = \"r\"\nb = \"a\"\n[[link]]\na = \"a\"\nb = \"sw\"\n[[link]]\na = \"sw\"\nb = \"b\"\n";
        let t = parse(text).unwrap();
        assert_eq!(subnets(&t), [1, 2, 2]);
        let ifs = interfaces(&t);
        let a: Vec<(String, String)> = ifs[0]
            .iter()
            .map(|i| (i.device.clone(), i.v6.unwrap().to_string()))
            .collect();
        assert_eq!(
            a,
            [
                ("eth1".into(), "2001:2:0:1::1".into()),
                ("eth2".into(), "2001:2:0:2::1".into())
            ]
        );
        assert_eq!(ifs[1][0].v4, Some(Ipv4Addr::new(198, 18, 2, 2)));
        assert_eq!(ifs[3][0].v4, None);
        assert_eq!(ifs[3].len(), 2);
        assert_eq!(namespace("lab", "a"), "db-lab-a");
        assert_eq!(wire_namespace("lab", 3), "db-lab-wire3");
        assert!(wire_interface(511, 'b').len() <= 15);
    }
}
