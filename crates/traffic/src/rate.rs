//! What a rate counts. A message of `size` payload bytes becomes a larger IP packet (or
//! several) and a larger still Ethernet frame, and the headers differ by family: 1,024 UDP
//! payload bytes are 1,052 IP bytes over IPv4 but 1,072 over IPv6. This module owns the
//! one definition of payload, IP and wire bytes used by the sender (to turn a bit rate into
//! messages per second) and by the sink (to report every rate all three ways).

use clap::ValueEnum;
use dualbench_common::Family;
use serde::{Deserialize, Serialize};
use std::fmt;

/// IPv4 header without options.
pub const IPV4_HEADER: u64 = 20;
/// IPv6 fixed header, no extension headers.
pub const IPV6_HEADER: u64 = 40;
/// IPv6 fragment extension header, added to every fragment of an oversized datagram.
pub const IPV6_FRAGMENT_HEADER: u64 = 8;
pub const UDP_HEADER: u64 = 8;
/// TCP header with the 12 bytes of timestamp option Linux sends by default.
pub const TCP_HEADER: u64 = 32;
/// Per frame on an Ethernet wire: 14 header + 4 FCS + 8 preamble/SFD + 12 interframe gap.
pub const ETHERNET_OVERHEAD: u64 = 38;
/// The link MTU the accounting assumes (Ethernet).
pub const MTU: u64 = 1500;

/// Transport protocol of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Proto {
    #[serde(rename = "udp")]
    Udp,
    #[serde(rename = "tcp")]
    Tcp,
}

impl Proto {
    pub fn key(self) -> &'static str {
        match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
        }
    }

    /// `"UDP"` / `"TCP"`, as MGEN writes it.
    pub fn label(self) -> &'static str {
        match self {
            Proto::Udp => "UDP",
            Proto::Tcp => "TCP",
        }
    }
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Which bytes a bit rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Counting {
    /// Application payload only (what MGEN's `size` is).
    Payload,
    /// Whole IP packets: payload plus IP and UDP/TCP headers (the default).
    #[default]
    Ip,
    /// Ethernet on the wire: IP packets plus 38 bytes per frame.
    Wire,
}

/// One message's bytes counted three ways, and how many IP packets it became.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Bytes {
    pub payload: u64,
    pub ip: u64,
    pub wire: u64,
    pub packets: u64,
}

impl Bytes {
    pub fn counted(&self, counting: Counting) -> u64 {
        match counting {
            Counting::Payload => self.payload,
            Counting::Ip => self.ip,
            Counting::Wire => self.wire,
        }
    }

    pub fn add(&mut self, other: Bytes) {
        self.payload += other.payload;
        self.ip += other.ip;
        self.wire += other.wire;
        self.packets += other.packets;
    }
}

fn ip_header(family: Family) -> u64 {
    match family {
        Family::V4 => IPV4_HEADER,
        Family::V6 => IPV6_HEADER,
    }
}

/// The largest TCP payload per segment at [`MTU`] (1448 over IPv4, 1428 over IPv6).
pub fn tcp_mss(family: Family) -> u64 {
    MTU - ip_header(family) - TCP_HEADER
}

/// Bytes of one message of `size` payload bytes. UDP datagrams past the MTU count their
/// IP fragments. A TCP message counts `ceil(size / mss)` segments: exact when messages leave
/// one at a time (the sender sets TCP_NODELAY and paces them), an overestimate when a
/// backlog lets the kernel pack several messages into full segments.
pub fn message_bytes(proto: Proto, family: Family, size: u64) -> Bytes {
    let iph = ip_header(family);
    match proto {
        Proto::Tcp => {
            let segments = size.div_ceil(tcp_mss(family)).max(1);
            let ip = size + segments * (iph + TCP_HEADER);
            Bytes {
                payload: size,
                ip,
                wire: ip + segments * ETHERNET_OVERHEAD,
                packets: segments,
            }
        }
        Proto::Udp => {
            let (packets, headers) = if size + UDP_HEADER + iph <= MTU {
                (1, iph + UDP_HEADER)
            } else {
                let frag_header = if family == Family::V6 {
                    IPV6_FRAGMENT_HEADER
                } else {
                    0
                };
                let per_fragment = (MTU - iph - frag_header) & !7;
                let fragments = (size + UDP_HEADER).div_ceil(per_fragment);
                (fragments, UDP_HEADER + fragments * (iph + frag_header))
            };
            let ip = size + headers;
            Bytes {
                payload: size,
                ip,
                wire: ip + packets * ETHERNET_OVERHEAD,
                packets,
            }
        }
    }
}

