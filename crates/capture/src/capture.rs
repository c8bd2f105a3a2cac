//! The capture thread and the library API `dualbench run --capture` uses: [`start`] a
//! [`CaptureConfig`], get a [`CaptureHandle`], and [`CaptureHandle::stop`] (or
//! [`CaptureHandle::wait`] for a bound) to receive the [`CaptureStats`]. The thread enters
//! the namespace, opens the ring with the kernel filter, re-checks the port in user space
//! (IPv6 extension headers) and writes the frames of each block the ring hands over to the
//! file at once (`file`). It checks every 200 ms that its interface still exists;
//! a deleted interface or a failed write ends the capture with a failure, and the file
//! ends on its last whole packet.

use crate::bpf;
use crate::file::{self, CaptureFile};
use crate::packet::{self, Transport};
use crate::pcap::{FileFormat, Writer};
use crate::ring::{Frame, Ring};
use dualbench_common::Netns;
use dualbench_common::{clock, plural, Failure, Result};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// What to capture, where to, and when to stop.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    pub iface: String,
    /// Capture inside this `ip netns` namespace.
    pub netns: Option<String>,
    /// Keep only TCP and UDP to or from this port, and the ICMP / ICMPv6 "destination
    /// unreachable" errors quoting a TCP segment to or from it.
    pub port: Option<u16>,
    /// `.pcapng` writes pcapng, anything else pcap with nanosecond timestamps.
    pub output: PathBuf,
    /// Write pcap to standard output instead (`output` then only names it: `-`).
    pub to_stdout: bool,
    /// Bytes kept of each frame.
    pub snaplen: u32,
    pub duration: Option<Duration>,
    /// Stop after this many packets written.
    pub count: Option<u64>,
    /// Stop after this many bytes of packets written.
    pub bytes: Option<u64>,
}

impl CaptureConfig {
    /// Capture everything on `iface` into `output`, whole frames, until stopped.
    pub fn new(iface: impl Into<String>, output: impl Into<PathBuf>) -> Self {
        CaptureConfig {
            iface: iface.into(),
            netns: None,
            port: None,
            output: output.into(),
            to_stdout: false,
            snaplen: 262_144,
            duration: None,
            count: None,
            bytes: None,
        }
    }
}

/// What a capture did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaptureStats {
    pub file: PathBuf,
    pub iface: String,
    pub link_type: u16,
    /// Packets and bytes (as captured) in the file.
    pub packets: u64,
    pub bytes: u64,
    /// Frames the kernel filter passed that the port check in user space left out.
    pub filtered_out: u64,
    /// Frames the kernel delivered or dropped, and those it dropped (ring full).
    pub kernel_packets: u64,
    pub kernel_drops: u64,
    /// The two clocks at the start, to put packet times (Unix) on the monotonic clock.
    pub start_unix_ns: u64,
    pub start_monotonic_ns: u64,
    pub end_monotonic_ns: u64,
    /// What ended the capture: `duration`, `count` or `bytes` (a bound), `stop` (the
    /// library's [`CaptureHandle::stop`]); `dualbench capture` names the signal instead of
    /// `stop`: `SIGINT`, `SIGTERM` or `SIGHUP`. A failure that cut it short:
    /// `interface_gone` (the interface was deleted), `write_error` (a full disk, say),
    /// `reader_gone` (the reader of a pipe or FIFO written to closed it) or `error`;
    /// [`Ended::failure`] says what happened.
    pub stopped_by: String,
}

/// How a capture ended: what is in the file, and the failure that cut it short, if one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub stats: CaptureStats,
    pub failure: Option<Failure>,
}

/// A running capture.
pub struct CaptureHandle {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<Ended>>,
}

/// How often the capture checks that its interface still exists.
const CHECK_EVERY_NS: u64 = 200_000_000;

/// Start capturing; returns once the ring is bound and capturing. The output file is
/// created (or emptied) only then, so a capture that cannot start leaves it alone.
pub fn start(config: CaptureConfig) -> Result<CaptureHandle> {
    if config.snaplen < 64 || config.snaplen > 262_144 {
        return Err(Failure::usage("--snaplen must be between 64 and 262144"));
    }
    let netns = config
        .netns
        .clone()
        .map(Netns::Named)
        .unwrap_or(Netns::Current);
    netns.check()?;
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("capture".into())
        .spawn(move || run(config, netns, flag, ready_tx))
        .map_err(|e| Failure::runtime(format!("starting the capture thread: {e}")))?;
    match ready_rx.recv() {
        Ok(()) => Ok(CaptureHandle { stop, thread }),
        Err(_) => Err(join(thread)
            .err()
            .unwrap_or_else(|| Failure::runtime("the capture thread ended early"))),
    }
}

