//! One worker: a thread with its own event loop (mio), its own connections, histograms
//! and counters; nothing shared on the hot path but a progress counter only it writes.
//!
//! The loop: take the slots that are due from the schedule (closed loop: while fewer than
//! the worker's share of `-c` are in flight; open loop: at their intended times, or late,
//! keeping those times, once there is room), put each on a ready connection to its target
//! or open a new one (with keep-alive, while the worker holds fewer than its share of
//! `-c`; else the slot waits, see [`Slot`]), then drive sockets: connected → request
//! written → response parsed → record. Here: the loop, the dispatch of slots onto
//! connections, deadlines, a complete response's record and the worker's result;
//! [`socket`]: each connection's socket I/O.

mod socket;

use super::conn::{self, Conn, OpenError, Pending, Phase};
use super::deadlines::{Deadline, Deadlines};
use super::{Plan, Shared};
use crate::record::{AbSample, Outcome, Record};
use crate::summary::FamilyStats;
use dualbench_common::timer::Timer;
use dualbench_common::Failure;
use dualbench_pace::{Arrival, Pace, Schedule};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What arrived of a response: status, wire bytes, body bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Got {
    status: u16,
    bytes: u64,
    body: u64,
}

/// What the poll reported for a connection.
#[derive(Debug, Clone, Copy, Default)]
struct Ready {
    readable: bool,
    writable: bool,
    /// The peer shut down its side (FIN seen).
    peer_closed: bool,
    /// The socket has an error.
    failed: bool,
}

/// A slot to start: its number, target and intended time. One that finds no connection to
/// its target free while the worker has all the connections it may open (keep-alive: its
/// share of `-c`) waits in the worker's `deferred` until one to its target is free:
/// opening one more would hold more than `-c` open, and a server that gives each
/// connection a process (Apache prefork) would leave the extra ones waiting for a process
/// until another's keep-alive ran out. The slots behind it start meanwhile on the
/// connections that are free, so at most the worker's `defer_window` slots start out of
/// order; at that, or when no connection to its target will come free, an idle connection
/// to another target is closed for it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    slot: u64,
    target: usize,
    /// Open loop: the schedule's intended start (closed loop: unused, a waiting slot
    /// starts when it is sent).
    intended_ns: u64,
}

fn token(key: usize, id: u64) -> Token {
    Token(key | (((id >> 8) as usize) << 32))
}

/// A slot is "late" when it starts more than this after its intended time.
pub const LATE_NS: u64 = 1_000_000;
const READ_BUF: usize = 64 * 1024;
/// The longest a worker sleeps: how soon it sees the stop flag.
const MAX_TICK_NS: u64 = 50_000_000;
/// How many slots a dispatch starts between readings of the clock and the stop flag: a
/// million connections to open (`-c 1000000`) stop at `-t` or Ctrl-C, not after the last.
const DISPATCH_BATCH: usize = 1024;
/// The fewest slots that may wait for a connection to their target (see [`Slot`]),
/// whatever the worker's share of `-c`. At 16, a worker that fell behind on one target
/// for a moment (its server's thread preempted) filled it and traded connections back and
/// forth: 171 opened at `-c 10` over two families in 40,000 requests, 29 at 64
/// (`docs/engine.md`, "`-c` with several targets").
const MIN_DEFER_WINDOW: usize = 64;
/// The poll token of the worker's timer (connections use their slab keys).
const TIMER: Token = Token(usize::MAX);
/// Records a worker keeps before it hands them to the records writer (when there is one):
/// about 1 MB, so a long run with `--records` holds a few batches, not every request.
pub const RECORD_BATCH: usize = 8192;

/// What a worker hands back when it ends.
#[derive(Debug, Default)]
pub struct WorkerResult {
    pub families: [FamilyStats; 2],
    pub records: Vec<Record>,
    /// The `Server:` header of this worker's first complete response, once it came.
    pub first_server: Option<String>,
    /// The same, when that response was the run's first, which set the document length:
    /// the report's "Server Software".
    pub document_server: Option<String>,
    /// ab's figures of every complete request, when the plan asks for them.
    pub samples: Vec<AbSample>,
    pub last_end_ns: u64,
    /// Open loop: the window the schedule offered its slots over, once it ran out
    /// ([`Schedule::window_ns`]).
    pub window_ns: Option<u64>,
    /// When this worker's loop first ran: the start of its first request in closed loop.
    pub began_ns: u64,
    /// The most connections this worker had open at once.
    pub peak_conns: usize,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub fatal: Option<Failure>,
}

