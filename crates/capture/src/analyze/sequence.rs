//! One direction's sequence space as seen at the capture point: which part of a segment is
//! new and which was seen before (a retransmission), and its payload handed on in sequence
//! order. A segment that arrives ahead of a hole (the one before it lost upstream of the
//! capture point, or reordered) is held, with its captured bytes, until the hole is filled;
//! the segment that fills it brings new bytes, counted once, and is a retransmission
//! (as tshark's `tcp.analysis.retransmission` takes it): its sender sent it after the
//! segments beyond it. A hole that is never filled stops
//! holding at [`HELD_SEGMENTS_MAX`] segments or [`HELD_BYTES_MAX`] bytes: the hole is then
//! skipped (its bytes were never captured) and the stream goes on after it. Allocates only
//! for segments held ahead of a hole.

use crate::packet::{TcpSegment, TCP_FIN, TCP_RST, TCP_SYN};

/// At most this many segments are held ahead of one hole.
pub const HELD_SEGMENTS_MAX: usize = 4096;
/// At most this many captured payload bytes are held ahead of one hole.
pub const HELD_BYTES_MAX: usize = 8 << 20;
/// A segment further ahead than this is taken as a jump (new sequence space), not a hole.
const AHEAD_MAX: i64 = 1 << 30;

/// What one segment added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Payload bytes never seen before.
    pub new_bytes: u32,
    /// Payload bytes seen before.
    pub seen_bytes: u32,
    /// The segment resent sequence space already seen (SYN and FIN included), or filled
    /// a hole below the highest sequence number seen.
    pub retransmission: bool,
    /// The FIN was reached in sequence order (by this segment or one held before).
    pub fin_delivered: bool,
}

/// The sequence space of one direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sequence {
    /// Everything before this was seen (the in-order edge); `None` before the first segment.
    next: Option<u32>,
    /// The highest sequence number seen, plus one.
    high: u32,
    /// Segments seen ahead of a hole, sorted by start (they may overlap).
    held: Vec<Held>,
    held_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    /// Sequence space `[start, end)`, SYN and FIN included.
    start: u32,
    end: u32,
    /// The first payload byte's sequence number, and the payload's length as sent.
    payload_seq: u32,
    payload_len: u32,
    fin: bool,
    /// The captured payload (shorter than `payload_len` when cut by the snap length, or
    /// empty once [`HELD_BYTES_MAX`] is reached).
    data: Vec<u8>,
}

impl Sequence {
    /// Account for one segment; `deliver(captured, length_as_sent)` receives payload in
    /// sequence order, each byte once.
    pub fn track(&mut self, seg: &TcpSegment<'_>, deliver: &mut dyn FnMut(&[u8], u32)) -> Outcome {
        let syn = (seg.flags & TCP_SYN != 0) as u32;
        let fin = seg.flags & TCP_FIN != 0;
        let length = seg.payload_len + syn + fin as u32;
        if length == 0 {
            self.note_sent_up_to(seg);
            return Outcome::default();
        }
        let (start, payload_seq) = (seg.seq, seg.seq.wrapping_add(syn));
        let end = start.wrapping_add(length);
        let next = match self.next {
            Some(next) if rel(next, start) < AHEAD_MAX => next,
            _ => {
                // The first segment, or a jump far ahead: all of it is new.
                (self.next, self.high, self.held_bytes) = (Some(start), start, 0);
                self.held.clear();
                start
            }
        };
        let keepalive = seg.payload_len <= 1 && syn == 0 && !fin && start == next.wrapping_sub(1);
        if keepalive {
            return Outcome::default();
        }
        let seen_bytes = self.seen(payload_seq, payload_seq.wrapping_add(seg.payload_len));
        let mut outcome = Outcome {
            new_bytes: seg.payload_len - seen_bytes,
            seen_bytes,
            retransmission: self.seen(start, end) > 0 || rel(self.high, start) < 0,
            fin_delivered: false,
        };
        if rel(self.high, end) > 0 {
            self.high = end;
        }
        if rel(next, end) <= 0 {
            return outcome;
        }
        if rel(next, start) <= 0 {
            let piece = Piece {
                end,
                payload_seq,
                payload_len: seg.payload_len,
                fin,
                data: seg.payload,
            };
            outcome.fin_delivered = self.advance(&piece, deliver);
            outcome.fin_delivered |= self.drain(deliver);
        } else {
            self.hold(start, end, payload_seq, seg, fin);
            if self.held.len() > HELD_SEGMENTS_MAX || self.held_bytes > HELD_BYTES_MAX {
                outcome.fin_delivered = self.skip_hole(deliver);
            }
        }
        outcome
    }

    /// A segment with no sequence space (a pure ACK) still says its sender had sent
    /// everything before its sequence number: that is the highest seen when it is ahead,
    /// so data below it that arrives later fills a hole (its first copy reordered or lost
    /// before the capture point), as tshark counts it. A reset's number proves nothing.
    fn note_sent_up_to(&mut self, seg: &TcpSegment<'_>) {
        let Some(next) = self.next else { return };
        let ahead = rel(next, seg.seq);
        if seg.flags & TCP_RST == 0
            && (0..AHEAD_MAX).contains(&ahead)
            && rel(self.high, seg.seq) > 0
        {
            self.high = seg.seq;
        }
    }