impl CaptureHandle {
    /// Stop now; what was captured is in the file. A failure that cut the capture short
    /// is the error, saying how many packets the file holds.
    pub fn stop(self) -> Result<CaptureStats> {
        self.end().and_then(Ended::into_result)
    }

    /// Wait until a bound (duration, count, bytes) ends the capture.
    pub fn wait(self) -> Result<CaptureStats> {
        join(self.thread).and_then(Ended::into_result)
    }

    /// Stop now (if nothing has ended the capture yet) and say how it ended: what is in the
    /// file even when a failure cut it short.
    pub fn end(self) -> Result<Ended> {
        self.stop.store(true, Ordering::Relaxed);
        join(self.thread)
    }

    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
}

impl Ended {
    /// The statistics, or the failure with what the file holds.
    fn into_result(self) -> Result<CaptureStats> {
        match self.failure {
            None => Ok(self.stats),
            Some(f) => Err(Failure {
                message: format!(
                    "{}; what was captured before ({}) is in {}",
                    f.message,
                    plural(self.stats.packets, "packet"),
                    self.stats.file.display()
                ),
                ..f
            }),
        }
    }
}

fn join(thread: JoinHandle<Result<Ended>>) -> Result<Ended> {
    thread
        .join()
        .map_err(|_| Failure::runtime("the capture thread panicked"))?
}

fn run(
    config: CaptureConfig,
    netns: Netns,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<()>,
) -> Result<Ended> {
    netns.enter()?;
    let mut session = Session::open(config)?;
    let _ = ready.send(());
    let start = session.stats.start_monotonic_ns;
    let deadline = session.config.duration.map(|d| start + d.as_nanos() as u64);
    let mut next_check = start + CHECK_EVERY_NS;
    let mut failure = loop {
        if stop.load(Ordering::Relaxed) || session.stats.stopped_by != "stop" {
            break None;
        }
        let now = clock::monotonic_ns();
        if deadline.is_some_and(|d| now >= d) {
            session.stats.stopped_by = "duration".into();
            break None;
        }
        if now >= next_check {
            if let Err(f) = session.check_interface() {
                break Some(f);
            }
            next_check = now + CHECK_EVERY_NS;
        }
        if let Err(f) = session.pump(50) {
            break Some(f);
        }
    };
    if failure.is_none() && session.stats.stopped_by == "stop" {
        // Packets that arrived just before the stop sit in a block the kernel hands over
        // only when its timer expires: wait for it once so they reach the file too.
        failure = session.pump(crate::ring::BLOCK_TIMEOUT_MS as i32 * 3).err();
    }
    Ok(session.finish(failure))
}

/// An open ring, the file it writes, and the counts so far.
struct Session {
    config: CaptureConfig,
    ring: Ring,
    writer: Writer<CaptureFile>,
    stats: CaptureStats,
    /// A write has failed: the file is cut back to its last whole packet; write no more.
    write_failed: bool,
}

