//! `dualbench analyze`: one pass over a capture file, every TCP packet into its
//! connection ([`flow`], [`connection`], [`http`]), then per-connection reports and
//! per-family summaries ([`summary`]) rendered as text, JSON or CSV ([`report`]).

pub mod connection;
pub mod flow;
pub mod http;
pub mod report;
pub mod sequence;
pub mod summary;

use crate::packet::{self, Transport};
use crate::pcap::{Position, ReadError, Reader, Record};
use dualbench_common::{plural, Failure, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use summary::{ConnectionReport, FamilySummary};

/// Counts of what the file held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PacketCounts {
    pub total: u64,
    pub tcp: u64,
    pub udp: u64,
    /// IP packets of other protocols, later fragments, and frames without IP.
    pub other: u64,
    /// Frames too short for their headers or with impossible ones.
    pub unreadable: u64,
    /// Of the unreadable: TCP segments the snap length cut inside their 20-byte header
    /// (captured shorter than they were on the wire), so their segment is lost to the
    /// analysis; `analyze` warns about them.
    pub cut_tcp_header: u64,
    /// The most bytes kept of such a frame (the capture's snap length, or near it); 0
    /// when none was cut.
    pub cut_tcp_header_kept: u32,
}

/// Everything `analyze` found in one capture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub schema: &'static str,
    pub file: String,
    pub packets: PacketCounts,
    pub link_types: Vec<u16>,
    pub first_ns: u64,
    pub last_ns: u64,
    /// The analysis stops before the end of the file, which ends in the middle of a packet
    /// record (a capture cut by a crash or a full disk) or holds a corrupt record: the
    /// whole records before it were analysed; `damage` says where and why.
    pub truncated: bool,
    pub damage: Option<Damage>,
    /// Packets left out because their interface's link type is not one the parser reads
    /// (a pcapng file can mix interfaces): per link type, in the order first met. They
    /// are counted in `packets.total` and in no other count.
    pub skipped: Vec<Skipped>,
    pub connections: Vec<ConnectionReport>,
    pub families: BTreeMap<&'static str, FamilySummary>,
}

/// Packets of one unsupported link type, left out of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub link_type: u16,
    pub packets: u64,
}

/// The link types the parser reads, for messages.
const KNOWN_LINKS: &str = "Ethernet, Linux cooked SLL/SLL2, raw IP and BSD loopback are";

/// One line for a warning: how many packets were left out and why, and what was
/// analysed; `None` when none was.
pub fn describe_skipped(analysis: &Analysis) -> Option<String> {
    let (first, rest) = analysis.skipped.split_first()?;
    let mut what = format!(
        "{} of link type {}",
        plural(first.packets, "packet"),
        first.link_type
    );
    for s in rest {
        what += &format!(", {} of link type {}", s.packets, s.link_type);
    }
    let skipped: u64 = analysis.skipped.iter().map(|s| s.packets).sum();
    Some(format!(
        "{}: skipped {what} (not supported: {KNOWN_LINKS}); analysed the other {}",
        analysis.file,
        plural(analysis.packets.total - skipped, "packet")
    ))
}

/// One line for a warning about TCP segments the snap length cut inside their header
/// (they are counted as unreadable and left out of every connection); `None` when none
/// was. Until 2026-11-24 they were counted without a word, and a capture made with too
/// small a snaplen analysed to connections with no delay and no throughput.
pub fn describe_cut_headers(analysis: &Analysis) -> Option<String> {
    let p = &analysis.packets;
    (p.cut_tcp_header > 0).then(|| {
        format!(
            "{}: left out of the analysis {} cut inside the TCP header by the capture's snap length ({} bytes kept): capture with a larger snaplen (dualbench capture keeps whole frames unless given --snaplen; over Ethernet analyze needs 54 bytes for IPv4 and 74 for IPv6, 6 more on any)",
            analysis.file,
            plural(p.cut_tcp_header, "TCP packet"),
            p.cut_tcp_header_kept
        )
    })
}

/// Where and why reading a capture file stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// The byte offset of the record (pcapng: block) that could not be read.
    pub offset: u64,
    /// The packets before it, all analysed.
    pub packets_before: u64,
    /// `cut`: the file ends in the middle of that record; `corrupt`: the record is impossible.
    pub kind: &'static str,
    pub reason: String,
}

