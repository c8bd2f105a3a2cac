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
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The token of the waker that tells a worker to stop.
pub const WAKER: Token = Token(usize::MAX);
/// The worker's timer (for `/delay`): epoll alone would wake up to a millisecond late.
const TIMER: Token = Token(usize::MAX - 1);
/// How long accepting pauses when the process is out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// epoll's own timeout is only a backstop behind the timer.
const SLACK: Duration = Duration::from_millis(5);

/// What all workers of one server share.
#[derive(Debug)]
pub struct Shared {
    pub stop: AtomicBool,
    /// Canonical path of the static root, if any.
    pub root: Option<PathBuf>,
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
    listeners: Vec<TcpListener>,
    conns: Slots,
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    shared: Arc<Shared>,
    date: DateCache,
    accept_paused_until: Option<Instant>,
}

impl Worker {
    /// Register this worker's copies of the listening sockets with its `poll`.
    pub fn new(
        poll: Poll,
        listeners: Vec<std::net::TcpListener>,
        shared: Arc<Shared>,
    ) -> io::Result<Self> {
        let mut own = Vec::with_capacity(listeners.len());
        for (i, listener) in listeners.into_iter().enumerate() {
            let mut listener = TcpListener::from_std(listener);
            poll.registry()
                .register(&mut listener, Token(i), Interest::READABLE)?;
            own.push(listener);
        }
        let timer = Timer::new()?;
        poll.registry().register(
            &mut mio::unix::SourceFd(&timer.raw_fd()),
            TIMER,
            Interest::READABLE,
        )?;
        Ok(Worker {
            poll,
            timer,
            listeners: own,
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
            if let Err(e) = self.poll.poll(&mut events, timeout.map(|t| t + SLACK)) {
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
                if event.token() == WAKER {
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