impl Session {
    /// Open the ring, then the file (so a capture that cannot start leaves the file alone)
    /// and write its header.
    fn open(config: CaptureConfig) -> Result<Session> {
        // On `any` each frame gets the cooked header we add before it: the kernel keeps
        // that much less, so a record is no longer than the snap length (as tcpdump's).
        let snaplen = match config.iface.as_str() {
            "any" => config.snaplen - crate::ring::COOKED_LEN as u32,
            _ => config.snaplen,
        };
        let filter = match config.port {
            Some(port) => bpf::port_filter(port, snaplen),
            None => bpf::accept_all(snaplen),
        };
        let ring =
            Ring::open(&config.iface, &filter).map_err(|e| ring_failure(&config.iface, e))?;
        let path = &config.output;
        let created = if config.to_stdout {
            file::stdout().map(|f| (f, false))
        } else {
            file::create(path)
        };
        let (file, created) = created
            .map_err(|e| Failure::usage(format!("cannot create {}: {e}", path.display())))?;
        let (start_unix_ns, start_monotonic_ns) = (clock::unix_ns(), clock::monotonic_ns());
        let offset = start_unix_ns as i128 - start_monotonic_ns as i128;
        let comment = format!(
            "dualbench capture on {}; monotonic_ns = unix_ns - {offset}",
            config.iface
        );
        let format = FileFormat::for_path(path);
        let header = Writer::for_interface(
            CaptureFile::new(file),
            format,
            ring.link_type,
            config.snaplen,
            &comment,
            &config.iface,
        )
        .and_then(|mut w| {
            w.get_mut().end_record(None)?;
            w.get_mut().write_out()?;
            Ok(w)
        });
        let writer = match header {
            Ok(w) => w,
            Err(e) => {
                if created {
                    let _ = std::fs::remove_file(path);
                }
                // Found before any packet, as an output that cannot be created is: the
                // file named cannot be written (`-w /dev/full`), a usage error.
                return Err(Failure::usage(format!(
                    "cannot write {}: {e}",
                    path.display()
                )));
            }
        };
        let stats = CaptureStats {
            file: config.output.clone(),
            iface: config.iface.clone(),
            link_type: ring.link_type,
            packets: 0,
            bytes: 0,
            filtered_out: 0,
            kernel_packets: 0,
            kernel_drops: 0,
            start_unix_ns,
            start_monotonic_ns,
            end_monotonic_ns: 0,
            stopped_by: "stop".into(),
        };
        Ok(Session {
            config,
            ring,
            writer,
            stats,
            write_failed: false,
        })
    }

    /// Write what the ring holds, waiting up to `timeout_ms` if it holds nothing; then
    /// write it out to the file.
    fn pump(&mut self, timeout_ms: i32) -> Result<()> {
        let Session {
            config,
            ring,
            writer,
            stats,
            ..
        } = self;
        let mut error = None;
        let mut on_frame = |frame: Frame<'_>| keep(config, frame, writer, stats, &mut error);
        let polled = ring.poll(timeout_ms, &mut on_frame);
        let written = match error {
            Some(e) => Err(e),
            None => self.writer.get_mut().write_out(),
        };
        if let Err(e) = written {
            return Err(self.write_failure(e));
        }
        match polled {
            Ok(()) => Ok(()),
            // The interface went down (it may come back up: frames simply do not arrive
            // meanwhile) or away (found at once, not at the next check).
            Err(e) if e.raw_os_error() == Some(libc::ENETDOWN) => self.check_interface(),
            Err(e) => {
                self.stats.stopped_by = "error".into();
                Err(Failure::runtime(format!(
                    "capturing on {}: {e}",
                    self.config.iface
                )))
            }
        }
    }

    /// Fail, naming the interface, once it no longer exists.
    fn check_interface(&mut self) -> Result<()> {
        if self.ring.interface_exists() {
            return Ok(());
        }
        self.stats.stopped_by = "interface_gone".into();
        Err(Failure::runtime(format!(
            "interface {} disappeared (deleted, or moved to another namespace): capture stopped",
            self.config.iface
        )))
    }

    /// Write out what is left, and count what the file holds.
    fn finish(mut self, mut failure: Option<Failure>) -> Ended {
        if !self.write_failed {
            if let Err(e) = self.writer.flush() {
                let f = self.write_failure(e);
                failure.get_or_insert(f);
            }
        }
        (self.stats.packets, self.stats.bytes) = self.writer.get_mut().kept();
        match self.ring.stats() {
            Ok(kernel) => {
                self.stats.kernel_packets = kernel.packets;
                self.stats.kernel_drops = kernel.drops;
            }
            Err(e) => {
                let f = Failure::runtime(format!("reading capture statistics: {e}"));
                failure.get_or_insert(f);
            }
        }
        self.stats.end_monotonic_ns = clock::monotonic_ns();
        Ended {
            stats: self.stats,
            failure,
        }
    }

    fn write_failure(&mut self, e: std::io::Error) -> Failure {
        self.write_failed = true;
        self.stats.stopped_by = match e.kind() {
            std::io::ErrorKind::BrokenPipe => "reader_gone",
            _ => "write_error",
        }
        .into();
        Failure::runtime(format!("writing {}: {e}", self.config.output.display()))
    }
}

