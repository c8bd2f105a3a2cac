//! Packet capture and per-connection analysis (`dualbench capture`, `dualbench analyze`).
//!
//! Layout: [`packet`] parses frames (pure), [`pcap`] reads and writes capture files,
//! [`bpf`] builds the kernel filter, `ring` is the AF_PACKET TPACKET_V3 ring, `file` writes
//! the capture file in whole records, [`capture`] runs a capture on a thread (library API:
//! [`start`]), [`analyze`] rebuilds TCP connections and summarises them per family, and
//! `cli` holds the two subcommands.

pub mod analyze;
pub mod bpf;
pub mod capture;
mod cli;
mod file;
pub mod packet;
pub mod pcap;
mod ring;

pub use capture::{start, CaptureConfig, CaptureHandle, CaptureStats, Ended};
pub use cli::{analyze_main, capture_main, AnalyzeCli, CaptureCli};
