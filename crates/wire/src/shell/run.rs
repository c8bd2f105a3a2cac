//! The event loop: read frames in batches from each interface, hand them to that
//! direction's core with the arrival time, send what the core releases in batches to the
//! other interface, sleep on a timerfd until the next frame is due (spinning for the last
//! `spin_ns` only, within a budget of half of each 2 ms), and write the stats file
//! every second and at exit.

use super::lock::{self, InterfaceLock};
use super::poll::{Epoll, Timer};
use super::pool::{Pool, Slot, SLOT_BYTES};
use super::socket::{interface_index, require_ethernet, IoBatch, PacketSocket, VNET_HDR_LEN};
use crate::core::Direction;
use crate::spec::{LinkSpec, QueueLimit};
use crate::stats::{self, Directions, Measured, Report};
use dualbench_common::clock::{monotonic_ns, unix_ns};
use dualbench_common::{Failure, Result};
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Everything `dualbench wire` needs, checked.
#[derive(Debug, Clone)]
pub struct WireConfig {
    pub a: String,
    pub b: String,
    pub a_to_b: LinkSpec,
    pub b_to_a: LinkSpec,
    /// The flag each direction's spec came from (`--a-to-b` or `--both`, ...), for errors.
    pub spec_flags: [&'static str; 2],
    pub seed: u64,
    pub stats: Option<PathBuf>,
    pub duration_ns: Option<u64>,
    /// Frame buffers shared by both directions (each `SLOT_BYTES`).
    pub buffers: usize,
    /// Busy-wait instead of sleeping when the next deadline is this close.
    pub spin_ns: u64,
    /// SCHED_FIFO priority of the process (0 = leave the scheduler alone).
    pub rt_priority: u8,
}

/// Frames per `recvmmsg`/`sendmmsg` call.
const BATCH: usize = 64;
const STATS_EVERY_NS: u64 = 1_000_000_000;
/// How often the wire checks that both interfaces still exist.
const CHECK_EVERY_NS: u64 = 200_000_000;
const TOKEN_SIGNAL: u64 = 2;
const TOKEN_TIMER: u64 = 3;

/// One direction: frames read on socket `from` go through `core` and out on socket `to`.
struct Path {
    from: usize,
    to: usize,
    spec: String,
    core: Direction<Slot>,
    measured: Measured,
    /// Frames released by the core, not yet taken by the kernel.
    outbox: VecDeque<Slot>,
}

struct Wire {
    config: WireConfig,
    /// Held for the whole run: no second wire on either interface.
    _claims: [InterfaceLock; 2],
    sockets: [PacketSocket; 2],
    paths: [Path; 2],
    pool: Pool,
    batch: IoBatch,
    scratch: Vec<u8>,
    start_ns: u64,
    start_unix_ns: u64,
}

/// Run until SIGTERM/SIGINT/SIGHUP or the duration ends; the stats file is written at
/// exit. The interfaces and the stats path are checked before anything starts.
pub fn run(config: WireConfig) -> Result<()> {
    require_ethernet("--a", &config.a)?;
    require_ethernet("--b", &config.b)?;
    // Each direction's queue takes the frames read on its way in.
    queue_takes_a_frame(config.spec_flags[0], &config.a_to_b, &config.a)?;
    queue_takes_a_frame(config.spec_flags[1], &config.b_to_a, &config.b)?;
    if let Some(path) = &config.stats {
        stats::check_writable(path)?;
    }
    let stop = Arc::new(AtomicUsize::new(0));
    let (signal_rx, signal_tx) = UnixStream::pair()?;
    signal_rx.set_nonblocking(true)?;
    for sig in dualbench_common::signals::stop_signals() {
        signal_hook::flag::register_usize(sig, Arc::clone(&stop), sig as usize)?;
        signal_hook::low_level::pipe::register(sig, signal_tx.try_clone()?)?;
    }
    // SAFETY: prctl with an integer argument; lowers timer slack to 1 ns for this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    realtime(config.rt_priority)?;
    let mut wire = Wire::open(config)?;
    match wire.event_loop(&stop, &signal_rx) {
        Ok(stopped_by) => wire.write_stats(monotonic_ns(), Some(stopped_by)),
        Err(failure) => {
            // Save what was measured; the failure is what gets reported.
            let _ = wire.write_stats(monotonic_ns(), Some(format!("error: {failure}")));
            Err(failure)
        }
    }
}

/// A byte queue of `queue` that holds no full-size frame read on an interface of this MTU
/// (its Ethernet header included), as (queue bytes, frame bytes): every such frame would
/// be dropped at the queue.
fn frame_over_queue(queue: Option<QueueLimit>, mtu: u32) -> Option<(u64, u64)> {
    let frame = u64::from(mtu) + ETHERNET_HEADER;
    match queue {
        Some(QueueLimit::Bytes(n)) if n < frame => Some((n, frame)),
        _ => None,
    }
}

const ETHERNET_HEADER: u64 = 14;

fn queue_takes_a_frame(flag: &str, spec: &LinkSpec, iface: &str) -> Result<()> {
    let Ok(mtu) = dualbench_common::netif::mtu(iface) else {
        return Ok(()); // opening the interface reports it
    };
    match frame_over_queue(spec.queue, mtu) {
        None => Ok(()),
        Some((queue, frame)) => Err(Failure::usage(format!(
            "{flag}: a queue of {queue} bytes holds no full-size frame from {iface} (MTU {mtu}: {frame} bytes), so every one would be dropped: give queue={frame}B or more, or a count of packets"
        ))),
    }
}

/// The pool of `n` frame buffers, or an error saying how much was asked when the system
/// refuses it.
fn frame_buffers(n: usize) -> Result<Pool> {
    Pool::new(n).ok_or_else(|| {
        Failure::runtime(format!(
            "--buffers {n}: the system refused {} bytes of address space for them ({SLOT_BYTES} bytes each, backed only as used); give fewer --buffers",
            n as u128 * SLOT_BYTES as u128
        ))
    })
}

impl Wire {
    fn open(config: WireConfig) -> Result<Self> {
        let claims = [
            lock::claim(&config.a, interface_index(&config.a)?)?,
            lock::claim(&config.b, interface_index(&config.b)?)?,
        ];
        let sockets = [
            PacketSocket::open(&config.a)?,
            PacketSocket::open(&config.b)?,
        ];
        let path = |from, to, spec: &LinkSpec, dir| Path {
            from,
            to,
            spec: spec.to_string(),
            core: Direction::new(spec, config.seed, dir),
            measured: Measured::default(),
            outbox: VecDeque::with_capacity(BATCH),
        };
        let paths = [path(0, 1, &config.a_to_b, 0), path(1, 0, &config.b_to_a, 1)];
        Ok(Wire {
            _claims: claims,
            pool: frame_buffers(config.buffers)?,
            sockets,
            paths,
            batch: IoBatch::with_capacity(BATCH),
            scratch: vec![0u8; SLOT_BYTES],
            start_ns: monotonic_ns(),
            start_unix_ns: unix_ns(),
            config,
        })
    }

