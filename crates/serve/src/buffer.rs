//! The input buffer of one connection: bytes read from the socket and not yet parsed,
//! growing from 4 KiB up to a fixed bound, reused without zeroing between reads.

/// First allocation for a connection's input.
const INITIAL: usize = 4 * 1024;
/// The most unparsed input a connection holds; beyond it the server stops reading
/// (TCP flow control then slows the client down).
pub const MAX_INPUT: usize = 64 * 1024;

/// Bytes `data[start..end]` are read and not yet consumed.
#[derive(Debug, Default)]
pub struct InputBuffer {
    data: Vec<u8>,
    start: usize,
    end: usize,
}

impl InputBuffer {
    /// The bytes read and not yet consumed.
    pub fn unread(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Mark the first `n` unread bytes as used.
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.clear();
        }
    }

    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Room to read into: compacts or grows as needed; `None` when [`MAX_INPUT`] bytes
    /// are already waiting.
    pub fn space(&mut self) -> Option<&mut [u8]> {
        if self.end == self.data.len() {
            if self.start > 0 {
                self.data.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.data.len() < MAX_INPUT {
                let size = (self.data.len() * 2).clamp(INITIAL, MAX_INPUT);
                self.data.resize(size, 0);
            } else {
                return None;
            }
        }
        Some(&mut self.data[self.end..])
    }

    /// Record that `n` bytes were read into the slice [`space`](Self::space) gave.
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.data.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(buf: &mut InputBuffer, bytes: &[u8]) -> usize {
        let space = buf.space().expect("room");
        let n = bytes.len().min(space.len());
        space[..n].copy_from_slice(&bytes[..n]);
        buf.filled(n);
        n
    }

    #[test]
    fn read_consume_compact() {
        let mut buf = InputBuffer::default();
        assert_eq!(put(&mut buf, b"hello world"), 11);
        buf.consume(6);
        assert_eq!(buf.unread(), b"world");
        put(&mut buf, b"!");
        assert_eq!(buf.unread(), b"world!");
        buf.consume(6);
        assert!(buf.is_empty());
    }

    #[test]
    fn grows_to_the_bound_then_refuses() {
        let mut buf = InputBuffer::default();
        let chunk = vec![b'x'; 1000];
        let mut total = 0;
        while buf.space().is_some() {
            total += put(&mut buf, &chunk);
        }
        assert_eq!(total, MAX_INPUT);
        buf.consume(10);
        assert_eq!(put(&mut buf, &chunk), 10);
        assert_eq!(buf.unread().len(), MAX_INPUT);
    }
}
