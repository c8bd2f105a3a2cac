//! A UDP probe across network namespaces, for the wire's tests and benchmarks: a sender
//! thread in one namespace sends numbered, timestamped datagrams at a fixed interval to a
//! receiver thread in another. Both read the same CLOCK_MONOTONIC, so the receiver
//! measures true one-way delay; in echo mode the receiver sends each datagram back and
//! the sender measures round-trip time. Bounded in count and time.

use dualbench_common::clock::monotonic_ns;
use dualbench_common::{Failure, Result};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Move the calling thread into network namespace `name` (from `ip netns add`).
pub fn enter_netns(name: &str) -> Result<()> {
    let path = format!("/var/run/netns/{name}");
    let file =
        std::fs::File::open(&path).map_err(|e| Failure::runtime(format!("opening {path}: {e}")))?;
    // SAFETY: setns on a descriptor we hold open; affects only this thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(Failure::runtime(format!(
            "entering namespace {name}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// What to send, from where, to where.
#[derive(Debug, Clone)]
pub struct Probe {
    pub from_ns: String,
    pub to_ns: String,
    /// Where the receiver listens (an address of `to_ns`).
    pub target: SocketAddr,
    pub count: u32,
    pub interval: Duration,
    /// Datagram payload bytes (at least 12: sequence number and send time).
    pub payload: usize,
    /// Echo mode: measure round trips instead of one-way delay.
    pub echo: bool,
    /// How long to wait for stragglers after the last datagram is sent.
    pub linger: Duration,
}

/// What came back: unique datagrams received and one delay (ns) per reception.
#[derive(Debug, Clone, Default)]
pub struct ProbeResult {
    pub sent: u32,
    pub received: u32,
    pub delays_ns: Vec<u64>,
}

impl ProbeResult {
    pub fn loss(&self) -> f64 {
        1.0 - self.received as f64 / self.sent.max(1) as f64
    }

    /// The `q` quantile (0..=1) of the delays in ns (nearest rank), 0 if none.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        let mut d = self.delays_ns.clone();
        d.sort_unstable();
        match d.len() {
            0 => 0,
            n => d[((q * n as f64).ceil() as usize).clamp(1, n) - 1],
        }
    }
}

/// Run the probe to completion.
pub fn run(probe: &Probe) -> Result<ProbeResult> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let receiver = {
        let (p, stop) = (probe.clone(), Arc::clone(&stop));
        std::thread::spawn(move || receive(&p, &stop, ready_tx))
    };
    let ready = ready_rx
        .recv()
        .map_err(|_| Failure::runtime("probe receiver thread ended early"))?;
    let sent = match ready {
        Ok(()) => {
            let p = probe.clone();
            std::thread::spawn(move || send(&p))
                .join()
                .map_err(|_| Failure::runtime("probe sender panicked"))?
        }
        Err(e) => Err(e),
    };
    stop.store(true, Ordering::Relaxed);
    let received = receiver
        .join()
        .map_err(|_| Failure::runtime("probe receiver panicked"))??;
    let sent = sent?;
    match probe.echo {
        true => Ok(ProbeResult {
            sent: sent.sent,
            ..sent
        }),
        false => Ok(ProbeResult {
            sent: sent.sent,
            ..received
        }),
    }
}

fn bind_in(ns: &str, addr: SocketAddr) -> Result<UdpSocket> {
    enter_netns(ns)?;
    UdpSocket::bind(addr).map_err(|e| Failure::runtime(format!("binding {addr} in {ns}: {e}")))
}

/// Receiver side: record one-way delays, or echo every datagram back.
fn receive(p: &Probe, stop: &AtomicBool, ready: mpsc::Sender<Result<()>>) -> Result<ProbeResult> {
    let sock = match bind_in(&p.to_ns, p.target) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(e.clone()));
            return Err(e);
        }
    };
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    grow_receive_buffer(&sock);
    let _ = ready.send(Ok(()));
    let mut result = ProbeResult::default();
    let mut seen = vec![false; p.count as usize];
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let now = monotonic_ns();
        if p.echo {
            let _ = sock.send_to(&buf[..n], from);
            continue;
        }
        record(&buf[..n], now, &mut seen, &mut result);
    }
    Ok(result)
}

