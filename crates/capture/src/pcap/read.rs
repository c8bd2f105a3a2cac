//! Reading capture files packet by packet into one reused buffer (no allocation per
//! packet): pcap in either byte order with µs or ns timestamps, and pcapng with its
//! sections, interfaces (each with its own link type and `if_tsresol`) and enhanced or
//! simple packet blocks. Errors are one line saying what is wrong with the file; a file
//! that ends in the middle of a record (a capture cut by a crash or a full disk) or holds
//! an impossible record after good ones is told apart ([`ReadError::Truncated`],
//! [`ReadError::Corrupt`]) so the whole records before can still be used, and
//! [`Reader::position`] says where reading stopped.

use super::{
    PCAPNG_BYTE_ORDER, PCAPNG_EPB, PCAPNG_IDB, PCAPNG_SHB, PCAPNG_SPB, PCAP_MAGIC_NS, PCAP_MAGIC_US,
};
use std::fmt;
use std::io::{self, Read};

/// One packet of a capture file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Unix time in nanoseconds.
    pub ts_ns: u64,
    /// Length on the wire (the captured `data` may be shorter).
    pub orig_len: u32,
    pub link_type: u16,
    pub data: &'a [u8],
}

#[derive(Debug)]
enum Kind {
    Pcap {
        swapped: bool,
        nanos: bool,
        link_type: u16,
        /// The largest captured length a record may have: the file's snap length, at
        /// least [`PCAP_CAPLEN_MAX`].
        caplen_max: usize,
    },
    Pcapng {
        swapped: bool,
        interfaces: Vec<Interface>,
    },
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: u16,
    snaplen: u32,
    /// Timestamp units per second.
    units: u64,
}

/// The largest captured length a pcap record may have whatever its file's snap length
/// says: Wireshark's limit (`WTAP_MAX_PACKET_SIZE_STANDARD`), above which tshark calls a
/// record corrupt, and `dualbench capture`'s largest `--snaplen`.
pub const PCAP_CAPLEN_MAX: usize = 262_144;

/// Reads packets from a pcap or pcapng stream.
#[derive(Debug)]
pub struct Reader<R: Read> {
    input: Counted<R>,
    kind: Kind,
    buf: Vec<u8>,
    /// Packets returned so far.
    packets: u64,
    /// Where the record (or pcapng block) being read starts.
    record_at: u64,
    /// The link types the file declared so far (pcap: its header's; pcapng: its
    /// interfaces', every section), each once.
    link_types: Vec<u16>,
}

/// Where a reader is: packets read, and the byte offset of the record read last (after
/// an error: of the record that could not be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub packets: u64,
    pub offset: u64,
}

/// The input, counting the bytes read from it.
#[derive(Debug)]
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Why a capture file cannot be read (further).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The file ends in the middle of a packet record or block; every record before it
    /// was whole.
    Truncated,
    /// A record or block that cannot be right (an impossible length, a packet for an
    /// interface never declared) after the file's header: the records before it were read
    /// and can be used; nothing after it can be trusted.
    Corrupt(String),
    /// Not a capture file, or the file could not be read.
    Bad(String),
}

/// What to give `analyze` instead of a file that is not a capture, for messages.
const WANT_CAPTURE: &str =
    "give a pcap or pcapng file, as dualbench capture -w, tcpdump -w or dumpcap write";

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Truncated => f.write_str("the file ends in the middle of a packet record"),
            ReadError::Corrupt(why) | ReadError::Bad(why) => f.write_str(why),
        }
    }
}

fn bad(why: impl Into<String>) -> ReadError {
    ReadError::Bad(why.into())
}

fn corrupt(why: impl Into<String>) -> ReadError {
    ReadError::Corrupt(why.into())
}

type ReadResult<T> = Result<T, ReadError>;