    /// How many of `[from, to)` were seen: before the edge, or in a held segment.
    fn seen(&self, from: u32, to: u32) -> u32 {
        let Some(next) = self.next else { return 0 };
        let (a, b) = (rel(next, from), rel(next, to));
        if b <= a {
            return 0;
        }
        let mut count = (b.min(0) - a).max(0);
        let mut at = a.max(0);
        for h in &self.held {
            let (s, e) = (rel(next, h.start).max(at), rel(next, h.end).min(b));
            if e > s {
                count += e - s;
                at = e;
            }
        }
        count as u32
    }

    fn hold(&mut self, start: u32, end: u32, payload_seq: u32, seg: &TcpSegment<'_>, fin: bool) {
        let next = self.next.unwrap_or(start);
        let keep = self.held_bytes + seg.payload.len() <= HELD_BYTES_MAX;
        let data = if keep {
            seg.payload.to_vec()
        } else {
            Vec::new()
        };
        self.held_bytes += data.len();
        let at = self
            .held
            .partition_point(|h| rel(next, h.start) <= rel(next, start));
        let held = Held {
            start,
            end,
            payload_seq,
            payload_len: seg.payload_len,
            fin,
            data,
        };
        self.held.insert(at, held);
    }

    /// Move the edge over a piece that starts at or before it; true when its FIN was reached.
    fn advance(&mut self, piece: &Piece<'_>, deliver: &mut dyn FnMut(&[u8], u32)) -> bool {
        let Some(next) = self.next else { return false };
        match piece.pass(next, deliver) {
            Some(end) => {
                self.next = Some(end);
                piece.fin
            }
            None => false,
        }
    }

    /// Hand on the held segments the edge has reached.
    fn drain(&mut self, deliver: &mut dyn FnMut(&[u8], u32)) -> bool {
        let (mut fin, mut taken) = (false, 0);
        while let (Some(next), Some(h)) = (self.next, self.held.get(taken)) {
            if rel(next, h.start) > 0 {
                break;
            }
            let piece = Piece {
                end: h.end,
                payload_seq: h.payload_seq,
                payload_len: h.payload_len,
                fin: h.fin,
                data: &h.data,
            };
            if let Some(end) = piece.pass(next, deliver) {
                self.next = Some(end);
                fin |= piece.fin;
            }
            self.held_bytes -= h.data.len();
            taken += 1;
        }
        self.held.drain(..taken);
        fin
    }

    /// Give up on the hole before the first held segment: its bytes were never captured.
    /// The parser is told their length (with no bytes), then the held segments follow.
    fn skip_hole(&mut self, deliver: &mut dyn FnMut(&[u8], u32)) -> bool {
        let (Some(next), Some(first)) = (self.next, self.held.first()) else {
            return false;
        };
        let gap = rel(next, first.payload_seq).max(0) as u32;
        if gap > 0 {
            deliver(&[], gap);
        }
        self.next = Some(first.start);
        self.drain(deliver)
    }
}

/// A segment's sequence space and payload, held or just arrived.
struct Piece<'a> {
    end: u32,
    payload_seq: u32,
    payload_len: u32,
    fin: bool,
    data: &'a [u8],
}

impl Piece<'_> {
    /// Hand on the payload from `next` on; the new edge, or `None` when the piece ends
    /// before it.
    fn pass(&self, next: u32, deliver: &mut dyn FnMut(&[u8], u32)) -> Option<u32> {
        if rel(next, self.end) <= 0 {
            return None;
        }
        let skip = rel(self.payload_seq, next).clamp(0, self.payload_len as i64) as u32;
        if skip < self.payload_len {
            deliver(
                self.data.get(skip as usize..).unwrap_or(&[]),
                self.payload_len - skip,
            );
        }
        Some(self.end)
    }
}