/// Room for bursts (8 MB), so a receiver that is briefly late does not count as loss.
fn grow_receive_buffer(sock: &UdpSocket) {
    let size: libc::c_int = 8 << 20;
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: size is a live c_int of the given length. Failure leaves the default.
        let rc = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &size as *const _ as *const libc::c_void,
                len,
            )
        };
        if rc == 0 {
            return;
        }
    }
}

/// Note one datagram: its delay, and whether its number is new.
fn record(datagram: &[u8], now: u64, seen: &mut [bool], result: &mut ProbeResult) {
    if datagram.len() < 12 {
        return;
    }
    let seq = u32::from_be_bytes(datagram[0..4].try_into().unwrap_or_default()) as usize;
    let sent = u64::from_be_bytes(datagram[4..12].try_into().unwrap_or_default());
    if let Some(flag) = seen.get_mut(seq) {
        result.received += !*flag as u32;
        *flag = true;
        result.delays_ns.push(now.saturating_sub(sent));
    }
}

/// Sender side: send `count` datagrams on schedule; in echo mode, collect the replies.
fn send(p: &Probe) -> Result<ProbeResult> {
    let any: SocketAddr = match p.target {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().expect("literal"),
        SocketAddr::V6(_) => "[::]:0".parse().expect("literal"),
    };
    let sock = bind_in(&p.from_ns, any)?;
    sock.connect(p.target)?;
    let mut result = ProbeResult::default();
    let mut seen = vec![false; p.count as usize];
    let mut buf = vec![0u8; p.payload.max(12)];
    let start = monotonic_ns();
    let interval = p.interval.as_nanos() as u64;
    for seq in 0..p.count {
        echo_until(
            p,
            &sock,
            start + seq as u64 * interval,
            &mut seen,
            &mut result,
        );
        buf[0..4].copy_from_slice(&seq.to_be_bytes());
        buf[4..12].copy_from_slice(&monotonic_ns().to_be_bytes());
        if sock.send(&buf).is_ok() {
            result.sent += 1;
        }
    }
    let linger_end = monotonic_ns() + p.linger.as_nanos() as u64;
    echo_until(p, &sock, linger_end, &mut seen, &mut result);
    Ok(result)
}

/// Wait until `deadline` (ns); in echo mode, record replies meanwhile.
fn echo_until(
    p: &Probe,
    sock: &UdpSocket,
    deadline: u64,
    seen: &mut [bool],
    result: &mut ProbeResult,
) {
    let mut buf = [0u8; 65536];
    loop {
        let now = monotonic_ns();
        if now >= deadline {
            return;
        }
        if !p.echo {
            std::thread::sleep(Duration::from_nanos(deadline - now));
            return;
        }
        let _ = sock.set_read_timeout(Some(Duration::from_nanos((deadline - now).max(1_000))));
        if let Ok(n) = sock.recv(&mut buf) {
            record(&buf[..n], monotonic_ns(), seen, result);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_unique_datagrams_and_every_delay() {
        let mut seen = vec![false; 3];
        let mut r = ProbeResult {
            sent: 3,
            ..ProbeResult::default()
        };
        let dgram =
            |seq: u32, t: u64| [seq.to_be_bytes().to_vec(), t.to_be_bytes().to_vec()].concat();
        record(&dgram(1, 100), 150, &mut seen, &mut r);
        record(&dgram(1, 100), 170, &mut seen, &mut r); // duplicate
        record(&dgram(9, 100), 170, &mut seen, &mut r); // out of range
        record(&[1, 2], 170, &mut seen, &mut r); // too short
        assert_eq!(r.received, 1);
        assert_eq!(r.delays_ns, vec![50, 70]);
        assert!((r.loss() - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.quantile_ns(0.5), 50);
        assert_eq!(r.quantile_ns(1.0), 70);
    }
}