impl Reader<io::BufReader<std::fs::File>> {
    /// Open a capture file.
    pub fn open(path: &std::path::Path) -> ReadResult<Self> {
        if path.is_dir() {
            return Err(bad(format!(
                "{} is a directory: name a pcap or pcapng file",
                path.display()
            )));
        }
        let file = std::fs::File::open(path)
            .map_err(|e| bad(format!("cannot open {}: {e}", path.display())))?;
        Reader::new(io::BufReader::with_capacity(1 << 20, file))
            .map_err(|e| bad(format!("{}: {e}", path.display())))
    }
}

impl<R: Read> Reader<R> {
    /// Read the file header.
    pub fn new(input: R) -> ReadResult<Self> {
        let mut input = Counted {
            inner: input,
            read: 0,
        };
        let mut magic = [0u8; 4];
        input.read_exact(&mut magic).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof if input.read == 0 => {
                bad(format!("empty file, not a capture: {WANT_CAPTURE}"))
            }
            io::ErrorKind::UnexpectedEof => bad(format!(
                "not a pcap or pcapng file ({} bytes): {WANT_CAPTURE}",
                input.read
            )),
            _ => bad(format!("cannot read it: {e}")),
        })?;
        let le = u32::from_le_bytes(magic);
        let kind = match (le, le.swap_bytes()) {
            (PCAPNG_SHB, _) => Kind::Pcapng {
                swapped: false,
                interfaces: Vec::new(),
            },
            (m, _) if m == PCAP_MAGIC_US || m == PCAP_MAGIC_NS => {
                pcap_header(&mut input, false, m == PCAP_MAGIC_NS)?
            }
            (_, m) if m == PCAP_MAGIC_US || m == PCAP_MAGIC_NS => {
                pcap_header(&mut input, true, m == PCAP_MAGIC_NS)?
            }
            _ => {
                return Err(bad(format!(
                    "not a pcap or pcapng file (unknown magic number {le:#010x}): {WANT_CAPTURE}"
                )))
            }
        };
        let link_types = match kind {
            Kind::Pcap { link_type, .. } => vec![link_type],
            Kind::Pcapng { .. } => Vec::new(),
        };
        let mut reader = Reader {
            input,
            kind,
            buf: Vec::with_capacity(65536),
            packets: 0,
            record_at: 0,
            link_types,
        };
        if matches!(reader.kind, Kind::Pcapng { .. }) {
            reader.section_header()?;
        }
        Ok(reader)
    }

    /// The next packet, or `None` at the end of the file.
    pub fn next_record(&mut self) -> ReadResult<Option<Record<'_>>> {
        match self.kind {
            Kind::Pcap {
                swapped,
                nanos,
                link_type,
                caplen_max,
            } => self.next_pcap(swapped, nanos, link_type, caplen_max),
            Kind::Pcapng { .. } => self.next_pcapng(),
        }
    }

    /// The link types the file declared so far, each once in the order declared: a pcap
    /// file's from its header on, a pcapng file's as its interface blocks are read.
    pub fn link_types(&self) -> &[u16] {
        &self.link_types
    }

    /// Packets read so far, and where the last record read (or the one that could not be
    /// read) starts in the file.
    pub fn position(&self) -> Position {
        Position {
            packets: self.packets,
            offset: self.record_at,
        }
    }

    fn next_pcap(
        &mut self,
        swapped: bool,
        nanos: bool,
        link_type: u16,
        caplen_max: usize,
    ) -> ReadResult<Option<Record<'_>>> {
        self.record_at = self.input.read;
        let mut h = [0u8; 16];
        if !fill(&mut self.input, &mut h)? {
            return Ok(None);
        }
        let word = |at: usize| u32_at(&h, at, swapped);
        let (caplen, orig_len) = (word(8) as usize, word(12));
        if caplen > caplen_max {
            return Err(corrupt(format!(
                "corrupt packet record (captured length {caplen})"
            )));
        }
        self.buf.resize(caplen, 0);
        if !fill(&mut self.input, &mut self.buf)? && caplen > 0 {
            return Err(ReadError::Truncated);
        }
        self.packets += 1;
        let sub = if nanos {
            word(4) as u64
        } else {
            word(4) as u64 * 1000
        };
        Ok(Some(Record {
            ts_ns: word(0) as u64 * 1_000_000_000 + sub,
            orig_len,
            link_type,
            data: &self.buf,
        }))
    }

    fn next_pcapng(&mut self) -> ReadResult<Option<Record<'_>>> {
        let (ts_ns, orig_len, link_type, start, len) = loop {
            let Some(kind) = self.block()? else {
                return Ok(None);
            };
            let Kind::Pcapng {
                swapped,
                interfaces,
            } = &mut self.kind
            else {
                unreachable!()
            };
            let (swapped, b) = (*swapped, &self.buf);
            match kind {
                PCAPNG_SHB => {
                    let rest = std::mem::take(&mut self.buf);
                    self.kind = Kind::Pcapng {
                        swapped: section_order(&rest)?,
                        interfaces: Vec::new(),
                    };
                    self.buf = rest;
                }
                PCAPNG_IDB if b.len() >= 8 => {
                    let ifc = interface(b, swapped);
                    if !self.link_types.contains(&ifc.link_type) {
                        self.link_types.push(ifc.link_type);
                    }
                    interfaces.push(ifc);
                }
                PCAPNG_EPB if b.len() >= 20 => {
                    let ifc = interface_of(interfaces, u32_at(b, 0, swapped))?;
                    let ts = (u32_at(b, 4, swapped) as u64) << 32 | u32_at(b, 8, swapped) as u64;
                    let caplen = u32_at(b, 12, swapped) as usize;
                    if caplen > b.len() - 20 {
                        return Err(corrupt(format!(
                            "corrupt packet block (captured length {caplen} in a block of {} bytes)",
                            b.len() + 12
                        )));
                    }
                    break (
                        scale(ts, ifc.units),
                        u32_at(b, 16, swapped),
                        ifc.link_type,
                        20,
                        caplen,
                    );
                }
                PCAPNG_SPB if b.len() >= 4 => {
                    let ifc = interface_of(interfaces, 0)?;
                    let orig = u32_at(b, 0, swapped);
                    // A snap length of 0 is no limit (pcapng's IDB).
                    let snaplen = match ifc.snaplen {
                        0 => usize::MAX,
                        n => n as usize,
                    };
                    let caplen = (orig as usize).min(snaplen).min(b.len() - 4);
                    break (0, orig, ifc.link_type, 4, caplen);
                }
                _ => {}
            }
        };
        self.packets += 1;
        Ok(Some(Record {
            ts_ns,
            orig_len,
            link_type,
            data: &self.buf[start..start + len],
        }))
    }

    /// Read the first section header's body (its type is already read).
    fn section_header(&mut self) -> ReadResult<()> {
        let mut h = [0u8; 8];
        self.input.read_exact(&mut h).map_err(|_| {
            bad("cut short inside its pcapng section header, before any packet: nothing to analyse")
        })?;
        let order = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        let swapped = match order {
            PCAPNG_BYTE_ORDER => false,
            o if o.swap_bytes() == PCAPNG_BYTE_ORDER => true,
            _ => {
                return Err(bad(format!(
                    "not a pcapng file (bad byte-order magic): {WANT_CAPTURE}"
                )))
            }
        };
        let total = u32_at(&h, 0, swapped) as usize;
        if !(28..=1 << 24).contains(&total) {
            return Err(bad("corrupt pcapng section header"));
        }
        let mut rest = vec![0u8; total - 12];
        self.input.read_exact(&mut rest).map_err(|_| {
            bad("cut short inside its pcapng section header, before any packet: nothing to analyse")
        })?;
        self.kind = Kind::Pcapng {
            swapped,
            interfaces: Vec::new(),
        };
        Ok(())
    }

    /// Read one block into `buf` (body only); returns its type, or `None` at the end.
    fn block(&mut self) -> ReadResult<Option<u32>> {
        let Kind::Pcapng { swapped, .. } = self.kind else {
            return Ok(None);
        };
        self.record_at = self.input.read;
        let mut h = [0u8; 8];
        if !fill(&mut self.input, &mut h)? {
            return Ok(None);
        }
        let kind = u32_at(&h, 0, swapped);
        let total = if kind == PCAPNG_SHB {
            // Byte order may change with a new section: read it from the body.
            let mut order = [0u8; 4];
            if !fill(&mut self.input, &mut order)? {
                return Err(ReadError::Truncated);
            }
            let swapped = u32::from_le_bytes(order) != PCAPNG_BYTE_ORDER;
            self.buf.clear();
            self.buf.extend(order);
            (u32_at(&h, 4, swapped) as usize).saturating_sub(4)
        } else {
            self.buf.clear();
            u32_at(&h, 4, swapped) as usize
        };
        if !(12..=1 << 24).contains(&total) || total % 4 != 0 {
            return Err(corrupt(format!("corrupt pcapng block (length {total})")));
        }
        let start = self.buf.len();
        self.buf.resize(start + total - 8, 0);
        if !fill(&mut self.input, &mut self.buf[start..])? {
            return Err(ReadError::Truncated);
        }
        self.buf.truncate(start + total - 12); // drop the trailing length
        Ok(Some(kind))
    }
}

