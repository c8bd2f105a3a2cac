//! Packet parsing on fixed byte arrays.

use super::*;

/// Ethernet + IPv4 (20) + TCP (20) + "GET /" from 192.0.2.1:40000 to 192.0.2.2:80.
const V4_ETH: [u8; 59] = [
    0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, // ethernet
    0x45, 0, 0, 45, 0, 1, 0x40, 0, 64, 6, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2, // IPv4, total 45
    0x9c, 0x40, 0, 80, 0, 0, 0, 100, 0, 0, 0, 200, 0x50, 0x18, 0xff, 0xff, 0, 0, 0,
    0, // TCP PSH|ACK
    b'G', b'E', b'T', b' ', b'/',
];

fn tcp_of(p: Packet<'_>) -> TcpSegment<'_> {
    match p.transport {
        Transport::Tcp(t) => t,
        other => panic!("not TCP: {other:?}"),
    }
}

#[test]
fn ipv4_over_ethernet() {
    let p = parse(link::ETHERNET, &V4_ETH).unwrap().unwrap();
    assert_eq!(p.family, Family::V4);
    assert_eq!(p.src, "192.0.2.1".parse::<IpAddr>().unwrap());
    assert_eq!(p.dst, "192.0.2.2".parse::<IpAddr>().unwrap());
    assert_eq!(p.ip_len, 45);
    let t = tcp_of(p);
    assert_eq!(
        (t.src_port, t.dst_port, t.seq, t.ack),
        (40000, 80, 100, 200)
    );
    assert_eq!(t.flags, TCP_PSH | TCP_ACK);
    assert_eq!((t.payload_len, t.payload), (5, &b"GET /"[..]));
}

#[test]
fn vlan_tag_is_skipped() {
    let mut f = V4_ETH[..12].to_vec();
    f.extend([0x81, 0x00, 0x00, 0x0a]);
    f.extend(&V4_ETH[12..]);
    assert_eq!(
        tcp_of(parse(link::ETHERNET, &f).unwrap().unwrap()).dst_port,
        80
    );
}

#[test]
fn snaplen_cut_payload_keeps_ip_length() {
    let p = parse(link::ETHERNET, &V4_ETH[..56]).unwrap().unwrap();
    let t = tcp_of(p);
    assert_eq!((t.payload_len, t.payload.len()), (5, 2));
}

#[test]
fn truncated_frames_name_the_layer() {
    assert_eq!(
        parse(link::ETHERNET, &V4_ETH[..10]),
        Err(ParseError::Truncated("ethernet"))
    );
    assert_eq!(
        parse(link::ETHERNET, &V4_ETH[..30]),
        Err(ParseError::Truncated("IPv4"))
    );
    assert_eq!(
        parse(link::ETHERNET, &V4_ETH[..44]),
        Err(ParseError::Truncated("TCP"))
    );
    assert_eq!(
        parse(link::LINUX_SLL, &V4_ETH[..15]),
        Err(ParseError::Truncated("linux cooked (SLL)"))
    );
    assert_eq!(parse(147, &V4_ETH), Err(ParseError::UnknownLink(147)));
}

#[test]
fn malformed_headers_are_errors() {
    let mut f = V4_ETH;
    f[14] = 0x43; // IHL 3
    assert_eq!(
        parse(link::ETHERNET, &f),
        Err(ParseError::Malformed("IPv4 header"))
    );
    let mut f = V4_ETH;
    f[46] = 0x30; // TCP data offset 12 bytes
    assert_eq!(
        parse(link::ETHERNET, &f),
        Err(ParseError::Malformed("TCP data offset"))
    );
}

#[test]
fn arp_is_not_ip() {
    let mut f = V4_ETH;
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(parse(link::ETHERNET, &f), Ok(None));
}

#[test]
fn non_first_ipv4_fragment_has_no_ports() {
    let mut f = V4_ETH;
    f[20..22].copy_from_slice(&[0x00, 0x10]); // offset 16 * 8 bytes
    assert_eq!(
        parse(link::ETHERNET, &f).unwrap().unwrap().transport,
        Transport::Other(6)
    );
}

/// IPv6 ::1 → ::2 with hop-by-hop (8), destination options (16) and fragment (8, offset
/// 0) headers before a TCP SYN to port 443 with 3 bytes of payload.
const V6_EXT: [u8; 95] = [
    0x60, 0, 0, 0, 0, 55, 0, 64, // version, payload length 55, next = hop-by-hop
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, // src ::1
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, // dst ::2
    60, 0, 1, 4, 0, 0, 0, 0, // hop-by-hop → dest options, PadN
    44, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // dest options (16 bytes) → fragment
    6, 0, 0, 1, 0, 0, 0, 7, // fragment: offset 0, M=1, id 7 → TCP
    0x30, 0x39, 0x01, 0xbb, 0, 0, 0x10, 0, 0, 0, 0, 0, 0x50, 0x02, 0x72, 0x10, 0, 0, 0,
    0, // TCP SYN
    1, 2, 3,
];

#[test]
fn ipv6_walks_extension_headers() {
    let p = parse(link::RAW, &V6_EXT).unwrap().unwrap();
    assert_eq!(p.family, Family::V6);
    assert_eq!(p.src, "::1".parse::<IpAddr>().unwrap());
    assert_eq!(p.dst, "::2".parse::<IpAddr>().unwrap());
    assert_eq!(p.ip_len, 95);
    let t = tcp_of(p);
    assert_eq!(
        (t.src_port, t.dst_port, t.seq, t.flags),
        (12345, 443, 4096, TCP_SYN)
    );
    assert_eq!((t.payload_len, t.payload), (3, &[1u8, 2, 3][..]));
}

#[test]
fn ipv6_later_fragment_and_truncated_extension() {
    let mut f = V6_EXT;
    f[66..68].copy_from_slice(&[0x00, 0x09]); // fragment offset 1
    assert_eq!(
        parse(link::RAW, &f).unwrap().unwrap().transport,
        Transport::Other(6)
    );
    assert_eq!(
        parse(link::RAW, &V6_EXT[..50]),
        Err(ParseError::Truncated("IPv6 extension header"))
    );
    assert_eq!(
        parse(link::RAW, &V6_EXT[..20]),
        Err(ParseError::Truncated("IPv6"))
    );
}

#[test]
fn ipv6_in_linux_cooked_headers() {
    let sll = [0u8, 4, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x86, 0xdd];
    let frame: Vec<u8> = sll.iter().chain(V6_EXT.iter()).copied().collect();
    assert_eq!(
        tcp_of(parse(link::LINUX_SLL, &frame).unwrap().unwrap()).dst_port,
        443
    );
    let sll2 = [
        0x86u8, 0xdd, 0, 0, 0, 0, 0, 1, 0, 1, 4, 6, 1, 2, 3, 4, 5, 6, 0, 0,
    ];
    let frame: Vec<u8> = sll2.iter().chain(V6_EXT.iter()).copied().collect();
    assert_eq!(
        tcp_of(parse(link::LINUX_SLL2, &frame).unwrap().unwrap()).dst_port,
        443
    );
}

#[test]
fn udp_ports() {
    let mut f = V4_ETH;
    f[23] = 17;
    match parse(link::ETHERNET, &f).unwrap().unwrap().transport {
        Transport::Udp {
            src_port,
            dst_port,
            payload_len,
        } => assert_eq!((src_port, dst_port, payload_len), (40000, 80, 17)),
        other => panic!("{other:?}"),
    }
}

/// A small seeded generator (xorshift64*), so the fuzz cases repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn fuzzed_frames_never_panic() {
    let mut rng = Rng(0x5eed);
    let links = [
        link::ETHERNET,
        link::RAW,
        link::LINUX_SLL,
        link::LINUX_SLL2,
        link::NULL,
        link::IPV6,
    ];
    let seeds: [&[u8]; 2] = [&V4_ETH, &V6_EXT];
    let mut parsed = 0;
    for round in 0..200_000 {
        let mut frame = seeds[round % 2].to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(frame.len());
            frame[at] = rng.next() as u8;
        }
        frame.truncate(rng.below(frame.len() + 1));
        if parse(links[rng.below(links.len())], &frame).is_ok() {
            parsed += 1;
        }
    }
    assert!(
        parsed > 1000,
        "the mutations should leave many frames readable: {parsed}"
    );
}