    /// Returns why it stopped.
    fn event_loop(&mut self, stop: &AtomicUsize, signal_rx: &UnixStream) -> Result<String> {
        let mut waiter = Waiter::new(&self.sockets, signal_rx, self.config.spin_ns)?;
        // A first stats file at once: it tells a supervisor the wire is forwarding, and a
        // bad --stats path fails now rather than a second into the run.
        self.write_stats(monotonic_ns(), None)?;
        let end = self.config.duration_ns.map(|d| self.start_ns + d);
        let mut next_stats = self.start_ns + STATS_EVERY_NS;
        let mut next_check = self.start_ns + CHECK_EVERY_NS;
        let mut ready = Vec::with_capacity(8);
        loop {
            let now = monotonic_ns();
            if let Some(why) = stopped(stop, end, now) {
                return Ok(why);
            }
            for i in 0..2 {
                self.deliver(i, now)?;
            }
            if now >= next_stats {
                self.write_stats(now, None)?;
                next_stats = now + STATS_EVERY_NS;
            }
            if now >= next_check {
                for socket in &self.sockets {
                    interface_alive(socket, "")?;
                }
                next_check = now + CHECK_EVERY_NS;
            }
            let next = [self.next_wake(), Some(next_stats), Some(next_check), end]
                .into_iter()
                .flatten()
                .min();
            waiter.wait_until(next.unwrap_or(next_stats), &mut ready)?;
            for &token in &ready {
                match token {
                    0 | 1 => self.receive(token as usize)?,
                    TOKEN_TIMER => waiter.timer.clear(),
                    _ => drain(signal_rx),
                }
            }
        }
    }

