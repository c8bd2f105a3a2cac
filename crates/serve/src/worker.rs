//! One worker thread: its own event loop (mio) over its copy of every listening socket
//! and the connections it accepted, plus the timers of `/delay` and of closing
//! connections. Workers share nothing but the stop flag and the static root.
//!
//! Every worker watches the same listening sockets (duplicated descriptors), so whichever
//! worker is free takes the next connection; this keeps the port's ownership in one socket
//! (no SO_REUSEPORT sharing with strangers) and balances even a handful of connections.

use crate::conn::{Conn, Context, Verdict};
use crate::response::http_date;
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
        })
    }

    /// Serve until the stop flag is set (and the waker rings).
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let timeout = self.next_timeout();
            if let Some(wait) = timeout {
                self.timer
                    .arm(dualbench_common::clock::monotonic_ns() + wait.as_nanos().max(1) as u64);
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
        }
    }

    fn next_timeout(&self) -> Option<Duration> {
        let timer = self.timers.peek().map(|Reverse((at, _, _))| *at);
        let deadline = match (timer, self.accept_paused_until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        deadline.map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// Accept every waiting connection on listener `index`.
    fn accept(&mut self, index: usize, now: Instant) {
        if self.accept_paused_until.is_some() {
            return;
        }
        loop {
            match self.listeners[index].accept() {
                Ok((stream, _)) => self.adopt(stream),
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

    fn adopt(&mut self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
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
        let ctx = Context {
            now,
            date: &self.date.text,
            root: self.shared.root.as_deref(),
            varied: &self.shared.varied,
        };
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
            let ctx = Context {
                now,
                date: &self.date.text,
                root: self.shared.root.as_deref(),
                varied: &self.shared.varied,
            };
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

fn out_of_resources(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}