pub struct Worker {
    index: usize,
    plan: Arc<Plan>,
    shared: Arc<Shared>,
    poll: Poll,
    timer: Timer,
    conns: Slab<Conn>,
    /// Per target: connections that can take another request now.
    ready: Vec<Vec<usize>>,
    /// Per target: connections open (or opening).
    open: Vec<usize>,
    /// Keep-alive: the most connections this worker has open at once, its share of `-c`
    /// (`usize::MAX` without keep-alive, where a connection ends with its request).
    max_conns: usize,
    /// Slots waiting for a connection to their target, oldest first: they fell due when
    /// every connection the worker may have was open, none to their target free.
    deferred: VecDeque<Slot>,
    /// How many slots may wait in `deferred` before a connection to another target is
    /// closed to open one to the oldest's target.
    defer_window: usize,
    deadlines: Deadlines,
    schedule: Schedule,
    schedule_done: bool,
    next_due_ns: u64,
    /// Slots are handed to workers this many at a time (see [`Worker::owns`]).
    owner_block: u64,
    in_flight: usize,
    cap: usize,
    next_conn: u64,
    binds_used: [usize; 2],
    /// Emptied request queues of closed connections, reused by new ones (so opening a
    /// connection allocates nothing once the run is warm).
    spare_queues: Vec<VecDeque<Pending>>,
    buf: Vec<u8>,
    out: WorkerResult,
}

impl Worker {
    pub fn new(index: usize, plan: Arc<Plan>, shared: Arc<Shared>) -> io::Result<Worker> {
        let w = plan.workers;
        let share = plan.concurrency / w + usize::from(index < plan.concurrency % w);
        let cap = share * plan.pipeline;
        let schedule = Schedule::new(plan.arrival, plan.max_slots, plan.max_ns);
        let owner_block = if plan.arrival == Arrival::Closed {
            plan.interleave.cycle().len() as u64
        } else {
            1
        };
        let ntargets = plan.targets.len();
        let defer_window = share.max(MIN_DEFER_WINDOW);
        let keep = match (plan.keep_records, &plan.record_batches) {
            (false, _) => 0,
            (true, Some(_)) => RECORD_BATCH,
            (true, None) => plan
                .max_slots
                .map_or(1024, |n| (n as usize / w).min(1 << 24)),
        };
        // Every socket this worker opens lives in its own descriptor table, so the open-file
        // limit applies per worker rather than to the whole process. Where unshare is not
        // allowed (a seccomp filter), the worker shares the process's table and the limit
        // is the process's: EMFILE then says so, as before.
        let _ = dualbench_common::fds::private_table(&[]);
        let poll = Poll::new()?;
        let timer = Timer::new()?;
        poll.registry().register(
            &mut mio::unix::SourceFd(&timer.raw_fd()),
            TIMER,
            Interest::READABLE,
        )?;
        let mut out = WorkerResult {
            records: Vec::with_capacity(keep),
            ..Default::default()
        };
        // The histograms of each family the run has targets in are made here, before the
        // run's clock starts: made at the family's first response, they stalled the loop
        // ~0.4 ms mid-run (188 KiB of counts each, written out).
        for t in &plan.targets {
            out.families[t.family.index()].hist.allocate();
        }
        Ok(Worker {
            index,
            poll,
            timer,
            conns: Slab::with_capacity(share.max(1)),
            ready: vec![Vec::new(); ntargets],
            open: vec![0; ntargets],
            max_conns: if plan.keepalive { share } else { usize::MAX },
            deferred: VecDeque::new(),
            defer_window,
            deadlines: Deadlines::with_capacity(cap.max(1)),
            schedule,
            schedule_done: cap == 0,
            next_due_ns: 0,
            owner_block,
            in_flight: 0,
            cap,
            next_conn: 0,
            binds_used: [0, 0],
            spare_queues: Vec::new(),
            buf: vec![0u8; READ_BUF],
            out,
            plan,
            shared,
        })
    }