    /// The earliest time something must be sent: a due frame, or a retry of a full outbox.
    fn next_wake(&self) -> Option<u64> {
        let retry = |p: &Path| (!p.outbox.is_empty()).then(|| monotonic_ns() + 50_000);
        self.paths
            .iter()
            .flat_map(|p| [p.core.next_due(), retry(p)])
            .flatten()
            .min()
    }

    /// Read one batch from socket `side` into the direction that starts there.
    fn receive(&mut self, side: usize) -> Result<()> {
        let path = &mut self.paths[side];
        let socket = &self.sockets[side];
        self.batch.clear();
        let mut slots = [0u32; BATCH];
        let mut taken = 0;
        while taken < BATCH {
            let Some(index) = self.pool.take() else { break };
            slots[taken] = index;
            self.batch.push(self.pool.ptr(index), SLOT_BYTES);
            taken += 1;
        }
        if taken == 0 {
            // No free buffer: read one frame into scratch and count it as a queue drop.
            self.batch.push(self.scratch.as_mut_ptr(), SLOT_BYTES);
            if socket_alive(socket, socket.recv_batch(&mut self.batch))? == 1 {
                path.core
                    .drop_overflow(self.batch.received(0).0.saturating_sub(VNET_HDR_LEN) as u32);
            }
            return Ok(());
        }
        let received = socket.recv_batch(&mut self.batch);
        let got = match socket_alive(socket, received) {
            Ok(got) => got,
            Err(e) => {
                slots[..taken].iter().for_each(|&i| self.pool.give(i));
                return Err(e);
            }
        };
        let now = monotonic_ns();
        for (i, &index) in slots[..got].iter().enumerate() {
            let (len, truncated) = self.batch.received(i);
            if truncated || len <= VNET_HDR_LEN {
                path.measured.dropped_oversize += truncated as u64;
                self.pool.give(index);
                continue;
            }
            let slot = Slot {
                index,
                len: len as u32,
                arrived: now,
            };
            path.core
                .push(now, (len - VNET_HDR_LEN) as u32, slot, &mut self.pool);
        }
        for &index in slots[got..taken].iter().rev() {
            self.pool.give(index);
        }
        Ok(())
    }

    /// Move frames due by `now` into the outbox and send the outbox in batches; an error
    /// if the interface to send on no longer exists.
    fn deliver(&mut self, i: usize, now: u64) -> Result<()> {
        let path = &mut self.paths[i];
        while let Some((slot, _, _)) = path.core.pop_due(now) {
            path.outbox.push_back(slot);
        }
        let socket = &self.sockets[path.to];
        while !path.outbox.is_empty() {
            self.batch.clear();
            for slot in path.outbox.iter().take(BATCH) {
                self.batch
                    .push(self.pool.ptr(slot.index), slot.len as usize);
            }
            let sent_at = monotonic_ns();
            let (sent, failed) = match socket.send_batch(&mut self.batch) {
                Ok(0) => return Ok(()), // would block: retry soon
                Ok(n) => (n, 0),
                Err(e) => (socket_alive(socket, Err(e))?, 1),
            };
            for slot in path.outbox.drain(..sent + failed) {
                if sent > 0 {
                    let added = sent_at.saturating_sub(slot.arrived).max(1);
                    path.measured.delay.saturating_record(added);
                }
                self.pool.give(slot.index);
            }
            path.measured.send_errors += failed as u64;
        }
        Ok(())
    }

