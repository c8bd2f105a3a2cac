//! Request bodies read from bytes, with no I/O: a decoder for `Content-Length` and
//! `chunked` framing that takes whatever input has arrived, hands the body's data to a
//! sink, and says how much input it used and whether the body is complete.

/// Longest chunk-size line or trailer line accepted.
const MAX_LINE: usize = 4096;

/// Where a decoder stands in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyDecoder {
    /// `Content-Length` framing: this many bytes still to come.
    Length(u64),
    /// Chunked: expecting a chunk-size line.
    ChunkSize,
    /// Chunked: this many bytes of chunk data still to come.
    ChunkData(u64),
    /// Chunked: expecting the CRLF after chunk data.
    ChunkEnd,
    /// Chunked: reading trailer lines up to the empty line.
    Trailer,
    /// The whole body has been read.
    Done,
}

/// The body's framing is broken: answered with 400 and the connection closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyError(pub &'static str);

impl BodyDecoder {
    pub fn chunked() -> Self {
        BodyDecoder::ChunkSize
    }

    pub fn length(n: u64) -> Self {
        if n == 0 {
            BodyDecoder::Done
        } else {
            BodyDecoder::Length(n)
        }
    }

    pub fn is_done(&self) -> bool {
        *self == BodyDecoder::Done
    }

    /// Use as much of `input` as possible, passing body data to `sink`; returns the number
    /// of input bytes used. Stops early only when done or when more input is needed.
    pub fn feed(&mut self, input: &[u8], sink: &mut impl FnMut(&[u8])) -> Result<usize, BodyError> {
        let mut used = 0;
        while !self.is_done() {
            let step = self.step(&input[used..], sink)?;
            if step == 0 {
                break;
            }
            used += step;
        }
        Ok(used)
    }

    /// One transition; 0 means nothing could be done with `input`.
    fn step(&mut self, input: &[u8], sink: &mut impl FnMut(&[u8])) -> Result<usize, BodyError> {
        match *self {
            BodyDecoder::Length(left) | BodyDecoder::ChunkData(left) => {
                let n = (input.len() as u64).min(left) as usize;
                sink(&input[..n]);
                *self = match (*self, left - n as u64) {
                    (BodyDecoder::Length(_), 0) => BodyDecoder::Done,
                    (BodyDecoder::Length(_), rest) => BodyDecoder::Length(rest),
                    (_, 0) => BodyDecoder::ChunkEnd,
                    (_, rest) => BodyDecoder::ChunkData(rest),
                };
                Ok(n)
            }
            BodyDecoder::ChunkSize => self.chunk_size(input),
            BodyDecoder::ChunkEnd => match input {
                [b'\r', b'\n', ..] => {
                    *self = BodyDecoder::ChunkSize;
                    Ok(2)
                }
                [] | [b'\r'] => Ok(0),
                _ => Err(BodyError("chunk data not followed by CRLF")),
            },
            BodyDecoder::Trailer => self.trailer_line(input),
            BodyDecoder::Done => Ok(0),
        }
    }

    fn chunk_size(&mut self, input: &[u8]) -> Result<usize, BodyError> {
        match httparse::parse_chunk_size(input) {
            Ok(httparse::Status::Complete((used, 0))) => {
                *self = BodyDecoder::Trailer;
                Ok(used)
            }
            Ok(httparse::Status::Complete((used, size))) => {
                *self = BodyDecoder::ChunkData(size);
                Ok(used)
            }
            Ok(httparse::Status::Partial) if input.len() > MAX_LINE => {
                Err(BodyError("chunk-size line too long"))
            }
            Ok(httparse::Status::Partial) => Ok(0),
            Err(_) => Err(BodyError("invalid chunk-size line")),
        }
    }

    /// Trailer fields are read and ignored; the empty line ends the body.
    fn trailer_line(&mut self, input: &[u8]) -> Result<usize, BodyError> {
        match input.windows(2).position(|w| w == b"\r\n") {
            Some(0) => {
                *self = BodyDecoder::Done;
                Ok(2)
            }
            Some(end) => Ok(end + 2),
            None if input.len() > MAX_LINE => Err(BodyError("trailer line too long")),
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `input` in pieces of `piece` bytes, as a socket might deliver it.
    fn decode(
        mut decoder: BodyDecoder,
        input: &[u8],
        piece: usize,
    ) -> Result<(Vec<u8>, usize), BodyError> {
        let mut body = Vec::new();
        let mut pending = Vec::new();
        let mut used_total = 0;
        for part in input.chunks(piece) {
            pending.extend_from_slice(part);
            let used = decoder.feed(&pending, &mut |d| body.extend_from_slice(d))?;
            pending.drain(..used);
            used_total += used;
            if decoder.is_done() {
                break;
            }
        }
        assert!(decoder.is_done(), "body incomplete");
        Ok((body, used_total))
    }

    #[test]
    fn length_takes_exactly_n_bytes() {
        let (body, used) = decode(BodyDecoder::length(5), b"hello GET / HTTP/1.1", 3).unwrap();
        assert_eq!(body, b"hello");
        assert_eq!(used, 5);
        assert!(BodyDecoder::length(0).is_done());
    }

    #[test]
    fn chunked_in_any_pieces() {
        let input = b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
        for piece in [1, 2, 3, 7, 100] {
            let (body, used) = decode(BodyDecoder::chunked(), input, piece).unwrap();
            assert_eq!(body, b"hello, world", "piece {piece}");
            assert_eq!(used, input.len() - 4, "piece {piece}");
        }
    }

    /// xorshift64: a seeded stream of numbers for the round-trip test.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn random_chunkings_round_trip() {
        for seed in 1..=300u64 {
            let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let body: Vec<u8> = (0..next(&mut rng) % 3000)
                .map(|_| next(&mut rng) as u8)
                .collect();
            let mut encoded = Vec::new();
            let mut rest = &body[..];
            while !rest.is_empty() {
                let n = (1 + next(&mut rng) % 700).min(rest.len() as u64) as usize;
                let ext = if next(&mut rng) & 3 == 0 { ";a=b" } else { "" };
                encoded.extend_from_slice(format!("{n:x}{ext}\r\n").as_bytes());
                encoded.extend_from_slice(&rest[..n]);
                encoded.extend_from_slice(b"\r\n");
                rest = &rest[n..];
            }
            encoded.extend_from_slice(b"0\r\n\r\n");
            let piece = 1 + (next(&mut rng) % 64) as usize;
            let (decoded, used) = decode(BodyDecoder::chunked(), &encoded, piece).unwrap();
            assert_eq!(decoded, body, "seed {seed}");
            assert_eq!(used, encoded.len(), "seed {seed}");
        }
    }

    #[test]
    fn broken_chunks_are_errors() {
        assert!(decode(BodyDecoder::chunked(), b"zz\r\n", 10).is_err());
        assert!(decode(BodyDecoder::chunked(), b"2\r\nabX\r\n0\r\n\r\n", 10).is_err());
        let long = vec![b'1'; MAX_LINE + 2];
        assert!(decode(BodyDecoder::chunked(), &long, MAX_LINE + 2).is_err());
    }
}