    /// Run until the schedule is done and nothing is in flight, or the run is stopped. At
    /// the time limit, or when a worker meets a limit of this machine (local ports, open
    /// files), nothing new starts and what is in flight finishes.
    pub fn run(mut self) -> WorkerResult {
        let mut events = Events::with_capacity(1024);
        let mut now = self.shared.elapsed_ns();
        self.out.began_ns = now;
        loop {
            if self.shared.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.plan.max_ns.is_some_and(|m| now >= m) {
                // Time is up (the schedule has handed out its last slot): start nothing
                // more, not even a late slot; what is in flight may finish, each request
                // still bounded by its own timeout, so every one is classified. Slots that
                // fell due but never started are counted unsent.
                self.count_unsent(now);
            }
            if self.shared.drain.load(Ordering::Relaxed) {
                // A worker met a limit of this machine: as at the time limit.
                self.count_unsent(now);
            }
            if let Err(f) = self.dispatch(now) {
                // No socket for the next request (out of local ports, open files): no
                // worker starts another, but the requests already sent finish, each within
                // its timeout, so the report has them and the run still ends with `f`.
                self.out.fatal.get_or_insert(f);
                self.shared.drain.store(true, Ordering::Relaxed);
                self.count_unsent(now);
            }
            if self.schedule_done && self.in_flight == 0 && self.deferred.is_empty() {
                break;
            }
            // The poll itself has no timeout: the timer wakes it for what is due, or ticks
            // (to see the stop flag), so no sleep pays for a kernel timer of its own.
            let wait = self.poll_timeout(now);
            if wait < MAX_TICK_NS {
                self.timer.arm(self.shared.start_ns() + now + wait.max(1));
            } else {
                self.timer.tick(MAX_TICK_NS);
            }
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.fail_run(Failure::runtime(format!("event loop failed: {e}")));
                    break;
                }
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.timer.clear();
                    continue;
                }
                // The token carries the connection's id, so an event for a connection that
                // closed earlier in this batch never reaches a new one in the same slot.
                let key = ev.token().0 & 0xffff_ffff;
                if self
                    .conns
                    .get(key)
                    .is_some_and(|c| token(key, c.id) == ev.token())
                {
                    let failed = ev.is_error() || (ev.is_read_closed() && !ev.is_readable());
                    let ready = Ready {
                        readable: ev.is_readable() || ev.is_read_closed(),
                        writable: ev.is_writable(),
                        peer_closed: ev.is_read_closed(),
                        failed,
                    };
                    self.drive(key, ready);
                }
            }
            now = self.shared.elapsed_ns();
            self.expire(now);
        }
        self.finish()
    }

    fn fail_run(&mut self, f: Failure) {
        self.out.fatal = Some(f);
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    fn poll_timeout(&self, now: u64) -> u64 {
        let mut t = MAX_TICK_NS;
        if let Some(d) = self.deadlines.next_ns() {
            t = t.min(d.saturating_sub(now));
        }
        if !self.schedule_done && self.in_flight < self.cap && self.next_due_ns > now {
            t = t.min(self.next_due_ns - now);
        }
        if let (Some(m), false) = (self.plan.max_ns, self.schedule_done) {
            t = t.min(m.saturating_sub(now));
        }
        t
    }

    /// Start every slot that is due and has room: first those waiting for a connection to
    /// their target, then new ones. In open loop, slots that fall due while every
    /// connection is busy stay in the schedule (it hands them out one at a time, each with
    /// its intended time) and start late when room frees up; nothing queues per slot.
    fn dispatch(&mut self, mut now: u64) -> Result<(), Failure> {
        if !self.deferred.is_empty() {
            self.start_deferred(now)?;
        }
        let mut started = 0;
        while self.in_flight < self.cap && !self.schedule_done {
            started += 1;
            if started % DISPATCH_BATCH == 0 {
                now = self.shared.elapsed_ns();
                let time_up = self.plan.max_ns.is_some_and(|m| now >= m);
                if time_up
                    || self.shared.stop.load(Ordering::Relaxed)
                    || self.shared.drain.load(Ordering::Relaxed)
                {
                    break;
                }
            }
            match self.schedule.pace(now) {
                Pace::Stop => self.schedule_done = true,
                Pace::Wait(ns) => {
                    // Another worker's slot is not waited for: passed over now, so this
                    // worker wakes only for its own.
                    if !self.owns(self.schedule.issued()) {
                        self.schedule.take();
                        continue;
                    }
                    self.next_due_ns = now + ns;
                    break;
                }
                Pace::Go { intended_ns } => {
                    let slot = self.schedule.issued() - 1;
                    if self.owns(slot) {
                        let target = self.plan.interleave.pick(slot);
                        let d = Slot {
                            slot,
                            target,
                            intended_ns,
                        };
                        if !self.start(d, now)? {
                            self.deferred.push_back(d);
                            if self.deferred.len() >= self.defer_window {
                                // The window is full: its oldest slot takes a connection
                                // from another target, or, with none idle, the worker
                                // waits for one to end.
                                if !self.start_deferred(now)? {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
        if self.schedule_done && !self.deferred.is_empty() {
            // Nothing new will come to free a connection to the waiting slots' targets.
            self.start_deferred(now)?;
        }
        Ok(())
    }

    /// Start the waiting slots that can start now, oldest first: on a free connection to
    /// their target, or on a connection opened for them, closing an idle one to another
    /// target when the window is full, when the schedule is done, or (open loop, where a
    /// slot waits in real time) when no connection to the target is busy, so none will
    /// come free. False when the window is still full.
    fn start_deferred(&mut self, now: u64) -> Result<bool, Failure> {
        let mut i = 0;
        while i < self.deferred.len() && self.in_flight < self.cap {
            let d = self.deferred[i];
            if self.start(d, now)? {
                self.deferred.remove(i);
                continue;
            }
            let busy = self.open[d.target] > self.ready[d.target].len();
            let must = i == 0 && self.deferred.len() >= self.defer_window
                || self.schedule_done && !busy
                || self.plan.arrival != Arrival::Closed && !busy;
            if must {
                if let Some(idle) = self.idle_elsewhere(d.target) {
                    self.close(idle, None, now);
                    let started = self.start(d, now)?;
                    debug_assert!(started, "a connection was closed to make room");
                    self.deferred.remove(i);
                    continue;
                }
            }
            i += 1;
        }
        Ok(self.deferred.len() < self.defer_window)
    }

    /// An idle connection (nothing in flight on it) to a target other than `target`, from
    /// the target with the most free connections.
    fn idle_elsewhere(&self, target: usize) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (t, keys) in self.ready.iter().enumerate() {
            if t == target || best.is_some_and(|(n, _)| n >= keys.len()) {
                continue;
            }
            let idle = keys.iter().rev().find(|&&k| {
                let c = &self.conns[k];
                c.pending.is_empty() && c.phase == Phase::Open
            });
            if let Some(&k) = idle {
                best = Some((keys.len(), k));
            }
        }
        best.map(|(_, k)| k)
    }

    /// End the schedule. Open loop: this worker's slots that fell due by `now` but never
    /// started (waiting for a connection, or still in the schedule) are counted as unsent.
    fn count_unsent(&mut self, now: u64) {
        let open_loop = self.plan.arrival != Arrival::Closed;
        for d in std::mem::take(&mut self.deferred) {
            if open_loop {
                let f = self.plan.targets[d.target].family;
                self.out.families[f.index()].unsent += 1;
            }
        }
        if open_loop && !self.schedule_done {
            while let Pace::Go { .. } = self.schedule.pace(now) {
                let slot = self.schedule.issued() - 1;
                if self.owns(slot) {
                    let f = self.plan.targets[self.plan.interleave.pick(slot)].family;
                    self.out.families[f.index()].unsent += 1;
                }
            }
        }
        self.schedule_done = true;
    }

    /// Which slots are this worker's. Closed loop: whole interleaving cycles, so each worker
    /// alone keeps the ratio however far it gets. Open loop: one slot at a time, in turn, so
    /// every worker's share of `-c` is at work all the time: slots are due in order whoever
    /// sends them, and whole cycles (thousands of slots with a long address list) left all
    /// but one worker idle for a cycle's time, and the run on that one's share of `-c`.
    fn owns(&self, slot: u64) -> bool {
        (slot / self.owner_block) % self.plan.workers as u64 == self.index as u64
    }

    /// Start slot `d` on a free connection to its target, or on a new one while the worker
    /// has fewer than it may open. False, and nothing done, when it has to wait.
    fn start(&mut self, d: Slot, now: u64) -> Result<bool, Failure> {
        let target = d.target;
        let intended = if self.plan.arrival == Arrival::Closed {
            now
        } else {
            d.intended_ns
        };
        let pending = Pending {
            slot: d.slot,
            intended_ns: intended,
            start_ns: now,
            connect_ns: 0,
            sent_ns: 0,
            first_byte_ns: 0,
            reused: false,
        };
        while let Some(key) = self.ready[target].pop() {
            let c = &mut self.conns[key];
            c.in_ready = false;
            if c.has_room(self.plan.pipeline) {
                c.pending.push_back(Pending {
                    reused: c.served > 0 || !c.pending.is_empty(),
                    ..pending
                });
                if c.has_room(self.plan.pipeline) {
                    c.in_ready = true;
                    self.ready[target].push(key);
                }
                self.begin(target, intended, now);
                self.arm_deadline(key, d.slot, now);
                // A connection still connecting sends what is queued when its connect
                // completes; driving it now would take it for connected.
                if self.conns[key].phase == Phase::Open {
                    self.drive(
                        key,
                        Ready {
                            writable: true,
                            ..Ready::default()
                        },
                    );
                }
                return Ok(true);
            }
        }
        if self.conns.len() >= self.max_conns {
            return Ok(false);
        }
        self.begin(target, intended, now);
        self.connect(target, pending, now).map(|_| true)
    }

    /// A request starts: it is in flight, and late if it starts over 1 ms after its time.
    fn begin(&mut self, target: usize, intended: u64, now: u64) {
        if now.saturating_sub(intended) > LATE_NS {
            let family = self.plan.targets[target].family;
            self.out.families[family.index()].late += 1;
        }
        self.in_flight += 1;
    }

    /// Open a connection for `pending`: the new connection's key, or None when opening it
    /// failed in a way that ends just this request (recorded).
    fn connect(
        &mut self,
        target: usize,
        pending: Pending,
        now: u64,
    ) -> Result<Option<usize>, Failure> {
        let t = &self.plan.targets[target];
        let fam = t.family.index();
        let binds = &self.plan.bind[fam];
        let source = (!binds.is_empty()).then(|| {
            let i = self.binds_used[fam] * self.plan.workers + self.index;
            self.binds_used[fam] += 1;
            binds[i % binds.len()]
        });
        self.out.families[fam].connections += 1;
        let sock = match conn::open(t.addr, source) {
            Ok(s) => s,
            Err(OpenError::Fatal(f)) => {
                self.in_flight -= 1;
                self.out.families[fam].connections -= 1;
                // Never sent: in open loop the slot is unsent, like those after it.
                if self.plan.arrival != Arrival::Closed {
                    self.out.families[fam].unsent += 1;
                }
                return Err(f);
            }
            Err(OpenError::Outcome(o)) => {
                self.record(target, u64::MAX, pending, Got::default(), now, o);
                return Ok(None);
            }
        };
        let id = (self.next_conn << 8) | self.index as u64;
        self.next_conn += 1;
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        let pending_queue = self.spare_queues.pop().unwrap_or_default();
        let mut c = Conn::new(sock, target, id, now, pending_queue);
        c.parser
            .reset(self.plan.head, self.out.first_server.is_none());
        if let Err(e) = self.poll.registry().register(
            &mut c.sock,
            token(key, id),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            return Err(Failure::runtime(format!("cannot watch a socket: {e}")));
        }
        c.pending.push_back(pending);
        if self.plan.keepalive && c.has_room(self.plan.pipeline) {
            c.in_ready = true;
            self.ready[target].push(key);
        }
        entry.insert(c);
        self.open[target] += 1;
        self.out.peak_conns = self.out.peak_conns.max(self.conns.len());
        self.arm_deadline(key, pending.slot, now);
        Ok(Some(key))
    }

    fn arm_deadline(&mut self, key: usize, slot: u64, now: u64) {
        let d = Deadline {
            at_ns: now + self.plan.timeout_ns,
            key,
            conn: self.conns[key].id,
            slot,
        };
        let conns = &self.conns;
        self.deadlines
            .arm(d, self.in_flight, |d| still_pending(conns, d));
    }

    /// Fail connections whose oldest request passed its deadline.
    fn expire(&mut self, now: u64) {
        while let Some(d) = self.deadlines.due(now, |d| still_pending(&self.conns, d)) {
            let o = if self.conns[d.key].phase == Phase::Connecting {
                Outcome::TimeoutConnect
            } else {
                Outcome::TimeoutResponse
            };
            self.close(d.key, Some(o), now);
        }
    }

    /// The front request's response is complete.
    fn complete(&mut self, key: usize, now: u64) {
        let keepalive = self.plan.keepalive;
        let want_server = self.out.first_server.is_none();
        let c = &mut self.conns[key];
        let p = c
            .pending
            .pop_front()
            .expect("a completed response has a request");
        // The server answered before the whole request went out (an early answer to a
        // large body): what it made of the rest is unknown, so the connection ends here.
        let unwritten = c.writing == 0;
        c.writing = c.writing.saturating_sub(1);
        c.served += 1;
        let got = Got {
            status: c.parser.status,
            bytes: c.parser.bytes,
            body: c.parser.body_bytes,
        };
        let server = c.parser.server.take();
        if c.parser.close || !keepalive || unwritten {
            c.closing = true;
            // Cold on a keep-alive run (entered only when the connection ends here); off
            // one, a test of a flag already in a register.
            if keepalive && c.parser.close {
                let fam = self.plan.targets[c.target].family.index();
                self.out.families[fam].closing_responses += 1;
            }
        }
        c.parser.reset(self.plan.head, want_server);
        let (target, conn_id) = (c.target, c.id);
        let (closing, idle) = (c.closing, c.pending.is_empty());
        if self.out.first_server.is_none() {
            // A worker's first response is the only one of its responses that can be the
            // run's first, so only it needs its Server header.
            let server = server.unwrap_or_default();
            if self.shared.document_length(got.body).1 {
                self.out.document_server = Some(server.clone());
            }
            self.out.first_server = Some(server);
        }
        if self.plan.verbosity >= 2 {
            log_status(got.status, self.plan.verbosity);
        }
        self.record(target, conn_id, p, got, now, Outcome::Normal);
        #[cfg(test)]
        tests::panic_if_asked(
            self.index,
            &self.plan.requests[target],
            self.conns[key].served,
        );
        let c = &mut self.conns[key];
        if closing && idle {
            self.close(key, None, now);
        } else if unwritten {
            // Nothing behind it was written either: those requests go on a new connection.
            self.retry(key, now);
        } else if !closing && !c.in_ready && c.has_room(self.plan.pipeline) {
            c.in_ready = true;
            self.ready[target].push(key);
        }
    }

    /// Close a connection; its pending requests end with `outcome` (if any remain).
    fn close(&mut self, key: usize, outcome: Option<Outcome>, now: u64) {
        let mut c = self.remove(key, now);
        let o = outcome.unwrap_or(Outcome::ProtocolError);
        let got = Got {
            status: c.parser.status,
            bytes: c.parser.bytes,
            body: c.parser.body_bytes,
        };
        let mut queue = std::mem::take(&mut c.pending);
        for (i, p) in queue.drain(..).enumerate() {
            self.record(
                c.target,
                c.id,
                p,
                if i == 0 { got } else { Got::default() },
                now,
                o,
            );
        }
        self.spare_queues.push(queue);
    }

    /// Take connection `key` out of the worker's tables; its lifetime ends `now`.
    fn remove(&mut self, key: usize, now: u64) -> Conn {
        let c = self.conns.remove(key);
        if c.in_ready {
            self.ready[c.target].retain(|&k| k != key);
        }
        self.open[c.target] -= 1;
        self.lifetime(&c, now);
        c
    }

    fn lifetime(&mut self, c: &Conn, now: u64) {
        if c.phase == Phase::Open {
            let fam = self.plan.targets[c.target].family.index();
            self.out.families[fam].add_lifetime(now - c.opened_ns);
        }
    }

    /// End one request: count it, keep its record if asked. `conn` is `u64::MAX` when no
    /// connection was ever made.
    fn record(
        &mut self,
        target: usize,
        conn: u64,
        p: Pending,
        got: Got,
        now: u64,
        outcome: Outcome,
    ) {
        self.in_flight -= 1;
        let family = self.plan.targets[target].family;
        let r = Record {
            slot: p.slot,
            family,
            target: target as u16,
            conn,
            reused: p.reused,
            intended_ns: p.intended_ns,
            start_ns: p.start_ns,
            connect_ns: p.connect_ns,
            sent_ns: p.sent_ns,
            first_byte_ns: p.first_byte_ns,
            end_ns: now,
            status: got.status,
            bytes: got.bytes,
            body_bytes: got.body,
            outcome,
        };
        // ab's "Length" failures: complete responses whose body is not as long as the
        // run's first (set by then, by this worker's first response or another's).
        let document_length = (outcome == Outcome::Normal && !self.plan.variable_length)
            .then(|| self.shared.document_length(got.body).0);
        self.out.families[family.index()].add(&r, document_length);
        if self.plan.ab_samples && outcome == Outcome::Normal {
            self.out.samples.push(AbSample::of(&r));
        }
        if self.plan.keep_records {
            self.out.records.push(r);
            if self.out.records.len() >= RECORD_BATCH {
                self.hand_records_over();
            }
        }
        self.out.last_end_ns = self.out.last_end_ns.max(now);
        // Only this worker writes its counter: a plain store, no locked read-modify-write.
        let ended = self.out.families.iter().map(|f| f.requests).sum();
        self.shared.progress[self.index].store(ended, Ordering::Relaxed);
    }

    fn finish(mut self) -> WorkerResult {
        // Stopped early (a signal, a fatal error): what fell due and never started is unsent.
        self.count_unsent(self.shared.elapsed_ns());
        // Connections still open (kept alive, idle) end with the run: their continuation
        // time counts until now. Requests still in flight were cut by a stop, not counted.
        let now = self.shared.elapsed_ns();
        for (_, c) in std::mem::take(&mut self.conns) {
            self.lifetime(&c, now);
        }
        self.out.window_ns = self.schedule.window_ns();
        let (user, sys) = thread_cpu();
        self.out.cpu_user_s = user;
        self.out.cpu_sys_s = sys;
        self.out
    }
}

impl Worker {
    /// Hand the kept records to the records writer, if there is one, and start a new
    /// batch (one allocation per batch). If the writer has stopped (it failed writing and
    /// said so when it did), the batch is dropped rather than kept without bound.
    #[cold]
    fn hand_records_over(&mut self) {
        if let Some(tx) = &self.plan.record_batches {
            let batch = std::mem::replace(&mut self.out.records, Vec::with_capacity(RECORD_BATCH));
            let _ = tx.send(batch);
        }
    }
}

/// ab's `-v` line for each response (a cold path: only at -v 2 and above).
#[cold]
fn log_status(status: u16, verbosity: u8) {
    if let Some(line) = status_line(status, verbosity) {
        dualbench_common::stdio::note(&line);
    }
}

/// ab's line for a response's status: a status other than 2xx is a warning from `-v 2`
/// on, a 2xx one is logged from `-v 3` on.
fn status_line(status: u16, verbosity: u8) -> Option<String> {
    if !(200..300).contains(&status) && verbosity >= 2 {
        Some(format!("WARNING: Response code not 2xx ({status})"))
    } else if (200..300).contains(&status) && verbosity >= 3 {
        Some(format!("LOG: Response code = {status}"))
    } else {
        None
    }
}

/// Whether a deadline's request still waits for its response on the same connection.
fn still_pending(conns: &Slab<Conn>, d: &Deadline) -> bool {
    conns
        .get(d.key)
        .is_some_and(|c| c.id == d.conn && c.pending.iter().any(|p| p.slot == d.slot))
}

/// This thread's CPU time (user, system) in seconds.
fn thread_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

#[cfg(test)]
pub(crate) mod tests {
    /// A request for this path makes worker 0 panic on its connection's 1,000th response:
    /// how the engine's handling of a worker that dies mid-run is tested (unit tests only).
    pub const PANIC_PATH: &str = "/test-hook/panic-in-worker-0";

    pub fn panic_if_asked(worker: usize, request: &[u8], served: u64) {
        let path = PANIC_PATH.as_bytes();
        if worker == 0 && served == 1000 && request.windows(path.len()).any(|w| w == path) {
            panic!("injected by a test");
        }
    }
}

#[cfg(test)]
mod setup_tests {
    use super::super::{Plan, Shared};
    use super::Worker;
    use crate::cli::RunCli;
    use crate::config::{self, Machine};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn plan(urls: &[&str]) -> Plan {
        let args = ["run", "-n", "2"].iter().chain(urls);
        let cli = RunCli::try_parse_args(args).unwrap();
        let machine = Machine {
            cores: 2,
            fd_limit: 1024,
        };
        config::plan(&cli, &cli.urls, machine).unwrap().0
    }

    /// A family's histograms (seven of 188 KiB) are made when its worker is set up, before
    /// the run's clock starts: made at the family's first response, they stalled the worker
    /// 380-520 µs in the middle of the run. A family the run has no target in has none.
    #[test]
    fn a_worker_makes_its_families_histograms_before_the_clock_starts() {
        for (urls, want) in [
            (&["http://127.0.0.1:1/"][..], [true, false]),
            (
                &["http://127.0.0.1:1/", "http://[::1]:1/"][..],
                [true, true],
            ),
        ] {
            let plan = Arc::new(plan(urls));
            let shared = Arc::new(Shared::new(plan.workers, Arc::new(AtomicBool::new(false))));
            // In a thread of its own: a worker moves its thread to a descriptor table of
            // its own.
            let made = std::thread::spawn(move || {
                let w = Worker::new(0, plan, shared).unwrap();
                w.out.families.map(|f| {
                    let h = &f.hist;
                    [
                        &h.connect,
                        &h.waiting,
                        &h.processing,
                        &h.total,
                        &h.service,
                        &h.transfer,
                        &h.lifetime,
                    ]
                    .iter()
                    .all(|h| h.is_allocated())
                })
            })
            .join()
            .unwrap();
            assert_eq!(made, want, "{urls:?}");
        }
    }
}

#[cfg(test)]
mod status_log_tests {
    use super::status_line;

    /// As ab 2.3: `-v 2` warns of every status but 2xx, `-v 3` also logs the 2xx ones (it
    /// logged every status as "LOG: Response code" from 3, and warned of none).
    #[test]
    fn non_2xx_is_a_warning_from_2_and_2xx_a_log_line_from_3() {
        assert_eq!(status_line(200, 1), None);
        assert_eq!(status_line(404, 1), None);
        assert_eq!(status_line(200, 2), None);
        assert_eq!(
            status_line(404, 2).as_deref(),
            Some("WARNING: Response code not 2xx (404)")
        );
        assert_eq!(
            status_line(204, 3).as_deref(),
            Some("LOG: Response code = 204")
        );
        assert_eq!(
            status_line(503, 4).as_deref(),
            Some("WARNING: Response code not 2xx (503)")
        );
        assert_eq!(
            status_line(199, 3).as_deref(),
            Some("WARNING: Response code not 2xx (199)")
        );
    }
}
