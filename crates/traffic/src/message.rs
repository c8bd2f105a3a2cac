//! The bytes at the front of every message a sender emits, so the sink can tell flows apart,
//! count losses and measure one-way delay. Layout (big-endian, 28 bytes, the rest of the
//! message is zero padding up to its size):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `DBT1` |
//! | 4 | 4 | flow id |
//! | 8 | 4 | sequence number (0, 1, 2, ... per flow) |
//! | 12 | 4 | message length in bytes, header included (TCP framing) |
//! | 16 | 8 | send time, CLOCK_MONOTONIC ns (sender and sink share the clock on one machine) |
//! | 24 | 4 | flags: bit 0 = TCP; bits 8–31 = run id (one per `traffic send` run) |
//!
//! Parsing is pure and checked: untrusted bytes give `None`, never a panic.

use crate::rate::Proto;

pub const MAGIC: [u8; 4] = *b"DBT1";
pub const HEADER_LEN: usize = 28;
/// Where the send time sits in the header (a sender may rewrite it when the kernel takes
/// the message).
pub const SENT_AT: usize = 16;
/// The smallest message size a flow may use: the header itself.
pub const MIN_SIZE: u64 = HEADER_LEN as u64;
/// The largest: what one UDP datagram can carry over IPv6 without jumbograms.
pub const MAX_SIZE: u64 = 65_487;
/// The largest TCP message (MGEN allows multi-megabyte TCP messages; a TCP sink buffers
/// one whole, so this also bounds what a foreign length can make it hold).
pub const MAX_TCP_SIZE: u64 = 16 << 20;
/// Run ids are 24 bits (the flags word's bits 8–31).
pub const RUN_MASK: u32 = 0x00FF_FFFF;

/// One message's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub flow: u32,
    pub seq: u32,
    pub len: u32,
    pub sent_ns: u64,
    pub proto: Proto,
    /// Which `traffic send` run sent it (24 bits), so a sink tells runs apart.
    pub run: u32,
}

impl Header {
    /// Write the header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4..8].copy_from_slice(&self.flow.to_be_bytes());
        buf[8..12].copy_from_slice(&self.seq.to_be_bytes());
        buf[12..16].copy_from_slice(&self.len.to_be_bytes());
        buf[SENT_AT..SENT_AT + 8].copy_from_slice(&self.sent_ns.to_be_bytes());
        let tcp: u32 = if self.proto == Proto::Tcp { 1 } else { 0 };
        let flags = tcp | (self.run & RUN_MASK) << 8;
        buf[24..28].copy_from_slice(&flags.to_be_bytes());
    }

    /// Read a header; `None` when the bytes are too short, the magic is wrong or the
    /// length is outside [`MIN_SIZE`]..=[`MAX_SIZE`] ([`MAX_TCP_SIZE`] for a TCP message:
    /// a TCP sink buffers a message whole, so a foreign length must not make it buffer
    /// gigabytes).
    pub fn parse(buf: &[u8]) -> Option<Header> {
        if buf.len() < HEADER_LEN || buf[0..4] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let mut sent = [0u8; 8];
        sent.copy_from_slice(&buf[SENT_AT..SENT_AT + 8]);
        let len = u32_at(12);
        let flags = u32_at(24);
        let (proto, max) = if flags & 1 == 1 {
            (Proto::Tcp, MAX_TCP_SIZE)
        } else {
            (Proto::Udp, MAX_SIZE)
        };
        if !(MIN_SIZE..=max).contains(&u64::from(len)) {
            return None;
        }
        Some(Header {
            flow: u32_at(4),
            seq: u32_at(8),
            len,
            sent_ns: u64::from_be_bytes(sent),
            proto,
            run: flags >> 8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_fixed_bytes() {
        let h = Header {
            flow: 7,
            seq: 258,
            len: 100,
            sent_ns: 0x0102_0304_0506_0708,
            proto: Proto::Tcp,
            run: 0x0A_0B0C,
        };
        let mut buf = [0u8; 28];
        h.emit(&mut buf);
        assert_eq!(
            buf,
            [
                b'D', b'B', b'T', b'1', 0, 0, 0, 7, 0, 0, 1, 2, 0, 0, 0, 100, 1, 2, 3, 4, 5, 6, 7,
                8, 0x0A, 0x0B, 0x0C, 1
            ]
        );
        assert_eq!(Header::parse(&buf), Some(h));
    }

    #[test]
    fn rejects_short_foreign_and_bad_length() {
        let mut buf = [0u8; 28];
        Header {
            flow: 1,
            seq: 0,
            len: 28,
            sent_ns: 0,
            proto: Proto::Udp,
            run: 0,
        }
        .emit(&mut buf);
        assert!(Header::parse(&buf[..27]).is_none());
        let mut foreign = buf;
        foreign[0] = b'X';
        assert!(Header::parse(&foreign).is_none());
        let mut short_len = buf;
        short_len[15] = 27;
        assert!(Header::parse(&short_len).is_none());
        let mut huge_len = buf;
        huge_len[12..16].copy_from_slice(&(MAX_SIZE as u32 + 1).to_be_bytes());
        assert!(Header::parse(&huge_len).is_none());
        let mut largest = buf;
        largest[12..16].copy_from_slice(&(MAX_SIZE as u32).to_be_bytes());
        assert_eq!(
            Header::parse(&largest).map(|h| h.len),
            Some(MAX_SIZE as u32)
        );
    }

    /// Scripts allow TCP messages up to 16 MiB; the sink once took every header longer
    /// than a UDP datagram for foreign bytes and reset the connection.
    #[test]
    fn tcp_lengths_go_up_to_the_tcp_limit_udp_ones_do_not() {
        let header = |proto, len: u64| {
            let mut buf = [0u8; 28];
            Header {
                flow: 1,
                seq: 0,
                len: len as u32,
                sent_ns: 0,
                proto,
                run: 0,
            }
            .emit(&mut buf);
            Header::parse(&buf).map(|h| (h.proto, u64::from(h.len)))
        };
        for len in [MAX_SIZE + 1, 100_000, MAX_TCP_SIZE] {
            assert_eq!(header(Proto::Tcp, len), Some((Proto::Tcp, len)));
            assert_eq!(header(Proto::Udp, len), None);
        }
        assert_eq!(header(Proto::Tcp, MAX_TCP_SIZE + 1), None);
    }
}
