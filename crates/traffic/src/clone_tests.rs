//! Captures into traces, written in memory with the capture crate's writer: sizes and gaps
//! per link type and family, what is skipped, MGEN's repeat rule, and the one-line errors.

use super::*;
use dualbench_capture::pcap::{FileFormat, Writer};

const MS: u64 = 1_000_000;
/// An arbitrary capture start (2023-11-14), in ns.
const T0: u64 = 1_700_000_000_000_000_000;

/// An IPv4 packet of protocol `proto` around `body` (the transport header and payload).
fn ipv4(proto: u8, body: &[u8]) -> Vec<u8> {
    let total = (20 + body.len()) as u16;
    let mut p = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0];
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.extend([198, 18, 0, 1, 198, 18, 0, 2]);
    p.extend(body);
    p
}

/// An IPv6 packet with next header `proto` around `body`.
fn ipv6(proto: u8, body: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend((body.len() as u16).to_be_bytes());
    p.extend([proto, 64]);
    p.extend([0x20, 0x01, 0, 2].iter().chain(&[0; 11]).chain(&[1]));
    p.extend([0x20, 0x01, 0, 2].iter().chain(&[0; 11]).chain(&[2]));
    p.extend(body);
    p
}

/// A UDP header and `payload` zero bytes.
fn udp(payload: usize) -> Vec<u8> {
    let mut u = vec![0x13, 0x88, 0x13, 0x89];
    u.extend(((8 + payload) as u16).to_be_bytes());
    u.extend([0, 0]);
    u.resize(8 + payload, 0);
    u
}

/// A TCP header (no options) and `payload` zero bytes.
fn tcp(payload: usize) -> Vec<u8> {
    let mut t = vec![
        0x13, 0x88, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff,
    ];
    t.extend([0, 0, 0, 0]);
    t.resize(20 + payload, 0);
    t
}

/// An Ethernet frame of `ethertype` around `packet`.
fn ethernet(ethertype: u16, packet: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    f.extend(ethertype.to_be_bytes());
    f.extend(packet);
    f
}

/// A Linux cooked (SLL) frame around an IP `packet` of `ethertype`.
fn sll(ethertype: u16, packet: &[u8]) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
    f.extend(ethertype.to_be_bytes());
    f.extend(packet);
    f
}

/// A capture of `link_type` holding `frames` at their times (ns after [`T0`]), whole.
fn capture(format: FileFormat, link_type: u16, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), format, link_type, 65535, "tf-clone").unwrap();
    for (at, frame) in frames {
        w.write(T0 + at, frame.len() as u32, frame).unwrap();
    }
    w.into_inner()
}

/// The five UDP datagrams over Ethernet and IPv4 the end-to-end test clones: 100..500
/// bytes, gaps of 10, 20, 30 and 40 ms.
fn five() -> Vec<u8> {
    let frames: Vec<(u64, Vec<u8>)> = [(0, 100), (10, 200), (30, 300), (60, 400), (100, 500)]
        .iter()
        .map(|&(ms, size)| (ms * MS, ethernet(0x0800, &ipv4(17, &udp(size)))))
        .collect();
    capture(FileFormat::Pcap, 1, &frames)
}

#[test]
fn udp_over_ethernet_and_ipv4_gives_its_payloads_and_gaps() {
    let t = parse_capture(&five()[..]).unwrap();
    assert_eq!(
        t.gaps(),
        [
            (0, 100),
            (10 * MS, 200),
            (20 * MS, 300),
            (30 * MS, 400),
            (40 * MS, 500)
        ]
    );
    assert_eq!((t.records, t.skipped, t.raised, t.reordered), (5, 0, 0, 0));
    assert_eq!((t.span_ns(), t.largest), (100 * MS, (5, 500)));
}

/// IPv4 and IPv6 alike, over raw IP (pcapng) and Linux cooked captures; TCP counts its
/// data segments with their payload; ARP, ICMP and bare ACKs are skipped (time goes on).
#[test]
fn both_families_over_raw_ip_and_linux_cooked_and_tcp_data_only() {
    let raw = capture(
        FileFormat::Pcapng,
        101,
        &[
            (0, ipv6(17, &udp(1200))),
            (5 * MS, ipv4(1, &[8, 0, 0, 0, 0, 0, 0, 0])), // ICMP echo
            (7 * MS, ipv4(17, &udp(1000))),
            (9 * MS, ipv6(6, &tcp(1440))),
        ],
    );
    let t = parse_capture(&raw[..]).unwrap();
    assert_eq!(t.gaps(), [(0, 1200), (7 * MS, 1000), (2 * MS, 1440)]);
    assert_eq!((t.records, t.skipped), (4, 1));

    let arp = ethernet(0x0806, &[0; 28]);
    let cooked = capture(
        FileFormat::Pcap,
        113,
        &[
            (0, sll(0x86dd, &ipv6(6, &tcp(0)))), // a bare ACK
            (MS, sll(0x0800, &ipv4(6, &tcp(536)))),
            (2 * MS, sll(0x0806, &arp[14..])),
            (4 * MS, sll(0x86dd, &ipv6(17, &udp(64)))),
        ],
    );
    let t = parse_capture(&cooked[..]).unwrap();
    assert_eq!(t.gaps(), [(0, 536), (3 * MS, 64)]);
    assert_eq!((t.records, t.skipped), (4, 2));
}