#[test]
fn icmp_unreachable_quotes_the_tcp_segment() {
    // IPv4 ICMP host unreachable from 192.0.2.9 quoting our SYN 192.0.2.1:40000 → 192.0.2.2:80.
    let mut f = V4_ETH[..34].to_vec();
    f[23] = 1; // ICMP
    f[16..18].copy_from_slice(&(20u16 + 8 + 28).to_be_bytes());
    f.extend([3, 1, 0, 0, 0, 0, 0, 0]);
    f.extend(&V4_ETH[14..42]); // quoted IPv4 header + 8 bytes of TCP
    let quote = Quote {
        src: "192.0.2.1".parse().unwrap(),
        dst: "192.0.2.2".parse().unwrap(),
        src_port: 40000,
        dst_port: 80,
    };
    assert_eq!(
        parse(link::ETHERNET, &f).unwrap().unwrap().transport,
        Transport::Unreachable(quote)
    );
    f[34 + 1] = 4; // fragmentation needed: not an unreachable
    assert_eq!(
        parse(link::ETHERNET, &f).unwrap().unwrap().transport,
        Transport::Other(1)
    );
    // ICMPv6 destination unreachable quoting a v6 TCP segment (no extension headers).
    let mut inner = V6_EXT[..40].to_vec();
    inner[6] = 6;
    inner.extend(&V6_EXT[72..80]);
    let mut f = V6_EXT[..40].to_vec();
    f[4..6].copy_from_slice(&(8u16 + 48).to_be_bytes());
    f[6] = 58;
    f.extend([1, 3, 0, 0, 0, 0, 0, 0]);
    f.extend(&inner);
    match parse(link::RAW, &f).unwrap().unwrap().transport {
        Transport::Unreachable(q) => assert_eq!(
            (q.src_port, q.dst_port, q.dst),
            (12345, 443, "::2".parse().unwrap())
        ),
        other => panic!("{other:?}"),
    }
}