/// Write one frame if it passes the port check; `false` once a bound is reached or a
/// write fails.
fn keep(
    config: &CaptureConfig,
    frame: Frame<'_>,
    writer: &mut Writer<CaptureFile>,
    stats: &mut CaptureStats,
    error: &mut Option<std::io::Error>,
) -> bool {
    // On `any` the frame starts at the network header, after a cooked header we add.
    let (link, head) = match &frame.cooked {
        Some(h) => (packet::link::RAW, &h[..]),
        None => (stats.link_type, &[][..]),
    };
    if config
        .port
        .is_some_and(|port| !has_port(link, frame.data, port))
    {
        stats.filtered_out += 1;
        return true;
    }
    let captured = (head.len() + frame.data.len()) as u64;
    let written = writer
        .write_parts(
            frame.ts_ns,
            frame.orig_len + head.len() as u32,
            head,
            frame.data,
        )
        .and_then(|()| writer.get_mut().end_record(Some(captured)));
    if let Err(e) = written {
        *error = Some(e);
        return false;
    }
    stats.packets += 1;
    stats.bytes += captured;
    if config.count.is_some_and(|c| stats.packets >= c) {
        stats.stopped_by = "count".into();
        return false;
    }
    if config.bytes.is_some_and(|b| stats.bytes >= b) {
        stats.stopped_by = "bytes".into();
        return false;
    }
    true
}

fn has_port(link_type: u16, data: &[u8], port: u16) -> bool {
    match packet::parse(link_type, data) {
        Ok(Some(p)) => match p.transport {
            Transport::Tcp(t) => t.src_port == port || t.dst_port == port,
            Transport::Udp {
                src_port, dst_port, ..
            } => src_port == port || dst_port == port,
            Transport::Unreachable(q) => q.src_port == port || q.dst_port == port,
            Transport::Other(_) => false,
        },
        Ok(None) => false,
        // Cut by the snap length inside the transport header: the ports may still be there.
        Err(_) => packet::ports(link_type, data).is_some_and(|(s, d)| s == port || d == port),
    }
}