/// `seq` relative to `base`, in sequence-number arithmetic (RFC 1982): negative before it.
fn rel(base: u32, seq: u32) -> i64 {
    seq.wrapping_sub(base) as i32 as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::TCP_ACK;

    fn seg(seq: u32, flags: u8, payload: &[u8]) -> TcpSegment<'_> {
        TcpSegment {
            src_port: 0,
            dst_port: 0,
            seq,
            ack: 0,
            flags,
            window: 0,
            payload_len: payload.len() as u32,
            payload,
        }
    }

    fn feed(s: &mut Sequence, out: &mut Vec<u8>, seq: u32, flags: u8, payload: &[u8]) -> Outcome {
        s.track(&seg(seq, flags, payload), &mut |d, _| {
            out.extend_from_slice(d)
        })
    }

    #[test]
    fn a_segment_that_fills_a_hole_brings_new_bytes_and_the_stream_stays_in_order() {
        let (mut s, mut out) = (Sequence::default(), Vec::new());
        feed(&mut s, &mut out, 99, TCP_SYN, b"");
        feed(&mut s, &mut out, 100, TCP_ACK, b"abc");
        let ahead = feed(&mut s, &mut out, 106, TCP_ACK | TCP_FIN, b"ghi");
        assert_eq!((ahead.new_bytes, ahead.retransmission), (3, false));
        assert_eq!(s.seen(100, 109), 6, "abc, then ghi");
        assert!(!ahead.fin_delivered, "the FIN waits for the hole");
        assert_eq!(out, b"abc");
        let fill = feed(&mut s, &mut out, 103, TCP_ACK, b"def");
        assert_eq!(
            fill,
            Outcome {
                new_bytes: 3,
                seen_bytes: 0,
                retransmission: true,
                fin_delivered: true
            }
        );
        assert_eq!(out, b"abcdefghi");
        let again = feed(&mut s, &mut out, 103, TCP_ACK, b"def");
        assert_eq!(
            (again.new_bytes, again.seen_bytes, again.retransmission),
            (0, 3, true)
        );
        assert_eq!(out, b"abcdefghi");
    }

    #[test]
    fn a_resend_that_covers_a_hole_and_held_bytes_counts_only_the_hole() {
        let (mut s, mut out) = (Sequence::default(), Vec::new());
        feed(&mut s, &mut out, 0, TCP_ACK, b"ab");
        feed(&mut s, &mut out, 4, TCP_ACK, b"ef");
        let o = feed(&mut s, &mut out, 2, TCP_ACK, b"cdefgh");
        assert_eq!((o.new_bytes, o.seen_bytes, o.retransmission), (4, 2, true));
        assert_eq!(out, b"abcdefgh");
    }

    /// A pure ACK numbered ahead of the edge (its data reordered or lost before the
    /// capture point) makes the data below it that comes later a resend, as tshark's
    /// `tcp.analysis.retransmission` / `out_of_order` count it: before, pure ACKs were
    /// passed over and such segments counted as sent once. A reset's number does not.
    #[test]
    fn data_below_a_pure_acks_number_fills_a_hole() {
        let (mut s, mut out) = (Sequence::default(), Vec::new());
        feed(&mut s, &mut out, 0, TCP_ACK, b"ab");
        assert_eq!(feed(&mut s, &mut out, 6, TCP_ACK, b""), Outcome::default());
        let late = feed(&mut s, &mut out, 2, TCP_ACK, b"cdef");
        assert_eq!((late.new_bytes, late.retransmission), (4, true));
        let next = feed(&mut s, &mut out, 6, TCP_ACK, b"gh");
        assert_eq!((next.new_bytes, next.retransmission), (2, false));
        assert_eq!(out, b"abcdefgh");
        let fin = feed(&mut s, &mut out, 9, TCP_ACK, b"");
        assert_eq!(fin, Outcome::default());
        let late_fin = feed(&mut s, &mut out, 8, TCP_ACK | TCP_FIN, b"");
        assert!(late_fin.retransmission && late_fin.fin_delivered);

        let (mut s, mut out) = (Sequence::default(), Vec::new());
        feed(&mut s, &mut out, 0, TCP_ACK, b"ab");
        feed(&mut s, &mut out, 100, crate::packet::TCP_RST, b"");
        let o = feed(&mut s, &mut out, 2, TCP_ACK, b"cd");
        assert_eq!((o.new_bytes, o.retransmission), (2, false));
    }

    #[test]
    fn a_hole_never_filled_is_skipped_after_the_limit() {
        let (mut s, mut out) = (Sequence::default(), Vec::new());
        feed(&mut s, &mut out, 0, TCP_ACK, b"a");
        let mut lengths = Vec::new();
        for i in 0..=HELD_SEGMENTS_MAX as u32 {
            s.track(&seg(2 + i, TCP_ACK, b"x"), &mut |_, n| lengths.push(n));
        }
        assert_eq!(s.held.len(), 0);
        assert_eq!(
            lengths.len(),
            HELD_SEGMENTS_MAX + 2,
            "the gap, then every segment"
        );
        assert_eq!(lengths[0], 1);
        let o = feed(&mut s, &mut out, 1, TCP_ACK, b"z");
        assert!(o.retransmission, "behind the edge once skipped");
    }

    #[test]
    fn sequence_numbers_wrap() {
        let (mut s, mut out) = (Sequence::default(), Vec::new());
        feed(&mut s, &mut out, u32::MAX - 1, TCP_ACK, b"ab");
        feed(&mut s, &mut out, 2, TCP_ACK, b"ef");
        let o = feed(&mut s, &mut out, 0, TCP_ACK, b"cd");
        assert_eq!((o.new_bytes, o.retransmission), (2, true));
        assert_eq!(out, b"abcdef");
        let o = feed(&mut s, &mut out, 4, TCP_ACK, b"gh");
        assert_eq!(
            (o.new_bytes, o.retransmission),
            (2, false),
            "in order after the wrap"
        );
    }
}