/// The size is the IP header's, not the frame's: a snap length that cut the frame or
/// Ethernet padding on a short one change nothing (MGEN took the frame length less 42).
/// A payload below dualbench's 28-byte header is sent at 28, as MGEN does.
#[test]
fn sizes_come_from_the_ip_header_and_small_ones_are_raised_to_the_header() {
    let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 1, 96, "").unwrap();
    let big = ethernet(0x0800, &ipv4(17, &udp(1400)));
    w.write(T0, big.len() as u32, &big[..96]).unwrap();
    let mut small = ethernet(0x0800, &ipv4(17, &udp(4)));
    small.resize(60, 0); // padded to Ethernet's minimum
    w.write(T0 + MS, 60, &small).unwrap();
    let t = parse_capture(&w.into_inner()[..]).unwrap();
    assert_eq!(t.gaps(), [(0, 1400), (MS, 28)]);
    assert_eq!((t.raised, t.largest), (1, (1, 1400)));
}

/// A timestamp before the previous one is sent right after it (MGEN: at once); the
/// packets after it keep their times in the capture.
#[test]
fn an_out_of_order_timestamp_follows_the_one_before() {
    let f = |size| ethernet(0x0800, &ipv4(17, &udp(size)));
    let c = capture(
        FileFormat::Pcap,
        1,
        &[
            (0, f(100)),
            (10 * MS, f(200)),
            (5 * MS, f(300)),
            (20 * MS, f(400)),
        ],
    );
    let t = parse_capture(&c[..]).unwrap();
    assert_eq!(
        t.gaps(),
        [(0, 100), (10 * MS, 200), (0, 300), (10 * MS, 400)]
    );
    assert_eq!(t.reordered, 1);
}

#[test]
fn captures_without_messages_are_one_line_each() {
    let arp = ethernet(0x0806, &[0; 28]);
    let cases: [(Vec<u8>, &str); 6] = [
        (Vec::new(), "empty file, not a capture: give a pcap or pcapng file, as dualbench capture -w, tcpdump -w or dumpcap write"),
        (b"0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n".to_vec(), "not a pcap or pcapng file (unknown magic number 0x4e4f2030): give a pcap or pcapng file, as dualbench capture -w, tcpdump -w or dumpcap write"),
        (capture(FileFormat::Pcap, 1, &[]), "the capture holds no packets: CLONE takes IPv4 and IPv6 UDP datagrams and TCP segments with data"),
        (
            capture(FileFormat::Pcap, 1, &[(0, arp.clone()), (MS, ethernet(0x0800, &ipv4(6, &tcp(0))))]),
            "none of the capture's 2 packets is a message (2 of no UDP or TCP data (ARP, ICMP, bare TCP ACKs, ...)): CLONE takes IPv4 and IPv6 UDP datagrams and TCP segments with data",
        ),
        (
            capture(FileFormat::Pcap, 147, &[(0, udp(10))]),
            "none of the capture's 1 packet is a message (1 of link type 147 (readable: Ethernet, Linux cooked SLL/SLL2, raw IP and BSD loopback)): CLONE takes IPv4 and IPv6 UDP datagrams and TCP segments with data",
        ),
        (
            five()[..five().len() - 10].to_vec(),
            "the file ends in the middle of a packet record (after 4 whole ones): cut it back to whole records (editcap in.pcap out.pcap) or capture again",
        ),
    ];
    for (bytes, want) in cases {
        assert_eq!(parse_capture(&bytes[..]).unwrap_err(), want);
    }
}

fn play(trace: &Arc<Trace>, repeat: Option<u64>, most: usize) -> Vec<(u64, u64)> {
    let mut p = Player::new(Arc::clone(trace), repeat);
    let mut out = Vec::new();
    while let Some(m) = p.peek() {
        if out.len() == most {
            break;
        }
        out.push(m);
        p.take();
    }
    out
}

