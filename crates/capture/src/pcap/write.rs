//! Writing capture files: classic pcap with nanosecond timestamps (magic `a1b23c4d`) or
//! pcapng (one section, one interface with `if_tsresol` = 9 and, when named, `if_name`;
//! enhanced packet blocks).

use super::{PCAPNG_BYTE_ORDER, PCAPNG_EPB, PCAPNG_IDB, PCAPNG_SHB, PCAP_MAGIC_NS};
use std::io::{self, Write};

/// Which file format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Pcap,
    Pcapng,
}

impl FileFormat {
    /// pcapng for names ending in `.pcapng`, pcap otherwise.
    pub fn for_path(path: &std::path::Path) -> FileFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("pcapng") => FileFormat::Pcapng,
            _ => FileFormat::Pcap,
        }
    }
}

/// Writes packets to a capture file, one call per packet.
pub struct Writer<W: Write> {
    out: W,
    format: FileFormat,
}

impl<W: Write> Writer<W> {
    /// Write the file header. `comment` goes into pcapng's section header (pcap has none).
    pub fn new(
        out: W,
        format: FileFormat,
        link_type: u16,
        snaplen: u32,
        comment: &str,
    ) -> io::Result<Self> {
        Writer::for_interface(out, format, link_type, snaplen, comment, "")
    }

    /// [`Writer::new`], naming the interface the packets were captured on in pcapng's
    /// interface block (`if_name`, as dumpcap writes it: Wireshark shows it per frame).
    pub fn for_interface(
        mut out: W,
        format: FileFormat,
        link_type: u16,
        snaplen: u32,
        comment: &str,
        interface: &str,
    ) -> io::Result<Self> {
        match format {
            FileFormat::Pcap => {
                out.write_all(&PCAP_MAGIC_NS.to_le_bytes())?;
                out.write_all(&[2, 0, 4, 0])?; // version 2.4
                out.write_all(&[0; 8])?; // thiszone, sigfigs
                out.write_all(&snaplen.to_le_bytes())?;
                out.write_all(&(link_type as u32).to_le_bytes())?;
            }
            FileFormat::Pcapng => {
                let mut shb = PCAPNG_BYTE_ORDER.to_le_bytes().to_vec();
                shb.extend([1, 0, 0, 0]); // version 1.0
                shb.extend(u64::MAX.to_le_bytes()); // section length unknown
                option(&mut shb, 1, comment.as_bytes());
                option(&mut shb, 4, b"dualbench");
                option(&mut shb, 0, &[]);
                block(&mut out, PCAPNG_SHB, &shb)?;
                let mut idb = (link_type as u32).to_le_bytes().to_vec();
                idb.extend(snaplen.to_le_bytes());
                option(&mut idb, 2, interface.as_bytes()); // if_name
                option(&mut idb, 9, &[9]); // if_tsresol: nanoseconds
                option(&mut idb, 0, &[]);
                block(&mut out, PCAPNG_IDB, &idb)?;
            }
        }
        Ok(Writer { out, format })
    }

    /// Write one packet: its Unix time in ns, its length on the wire, the bytes captured.
    pub fn write(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        self.write_parts(ts_ns, orig_len, &[], data)
    }

    /// Write one packet captured in two parts (a link header made up by the capture, then
    /// the frame's bytes).
    pub fn write_parts(
        &mut self,
        ts_ns: u64,
        orig_len: u32,
        head: &[u8],
        data: &[u8],
    ) -> io::Result<()> {
        let caplen = (head.len() + data.len()) as u32;
        match self.format {
            FileFormat::Pcap => {
                let mut h = [0u8; 16];
                h[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
                h[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
                h[8..12].copy_from_slice(&caplen.to_le_bytes());
                h[12..16].copy_from_slice(&orig_len.to_le_bytes());
                self.out.write_all(&h)?;
                self.out.write_all(head)?;
                self.out.write_all(data)
            }
            FileFormat::Pcapng => {
                let padded = (caplen as usize + 3) & !3;
                let total = (32 + padded) as u32;
                let mut h = [0u8; 28];
                h[0..4].copy_from_slice(&PCAPNG_EPB.to_le_bytes());
                h[4..8].copy_from_slice(&total.to_le_bytes());
                // interface 0 at 8..12
                h[12..16].copy_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
                h[16..20].copy_from_slice(&(ts_ns as u32).to_le_bytes());
                h[20..24].copy_from_slice(&caplen.to_le_bytes());
                h[24..28].copy_from_slice(&orig_len.to_le_bytes());
                self.out.write_all(&h)?;
                self.out.write_all(head)?;
                self.out.write_all(data)?;
                self.out.write_all(&[0; 3][..padded - caplen as usize])?;
                self.out.write_all(&total.to_le_bytes())
            }
        }
    }

    /// The output, once every packet is written.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// The output, to mark where a record ends or to ask what reached it.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn option(body: &mut Vec<u8>, code: u16, value: &[u8]) {
    if code != 0 && value.is_empty() {
        return;
    }
    body.extend(code.to_le_bytes());
    body.extend((value.len() as u16).to_le_bytes());
    body.extend(value);
    body.resize((body.len() + 3) & !3, 0);
}

fn block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let total = (12 + body.len()) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&total.to_le_bytes())
}