impl Damage {
    /// One line for a warning: what is wrong and what was analysed.
    pub fn describe(&self, file: &str) -> String {
        match self.kind {
            "cut" => format!(
                "{file} ends in the middle of a packet (a capture cut short?): analysed the {} before it",
                plural(self.packets_before, "whole packet")
            ),
            _ => format!(
                "{file}: {} at byte {}, after packet {}: analysed the {} before it and nothing after",
                self.reason,
                self.offset,
                self.packets_before,
                plural(self.packets_before, "packet")
            ),
        }
    }
}

/// Analyse a capture file; `port` keeps only connections with that server port. Packets
/// of an unsupported link type that the file mixes with supported ones are left out, and
/// one warning line on stderr says how many and why (as the truncation warning does).
pub fn analyze_file(path: &Path, port: Option<u16>) -> Result<Analysis> {
    let reader = Reader::open(path).map_err(|e| Failure::usage(e.to_string()))?;
    let mut analysis = analyze(reader, port).map_err(|e| e.context(path.display()))?;
    analysis.file = path.display().to_string();
    for line in [describe_skipped(&analysis), describe_cut_headers(&analysis)]
        .into_iter()
        .flatten()
    {
        dualbench_common::stdio::note(&format!("dualbench: warning: {line}"));
    }
    Ok(analysis)
}

/// Analyse packets from a reader; a file cut short, or with a corrupt record, is analysed
/// up to that record ([`Analysis::truncated`], [`Analysis::damage`]). Packets of a link
/// type the parser does not read are left out ([`Analysis::skipped`]); a file holding
/// nothing else is a usage error naming the link types it reads (as a file that is not
/// a capture is), and a file that cannot be read further a run-time one.
pub fn analyze<R: Read>(mut reader: Reader<R>, port: Option<u16>) -> Result<Analysis> {
    // A pcap file declares its one link type up front: none of its packets can be read.
    unreadable_links(reader.link_types(), &[])?;
    let mut tracker = flow::Tracker::new(port);
    let mut counts = PacketCounts::default();
    let mut link_types: Vec<u16> = Vec::new();
    let (mut first_ns, mut last_ns) = (u64::MAX, 0);
    let mut damage = None;
    let mut skipped: Vec<Skipped> = Vec::new();
    loop {
        let record = match reader.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(e @ (ReadError::Truncated | ReadError::Corrupt(_))) => {
                damage = Some(damage_at(reader.position(), &e));
                break;
            }
            Err(e) => return Err(Failure::runtime(e.to_string())),
        };
        counts.total += 1;
        (first_ns, last_ns) = (first_ns.min(record.ts_ns), last_ns.max(record.ts_ns));
        if !link_types.contains(&record.link_type) {
            link_types.push(record.link_type);
        }
        if let Err(Unsupported(link_type)) = take_packet(&record, port, &mut counts, &mut tracker) {
            match skipped.iter_mut().find(|s| s.link_type == link_type) {
                Some(s) => s.packets += 1,
                None => skipped.push(Skipped {
                    link_type,
                    packets: 1,
                }),
            }
        }
    }
    if skipped.iter().map(|s| s.packets).sum::<u64>() == counts.total {
        unreadable_links(reader.link_types(), &skipped)?;
    }
    let connections: Vec<ConnectionReport> = tracker
        .connections
        .iter()
        .filter(|c| port.is_none_or(|p| c.server.port() == p))
        .map(summary::report)
        .collect();
    Ok(Analysis {
        schema: "dualbench.analyze/1",
        file: String::new(),
        packets: counts,
        link_types,
        first_ns: if counts.total == 0 { 0 } else { first_ns },
        last_ns,
        truncated: damage.is_some(),
        damage,
        skipped,
        families: summary::by_family(&connections),
        connections,
    })
}

