//! Network files of one namespace (`/proc/<pid>/net/...`): `dev` (per-interface traffic),
//! `snmp` and `snmp6` (IP/ICMP/TCP/UDP counters), `sockstat` and `sockstat6` (socket counts).

use super::{number, Counters};
use std::collections::BTreeMap;

/// Parse `net/dev` into per-interface counters: `rx_bytes`, `rx_packets`, `rx_errs`,
/// `rx_drop`, `tx_bytes`, `tx_packets`, `tx_errs`, `tx_drop`.
pub fn parse_net_dev(text: &str) -> BTreeMap<String, Counters> {
    const NAMES: [(&str, usize); 8] = [
        ("rx_bytes", 0),
        ("rx_packets", 1),
        ("rx_errs", 2),
        ("rx_drop", 3),
        ("tx_bytes", 8),
        ("tx_packets", 9),
        ("tx_errs", 10),
        ("tx_drop", 11),
    ];
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let values: Vec<i64> = rest.split_ascii_whitespace().map(number).collect();
        if values.len() < 16 {
            continue; // the two header lines
        }
        let counters = NAMES
            .iter()
            .map(|&(n, i)| (n.to_string(), values[i]))
            .collect();
        out.insert(name.trim().to_string(), counters);
    }
    out
}

/// Parse `net/snmp` (pairs of `Tcp: names...` / `Tcp: values...` lines) into sections
/// keyed `Ip`, `Icmp`, `Tcp`, `Udp`, ... Signed fields keep their sign (`MaxConn -1`).
pub fn parse_snmp(text: &str) -> BTreeMap<String, Counters> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        let (Some((section, names)), Some((_, values))) =
            (names.split_once(':'), values.split_once(':'))
        else {
            break;
        };
        let counters = names
            .split_ascii_whitespace()
            .zip(values.split_ascii_whitespace().map(number));
        out.insert(
            section.to_string(),
            counters.map(|(n, v)| (n.to_string(), v)).collect(),
        );
    }
    out
}

/// Parse `net/snmp6` (`Ip6InReceives 12` lines) into sections by prefix: `Ip6`, `Icmp6`,
/// `Udp6`, `UdpLite6` (counter names without the prefix, like `snmp`'s).
pub fn parse_snmp6(text: &str) -> BTreeMap<String, Counters> {
    let mut out: BTreeMap<String, Counters> = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(name), Some(value)) = (fields.next(), fields.next()) else {
            continue;
        };
        let split = ["UdpLite6", "Icmp6", "Udp6", "Ip6"]
            .iter()
            .find(|p| name.starts_with(*p));
        if let Some(prefix) = split {
            let section = out.entry(prefix.to_string()).or_default();
            section.insert(name[prefix.len()..].to_string(), number(value));
        }
    }
    out
}

/// Parse `net/sockstat` or `net/sockstat6` (`TCP: inuse 3 orphan 0 tw 1 ...`) into
/// `tcp_inuse`, `tcp_tw`, `udp_inuse`, ... (the `6` of `TCP6` dropped; the caller knows
/// the family by the file it read).
pub fn parse_sockstat(text: &str) -> Counters {
    let mut out = Counters::new();
    for line in text.lines() {
        let Some((proto, rest)) = line.split_once(':') else {
            continue;
        };
        let proto = proto.trim_end_matches('6').to_ascii_lowercase();
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        for pair in fields.chunks(2) {
            if let [name, value] = pair {
                out.insert(format!("{proto}_{name}"), number(value));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_dev_per_interface() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
lo: 1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0\n  \
eth0: 5000      40    1    2    0     0          0         3     7000      50    0    4    0     0       0          0\n";
        let d = parse_net_dev(text);
        assert_eq!(d.len(), 2);
        assert_eq!(d["eth0"]["rx_bytes"], 5000);
        assert_eq!(d["eth0"]["rx_drop"], 2);
        assert_eq!(d["eth0"]["tx_packets"], 50);
        assert_eq!(d["eth0"]["tx_drop"], 4);
        assert_eq!(d["lo"]["tx_bytes"], 1000);
    }

    #[test]
    fn snmp_pairs_lines_by_section() {
        let text = "Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 500\n\
Tcp: RtoAlgorithm MaxConn ActiveOpens RetransSegs CurrEstab\nTcp: 1 -1 17 3 2\n\
Udp: InDatagrams OutDatagrams\nUdp: 9 8\n";
        let s = parse_snmp(text);
        assert_eq!(s["Ip"]["InReceives"], 500);
        assert_eq!(s["Tcp"]["MaxConn"], -1, "signed: -1 means no fixed limit");
        assert_eq!(s["Tcp"]["ActiveOpens"], 17);
        assert_eq!(s["Tcp"]["RetransSegs"], 3);
        assert_eq!(s["Udp"]["OutDatagrams"], 8);
    }

    #[test]
    fn snmp6_by_prefix() {
        let text = "Ip6InReceives                   \t42\nIp6OutRequests \t40\nIcmp6InMsgs 3\nUdp6InDatagrams 7\nUdpLite6InDatagrams 1\n";
        let s = parse_snmp6(text);
        assert_eq!(s["Ip6"]["InReceives"], 42);
        assert_eq!(s["Ip6"]["OutRequests"], 40);
        assert_eq!(s["Udp6"]["InDatagrams"], 7);
        assert_eq!(s["UdpLite6"]["InDatagrams"], 1);
        assert_eq!(s["Icmp6"]["InMsgs"], 3);
    }

    #[test]
    fn sockstat_both_files() {
        let v4 = parse_sockstat(
            "sockets: used 20\nTCP: inuse 5 orphan 1 tw 7 alloc 9 mem 351\nUDP: inuse 2 mem 0\n",
        );
        assert_eq!(v4["tcp_inuse"], 5);
        assert_eq!(v4["tcp_tw"], 7);
        assert_eq!(v4["udp_inuse"], 2);
        assert_eq!(v4["sockets_used"], 20);
        let v6 = parse_sockstat("TCP6: inuse 3\nUDP6: inuse 1\nFRAG6: inuse 0 memory 0\n");
        assert_eq!(v6["tcp_inuse"], 3);
        assert_eq!(v6["udp_inuse"], 1);
        assert_eq!(v6["frag_memory"], 0);
    }
}
