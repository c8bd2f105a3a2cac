//! Static routes for both families: for every host and router, the next hop towards every
//! subnet it is not on, by breadth-first search over subnets where only routers forward.
//! The IPv6 next hop is the neighbour's link-local address (`fe80::N`, so the interface
//! is named too), the address it sends its neighbour solicitations from: see
//! [`crate::addressing::link_local`]. Pure: the same topology always gives the same routes
//! in the same order.

use crate::addressing::Interface;
use crate::model::{NodeKind, Topology};
use std::collections::{BTreeMap, VecDeque};
use std::net::{Ipv4Addr, Ipv6Addr};

/// "To reach subnet S, send to this neighbour through this interface" (the neighbour's
/// IPv4 address and IPv6 link-local address on a shared subnet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub subnet: u32,
    pub via_v4: Ipv4Addr,
    pub via_v6: Ipv6Addr,
    pub device: String,
}

/// A neighbour's IPv4 and IPv6 link-local addresses, and our interface towards it.
type Hop = (Ipv4Addr, Ipv6Addr, String);

/// A member of a subnet: its IPv4 and IPv6 link-local addresses there.
type Member = (usize, (Ipv4Addr, Ipv6Addr));

/// The addressed members of each subnet: (node index, its addresses there), in link order.
fn members(interfaces: &[Vec<Interface>]) -> BTreeMap<u32, Vec<Member>> {
    let mut members: BTreeMap<u32, Vec<Member>> = BTreeMap::new();
    for (node, ifaces) in interfaces.iter().enumerate() {
        for i in ifaces {
            if let (Some(v4), Some(ll)) = (i.v4, i.link_local) {
                members.entry(i.subnet).or_default().push((node, (v4, ll)));
            }
        }
    }
    members
}

/// Routes of every node (empty for switches), indexed like `topology.nodes`.
pub fn routes(topology: &Topology, interfaces: &[Vec<Interface>]) -> Vec<Vec<Route>> {
    let members = members(interfaces);
    (0..topology.nodes.len())
        .map(|node| match topology.nodes[node].kind {
            NodeKind::Switch => Vec::new(),
            _ => routes_from(node, topology, interfaces, &members),
        })
        .collect()
}

fn subnets_of(node: usize, interfaces: &[Vec<Interface>]) -> Vec<u32> {
    let mut subnets: Vec<u32> = interfaces[node].iter().map(|i| i.subnet).collect();
    subnets.dedup();
    subnets
}

fn routes_from(
    source: usize,
    topology: &Topology,
    interfaces: &[Vec<Interface>],
    members: &BTreeMap<u32, Vec<Member>>,
) -> Vec<Route> {
    let mut seen_subnet: Vec<u32> = subnets_of(source, interfaces);
    let mut seen_node = vec![false; topology.nodes.len()];
    seen_node[source] = true;
    let mut queue: VecDeque<(usize, Hop)> = VecDeque::new();
    for i in &interfaces[source] {
        for &(node, (v4, ll)) in members.get(&i.subnet).into_iter().flatten() {
            if !seen_node[node] && topology.nodes[node].kind == NodeKind::Router {
                seen_node[node] = true;
                queue.push_back((node, (v4, ll, i.device.clone())));
            }
        }
    }
    let mut routes = Vec::new();
    while let Some((router, hop)) = queue.pop_front() {
        for subnet in subnets_of(router, interfaces) {
            if seen_subnet.contains(&subnet) {
                continue;
            }
            seen_subnet.push(subnet);
            routes.push(Route {
                subnet,
                via_v4: hop.0,
                via_v6: hop.1,
                device: hop.2.clone(),
            });
            for &(node, _) in members.get(&subnet).into_iter().flatten() {
                if !seen_node[node] && topology.nodes[node].kind == NodeKind::Router {
                    seen_node[node] = true;
                    queue.push_back((node, hop.clone()));
                }
            }
        }
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addressing::interfaces;
    use crate::model::parse;

    #[test]
    fn a_chain_of_two_routers_reaches_every_subnet() {
        // c -1- r1 -2- r2 -3- s, and a host h hanging off r1 on link 4.
        let text = "[[host]]\nname = \"c\"\n[[host]]\nname = \"s\"\n[[host]]\nname = \"h\"\n\
            [[router]]\nname = \"r1\"\n[[router]]\nname = \"r2\"\n\
            [[link]]\na = \"c\"\nb = \"r1\"\n[[link]]\na = \"r1\"\nb = \"r2\"\n[[link]]\na = \"r2\"\nb = \"s\"\n\
            [[link]]\na = \"r1\"\nb = \"h\"\n";
        let t = parse(text).unwrap();
        let all = routes(&t, &interfaces(&t));
        let show = |n: usize| -> Vec<String> {
            all[n]
                .iter()
                .map(|r| format!("{} via {} dev {}", r.subnet, r.via_v6, r.device))
                .collect()
        };
        // c (node 1) goes through r1 (node 4) for everything.
        assert_eq!(
            show(0),
            [
                "2 via fe80::4 dev eth1",
                "4 via fe80::4 dev eth1",
                "3 via fe80::4 dev eth1"
            ]
        );
        // s reaches everything through r2 (node 5).
        assert_eq!(
            show(1),
            [
                "2 via fe80::5 dev eth3",
                "1 via fe80::5 dev eth3",
                "4 via fe80::5 dev eth3"
            ]
        );
        // r1 needs a route only to subnet 3, through r2.
        assert_eq!(show(3), ["3 via fe80::5 dev eth2"]);
        assert_eq!(all[3][0].via_v4, Ipv4Addr::new(198, 18, 2, 5));
    }

    #[test]
    fn hosts_never_forward() {
        // a -1- b -2- c with no router: a gets no route to subnet 2.
        let text = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
            [[link]]\na = \"a\"\nb = \"b\"\n[[link]]\na = \"b\"\nb = \"c\"\n";
        let t = parse(text).unwrap();
        assert!(routes(&t, &interfaces(&t)).iter().all(Vec::is_empty));
    }
}
