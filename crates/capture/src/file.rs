//! The capture file on disk. Records (the file header, then one per packet) are buffered
//! whole and written out each time the ring has handed over what it holds — every few
//! tens of milliseconds while packets flow — so a capture killed outright leaves a file
//! readable up to just before the kill. When a write fails (a full disk), the file is cut
//! back to the end of its last whole record: it stays readable, and holds exactly the
//! packets [`CaptureFile::kept`] counts.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

/// Buffered bytes at which the buffer goes out without waiting for the ring's batch to end.
const WRITE_OUT_AT: usize = 1 << 20;

/// Where the bytes go: a file, or anything that can be cut back to a length.
pub trait Disk: Write {
    /// Make the output `len` bytes long and write on from there.
    fn cut(&mut self, len: u64) -> io::Result<()>;
}

impl Disk for File {
    fn cut(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)?;
        self.seek(SeekFrom::Start(len)).map(|_| ())
    }
}

/// Create (or empty) `path` for writing; `true` if the file did not exist before, so that
/// a capture that fails before it has written anything can remove it again. A FIFO is
/// written to when it has a reader (Wireshark on the other end), refused when not.
pub fn create(path: &Path) -> io::Result<(File, bool)> {
    dualbench_common::outfile::create(path)
}

/// Standard output, to write a capture to (tcpdump's `-w -`), as it is: a pipe, a file
/// opened for appending.
pub fn stdout() -> io::Result<File> {
    let out = std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?;
    Ok(File::from(out))
}

/// A capture file written in whole records.
pub struct CaptureFile<D: Disk = File> {
    disk: D,
    /// Bytes on disk, all of them whole records.
    on_disk: u64,
    buf: Vec<u8>,
    /// Where each whole record in `buf` ends, and the captured bytes of its packet (`None`
    /// for a file header).
    records: Vec<(usize, Option<u64>)>,
    /// Packets, and their captured bytes, on disk.
    packets: u64,
    bytes: u64,
}

impl<D: Disk> CaptureFile<D> {
    pub fn new(disk: D) -> Self {
        CaptureFile {
            disk,
            on_disk: 0,
            buf: Vec::with_capacity(WRITE_OUT_AT + 65536),
            records: Vec::new(),
            packets: 0,
            bytes: 0,
        }
    }

    /// The bytes written since the last call are one whole record: a packet of
    /// `packet_bytes` captured bytes, or (`None`) a file header. Writes the buffer out once
    /// it holds a megabyte.
    pub fn end_record(&mut self, packet_bytes: Option<u64>) -> io::Result<()> {
        self.records.push((self.buf.len(), packet_bytes));
        if self.buf.len() >= WRITE_OUT_AT {
            self.write_out()?;
        }
        Ok(())
    }

    /// Write every whole record buffered. On a failure the file is cut back to the end of
    /// the last whole record that reached it, and the buffered rest is dropped.
    pub fn write_out(&mut self) -> io::Result<()> {
        let whole = self.records.last().map_or(0, |r| r.0);
        let mut sent = 0;
        let mut failure = None;
        while sent < whole && failure.is_none() {
            match self.disk.write(&self.buf[sent..whole]) {
                Ok(0) => failure = Some(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => failure = Some(e),
            }
        }
        let done = self.records.partition_point(|r| r.0 <= sent);
        for &(_, packet) in &self.records[..done] {
            if let Some(bytes) = packet {
                self.packets += 1;
                self.bytes += bytes;
            }
        }
        let kept = done.checked_sub(1).map_or(0, |i| self.records[i].0);
        self.on_disk += kept as u64;
        let Some(e) = failure else {
            self.buf.drain(..whole);
            self.records.clear();
            return Ok(());
        };
        self.buf.clear();
        self.records.clear();
        // A pipe whose reader has gone cannot be cut back, nor read from again.
        if sent > kept && e.kind() != io::ErrorKind::BrokenPipe {
            if let Err(cut) = self.disk.cut(self.on_disk) {
                let why = format!(
                    "{e}; cutting the file back to its last whole packet failed too: {cut}"
                );
                return Err(io::Error::new(e.kind(), why));
            }
        }
        Err(e)
    }

    /// Packets, and their captured bytes, in the file (written out and whole).
    pub fn kept(&self) -> (u64, u64) {
        (self.packets, self.bytes)
    }
}

impl<D: Disk> Write for CaptureFile<D> {
    /// Buffer bytes of the record being built; they go out with [`CaptureFile::write_out`]
    /// once [`CaptureFile::end_record`] has marked the record whole.
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_out()?;
        self.disk.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that takes `room` bytes, then answers "no space left".
    struct Small {
        data: Vec<u8>,
        room: usize,
    }

    impl Write for Small {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let n = bytes.len().min(self.room - self.data.len());
            if n == 0 {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.data.extend_from_slice(&bytes[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Disk for Small {
        fn cut(&mut self, len: u64) -> io::Result<()> {
            self.data.truncate(len as usize);
            Ok(())
        }
    }

    fn file(room: usize) -> CaptureFile<Small> {
        let mut f = CaptureFile::new(Small {
            data: Vec::new(),
            room,
        });
        f.write_all(&[0xaa; 24]).unwrap();
        f.end_record(None).unwrap();
        f
    }

    fn packet(f: &mut CaptureFile<Small>, fill: u8) {
        f.write_all(&[fill; 16]).unwrap(); // record header
        f.write_all(&[fill; 100]).unwrap();
        f.end_record(Some(100)).unwrap();
    }

    #[test]
    fn records_go_out_whole_at_each_write_out() {
        let mut f = file(1 << 20);
        packet(&mut f, 1);
        assert!(f.disk.data.is_empty(), "nothing before the write-out");
        f.write_out().unwrap();
        packet(&mut f, 2);
        f.write_out().unwrap();
        assert_eq!(f.disk.data.len(), 24 + 2 * 116);
        assert_eq!(f.kept(), (2, 200));
    }

    /// The disk fills in the middle of the third packet: the file is cut back to the end of
    /// the second, and only the packets on disk are counted.
    #[test]
    fn a_full_disk_leaves_whole_records_only() {
        let mut f = file(24 + 2 * 116 + 50);
        for fill in 1..=4 {
            packet(&mut f, fill);
        }
        let e = f.write_out().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(f.disk.data.len(), 24 + 2 * 116);
        assert_eq!(f.disk.data[24 + 116], 2, "the second packet is the last");
        assert_eq!(f.kept(), (2, 200));
    }

    #[test]
    fn a_disk_too_small_for_the_header_keeps_nothing() {
        let mut f = file(10);
        assert!(f.write_out().is_err());
        assert!(f.disk.data.is_empty());
        assert_eq!(f.kept(), (0, 0));
    }
}