/// Parse a bit rate: `75Mbit`, `100mbit/s`, `1.5Gbit`, `500kbit`, `64000bit` (decimal
/// prefixes: 1 Mbit = 1,000,000 bits). Returns bits per second. `10Mbps` is refused as
/// the testbed and the wire refuse it: tc reads `bps` as bytes per second.
pub fn parse_bitrate(text: &str) -> Result<f64, String> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix("/s").unwrap_or(&t);
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    // `1e3Mbit` split as "1" and "e3mbit": not an unknown unit, an exponent.
    if unit.starts_with('e')
        && unit[1..].starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+')
    {
        return Err(format!(
            "rate '{text}': write the number in plain digits, without an exponent (e.g. 75Mbit)"
        ));
    }
    let scale = match unit.trim() {
        "bit" | "b" => 1.0,
        "kbit" | "k" => 1e3,
        "mbit" | "m" => 1e6,
        "gbit" | "g" => 1e9,
        "bps" | "kbps" | "mbps" | "gbps" => return Err(ambiguous_bps(text)),
        "" => return Err(format!("rate '{text}' has no unit: write e.g. 75Mbit")),
        other => {
            return Err(format!(
                "rate '{text}': unknown unit '{other}' (use bit, kbit, Mbit or Gbit)"
            ))
        }
    };
    match number.parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(n * scale),
        _ => Err(format!(
            "rate '{text}' is not a positive number with a unit, e.g. 75Mbit"
        )),
    }
}

/// The one message the testbed, the wire and traffic give for a rate in `bps`.
pub fn ambiguous_bps(text: &str) -> String {
    format!(
        "'{text}' is ambiguous (tc reads 'bps' as bytes per second): write bits, like \"100Mbit\""
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_headers_differ_by_family() {
        let v4 = message_bytes(Proto::Udp, Family::V4, 1024);
        let v6 = message_bytes(Proto::Udp, Family::V6, 1024);
        assert_eq!(
            (v4.payload, v4.ip, v4.wire, v4.packets),
            (1024, 1052, 1090, 1)
        );
        assert_eq!(
            (v6.payload, v6.ip, v6.wire, v6.packets),
            (1024, 1072, 1110, 1)
        );
    }

    #[test]
    fn tcp_messages_count_whole_segments() {
        assert_eq!(tcp_mss(Family::V4), 1448);
        assert_eq!(tcp_mss(Family::V6), 1428);
        let m = message_bytes(Proto::Tcp, Family::V4, 1448);
        assert_eq!((m.ip, m.wire, m.packets), (1500, 1538, 1));
        // S3's 1460 B (IPv4) and 1440 B (IPv6) are one segment over the MSS: two each.
        let m = message_bytes(Proto::Tcp, Family::V4, 1460);
        assert_eq!((m.ip, m.packets), (1460 + 2 * 52, 2));
        let m = message_bytes(Proto::Tcp, Family::V6, 1440);
        assert_eq!(
            (m.ip, m.wire, m.packets),
            (1440 + 2 * 72, 1440 + 2 * 110, 2)
        );
    }

    #[test]
    fn oversized_udp_counts_fragments() {
        // 4096 + 8 bytes over 1480-byte IPv4 fragments: 3 fragments.
        let m = message_bytes(Proto::Udp, Family::V4, 4096);
        assert_eq!((m.packets, m.ip), (3, 4096 + 8 + 60));
        // IPv6: 1448-byte fragments (1500 - 40 - 8, rounded down to 8), 3 fragments.
        let m = message_bytes(Proto::Udp, Family::V6, 4096);
        assert_eq!((m.packets, m.ip), (3, 4096 + 8 + 3 * 48));
    }

    #[test]
    fn bitrates_parse_with_units() {
        assert_eq!(parse_bitrate("75Mbit"), Ok(75e6));
        assert_eq!(parse_bitrate("100mbit/s"), Ok(100e6));
        assert_eq!(parse_bitrate("1.5Gbit"), Ok(1.5e9));
        assert_eq!(parse_bitrate("500kbit"), Ok(500e3));
        assert_eq!(parse_bitrate("64000bit"), Ok(64000.0));
        assert!(parse_bitrate("75").unwrap_err().contains("no unit"));
        assert!(parse_bitrate("75MB")
            .unwrap_err()
            .contains("unknown unit 'mb'"));
        assert!(parse_bitrate("-3Mbit").is_err());
        // An exponent was "unknown unit 'e300mbit'".
        for text in ["1e300Mbit", "1e-300bit", "2E+3kbit"] {
            assert_eq!(
                parse_bitrate(text),
                Err(format!(
                    "rate '{text}': write the number in plain digits, without an exponent (e.g. 75Mbit)"
                ))
            );
        }
        // As the testbed and the wire: bps is ambiguous (tc reads it as bytes per second).
        assert_eq!(
            parse_bitrate("10Mbps").unwrap_err(),
            "'10Mbps' is ambiguous (tc reads 'bps' as bytes per second): write bits, like \"100Mbit\""
        );
    }
}
