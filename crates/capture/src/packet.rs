//! Checked views over captured frames: link layer (Ethernet with VLAN tags, Linux cooked
//! SLL and SLL2, raw IP, BSD loopback), IPv4 and IPv6 (walking hop-by-hop, routing,
//! destination-options, fragment and AH headers) and the TCP or UDP header. No I/O and no
//! allocation: a [`Packet`] borrows the frame. Lengths come from the IP header, so a frame
//! cut short by the snap length still counts its full size; a frame too short for the
//! headers it announces is [`ParseError::Truncated`].

use dualbench_common::Family;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Link-layer header types (the pcap `LINKTYPE_` numbers) this parser understands.
pub mod link {
    pub const NULL: u16 = 0;
    pub const ETHERNET: u16 = 1;
    pub const RAW: u16 = 101;
    pub const LINUX_SLL: u16 = 113;
    pub const IPV4: u16 = 228;
    pub const IPV6: u16 = 229;
    pub const LINUX_SLL2: u16 = 276;
    /// Some old captures use 12 or 14 for raw IP.
    pub const RAW_ALT: [u16; 2] = [12, 14];

    /// Whether [`super::parse`] reads frames of this link type.
    pub fn is_supported(link_type: u16) -> bool {
        matches!(
            link_type,
            NULL | ETHERNET | RAW | LINUX_SLL | IPV4 | IPV6 | LINUX_SLL2
        ) || RAW_ALT.contains(&link_type)
    }
}

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;

/// Why a frame could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than the header it must hold (names the layer).
    Truncated(&'static str),
    /// A header with impossible values (names the layer).
    Malformed(&'static str),
    /// A link type this parser does not know.
    UnknownLink(u16),
}

/// A TCP segment's header fields and the payload that was captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// Payload length according to the IP header.
    pub payload_len: u32,
    /// The part of the payload inside the capture (shorter if the snap length cut it).
    pub payload: &'a [u8],
}

/// The transport layer of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport<'a> {
    Tcp(TcpSegment<'a>),
    Udp {
        src_port: u16,
        dst_port: u16,
        payload_len: u32,
    },
    /// An ICMP or ICMPv6 "destination unreachable" about a TCP segment: the addresses and
    /// ports of the segment that could not be delivered (as it was sent).
    Unreachable(Quote),
    /// Another protocol, or a non-first IP fragment (its ports are not in it).
    Other(u8),
}

/// The start of the TCP segment an ICMP error quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quote {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
}

/// One IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub family: Family,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// IP header plus payload, from the IP header's length field.
    pub ip_len: u32,
    pub transport: Transport<'a>,
}

/// Parse one frame; `Ok(None)` for frames that carry no IP (ARP, LLDP...).
pub fn parse(link_type: u16, frame: &[u8]) -> Result<Option<Packet<'_>>, ParseError> {
    match network_layer(link_type, frame)? {
        Some((ethertype, ip)) => match ethertype {
            0x0800 => ipv4(ip).map(Some),
            0x86dd => ipv6(ip).map(Some),
            _ => Ok(None),
        },
        None => Ok(None),
    }
}

/// The ethertype and the bytes after the link header.
fn network_layer(link_type: u16, frame: &[u8]) -> Result<Option<(u16, &[u8])>, ParseError> {
    let be16 = |b: &[u8], at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
    match link_type {
        link::ETHERNET => {
            let mut at = 12;
            loop {
                let ty = be16(check(frame, at + 2, "ethernet")?, at);
                if ty == 0x8100 || ty == 0x88a8 {
                    at += 4; // VLAN tag
                    continue;
                }
                return Ok(Some((ty, &frame[at + 2..])));
            }
        }
        link::LINUX_SLL => Ok(Some((
            be16(check(frame, 16, "linux cooked (SLL)")?, 14),
            &frame[16..],
        ))),
        link::LINUX_SLL2 => Ok(Some((
            be16(check(frame, 20, "linux cooked (SLL2)")?, 0),
            &frame[20..],
        ))),
        link::RAW | link::IPV4 | link::IPV6 => by_version(frame).map(|ty| Some((ty, frame))),
        t if link::RAW_ALT.contains(&t) => by_version(frame).map(|ty| Some((ty, frame))),
        link::NULL => {
            let family = u32::from_ne_bytes(
                check(frame, 4, "loopback")?[..4]
                    .try_into()
                    .unwrap_or([0; 4]),
            );
            let swapped = family.swap_bytes();
            let ty = match (family, swapped) {
                (2, _) | (_, 2) => 0x0800,
                (24 | 28 | 30, _) | (_, 24 | 28 | 30) => 0x86dd,
                _ => return Ok(None),
            };
            Ok(Some((ty, &frame[4..])))
        }
        other => Err(ParseError::UnknownLink(other)),
    }
}