/// MGEN's repeat rule: a repeat skips the first packet and sends the second one the first
/// gap after the last, so each pass after the first is the capture from its second
/// packet, one span later: repeat 2 of 5 packets over 100 ms is 13 messages over 300 ms.
#[test]
fn repeats_skip_the_first_packet_and_follow_the_last_by_the_first_gap() {
    let t = Arc::new(parse_capture(&five()[..]).unwrap());
    let once = play(&t, Some(0), 100);
    assert_eq!(
        once,
        [
            (0, 100),
            (10 * MS, 200),
            (30 * MS, 300),
            (60 * MS, 400),
            (100 * MS, 500)
        ]
    );
    let thrice = play(&t, Some(2), 100);
    assert_eq!(thrice.len(), 13);
    assert_eq!(t.total_messages(Some(2)), Some(13));
    assert_eq!(t.total_span_ns(Some(2)), Some(300 * MS));
    let times: Vec<u64> = thrice.iter().map(|m| m.0 / MS).collect();
    assert_eq!(
        times,
        [0, 10, 30, 60, 100, 110, 130, 160, 200, 210, 230, 260, 300]
    );
    let sizes: Vec<u64> = thrice.iter().map(|m| m.1).collect();
    assert_eq!(
        sizes,
        [100, 200, 300, 400, 500, 200, 300, 400, 500, 200, 300, 400, 500]
    );
    // For ever: pass after pass, until the flow's end stops taking.
    let ever = play(&t, None, 1000);
    assert_eq!(ever.len(), 1000);
    // Message 999 is the third of pass 249 (the first pass has 5, each later one 4).
    assert_eq!(ever[999], ((249 * 100 + 60) * MS, 400));
    assert_eq!(t.total_messages(None), None);
}

/// Read from files as a script names them: relative to the script's directory, each file
/// once; a file that is missing, not a capture, too big for UDP, or that cannot repeat is
/// one line naming the script's line and the file.
#[test]
fn load_reads_each_file_once_and_names_line_and_file_in_errors() {
    let dir = std::env::temp_dir().join(format!("tf-clone-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("five.pcap"), five()).unwrap();
    let one = capture(FileFormat::Pcap, 101, &[(0, ipv4(17, &udp(100)))]);
    // 65,507 bytes of UDP payload: IPv4's largest, above what a UDP message may carry here.
    let mut jumbo = ipv4(17, &udp(65_507));
    jumbo.truncate(60);
    let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 101, 65535, "").unwrap();
    w.write(T0, 65_535, &jumbo).unwrap();
    std::fs::write(dir.join("jumbo.pcap"), w.into_inner()).unwrap();
    std::fs::write(dir.join("one.pcap"), &one[..]).unwrap();
    std::fs::write(dir.join("text.pcap"), "not a capture").unwrap();
    let run = |text: &str| -> std::result::Result<Script, String> {
        let mut s = crate::script::parse(text).unwrap();
        load(&mut s, &dir, "s.mgn").map(|_| s).map_err(|e| {
            assert_eq!(e.exit_code(), 2);
            e.message
        })
    };
    let s = run("0 ON 1 UDP DST ::1/5000 CLONE [tcpdump five.pcap [0]]\n\
                 0 ON 2 TCP DST ::1/5000 CLONE [tcpdump five.pcap]\n\
                 1 MOD 1 CLONE [tcpdump five.pcap [1]]\n")
    .unwrap();
    let traces: Vec<Arc<Trace>> = s
        .events
        .iter()
        .filter_map(|e| match &e.action {
            Action::On(spec) => Some(spec.pattern.clone()),
            Action::Mod(c) => c.pattern.clone(),
            Action::Off => None,
        })
        .map(|p| match p {
            Pattern::Clone(r) => r.trace.unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(traces.len(), 3);
    assert!(traces.iter().all(|t| Arc::ptr_eq(t, &traces[0])));
    assert_eq!(traces[0].messages.len(), 5);

    let missing = dir.join("missing.pcap");
    for (text, want) in [
        (
            "0 ON 1 UDP DST ::1/5000 CLONE [tcpdump missing.pcap]\n".to_string(),
            format!("s.mgn:1: at 'missing.pcap': cannot open {}: No such file or directory (os error 2)", missing.display()),
        ),
        (
            "\n0 ON 1 UDP DST ::1/5000 CLONE [tcpdump text.pcap]\n".to_string(),
            format!("s.mgn:2: at 'text.pcap': {}: not a pcap or pcapng file (unknown magic number 0x20746f6e): give a pcap or pcapng file, as dualbench capture -w, tcpdump -w or dumpcap write", dir.join("text.pcap").display()),
        ),
        (
            "0 ON 1 UDP DST ::1/5000 CLONE [tcpdump jumbo.pcap [0]]\n".to_string(),
            "s.mgn:1: at 'jumbo.pcap': packet 1 of the capture carries 65507 bytes, more than a UDP message may (65487): cut such packets out of the capture or clone it into a TCP flow".to_string(),
        ),
        (
            "0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n2 MOD 1 CLONE [tcpdump one.pcap [3]]\n".to_string(),
            "s.mgn:2: at 'one.pcap': the capture holds one message, so it cannot repeat (a repeat starts from its second message, one first gap after the last): give a repeat count of 0 to send it once (CLONE [tcpdump one.pcap [0]])".to_string(),
        ),
    ] {
        assert_eq!(run(&text).unwrap_err(), want, "{text}");
    }
    // The jumbo datagram goes into a TCP flow; a capture of one message is sent once.
    assert!(run("0 ON 1 TCP DST ::1/5000 CLONE [tcpdump jumbo.pcap [0]]\n").is_ok());
    assert!(run("0 ON 1 UDP DST ::1/5000 CLONE [tcpdump one.pcap [0]]\n").is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}