    fn write_stats(&mut self, now: u64, stopped_by: Option<String>) -> Result<()> {
        for p in self.paths.iter_mut() {
            p.measured.dropped_kernel += self.sockets[p.from].kernel_drops();
        }
        let Some(file) = &self.config.stats else {
            return Ok(());
        };
        let dir = |p: &Path| {
            stats::direction_report(
                p.spec.clone(),
                p.core.counters(),
                &p.measured,
                p.core.in_flight() + p.outbox.len(),
            )
        };
        let report = Report {
            schema: stats::SCHEMA.into(),
            a: self.config.a.clone(),
            b: self.config.b.clone(),
            seed: self.config.seed,
            start_unix_ns: self.start_unix_ns,
            elapsed_s: (now - self.start_ns) as f64 / 1e9,
            r#final: stopped_by.is_some(),
            stopped_by,
            directions: Directions {
                a_to_b: dir(&self.paths[0]),
                b_to_a: dir(&self.paths[1]),
            },
        };
        stats::write(file, &report)
    }
}

/// Sleeping between events: epoll over both sockets, the signal pipe and a timerfd, with
/// a busy-wait for the last `spin_ns` before a deadline while the budget allows.
struct Waiter {
    epoll: Epoll,
    timer: Timer,
    budget: SpinBudget,
    spin_ns: u64,
}

impl Waiter {
    fn new(sockets: &[PacketSocket; 2], signal_rx: &UnixStream, spin_ns: u64) -> Result<Self> {
        let epoll = Epoll::new()?;
        let timer = Timer::new()?;
        epoll.add(sockets[0].as_raw_fd(), 0)?;
        epoll.add(sockets[1].as_raw_fd(), 1)?;
        epoll.add(signal_rx.as_raw_fd(), TOKEN_SIGNAL)?;
        epoll.add(timer.as_raw_fd(), TOKEN_TIMER)?;
        let budget = SpinBudget::default();
        Ok(Waiter {
            epoll,
            timer,
            budget,
            spin_ns,
        })
    }

    /// Wait for an event or until `deadline` (ns); the ready tokens land in `ready`.
    fn wait_until(&mut self, deadline: u64, ready: &mut Vec<u64>) -> Result<()> {
        let now = monotonic_ns();
        let spin_ns = if self.budget.allows(now) {
            self.spin_ns
        } else {
            0
        };
        let spin = spin_ns > 0 && deadline <= now + spin_ns;
        if !spin {
            self.timer.arm(deadline.saturating_sub(spin_ns))?;
        }
        self.epoll.wait(if spin { 0 } else { -1 }, ready)?;
        if spin {
            self.budget.spend(monotonic_ns() - now);
        }
        Ok(())
    }
}

/// Limits busy-waiting to half of each 2 ms. Under SCHED_FIFO a wire that spins all the
/// time would have the kernel pause it for tens of ms to let other tasks run (RT
/// throttling / the fair server), which is far worse than a late timer. The window is
/// short so that a spin never holds a core from the hosts' own processes (the senders and
/// receivers whose packets the wire carries) for more than 1 ms at a stretch; with the
/// 100 ms window it had, a busy wire could take 50 ms in one piece.
#[derive(Debug, Default)]
struct SpinBudget {
    window_start: u64,
    spent: u64,
}

impl SpinBudget {
    const WINDOW_NS: u64 = 2_000_000;
    const SHARE_NS: u64 = Self::WINDOW_NS / 2;