fn by_version(ip: &[u8]) -> Result<u16, ParseError> {
    match check(ip, 1, "raw IP")?[0] >> 4 {
        4 => Ok(0x0800),
        6 => Ok(0x86dd),
        _ => Err(ParseError::Malformed("raw IP version")),
    }
}

fn check<'a>(b: &'a [u8], need: usize, layer: &'static str) -> Result<&'a [u8], ParseError> {
    if b.len() < need {
        Err(ParseError::Truncated(layer))
    } else {
        Ok(b)
    }
}

fn ipv4(ip: &[u8]) -> Result<Packet<'_>, ParseError> {
    check(ip, 20, "IPv4")?;
    let ihl = (ip[0] & 0x0f) as usize * 4;
    if ip[0] >> 4 != 4 || ihl < 20 {
        return Err(ParseError::Malformed("IPv4 header"));
    }
    check(ip, ihl, "IPv4 options")?;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    if total < ihl {
        return Err(ParseError::Malformed("IPv4 total length"));
    }
    let src = IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]));
    let fragment_offset = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
    let body = &ip[ihl..ip.len().min(total)];
    let transport = if fragment_offset != 0 {
        Transport::Other(ip[9])
    } else {
        transport(ip[9], body, (total - ihl) as u32)?
    };
    Ok(Packet {
        family: Family::V4,
        src,
        dst,
        ip_len: total as u32,
        transport,
    })
}

fn ipv6(ip: &[u8]) -> Result<Packet<'_>, ParseError> {
    check(ip, 40, "IPv6")?;
    if ip[0] >> 4 != 6 {
        return Err(ParseError::Malformed("IPv6 header"));
    }
    let payload_len = u16::from_be_bytes([ip[4], ip[5]]) as usize;
    let addr = |at: usize| {
        let mut a = [0u8; 16];
        a.copy_from_slice(&ip[at..at + 16]);
        IpAddr::V6(Ipv6Addr::from(a))
    };
    let (src, dst) = (addr(8), addr(24));
    let end = ip.len().min(40 + payload_len);
    let transport = match upper_layer(ip, end)? {
        Upper::Fragment(proto) => Transport::Other(proto),
        Upper::At(proto, at) => {
            let remaining = (40 + payload_len)
                .checked_sub(at)
                .ok_or(ParseError::Malformed("IPv6 payload length"))?;
            transport(proto, &ip[at.min(end)..end], remaining as u32)?
        }
    };
    Ok(Packet {
        family: Family::V6,
        src,
        dst,
        ip_len: (40 + payload_len) as u32,
        transport,
    })
}

/// Where an IPv6 packet's upper layer starts, past its extension headers.
enum Upper {
    /// A later fragment: its upper-layer header is in the first one.
    Fragment(u8),
    /// The protocol and the offset of its header in the IPv6 packet.
    At(u8, usize),
}

/// Walk the extension headers of the IPv6 packet `ip`, whose payload ends at `end`.
fn upper_layer(ip: &[u8], end: usize) -> Result<Upper, ParseError> {
    let (mut next, mut at) = (ip[6], 40usize);
    loop {
        let hdr = &ip[at.min(end)..end];
        match next {
            0 | 43 | 60 => {
                let h = check(hdr, 2, "IPv6 extension header")?;
                let len = (h[1] as usize + 1) * 8;
                check(hdr, len, "IPv6 extension header")?;
                (next, at) = (h[0], at + len);
            }
            44 => {
                let h = check(hdr, 8, "IPv6 fragment header")?;
                if u16::from_be_bytes([h[2], h[3]]) >> 3 != 0 {
                    return Ok(Upper::Fragment(h[0]));
                }
                (next, at) = (h[0], at + 8);
            }
            51 => {
                let h = check(hdr, 2, "IPv6 authentication header")?;
                let len = (h[1] as usize + 2) * 4;
                check(hdr, len, "IPv6 authentication header")?;
                (next, at) = (h[0], at + len);
            }
            proto => return Ok(Upper::At(proto, at)),
        }
    }
}