fn pcap_header<R: Read>(input: &mut R, swapped: bool, nanos: bool) -> ReadResult<Kind> {
    let mut h = [0u8; 20];
    input
        .read_exact(&mut h)
        .map_err(|_| {
            bad("cut short inside its pcap file header (24 bytes), before any packet: nothing to analyse")
        })?;
    let snaplen = u32_at(&h, 12, swapped) as usize;
    Ok(Kind::Pcap {
        swapped,
        nanos,
        link_type: u32_at(&h, 16, swapped) as u16,
        caplen_max: snaplen.clamp(PCAP_CAPLEN_MAX, 1 << 24),
    })
}

fn section_order(body: &[u8]) -> ReadResult<bool> {
    match body
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    {
        Some(PCAPNG_BYTE_ORDER) => Ok(false),
        Some(o) if o.swap_bytes() == PCAPNG_BYTE_ORDER => Ok(true),
        _ => Err(corrupt("corrupt pcapng section header")),
    }
}

fn interface(body: &[u8], swapped: bool) -> Interface {
    let link_type = u16_at(body, 0, swapped);
    let mut units = 1_000_000;
    let mut at = 8;
    while at + 4 <= body.len() {
        let code = u16_at(body, at, swapped);
        let len = u16_at(body, at + 2, swapped) as usize;
        if code == 0 {
            break;
        }
        if code == 9 && len == 1 && at + 4 < body.len() {
            let v = body[at + 4];
            units = if v & 0x80 == 0 {
                10u64.saturating_pow(v as u32)
            } else {
                1u64 << (v & 0x7f).min(63)
            };
        }
        at += 4 + ((len + 3) & !3);
    }
    Interface {
        link_type,
        snaplen: u32_at(body, 4, swapped),
        units,
    }
}

fn interface_of(interfaces: &[Interface], id: u32) -> ReadResult<Interface> {
    interfaces
        .get(id as usize)
        .copied()
        .ok_or_else(|| corrupt(format!("packet for undeclared interface {id}")))
}

fn scale(ts: u64, units: u64) -> u64 {
    if units == 1_000_000_000 {
        ts
    } else {
        ((ts as u128 * 1_000_000_000) / units.max(1) as u128) as u64
    }
}

/// Fill `buf` completely; `Ok(false)` at a clean end of file, an error when cut midway.
fn fill<R: Read>(input: &mut R, buf: &mut [u8]) -> ReadResult<bool> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(ReadError::Truncated),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(bad(format!("read error: {e}"))),
        }
    }
    Ok(true)
}

fn u32_at(b: &[u8], at: usize, swapped: bool) -> u32 {
    let v = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    if swapped {
        v.swap_bytes()
    } else {
        v
    }
}

fn u16_at(b: &[u8], at: usize, swapped: bool) -> u16 {
    let v = u16::from_le_bytes([b[at], b[at + 1]]);
    if swapped {
        v.swap_bytes()
    } else {
        v
    }
}
