//! One worker thread: its own event loop (mio) over its copy of every listening socket
//! and the connections it accepted, plus the timers of `/delay` and of closing
//! connections, and a periodic sweep that ends connections which have kept the server
//! waiting too long (idle keep-alive, an unfinished request head, a body that stopped
//! coming, an answer the client stopped reading). Workers share nothing but the stop
//! flag, the static root, the timeouts and the `/vary` count.
//!
//! The sweep costs a request nothing: no timer is set or moved per request, read or write
//! (a connection only counts its requests and the bytes it reads and writes), and the
//! sweep looks at every connection a few times per timeout (at most once a second).
//!
//! Every worker watches the same listening sockets (duplicated descriptors), so whichever
//! worker is free takes the next connection; this keeps the port's ownership in one socket
//! (no SO_REUSEPORT sharing with strangers) and balances even a handful of connections.

use crate::conn::{Conn, Context, Verdict};
use crate::response::http_date;
use crate::Timeouts;
use dualbench_common::timer::Timer;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The token of the bell that tells a worker to stop.
const BELL: Token = Token(usize::MAX);
/// The worker's timer (for `/delay`): epoll alone would wake up to a millisecond late.
const TIMER: Token = Token(usize::MAX - 1);
/// How long accepting pauses when the process is out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What all workers of one server share.
#[derive(Debug)]
pub struct Shared {
    pub stop: AtomicBool,
    /// Canonical path of the static root, if any.
    pub root: Option<PathBuf>,
    /// `/vary` answers so far, across the workers: picks each one's length.
    pub varied: std::sync::atomic::AtomicU64,
    /// How long a connection may keep the server waiting for a request.
    pub timeouts: Timeouts,
}

impl Shared {
    /// What a worker passes to each call into a connection: `now`, its cached `Date`,
    /// and what the workers share (the static root, the `/vary` count).
    #[inline]
    fn context<'a>(&'a self, now: Instant, date: &'a DateCache) -> Context<'a> {
        Context {
            now,
            date: &date.text,
            root: self.root.as_deref(),
            varied: &self.varied,
        }
    }
}

/// Connections by slot, with a serial number so that a stale timer finds nothing.
#[derive(Default)]
struct Slots {
    entries: Vec<Option<(u64, Conn)>>,
    free: Vec<usize>,
    serial: u64,
}

impl Slots {
    fn insert(&mut self, conn: Conn) -> usize {
        self.serial += 1;
        let entry = Some((self.serial, conn));
        match self.free.pop() {
            Some(slot) => {
                self.entries[slot] = entry;
                slot
            }
            None => {
                self.entries.push(entry);
                self.entries.len() - 1
            }
        }
    }

    fn get(&mut self, slot: usize) -> Option<(u64, &mut Conn)> {
        self.entries
            .get_mut(slot)?
            .as_mut()
            .map(|(serial, conn)| (*serial, conn))
    }

    fn remove(&mut self, slot: usize) {
        if let Some(entry) = self.entries.get_mut(slot) {
            if entry.take().is_some() {
                self.free.push(slot);
            }
        }
    }
}

/// The `Date` field's text, recomputed when the second changes.
struct DateCache {
    second: u64,
    text: [u8; 29],
}

impl DateCache {
    fn now() -> Self {
        let second = unix_seconds();
        DateCache {
            second,
            text: http_date(second),
        }
    }

