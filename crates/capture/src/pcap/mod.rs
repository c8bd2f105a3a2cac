//! Capture files: writing pcap (nanosecond timestamps) or pcapng, and reading pcap
//! (microsecond or nanosecond, either byte order) and pcapng (any number of interfaces,
//! any timestamp resolution) — the formats tshark, tcpdump and Wireshark write and read.

mod read;
mod write;

pub use read::{Position, ReadError, Reader, Record};
pub use write::{FileFormat, Writer};

pub(crate) const PCAP_MAGIC_US: u32 = 0xa1b2_c3d4;
pub(crate) const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
pub(crate) const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
pub(crate) const PCAPNG_BYTE_ORDER: u32 = 0x1a2b_3c4d;
pub(crate) const PCAPNG_IDB: u32 = 1;
pub(crate) const PCAPNG_SPB: u32 = 3;
pub(crate) const PCAPNG_EPB: u32 = 6;

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(format: FileFormat) {
        let mut file = Vec::new();
        {
            let mut w = Writer::new(&mut file, format, 1, 65535, "test").unwrap();
            w.write(1_700_000_000_123_456_789, 60, &[0xaa; 14]).unwrap();
            w.write(1_700_000_001_000_000_001, 1514, &[0xbb; 7])
                .unwrap();
        }
        let mut r = Reader::new(&file[..]).unwrap();
        let a = r.next_record().unwrap().unwrap();
        assert_eq!(
            (a.ts_ns, a.orig_len, a.link_type, a.data),
            (1_700_000_000_123_456_789, 60, 1, &[0xaa; 14][..])
        );
        let b = r.next_record().unwrap().unwrap();
        assert_eq!(
            (b.ts_ns, b.orig_len, b.data.len()),
            (1_700_000_001_000_000_001, 1514, 7)
        );
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn pcap_nanosecond_roundtrip() {
        roundtrip(FileFormat::Pcap);
    }

    #[test]
    fn pcapng_roundtrip() {
        roundtrip(FileFormat::Pcapng);
    }

    /// pcapng names its interface (`if_name`, option 2) when told it, before `if_tsresol`,
    /// which is still read: nanosecond times come back whole.
    #[test]
    fn pcapng_names_the_interface() {
        let mut w =
            Writer::for_interface(Vec::new(), FileFormat::Pcapng, 1, 65535, "", "veth0").unwrap();
        w.write(1_700_000_000_123_456_789, 60, &[0xaa; 14]).unwrap();
        let file = w.into_inner();
        let name = [2, 0, 5, 0, b'v', b'e', b't', b'h', b'0', 0, 0, 0];
        assert!(file.windows(name.len()).any(|o| o == name), "{file:?}");
        let mut r = Reader::new(&file[..]).unwrap();
        assert_eq!(
            r.next_record().unwrap().unwrap().ts_ns,
            1_700_000_000_123_456_789
        );
        let mut unnamed = Writer::new(Vec::new(), FileFormat::Pcapng, 1, 65535, "").unwrap();
        unnamed
            .write(1_700_000_000_123_456_789, 60, &[0xaa; 14])
            .unwrap();
        assert_eq!(unnamed.into_inner().len() + name.len(), file.len());
    }

    /// Simple packet blocks hold as much of the packet as their interface's snap length
    /// allows, and a snap length of 0 is no limit (pcapng): before, it kept 1 byte.
    #[test]
    fn simple_packet_blocks_with_and_without_a_snap_length() {
        for (snaplen, kept) in [(0u32, 60usize), (32, 32), (65535, 60)] {
            let mut file = Vec::new();
            let block = |file: &mut Vec<u8>, kind: u32, body: &[u8]| {
                let total = (12 + body.len()) as u32;
                file.extend(kind.to_le_bytes());
                file.extend(total.to_le_bytes());
                file.extend(body);
                file.extend(total.to_le_bytes());
            };
            let mut shb = PCAPNG_BYTE_ORDER.to_le_bytes().to_vec();
            shb.extend([1, 0, 0, 0]);
            shb.extend(u64::MAX.to_le_bytes());
            block(&mut file, PCAPNG_SHB, &shb);
            let mut idb = 1u32.to_le_bytes().to_vec();
            idb.extend(snaplen.to_le_bytes());
            block(&mut file, PCAPNG_IDB, &idb);
            let mut spb = 60u32.to_le_bytes().to_vec();
            spb.extend([9u8; 60]);
            block(&mut file, PCAPNG_SPB, &spb);
            let mut r = Reader::new(&file[..]).unwrap();
            let rec = r.next_record().unwrap().unwrap();
            assert_eq!(
                (rec.orig_len, rec.data.len()),
                (60, kept),
                "snaplen {snaplen}"
            );
            assert!(r.next_record().unwrap().is_none());
        }
    }

    #[test]
    fn microsecond_big_endian_pcap() {
        let mut f = Vec::new();
        f.extend(PCAP_MAGIC_US.to_be_bytes());
        f.extend([0, 2, 0, 4]);
        f.extend([0u8; 8]);
        f.extend(65535u32.to_be_bytes());
        f.extend(101u32.to_be_bytes());
        f.extend(10u32.to_be_bytes()); // 10 s
        f.extend(5u32.to_be_bytes()); // 5 µs
        f.extend(2u32.to_be_bytes());
        f.extend(40u32.to_be_bytes());
        f.extend([0x45, 0]);
        let mut r = Reader::new(&f[..]).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(
            (rec.ts_ns, rec.orig_len, rec.link_type, rec.data),
            (10_000_005_000, 40, 101, &[0x45, 0][..])
        );
    }

    /// A corrupt record after good ones — an impossible captured length in pcap, a packet
    /// for an undeclared interface in pcapng — gives the records before it, then `Corrupt`
    /// with the record's offset and the number of packets read.
    #[test]
    fn corrupt_record_after_good_ones() {
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            let mut w = Writer::new(Vec::new(), format, 1, 65535, "").unwrap();
            w.write(1, 60, &[1; 60]).unwrap();
            w.write(2, 60, &[2; 60]).unwrap();
            let mut file = w.into_inner();
            let at = file.len();
            let mut w = Writer::new(Vec::new(), format, 1, 65535, "").unwrap();
            let header = w.get_mut().len();
            w.write(3, 60, &[3; 60]).unwrap();
            let mut third = w.into_inner()[header..].to_vec();
            match format {
                // The captured length.
                FileFormat::Pcap => third[8..12].copy_from_slice(&u32::MAX.to_le_bytes()),
                // The interface id.
                FileFormat::Pcapng => third[8..12].copy_from_slice(&7u32.to_le_bytes()),
            }
            file.extend(&third);
            file.extend(&third); // and more after it, not read
            let mut r = Reader::new(&file[..]).unwrap();
            assert_eq!(r.next_record().unwrap().unwrap().data, &[1; 60][..]);
            assert_eq!(r.next_record().unwrap().unwrap().data, &[2; 60][..]);
            let e = r.next_record().unwrap_err();
            let want = match format {
                FileFormat::Pcap => "corrupt packet record (captured length 4294967295)",
                FileFormat::Pcapng => "packet for undeclared interface 7",
            };
            assert_eq!(e, ReadError::Corrupt(want.into()), "{format:?}");
            assert_eq!(
                r.position(),
                Position {
                    packets: 2,
                    offset: at as u64
                }
            );
        }
    }

    /// A pcap record longer than 262,144 bytes (Wireshark's limit, `--snaplen`'s largest)
    /// in a file whose snap length is not larger is corrupt, as tshark says ("File has
    /// 300000-byte packet, bigger than maximum of 262144"): before, any length up to 16 MiB
    /// was read as one packet, swallowing the records after it.
    #[test]
    fn pcap_captured_length_above_the_limit_is_corrupt() {
        let record = |caplen: u32| {
            let mut r = vec![0u8; 8];
            r.extend(caplen.to_le_bytes());
            r.extend(caplen.to_le_bytes());
            r.extend(vec![7u8; caplen as usize]);
            r
        };
        for (snaplen, caplen, corrupt) in [
            (65535, 262_144, false),
            (65535, 262_145, true),
            (262_144, 300_000, true),
            (1_000_000, 300_000, false),
        ] {
            let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 1, snaplen, "").unwrap();
            w.write(1, 60, &[1; 60]).unwrap();
            let mut file = w.into_inner();
            let at = file.len() as u64;
            file.extend(record(caplen));
            file.extend(record(60));
            let mut r = Reader::new(&file[..]).unwrap();
            assert_eq!(r.next_record().unwrap().unwrap().data, &[1; 60][..]);
            let second = r.next_record().map(|rec| rec.map(|rec| rec.data.len()));
            if corrupt {
                let want = format!("corrupt packet record (captured length {caplen})");
                assert_eq!(second, Err(ReadError::Corrupt(want)), "snaplen {snaplen}");
                assert_eq!(
                    r.position(),
                    Position {
                        packets: 1,
                        offset: at
                    }
                );
            } else {
                assert_eq!(second, Ok(Some(caplen as usize)), "snaplen {snaplen}");
                assert_eq!(r.next_record().unwrap().unwrap().data.len(), 60);
            }
        }
    }

    /// A pcapng packet block whose captured length does not fit in the block is corrupt,
    /// as tshark says ("total block length 92 of an EPB is too small for 460 bytes of
    /// packet data"); before, the length was cut to the block without a word.
    #[test]
    fn pcapng_captured_length_beyond_its_block_is_corrupt() {
        let mut w = Writer::new(Vec::new(), FileFormat::Pcapng, 1, 65535, "").unwrap();
        w.write(1, 60, &[1; 60]).unwrap();
        let mut file = w.into_inner();
        let at = file.len();
        let mut w = Writer::new(Vec::new(), FileFormat::Pcapng, 1, 65535, "").unwrap();
        let header = w.get_mut().len();
        w.write(2, 60, &[2; 60]).unwrap();
        let mut second = w.into_inner()[header..].to_vec();
        second[20..24].copy_from_slice(&460u32.to_le_bytes()); // captured length
        file.extend(&second);
        let mut r = Reader::new(&file[..]).unwrap();
        assert!(r.next_record().unwrap().is_some());
        assert_eq!(
            r.next_record().unwrap_err(),
            ReadError::Corrupt(
                "corrupt packet block (captured length 460 in a block of 92 bytes)".into()
            )
        );
        assert_eq!((r.position().packets, r.position().offset), (1, at as u64));
    }

    #[test]
    fn corrupt_pcapng_block_length() {
        let mut w = Writer::new(Vec::new(), FileFormat::Pcapng, 1, 65535, "").unwrap();
        w.write(1, 60, &[1; 60]).unwrap();
        let mut file = w.into_inner();
        let at = file.len();
        file.extend(PCAPNG_EPB.to_le_bytes());
        file.extend(13u32.to_le_bytes()); // not a multiple of 4
        file.extend([0u8; 40]);
        let mut r = Reader::new(&file[..]).unwrap();
        assert!(r.next_record().unwrap().is_some());
        let e = r.next_record().unwrap_err();
        assert_eq!(
            e,
            ReadError::Corrupt("corrupt pcapng block (length 13)".into())
        );
        assert_eq!((r.position().packets, r.position().offset), (1, at as u64));
    }

    /// A file cut anywhere inside its last record gives the whole records before it, then
    /// `Truncated` (not an error that loses them); a file that is no capture is `Bad`.
    #[test]
    fn truncated_last_record_and_bad_magic() {
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            let mut w = Writer::new(Vec::new(), format, 1, 65535, "").unwrap();
            w.write(1, 60, &[1; 60]).unwrap();
            let whole = w.into_inner().len();
            let mut w = Writer::new(Vec::new(), format, 1, 65535, "").unwrap();
            w.write(1, 60, &[1; 60]).unwrap();
            w.write(2, 60, &[2; 60]).unwrap();
            let two = w.into_inner();
            for cut in whole + 1..two.len() {
                let mut r = Reader::new(&two[..cut]).unwrap();
                assert_eq!(r.next_record().unwrap().unwrap().data, &[1; 60][..]);
                assert_eq!(
                    r.next_record().unwrap_err(),
                    ReadError::Truncated,
                    "{format:?} cut at {cut}"
                );
            }
        }
        let e = Reader::new(&b"not a capture file at all"[..])
            .err()
            .unwrap();
        assert!(matches!(&e, ReadError::Bad(m) if m.contains("not a pcap or pcapng file")));
    }
}
