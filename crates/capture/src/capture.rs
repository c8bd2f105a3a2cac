//! The capture thread and the library API `dualbench run --capture` uses: [`start`] a
//! [`CaptureConfig`], get a [`CaptureHandle`], and [`CaptureHandle::stop`] (or
//! [`CaptureHandle::wait`] for a bound) to receive the [`CaptureStats`]. The thread enters
//! the namespace, opens the ring with the kernel filter, re-checks the port in user space
//! (IPv6 extension headers) and writes each frame to the file as it comes.

use crate::bpf;
use crate::packet::{self, Transport};
use crate::pcap::{FileFormat, Writer};
use crate::ring::{Frame, Ring};
use dualbench_common::Netns;
use dualbench_common::{clock, Failure, Result};
use serde::Serialize;
use std::io::BufWriter;
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
    /// Keep only TCP and UDP to or from this port.
    pub port: Option<u16>,
    /// `.pcapng` writes pcapng, anything else pcap with nanosecond timestamps.
    pub output: PathBuf,
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
    /// Packets and bytes (as captured) written to the file.
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
    /// `stop`: `SIGINT` or `SIGTERM`.
    pub stopped_by: String,
}

/// A running capture.
pub struct CaptureHandle {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<CaptureStats>>,
}

/// Start capturing; returns once the ring is bound and capturing.
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
    let file = std::fs::File::create(&config.output)
        .map_err(|e| Failure::usage(format!("cannot create {}: {e}", config.output.display())))?;
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("capture".into())
        .spawn(move || run(config, netns, file, flag, ready_tx))
        .map_err(|e| Failure::runtime(format!("starting the capture thread: {e}")))?;
    match ready_rx.recv() {
        Ok(()) => Ok(CaptureHandle { stop, thread }),
        Err(_) => Err(join(thread)
            .err()
            .unwrap_or_else(|| Failure::runtime("the capture thread ended early"))),
    }
}

impl CaptureHandle {
    /// Stop now; what was captured is in the file.
    pub fn stop(self) -> Result<CaptureStats> {
        self.stop.store(true, Ordering::Relaxed);
        join(self.thread)
    }

    /// Wait until a bound (duration, count, bytes) ends the capture.
    pub fn wait(self) -> Result<CaptureStats> {
        join(self.thread)
    }

    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
}

fn join(thread: JoinHandle<Result<CaptureStats>>) -> Result<CaptureStats> {
    thread
        .join()
        .map_err(|_| Failure::runtime("the capture thread panicked"))?
}

fn run(
    config: CaptureConfig,
    netns: Netns,
    file: std::fs::File,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<()>,
) -> Result<CaptureStats> {
    netns.enter()?;
    let mut session = Session::open(config, file)?;
    let _ = ready.send(());
    let deadline = session
        .config
        .duration
        .map(|d| session.stats.start_monotonic_ns + d.as_nanos() as u64);
    while !stop.load(Ordering::Relaxed) && session.stats.stopped_by == "stop" {
        if deadline.is_some_and(|d| clock::monotonic_ns() >= d) {
            session.stats.stopped_by = "duration".into();
            break;
        }
        session.pump(50)?;
    }
    if session.stats.stopped_by == "stop" {
        // Packets that arrived just before the stop sit in a block the kernel hands over
        // only when its timer expires: wait for it once so they reach the file too.
        session.pump(crate::ring::BLOCK_TIMEOUT_MS as i32 * 3)?;
    }
    session.finish()
}

/// An open ring, the file it writes, and the counts so far.
struct Session {
    config: CaptureConfig,
    ring: Ring,
    writer: Writer<BufWriter<std::fs::File>>,
    stats: CaptureStats,
}

impl Session {
    fn open(config: CaptureConfig, file: std::fs::File) -> Result<Session> {
        let filter = match config.port {
            Some(port) => bpf::port_filter(port, config.snaplen),
            None => bpf::accept_all(config.snaplen),
        };
        let ring =
            Ring::open(&config.iface, &filter).map_err(|e| ring_failure(&config.iface, e))?;
        let (start_unix_ns, start_monotonic_ns) = (clock::unix_ns(), clock::monotonic_ns());
        let offset = start_unix_ns as i128 - start_monotonic_ns as i128;
        let comment = format!(
            "dualbench capture on {}; monotonic_ns = unix_ns - {offset}",
            config.iface
        );
        let format = FileFormat::for_path(&config.output);
        let out = BufWriter::with_capacity(1 << 20, file);
        let writer = Writer::new(out, format, ring.link_type, config.snaplen, &comment)?;
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
        })
    }

    /// Write what the ring holds, waiting up to `timeout_ms` if it holds nothing.
    fn pump(&mut self, timeout_ms: i32) -> Result<()> {
        let Session {
            config,
            ring,
            writer,
            stats,
        } = self;
        let mut error = None;
        let mut on_frame = |frame: Frame<'_>| keep(config, frame, writer, stats, &mut error);
        ring.poll(timeout_ms, &mut on_frame)
            .map_err(|e| Failure::runtime(format!("capturing on {}: {e}", config.iface)))?;
        match error {
            Some(e) => Err(self.write_failure(e)),
            None => Ok(()),
        }
    }

    fn finish(mut self) -> Result<CaptureStats> {
        if let Err(e) = self.writer.flush() {
            return Err(self.write_failure(e));
        }
        let kernel = self
            .ring
            .stats()
            .map_err(|e| Failure::runtime(format!("reading capture statistics: {e}")))?;
        self.stats.kernel_packets = kernel.packets;
        self.stats.kernel_drops = kernel.drops;
        self.stats.end_monotonic_ns = clock::monotonic_ns();
        Ok(self.stats)
    }

    fn write_failure(&self, e: std::io::Error) -> Failure {
        Failure::runtime(format!("writing {}: {e}", self.config.output.display()))
    }
}

/// Write one frame if it passes the port check; `false` once a bound is reached.
fn keep<W: std::io::Write>(
    config: &CaptureConfig,
    frame: Frame<'_>,
    writer: &mut Writer<W>,
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
    if let Err(e) = writer.write_parts(
        frame.ts_ns,
        frame.orig_len + head.len() as u32,
        head,
        frame.data,
    ) {
        *error = Some(e);
        return false;
    }
    stats.packets += 1;
    stats.bytes += (head.len() + frame.data.len()) as u64;
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
        _ => false,
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
        let _ = std::fs::remove_file(&file);
    }
}