    fn refresh(&mut self) {
        let second = unix_seconds();
        if second != self.second {
            *self = DateCache {
                second,
                text: http_date(second),
            };
        }
    }
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// One worker's loop and everything it owns.
pub struct Worker {
    poll: Poll,
    timer: Timer,
    /// This worker's copy of its bell (watched by `poll`).
    _bell: OwnedFd,
    listeners: Vec<TcpListener>,
    conns: Slots,
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    shared: Arc<Shared>,
    date: DateCache,
    accept_paused_until: Option<Instant>,
    /// How often connections are swept for timeouts (`None`: no timeouts, no sweep).
    sweep_period: Option<Duration>,
    /// When the next sweep is due; `None` while the worker has no connection.
    next_sweep: Option<Instant>,
    /// What the timer was last armed for, so that it is re-armed (a system call) only
    /// when the next deadline changes, not on every turn of the loop.
    armed_for: Option<Instant>,
}

/// An eventfd another thread rings to wake a worker (the worker polls its own copy).
#[derive(Debug)]
pub struct Bell(OwnedFd);

impl Bell {
    pub fn new() -> io::Result<Bell> {
        // SAFETY: plain syscall; the descriptor is checked, then owned.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Ok(Bell(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn ring(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

impl AsRawFd for Bell {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl Worker {
    /// Called on the worker's own thread: move into a private descriptor table that keeps
    /// `listeners` and `bell` (descriptors of the spawning thread, which keeps its own) at
    /// the same numbers, own those copies, and set up the event loop. Where a private
    /// table cannot be had, the worker works on duplicates in the shared table instead.
    pub fn new(listeners: &[RawFd], bell: RawFd, shared: Arc<Shared>) -> io::Result<Self> {
        let keep: Vec<RawFd> = listeners.iter().copied().chain([bell]).collect();
        let private = dualbench_common::fds::private_table(&keep).is_ok();
        let own = |fd: RawFd| -> io::Result<OwnedFd> {
            if private {
                // SAFETY: in this thread's private table the descriptor is this worker's
                // own copy; nothing else in the table refers to it.
                Ok(unsafe { OwnedFd::from_raw_fd(fd) })
            } else {
                // SAFETY: the spawning thread keeps `fd` open until this worker is ready.
                unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()
            }
        };
        let poll = Poll::new()?;
        let mut own_listeners = Vec::with_capacity(listeners.len());
        for (i, &fd) in listeners.iter().enumerate() {
            let mut listener = TcpListener::from_std(std::net::TcpListener::from(own(fd)?));
            poll.registry()
                .register(&mut listener, Token(i), Interest::READABLE)?;
            own_listeners.push(listener);
        }
        let bell = own(bell)?;
        poll.registry().register(
            &mut mio::unix::SourceFd(&bell.as_raw_fd()),
            BELL,
            Interest::READABLE,
        )?;
        let timer = Timer::new()?;
        poll.registry().register(
            &mut mio::unix::SourceFd(&timer.raw_fd()),
            TIMER,
            Interest::READABLE,
        )?;
        let sweep_period = sweep_period(&shared.timeouts);
        Ok(Worker {
            poll,
            timer,
            _bell: bell,
            listeners: own_listeners,
            conns: Slots::default(),
            timers: BinaryHeap::new(),
            shared,
            date: DateCache::now(),
            accept_paused_until: None,
            sweep_period,
            next_sweep: None,
            armed_for: None,
        })
    }

    /// Serve until the stop flag is set (and the waker rings).
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let deadline = self.next_deadline();
            if deadline != self.armed_for {
                if let Some(at) = deadline {
                    let wait = at.saturating_duration_since(Instant::now());
                    self.timer.arm(
                        dualbench_common::clock::monotonic_ns() + wait.as_nanos().max(1) as u64,
                    );
                }
                self.armed_for = deadline;
            }
            // The timer alone wakes the poll for what is due: a poll timeout as well would
            // start and cancel a kernel timer on every sleep (bench/wakeup_cost.c).
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if self.shared.stop.load(Ordering::Acquire) {
                return Ok(());
            }
            self.date.refresh();
            let now = Instant::now();
            for event in events.iter() {
                let Token(token) = event.token();
                if event.token() == BELL {
                    continue;
                }
                if event.token() == TIMER {
                    self.timer.clear();
                    self.armed_for = None;
                    continue;
                }
                if token < self.listeners.len() {
                    self.accept(token, now);
                } else {
                    let readable =
                        event.is_readable() || event.is_read_closed() || event.is_error();
                    let writable = event.is_writable() || event.is_error();
                    self.ready(token - self.listeners.len(), readable, writable, now);
                }
            }
            self.fire_timers();
            self.resume_accepting();
            if self.next_sweep.is_some_and(|at| at <= now) {
                self.sweep(now);
            }
        }
    }

    /// The earliest of the connection timers, the end of an accept pause and the sweep.
    fn next_deadline(&self) -> Option<Instant> {
        let timer = self.timers.peek().map(|Reverse((at, _, _))| *at);
        [timer, self.accept_paused_until, self.next_sweep]
            .into_iter()
            .flatten()
            .min()
    }

    /// End every connection that has kept the server waiting longer than its timeout
    /// (a body that stopped coming gets its 408 first); plan the next sweep while any
    /// connection is left.
    fn sweep(&mut self, now: Instant) {
        let timeouts = self.shared.timeouts;
        let mut left = false;
        for slot in 0..self.conns.entries.len() {
            let ctx = self.shared.context(now, &self.date);
            let Some((serial, conn)) = self.conns.get(slot) else {
                continue;
            };
            let verdict = conn.sweep(&ctx, &timeouts);
            let wake = conn.take_wake();
            left |= verdict == Verdict::Keep;
            self.settle(slot, serial, verdict, wake);
        }
        self.next_sweep = self.sweep_period.filter(|_| left).map(|p| now + p);
    }

    /// Accept every waiting connection on listener `index`.
    fn accept(&mut self, index: usize, now: Instant) {
        if self.accept_paused_until.is_some() {
            return;
        }
        loop {
            match self.listeners[index].accept() {
                Ok((stream, _)) => self.adopt(stream, now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if out_of_resources(&e) => {
                    self.accept_paused_until = Some(now + ACCEPT_BACKOFF);
                    return;
                }
                // The client gave up before we accepted (ECONNABORTED) or similar: next one.
                Err(_) => {}
            }
        }
    }

    fn adopt(&mut self, stream: TcpStream, now: Instant) {
        let _ = stream.set_nodelay(true);
        if self.next_sweep.is_none() {
            self.next_sweep = self.sweep_period.map(|p| now + p);
        }
        let slot = self.conns.insert(Conn::new(stream));
        let token = Token(self.listeners.len() + slot);
        let registered = match self.conns.get(slot) {
            Some((_, conn)) => self.poll.registry().register(
                conn.stream_mut(),
                token,
                Interest::READABLE | Interest::WRITABLE,
            ),
            None => return,
        };
        if registered.is_err() {
            self.conns.remove(slot);
        }
    }

    /// After a pause for lack of descriptors, try the listeners again (edges may be lost).
    fn resume_accepting(&mut self) {
        let Some(until) = self.accept_paused_until else {
            return;
        };
        let now = Instant::now();
        if now >= until {
            self.accept_paused_until = None;
            for index in 0..self.listeners.len() {
                self.accept(index, now);
            }
        }
    }

    fn ready(&mut self, slot: usize, readable: bool, writable: bool, now: Instant) {
        let ctx = self.shared.context(now, &self.date);
        let Some((serial, conn)) = self.conns.get(slot) else {
            return;
        };
        let verdict = conn.on_ready(readable, writable, &ctx);
        let wake = conn.take_wake();
        self.settle(slot, serial, verdict, wake);
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&Reverse((at, slot, serial))) = self.timers.peek() {
            if at > now {
                return;
            }
            self.timers.pop();
            let ctx = self.shared.context(now, &self.date);
            let Some((current, conn)) = self.conns.get(slot) else {
                continue;
            };
            if current != serial {
                continue;
            }
            let verdict = conn.on_timer(&ctx);
            let wake = conn.take_wake();
            self.settle(slot, serial, verdict, wake);
        }
    }

    fn settle(&mut self, slot: usize, serial: u64, verdict: Verdict, wake: Option<Instant>) {
        match verdict {
            Verdict::Close => self.conns.remove(slot),
            Verdict::Keep => {
                if let Some(at) = wake {
                    self.timers.push(Reverse((at, slot, serial)));
                }
            }
        }
    }
}

/// How often to sweep for `timeouts`: an eighth of the shortest, from 1 ms to 1 s, so
/// that a connection is closed less than a quarter of its timeout (and 2 s) past it.
fn sweep_period(timeouts: &Timeouts) -> Option<Duration> {
    let shortest = [
        timeouts.keepalive,
        timeouts.header,
        timeouts.body,
        timeouts.send,
    ]
    .into_iter()
    .flatten()
    .min()?;
    Some((shortest / 8).clamp(Duration::from_millis(1), Duration::from_secs(1)))
}

fn out_of_resources(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An eighth of the shortest timeout, within 1 ms to 1 s; none without timeouts.
    #[test]
    fn the_sweep_period_follows_the_shortest_timeout() {
        let period = |keepalive: Option<u64>, header: Option<u64>| {
            sweep_period(&Timeouts {
                keepalive: keepalive.map(Duration::from_millis),
                header: header.map(Duration::from_millis),
                body: None,
                send: None,
            })
        };
        assert_eq!(
            period(Some(75_000), Some(60_000)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            period(Some(300), Some(60_000)),
            Some(Duration::from_micros(37_500))
        );
        assert_eq!(period(None, Some(400)), Some(Duration::from_millis(50)));
        assert_eq!(period(Some(2), None), Some(Duration::from_millis(1)));
        assert_eq!(period(None, None), None);
        // The body and send timeouts count as well.
        let timeouts = |body: Option<u64>, send: Option<u64>| Timeouts {
            keepalive: None,
            header: None,
            body: body.map(Duration::from_millis),
            send: send.map(Duration::from_millis),
        };
        assert_eq!(
            sweep_period(&timeouts(Some(300), None)),
            Some(Duration::from_micros(37_500))
        );
        assert_eq!(
            sweep_period(&timeouts(Some(60_000), Some(800))),
            Some(Duration::from_millis(100))
        );
        assert_eq!(
            sweep_period(&Timeouts::default()),
            Some(Duration::from_secs(1))
        );
    }
}