/// With no packet analysed: an error when the file's packets (`skipped`), or with none
/// its declared link types (`declared`), are all of link types the parser does not read,
/// naming them and what to do.
fn unreadable_links(declared: &[u16], skipped: &[Skipped]) -> Result<()> {
    let types: Vec<u16> = match skipped.is_empty() {
        true if declared.iter().all(|&t| !packet::link::is_supported(t)) => declared.to_vec(),
        true => Vec::new(),
        false => skipped.iter().map(|s| s.link_type).collect(),
    };
    let Some((last, rest)) = types.split_last() else {
        return Ok(());
    };
    let named = match rest {
        [] => format!("link type {last} is"),
        _ => {
            let rest: Vec<String> = rest.iter().map(u16::to_string).collect();
            format!("link types {} and {last} are", rest.join(", "))
        }
    };
    Err(Failure::usage(format!(
        "{named} not supported ({KNOWN_LINKS}): capture on an Ethernet-like or loopback interface, or on any (Linux cooked)"
    )))
}

/// Where a file cut short (`e` is [`ReadError::Truncated`]) or with a corrupt record
/// stops being read, and why.
fn damage_at(at: Position, e: &ReadError) -> Damage {
    Damage {
        offset: at.offset,
        packets_before: at.packets,
        kind: match e {
            ReadError::Truncated => "cut",
            _ => "corrupt",
        },
        reason: e.to_string(),
    }
}

/// A frame of a link type the parser does not read.
struct Unsupported(u16);