    fn allows(&mut self, now: u64) -> bool {
        if now >= self.window_start + Self::WINDOW_NS {
            self.window_start = now;
            self.spent = 0;
        }
        self.spent < Self::SHARE_NS
    }

    fn spend(&mut self, ns: u64) {
        self.spent += ns;
    }
}

/// Run under SCHED_FIFO so frames leave on time even when every core is busy (the
/// kernel's RT throttling still leaves 5% of each second to other tasks).
fn realtime(priority: u8) -> Result<()> {
    if priority == 0 {
        return Ok(());
    }
    let param = libc::sched_param {
        sched_priority: priority as i32,
    };
    // SAFETY: param is live during the call; pid 0 = this process.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(Failure::runtime(format!(
            "setting SCHED_FIFO priority {priority}: {}; run as root or pass --rt-priority 0",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// An I/O error while the interface still exists (it went down, say) is a pause, not an
/// end: frames simply do not arrive or leave. An interface that no longer exists (or whose
/// name now belongs to another one) ends the run.
fn socket_alive(socket: &PacketSocket, result: std::io::Result<usize>) -> Result<usize> {
    match result {
        Ok(n) => Ok(n),
        Err(e) => interface_alive(socket, &format!(" ({e})")).map(|()| 0),
    }
}

/// Fail if the socket's interface no longer exists; `why` ends the interface's mention.
fn interface_alive(socket: &PacketSocket, why: &str) -> Result<()> {
    if socket.interface_exists() {
        return Ok(());
    }
    Err(Failure::runtime(format!(
        "interface {} disappeared{why}; stopping",
        socket.name
    )))
}

/// Why to stop now, if at all: the signal's name, or "duration".
fn stopped(stop: &AtomicUsize, end: Option<u64>, now: u64) -> Option<String> {
    match stop.load(Ordering::Relaxed) {
        0 => end.filter(|&e| now >= e).map(|_| "duration".into()),
        sig => Some(dualbench_common::signals::name(sig as i32).into()),
    }
}

fn drain(mut rx: &UnixStream) {
    let mut buf = [0u8; 64];
    while let Ok(n) = std::io::Read::read(&mut rx, &mut buf) {
        if n == 0 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `queue=1000B` on an MTU-1500 link dropped every full-size frame without a word.
    #[test]
    fn a_byte_queue_must_hold_one_full_frame() {
        assert_eq!(
            frame_over_queue(Some(QueueLimit::Bytes(1000)), 1500),
            Some((1000, 1514))
        );
        assert_eq!(
            frame_over_queue(Some(QueueLimit::Bytes(1513)), 1500),
            Some((1513, 1514))
        );
        assert_eq!(frame_over_queue(Some(QueueLimit::Bytes(1514)), 1500), None);
        assert_eq!(frame_over_queue(Some(QueueLimit::Packets(1)), 9000), None);
        assert_eq!(frame_over_queue(None, 1500), None);
        let spec = crate::spec::parse_link_spec("rate=1Mbit,queue=1000B").unwrap();
        let e = queue_takes_a_frame("--a-to-b", &spec, "lo").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "--a-to-b: a queue of 1000 bytes holds no full-size frame from lo (MTU 65536: 65550 bytes), so every one would be dropped: give queue=65550B or more, or a count of packets"
        );
    }

    #[test]
    fn refused_buffers_are_one_line_and_exit_1() {
        let e = frame_buffers(1 << 44)
            .err()
            .expect("17 × 2^56 bytes cannot be mapped");
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.message,
            "--buffers 17592186044416: the system refused 1224979098644774912 bytes of address space for them (69632 bytes each, backed only as used); give fewer --buffers"
        );
    }

    #[test]
    fn spin_budget_is_half_of_each_window() {
        let mut b = SpinBudget::default();
        assert!(b.allows(0));
        b.spend(999_999);
        assert!(b.allows(1_000_000));
        b.spend(1);
        assert!(!b.allows(1_999_999));
        assert!(b.allows(2_000_000), "a new window starts afresh");
    }
}