/// Ethernet + IPv4 + TCP with 12 bytes of options (timestamps, as Linux sends) and 5
/// bytes of payload: 71 bytes, so a snap length of 64 cuts inside the options.
fn v4_with_options() -> Vec<u8> {
    let mut f = V4_ETH[..14].to_vec();
    f.extend([
        0x45, 0, 0, 57, 0, 1, 0x40, 0, 64, 6, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2,
    ]);
    f.extend(&V4_ETH[34..46]);
    f.extend([0x80, 0x18, 0xff, 0xff, 0, 0, 0, 0]); // data offset 32
    f.extend([1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
    f.extend(b"GET /");
    f
}

#[test]
fn tcp_options_cut_by_the_snap_length_leave_the_header_readable() {
    let f = v4_with_options();
    let t = tcp_of(parse(link::ETHERNET, &f[..64]).unwrap().unwrap());
    assert_eq!(
        (t.src_port, t.dst_port, t.seq, t.flags),
        (40000, 80, 100, TCP_PSH | TCP_ACK)
    );
    assert_eq!((t.payload_len, t.payload), (5, &[][..]));
}

#[test]
fn ports_of_a_frame_cut_inside_its_transport_header() {
    // IPv6 over Ethernet: 14 + 40 bytes of headers leave 10 bytes of TCP at a snap of 64.
    let mut f = V4_ETH[..12].to_vec();
    f.extend([0x86, 0xdd, 0x60, 0, 0, 0, 0, 23, 6, 64]);
    f.extend(&V6_EXT[8..40]);
    f.extend(&V6_EXT[72..]);
    assert_eq!(
        parse(link::ETHERNET, &f[..64]),
        Err(ParseError::Truncated("TCP"))
    );
    assert_eq!(ports(link::ETHERNET, &f[..64]), Some((12345, 443)));
    assert_eq!(ports(link::ETHERNET, &f[..57]), None, "3 bytes of TCP");
    // Behind extension headers too, once the headers are whole.
    let mut e = V4_ETH[..12].to_vec();
    e.extend([0x86, 0xdd]);
    e.extend(V6_EXT);
    assert_eq!(ports(link::ETHERNET, &e[..14 + 72 + 4]), Some((12345, 443)));
    assert_eq!(
        ports(link::ETHERNET, &e[..64]),
        None,
        "cut inside the extension headers"
    );
    assert_eq!(ports(link::ETHERNET, &V4_ETH[..38]), Some((40000, 80)));
    let mut later = V4_ETH;
    later[20..22].copy_from_slice(&[0x00, 0x10]);
    assert_eq!(
        ports(link::ETHERNET, &later),
        None,
        "a later fragment has no ports"
    );
}