/// The ports of a TCP or UDP packet (first fragment), read from the first 4 bytes of its
/// header: for a port filter on frames the snap length cut inside the transport header
/// (IPv6 with TCP options at a snap length of 64), which [`parse`] cannot read whole.
pub fn ports(link_type: u16, frame: &[u8]) -> Option<(u16, u16)> {
    let (ethertype, ip) = network_layer(link_type, frame).ok()??;
    let (proto, header) = match ethertype {
        0x0800 if ip.len() >= 20 && ip[0] >> 4 == 4 => {
            let later_fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0;
            let ihl = (ip[0] & 0x0f) as usize * 4;
            (!later_fragment && ihl >= 20).then_some((ip[9], ip.get(ihl..)?))?
        }
        0x86dd if ip.len() >= 40 && ip[0] >> 4 == 6 => {
            let end = ip
                .len()
                .min(40 + u16::from_be_bytes([ip[4], ip[5]]) as usize);
            match upper_layer(ip, end).ok()? {
                Upper::At(proto, at) => (proto, ip.get(at..end)?),
                Upper::Fragment(_) => return None,
            }
        }
        _ => return None,
    };
    let h = header.get(..4).filter(|_| matches!(proto, 6 | 17))?;
    Some((
        u16::from_be_bytes([h[0], h[1]]),
        u16::from_be_bytes([h[2], h[3]]),
    ))
}

/// The transport header in `body` (captured bytes); `len` is its length per the IP header.
fn transport(proto: u8, body: &[u8], len: u32) -> Result<Transport<'_>, ParseError> {
    let be16 = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    let be32 = |at: usize| u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
    match proto {
        6 => {
            check(body, 20, "TCP")?;
            let data_offset = (body[12] >> 4) as usize * 4;
            if data_offset < 20 || data_offset as u32 > len {
                return Err(ParseError::Malformed("TCP data offset"));
            }
            // Options cut by the snap length lose nothing read here: the payload is empty.
            Ok(Transport::Tcp(TcpSegment {
                src_port: be16(0),
                dst_port: be16(2),
                seq: be32(4),
                ack: be32(8),
                flags: body[13],
                window: be16(14),
                payload_len: len - data_offset as u32,
                payload: body.get(data_offset..).unwrap_or(&[]),
            }))
        }
        17 => {
            check(body, 8, "UDP")?;
            Ok(Transport::Udp {
                src_port: be16(0),
                dst_port: be16(2),
                payload_len: len.saturating_sub(8),
            })
        }
        // ICMP type 3 (except code 4, "fragmentation needed": a path-MTU signal), ICMPv6 type 1.
        1 if body.len() >= 8 && body[0] == 3 && body[1] != 4 => {
            Ok(quote(&body[8..]).map_or(Transport::Other(1), Transport::Unreachable))
        }
        58 if body.len() >= 8 && body[0] == 1 => {
            Ok(quote(&body[8..]).map_or(Transport::Other(58), Transport::Unreachable))
        }
        other => Ok(Transport::Other(other)),
    }
}

/// The quoted IP header and first 8 bytes of a TCP segment inside an ICMP error.
fn quote(ip: &[u8]) -> Option<Quote> {
    let (src, dst, tcp) = match ip.first()? >> 4 {
        4 if ip.len() >= 20 && ip[9] == 6 => {
            let ihl = (ip[0] & 0x0f) as usize * 4;
            let v4 =
                |at: usize| IpAddr::V4(Ipv4Addr::new(ip[at], ip[at + 1], ip[at + 2], ip[at + 3]));
            (v4(12), v4(16), ip.get(ihl..ihl + 4)?)
        }
        6 if ip.len() >= 44 && ip[6] == 6 => {
            let v6 = |at: usize| {
                IpAddr::V6(Ipv6Addr::from(
                    <[u8; 16]>::try_from(&ip[at..at + 16]).unwrap_or([0; 16]),
                ))
            };
            (v6(8), v6(24), &ip[40..44])
        }
        _ => return None,
    };
    let (src_port, dst_port) = (
        u16::from_be_bytes([tcp[0], tcp[1]]),
        u16::from_be_bytes([tcp[2], tcp[3]]),
    );
    Some(Quote {
        src,
        dst,
        src_port,
        dst_port,
    })
}

#[cfg(test)]
#[path = "packet_tests.rs"]
mod tests;