fn ring_failure(iface: &str, e: std::io::Error) -> Failure {
    match e.kind() {
        std::io::ErrorKind::NotFound => Failure::usage(e.to_string()),
        std::io::ErrorKind::PermissionDenied => Failure::usage(format!(
            "capturing on {iface} needs root (CAP_NET_RAW): {e}"
        )),
        _ => Failure::runtime(format!("opening a capture on {iface}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn the_port_check_reads_frames_cut_inside_the_tcp_header() {
        // Ethernet, IPv6 ::1 → ::1, TCP 40000 → 8080 with 12 bytes of options, cut at 64
        // bytes (the smallest --snaplen): 10 bytes of the TCP header are in the frame.
        let mut f = vec![0u8; 12];
        f.extend([0x86, 0xdd, 0x60, 0, 0, 0, 0, 32, 6, 64]);
        f.extend(std::net::Ipv6Addr::LOCALHOST.octets());
        f.extend(std::net::Ipv6Addr::LOCALHOST.octets());
        f.extend([0x9c, 0x40, 0x1f, 0x90, 0, 0, 0, 1, 0, 0]);
        assert!(has_port(packet::link::ETHERNET, &f, 8080));
        assert!(has_port(packet::link::ETHERNET, &f, 40000));
        assert!(!has_port(packet::link::ETHERNET, &f, 80));
    }

    /// The library API as `run --capture` uses it: start, traffic, stop, stats, analysis.
    #[test]
    fn api_captures_loopback_connections_of_both_families() {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        let Ok(v6) = TcpListener::bind(("::1", port)) else {
            return;
        }; // port taken on ::1: nothing to test
        let file = std::env::temp_dir().join(format!(
            "dualbench-capture-api-{}.pcapng",
            std::process::id()
        ));
        let config = CaptureConfig {
            port: Some(port),
            ..CaptureConfig::new("lo", &file)
        };
        let handle = start(config).unwrap();
        for listener in [&v4, &v6] {
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            client.write_all(b"ping").unwrap();
            let mut buf = [0u8; 4];
            server.read_exact(&mut buf).unwrap();
            drop((client, server));
        }
        let stats = handle.stop().unwrap();
        assert_eq!(
            (
                stats.stopped_by.as_str(),
                stats.kernel_drops,
                stats.link_type
            ),
            ("stop", 0, 1)
        );
        assert!(stats.packets >= 14, "{stats:?}"); // 3 handshake + data + ack + 2×(FIN, ACK) per connection
        let analysis = crate::analyze::analyze_file(&file, None).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(analysis.packets.total, stats.packets);
        assert_eq!(analysis.connections.len(), 2);
        assert_eq!(analysis.families["ipv4"].bytes_to_server, 4);
        assert_eq!(analysis.families["ipv6"].bytes_to_server, 4);
    }

    /// On `any` the snap length holds the cooked header too, as with tcpdump: every record
    /// is at most `--snaplen` bytes, the length the file's header records. Before, the
    /// kernel kept `--snaplen` bytes after the 20-byte header: 84-byte records in a file
    /// saying 64.
    #[test]
    fn any_keeps_records_within_the_snap_length() {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        let file = std::env::temp_dir().join(format!(
            "dualbench-capture-any-snaplen-{}.pcap",
            std::process::id()
        ));
        let config = CaptureConfig {
            port: Some(port),
            snaplen: 64,
            ..CaptureConfig::new("any", &file)
        };
        let handle = start(config).unwrap();
        let mut client = TcpStream::connect(v4.local_addr().unwrap()).unwrap();
        let (mut server, _) = v4.accept().unwrap();
        client.write_all(&[b'x'; 1000]).unwrap();
        let mut buf = [0u8; 1000];
        server.read_exact(&mut buf).unwrap();
        drop((client, server));
        let stats = handle.stop().unwrap();
        let bytes = std::fs::read(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(u32::from_le_bytes(bytes[16..20].try_into().unwrap()), 64);
        let mut reader = crate::pcap::Reader::new(&bytes[..]).unwrap();
        let (mut records, mut longest) = (0, 0);
        while let Some(r) = reader.next_record().unwrap() {
            (records, longest) = (records + 1, longest.max(r.data.len()));
            assert_eq!(r.link_type, packet::link::LINUX_SLL2);
        }
        assert_eq!(records, stats.packets);
        assert!(records >= 7, "{stats:?}"); // handshake, data, its ACK, FIN, ACK, ...
        assert_eq!(longest, 64, "the data segment is cut to the snap length");
        let reader = crate::pcap::Reader::new(&bytes[..]).unwrap();
        let analysis = crate::analyze::analyze(reader, None).unwrap();
        assert_eq!(analysis.families["ipv4"].bytes_to_server, 1000);
    }

    /// Through the library, a failure that cut the capture short is the error, and says
    /// what the file holds.
    #[test]
    fn a_failure_says_what_the_file_holds() {
        let mut stats = CaptureStats {
            file: "run.pcap".into(),
            iface: "lo".into(),
            link_type: 1,
            packets: 812,
            bytes: 90_000,
            filtered_out: 0,
            kernel_packets: 812,
            kernel_drops: 0,
            start_unix_ns: 0,
            start_monotonic_ns: 0,
            end_monotonic_ns: 0,
            stopped_by: "interface_gone".into(),
        };
        let failure = Failure::runtime("interface lo disappeared");
        let ended = Ended {
            stats: stats.clone(),
            failure: Some(failure),
        };
        let e = ended.into_result().unwrap_err();
        assert_eq!(
            e.message,
            "interface lo disappeared; what was captured before (812 packets) is in run.pcap"
        );
        stats.stopped_by = "stop".into();
        let whole = Ended {
            stats: stats.clone(),
            failure: None,
        };
        assert_eq!(whole.into_result(), Ok(stats));
    }

    #[test]
    fn bad_configs_are_usage_errors() {
        let file =
            std::env::temp_dir().join(format!("dualbench-capture-bad-{}.pcap", std::process::id()));
        let e = start(CaptureConfig {
            snaplen: 10,
            ..CaptureConfig::new("lo", &file)
        })
        .err()
        .unwrap();
        assert!(e.message.contains("--snaplen"));
        let e = start(CaptureConfig::new("no-such-if9", &file))
            .err()
            .unwrap();
        assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
        assert!(
            !file.exists(),
            "a capture that cannot start creates no file"
        );
    }
}