/// One captured frame: counted by what it carries; its TCP segment (on `port`, when
/// given) or ICMP error handed to the tracker. A frame of an unsupported link type is
/// counted nowhere and given back as such.
fn take_packet(
    record: &Record,
    port: Option<u16>,
    counts: &mut PacketCounts,
    tracker: &mut flow::Tracker,
) -> std::result::Result<(), Unsupported> {
    let ts_ns = record.ts_ns;
    match packet::parse(record.link_type, record.data) {
        Ok(Some(p)) => match p.transport {
            Transport::Tcp(seg) => {
                counts.tcp += 1;
                // With --port, a segment with that port on neither end belongs to no
                // connection that will be reported: do not track it at all.
                if port.is_none_or(|want| seg.src_port == want || seg.dst_port == want) {
                    tracker.add(ts_ns, &p, &seg);
                }
            }
            Transport::Udp { .. } => counts.udp += 1,
            Transport::Unreachable(quote) => {
                counts.other += 1;
                tracker.unreachable(ts_ns, &quote);
            }
            Transport::Other(_) => counts.other += 1,
        },
        Ok(None) => counts.other += 1,
        Err(packet::ParseError::UnknownLink(t)) => return Err(Unsupported(t)),
        // Cut by the snap length (captured shorter than on the wire) inside the TCP header.
        Err(packet::ParseError::Truncated("TCP"))
            if (record.data.len() as u64) < u64::from(record.orig_len) =>
        {
            counts.unreadable += 1;
            counts.cut_tcp_header += 1;
            counts.cut_tcp_header_kept = counts.cut_tcp_header_kept.max(record.data.len() as u32);
        }
        Err(_) => counts.unreadable += 1,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::{FileFormat, Writer};

    /// A raw IPv4 frame carrying a TCP segment without payload (checksums left zero).
    fn tcp_frame(
        src: ([u8; 4], u16),
        dst: ([u8; 4], u16),
        seq: u32,
        ack: u32,
        flags: u8,
    ) -> Vec<u8> {
        let mut f = vec![0u8; 40];
        f[0] = 0x45;
        f[2..4].copy_from_slice(&40u16.to_be_bytes());
        f[8] = 64;
        f[9] = 6;
        f[12..16].copy_from_slice(&src.0);
        f[16..20].copy_from_slice(&dst.0);
        f[20..22].copy_from_slice(&src.1.to_be_bytes());
        f[22..24].copy_from_slice(&dst.1.to_be_bytes());
        f[24..28].copy_from_slice(&seq.to_be_bytes());
        f[28..32].copy_from_slice(&ack.to_be_bytes());
        f[32] = 5 << 4;
        f[33] = flags;
        f[34..36].copy_from_slice(&65535u16.to_be_bytes());
        f
    }

    #[test]
    fn port_keeps_only_connections_to_that_server_port() {
        let (syn, synack, ack) = (0x02, 0x12, 0x10);
        let (a, b) = ([198, 18, 0, 1], [198, 18, 0, 2]);
        let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 101, 65535, "").unwrap();
        let mut t = 0;
        // Handshakes: to server port 80; to 8080; and one from client port 80 to 9999.
        for (client, server) in [
            ((a, 40000), (b, 80)),
            ((a, 40001), (b, 8080)),
            ((a, 80), (b, 9999)),
        ] {
            for frame in [
                tcp_frame(client, server, 100, 0, syn),
                tcp_frame(server, client, 500, 101, synack),
                tcp_frame(client, server, 101, 501, ack),
            ] {
                t += 1_000;
                w.write(t, frame.len() as u32, &frame).unwrap();
            }
        }
        let file = w.into_inner();
        let all = analyze(Reader::new(&file[..]).unwrap(), None).unwrap();
        assert_eq!(all.connections.len(), 3);
        let only = analyze(Reader::new(&file[..]).unwrap(), Some(80)).unwrap();
        assert_eq!(only.connections.len(), 1);
        assert_eq!(only.connections[0].server, "198.18.0.2:80");
        assert_eq!(only.packets.tcp, 9, "every packet is still counted");
    }

    /// What a file of unsupported link types is told.
    fn unsupported(named: &str) -> Failure {
        Failure::usage(format!(
            "{named} not supported (Ethernet, Linux cooked SLL/SLL2, raw IP and BSD loopback are): capture on an Ethernet-like or loopback interface, or on any (Linux cooked)"
        ))
    }

    /// A link type the parser does not know is one line naming every one it does (BSD
    /// loopback was missing) and what to do, a usage error as a file that is not a capture
    /// is (it was exit 1), with packets or without: a pcap file of link type 179 and no
    /// packet read as an empty analysis, exit 0.
    #[test]
    fn an_unknown_link_type_names_the_known_ones() {
        let writer = || Writer::new(Vec::new(), FileFormat::Pcap, 179, 65535, "").unwrap();
        let empty = writer().into_inner();
        let mut w = writer();
        w.write(1, 40, &[0; 40]).unwrap();
        let file = w.into_inner();
        for file in [file, empty] {
            let e = analyze(Reader::new(&file[..]).unwrap(), None).unwrap_err();
            assert_eq!(e, unsupported("link type 179 is"));
            assert_eq!(e.exit_code(), 2);
        }
    }

    /// A pcapng file whose interfaces are all of link types the parser does not read:
    /// every one named, with packets or without. One supported interface among them,
    /// without packets, is an empty analysis.
    #[test]
    fn pcapng_interfaces_all_of_unknown_link_types_are_named() {
        let header = || Writer::new(Vec::new(), FileFormat::Pcapng, 147, 65535, "").unwrap();
        let idb = |link_type: u16| {
            let mut body = vec![0u8; 8];
            body[..2].copy_from_slice(&link_type.to_le_bytes());
            pcapng_block(crate::pcap::PCAPNG_IDB, &body)
        };
        let mut file = header().into_inner();
        file.extend(idb(148));
        let empty = file.clone();
        file.extend(epb(0, 1, &[0xab; 30]));
        file.extend(epb(1, 2, &[0xcd; 30]));
        file.extend(epb(0, 3, &[0xef; 30]));
        let e = analyze(Reader::new(&file[..]).unwrap(), None).unwrap_err();
        assert_eq!(e, unsupported("link types 147 and 148 are"));
        let e = analyze(Reader::new(&empty[..]).unwrap(), None).unwrap_err();
        assert_eq!(e, unsupported("link types 147 and 148 are"));
        let mut mixed = empty;
        mixed.extend(idb(1));
        let a = analyze(Reader::new(&mixed[..]).unwrap(), None).unwrap();
        assert_eq!((a.packets.total, a.connections.len()), (0, 0));
        assert_eq!(a.link_types, [0u16; 0], "no packet, no link type seen");
    }

    /// A pcapng block of type `kind` around `body` (little-endian, padded to 4 bytes).
    fn pcapng_block(kind: u32, body: &[u8]) -> Vec<u8> {
        let padded = body.len().div_ceil(4) * 4;
        let total = (12 + padded) as u32;
        let mut b = Vec::new();
        b.extend(kind.to_le_bytes());
        b.extend(total.to_le_bytes());
        b.extend(body);
        b.resize(8 + padded, 0);
        b.extend(total.to_le_bytes());
        b
    }

    /// An enhanced packet block of interface `interface` (timestamps in µs, pcapng's default).
    fn epb(interface: u32, ts_us: u64, frame: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for v in [
            interface,
            (ts_us >> 32) as u32,
            ts_us as u32,
            frame.len() as u32,
            frame.len() as u32,
        ] {
            body.extend(v.to_le_bytes());
        }
        body.extend(frame);
        pcapng_block(crate::pcap::PCAPNG_EPB, &body)
    }

    /// Segments the snap length cut inside their TCP header were counted as unreadable
    /// without a word; they are counted apart and warned about in one line. A frame too
    /// short for its TCP header that was no longer on the wire (a malformed one) is not
    /// the snap length's doing and is only unreadable.
    #[test]
    fn tcp_headers_cut_by_the_snap_length_are_counted_and_warned_about() {
        let (a, b) = (([198, 18, 0, 1], 40000), ([198, 18, 0, 2], 80));
        let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 101, 30, "").unwrap();
        w.write(1_000, 40, &tcp_frame(a, b, 100, 0, 0x02)).unwrap();
        // Two segments of 40 bytes kept to 30 and 33: IP header and 10 or 13 of TCP's 20.
        w.write(2_000, 40, &tcp_frame(b, a, 500, 101, 0x12)[..30])
            .unwrap();
        w.write(3_000, 40, &tcp_frame(a, b, 101, 501, 0x10)[..33])
            .unwrap();
        // Malformed: 30 bytes on the wire as captured, its IP header claiming 40.
        w.write(4_000, 30, &tcp_frame(a, b, 101, 501, 0x10)[..30])
            .unwrap();
        let mut analysis = analyze(Reader::new(&w.into_inner()[..]).unwrap(), None).unwrap();
        assert_eq!(
            analysis.packets,
            PacketCounts {
                total: 4,
                tcp: 1,
                unreadable: 3,
                cut_tcp_header: 2,
                cut_tcp_header_kept: 33,
                ..PacketCounts::default()
            }
        );
        analysis.file = "small.pcap".into();
        assert_eq!(
            describe_cut_headers(&analysis).unwrap(),
            "small.pcap: left out of the analysis 2 TCP packets cut inside the TCP header by the capture's snap length (33 bytes kept): capture with a larger snaplen (dualbench capture keeps whole frames unless given --snaplen; over Ethernet analyze needs 54 bytes for IPv4 and 74 for IPv6, 6 more on any)"
        );
        let json = serde_json::to_value(&analysis).unwrap();
        assert_eq!(json["packets"]["cut_tcp_header"], 2);
        // A whole file says nothing.
        let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 101, 65535, "").unwrap();
        w.write(1_000, 40, &tcp_frame(a, b, 100, 0, 0x02)).unwrap();
        let whole = analyze(Reader::new(&w.into_inner()[..]).unwrap(), None).unwrap();
        assert_eq!(describe_cut_headers(&whole), None);
    }

    /// A pcapng whose second interface has a link type the parser does not read (147,
    /// USER0): the whole analysis failed on its first packet, where tshark reads the other
    /// interface's packets. Its packets are skipped and counted now, the rest analysed.
    #[test]
    fn an_interface_of_an_unsupported_link_type_is_skipped_and_counted() {
        let (a, b) = (([198, 18, 0, 1], 40000), ([198, 18, 0, 2], 80));
        let mut w = Writer::new(Vec::new(), FileFormat::Pcapng, 101, 65535, "").unwrap();
        w.write(1_000, 40, &tcp_frame(a, b, 100, 0, 0x02)).unwrap();
        let mut file = w.into_inner();
        let mut idb = vec![0u8; 8];
        idb[..2].copy_from_slice(&147u16.to_le_bytes());
        idb[4..8].copy_from_slice(&65535u32.to_le_bytes());
        file.extend(pcapng_block(crate::pcap::PCAPNG_IDB, &idb));
        file.extend(epb(1, 2, &[0xab; 30]));
        file.extend(epb(0, 3, &tcp_frame(b, a, 500, 101, 0x12)));
        file.extend(epb(1, 4, &[0xcd; 7]));
        file.extend(epb(0, 5, &tcp_frame(a, b, 101, 501, 0x10)));
        let mut analysis = analyze(Reader::new(&file[..]).unwrap(), None).unwrap();
        assert_eq!(
            analysis.packets,
            PacketCounts {
                total: 5,
                tcp: 3,
                ..PacketCounts::default()
            }
        );
        assert_eq!(
            analysis.skipped,
            [Skipped {
                link_type: 147,
                packets: 2
            }]
        );
        assert_eq!(analysis.link_types, [101, 147]);
        assert_eq!(analysis.connections.len(), 1);
        assert_eq!(analysis.connections[0].server, "198.18.0.2:80");
        assert!(!analysis.truncated);
        analysis.file = "two.pcapng".into();
        assert_eq!(
            describe_skipped(&analysis).unwrap(),
            "two.pcapng: skipped 2 packets of link type 147 (not supported: Ethernet, Linux cooked SLL/SLL2, raw IP and BSD loopback are); analysed the other 3 packets"
        );
        let text = report::render(&analysis, report::Format::Text, false);
        assert!(
            text.starts_with(
                "two.pcapng: 5 packets (3 TCP, 0 UDP, 0 other, 0 unreadable, 2 skipped) over "
            ),
            "{text}"
        );
    }

    /// A corrupt record in the middle of a file is treated like a cut: the handshakes
    /// before it are analysed, `damage` says where and why, nothing after it is read.
    #[test]
    fn a_corrupt_record_ends_the_analysis_like_a_cut() {
        let (a, b) = (([198, 18, 0, 1], 40000), ([198, 18, 0, 2], 80));
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            let mut w = Writer::new(Vec::new(), format, 101, 65535, "").unwrap();
            for (t, frame) in [
                tcp_frame(a, b, 100, 0, 0x02),
                tcp_frame(b, a, 500, 101, 0x12),
                tcp_frame(a, b, 101, 501, 0x10),
            ]
            .iter()
            .enumerate()
            {
                w.write(t as u64 * 1000, 40, frame).unwrap();
            }
            let mut file = w.into_inner();
            let at = file.len() as u64;
            let bad_length = match format {
                FileFormat::Pcap => 8,   // caplen of a pcap record header
                FileFormat::Pcapng => 4, // block total length
            };
            let mut record = vec![0u8; 16];
            record[..4].copy_from_slice(&crate::pcap::PCAPNG_EPB.to_le_bytes());
            record[bad_length..bad_length + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            file.extend(record);
            file.extend(tcp_frame(b, a, 501, 101, 0x11)); // after it: never read
            let analysis = analyze(Reader::new(&file[..]).unwrap(), None).unwrap();
            assert_eq!(analysis.packets.total, 3, "{format:?}");
            assert_eq!(analysis.connections.len(), 1);
            assert!(analysis.truncated);
            let damage = analysis.damage.unwrap();
            assert_eq!(
                (damage.kind, damage.offset, damage.packets_before),
                ("corrupt", at, 3)
            );
            assert!(damage.reason.contains("4294967295"), "{}", damage.reason);
            assert!(damage.describe("f").starts_with(&format!(
                "f: {} at byte {at}, after packet 3",
                damage.reason
            )));
        }
    }

    /// The warnings said "analysed the 1 whole packets before it".
    #[test]
    fn damage_after_one_packet_says_one_packet() {
        let damage = |kind, reason: &str| Damage {
            offset: 114,
            packets_before: 1,
            kind,
            reason: reason.into(),
        };
        assert_eq!(
            damage("cut", "").describe("f"),
            "f ends in the middle of a packet (a capture cut short?): analysed the 1 whole packet before it"
        );
        assert_eq!(
            damage("corrupt", "corrupt packet record").describe("f"),
            "f: corrupt packet record at byte 114, after packet 1: analysed the 1 packet before it and nothing after"
        );
    }

    /// Random and mutated packets in a capture file: analysis ends with a result or an
    /// error, never a panic, and counts every record.
    #[test]
    fn fuzzed_capture_files_never_panic() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            let mut w = Writer::new(Vec::new(), format, 1, 65535, "").unwrap();
            let mut frame = [0u8; 200];
            for i in 0..20_000u64 {
                let len = (next() % 200) as usize;
                frame.iter_mut().take(len).for_each(|b| *b = next() as u8);
                // Mostly IPv4/IPv6 TCP so the connection code is reached.
                frame[12..14].copy_from_slice(if i % 2 == 0 {
                    &[0x08, 0x00]
                } else {
                    &[0x86, 0xdd]
                });
                frame[14] = if i % 2 == 0 { 0x45 } else { 0x60 };
                frame[23] = 6;
                frame[20] = 6;
                w.write(next() % 1_000_000_000, 200, &frame[..len.max(14)])
                    .unwrap();
            }
            let file = w.into_inner();
            let analysis = analyze(Reader::new(&file[..]).unwrap(), None).unwrap();
            assert_eq!(analysis.packets.total, 20_000);
            let counted = analysis.packets.tcp
                + analysis.packets.udp
                + analysis.packets.other
                + analysis.packets.unreadable;
            assert_eq!(counted, 20_000);
            // Cut inside the last record: everything before the cut, and a flag.
            let cut = analyze(Reader::new(&file[..file.len() - 7]).unwrap(), None).unwrap();
            assert!(cut.truncated && !analysis.truncated);
            assert_eq!(cut.damage.map(|d| d.kind), Some("cut"));
            assert_eq!(cut.packets.total, 19_999);
        }
    }

    #[test]
    fn port_names_the_server_of_a_connection_joined_without_its_handshake() {
        // A keep-alive connection to a server on port 60990, captured after its handshake,
        // from client port 51514: without a SYN the higher port looks like the client's.
        // Before 2026-11-24 `--port 60990` found no connection here.
        let ack = 0x10;
        let (client, server) = (([127, 0, 0, 1], 51514), ([127, 0, 0, 1], 60990));
        let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 101, 65535, "").unwrap();
        for (t, frame) in [
            tcp_frame(client, server, 100, 500, ack),
            tcp_frame(server, client, 500, 100, ack),
        ]
        .iter()
        .enumerate()
        {
            w.write(t as u64 * 1_000, frame.len() as u32, frame)
                .unwrap();
        }
        let file = w.into_inner();
        let named = analyze(Reader::new(&file[..]).unwrap(), Some(60990)).unwrap();
        assert_eq!(named.connections.len(), 1);
        let c = &named.connections[0];
        assert_eq!(
            (c.client.as_str(), c.server.as_str()),
            ("127.0.0.1:51514", "127.0.0.1:60990")
        );
        assert_eq!((c.packets_to_server, c.packets_to_client), (1, 1));
        // Without --port, the higher port is taken as the client's, as before.
        let guessed = analyze(Reader::new(&file[..]).unwrap(), None).unwrap();
        assert_eq!(guessed.connections[0].server, "127.0.0.1:51514");
    }

    #[test]
    fn http_names_the_server_of_a_connection_joined_without_its_handshake() {
        // As above, without --port: the first payload, a request from the lower port,
        // says who the client is. Before 2026-11-24 this read as 0 requests and 0
        // responses from a client on port 60990.
        let (push, ack) = (0x18, 0x10);
        let (client, server) = (([127, 0, 0, 1], 51514), ([127, 0, 0, 1], 60990));
        let with = |mut f: Vec<u8>, payload: &[u8]| {
            f.extend_from_slice(payload);
            let total = f.len() as u16;
            f[2..4].copy_from_slice(&total.to_be_bytes());
            f
        };
        let (request, response) = (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
        );
        let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 101, 65535, "").unwrap();
        let frames = [
            tcp_frame(server, client, 500, 100, ack),
            with(tcp_frame(client, server, 100, 500, push), request),
            with(tcp_frame(server, client, 500, 127, push), response),
            tcp_frame(client, server, 127, 540, ack),
        ];
        for (t, frame) in frames.iter().enumerate() {
            w.write(t as u64 * 1_000, frame.len() as u32, frame)
                .unwrap();
        }
        let file = w.into_inner();
        let a = analyze(Reader::new(&file[..]).unwrap(), None).unwrap();
        let c = &a.connections[0];
        assert_eq!(
            (c.client.as_str(), c.server.as_str()),
            ("127.0.0.1:51514", "127.0.0.1:60990")
        );
        assert_eq!((c.requests, c.responses, c.close), (1, 1, "normal"));
        assert_eq!((c.bytes_to_server, c.bytes_to_client), (27, 40));
        assert_eq!((c.packets_to_server, c.packets_to_client), (2, 2));
    }
}
