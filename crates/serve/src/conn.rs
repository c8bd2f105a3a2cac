//! One client connection's life on a worker: read requests, answer them in order (several
//! may be pipelined), stream bodies, and end the connection the way the endpoint asks
//! (keep it, close it gracefully, abort it with RST, or hold it without answering).
//! Each call does as much as it can without blocking and says whether to keep the
//! connection; the worker calls again on the next readiness event or timer, and now and
//! then lets the connection look whether it has kept the server waiting too long
//! ([`Conn::sweep`]): for a request head, the next request, more of a body, or the
//! client to read its answer.

use crate::answer::{self, Answer, Reply, Stream, Then, PIECE};
use crate::body::BodyDecoder;
use crate::buffer::InputBuffer;
use crate::request::{self, Framing, HeadError};
use mio::net::TcpStream;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// Unsent output beyond which pipelined requests wait until the client reads.
const HIGH_WATER: usize = 64 * 1024;
/// How long a connection the server is closing keeps reading (and discarding) what the
/// client still sends, so that the kernel does not turn the close into a reset.
const LINGER: Duration = Duration::from_secs(2);
/// How often a connection about to be reset looks whether the client has acknowledged
/// the answers sent before it (an abort would discard what is still unacknowledged).
const RESET_POLL: Duration = Duration::from_millis(1);

/// What the worker passes to every call: the time, the cached `Date`, the static root and
/// the `/vary` count (built in one place, `Shared::context` in the worker).
pub struct Context<'a> {
    pub now: Instant,
    pub date: &'a [u8],
    pub root: Option<&'a Path>,
    /// The server's count of `/vary` answers so far (shared by its workers).
    pub varied: &'a std::sync::atomic::AtomicU64,
}

/// Whether the worker keeps the connection or drops (closes) it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    Close,
}

/// Where the connection is in its life.
#[derive(Debug)]
enum Phase {
    /// Reading and answering request heads.
    Requests,
    /// Reading a request's body before answering it.
    Body(BodyDecoder, Box<Answer>),
    /// Waiting for a `/delay` to end.
    Delayed(Instant, Box<Answer>),
    /// `/stall`: discarding input, never answering, until the client closes.
    Stalled,
    /// Output done and write side shut: discarding input until the client closes.
    Lingering(Instant),
}

/// What a connection that cannot go on by itself is waiting for from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// The rest of a request head (or, on a new connection, its first byte).
    Head,
    /// The next request, on an idle keep-alive connection.
    NextRequest,
    /// More of a request body.
    Body,
    /// Room in the socket for the rest of the output: the client to read.
    Send,
}

/// What happens once all output has been sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    Continue,
    Close,
    Reset,
}

/// One accepted connection.
pub struct Conn {
    stream: TcpStream,
    input: InputBuffer,
    out: Vec<u8>,
    sent: usize,
    /// The rest of the current answer's body, sent once `out` is empty.
    pending_body: Option<Stream>,
    phase: Phase,
    after: After,
    readable: bool,
    writable: bool,
    peer_closed: bool,
    broken: bool,
    wake_at: Option<Instant>,
    /// Waiting to reset: the bytes the socket still held unacknowledged when last looked
    /// at, and when to reset all the same if that number has not fallen by then.
    reset_wait: Option<(usize, Instant)>,
    /// Request heads read so far, and bytes read and written: the only bookkeeping a
    /// request (a read, a write) does for the timeouts; the sweep does the rest.
    requests: u64,
    bytes_in: u64,
    bytes_out: u64,
    /// What [`Conn::sweep`] last found the connection waiting for, with the count (of
    /// requests, bytes read or bytes written) that ends the wait when it moves, and
    /// since when (the first look that found it so).
    waiting: Option<(Wait, u64, Instant)>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Self {
        Conn {
            stream,
            input: InputBuffer::default(),
            out: Vec::new(),
            sent: 0,
            pending_body: None,
            phase: Phase::Requests,
            after: After::Continue,
            readable: true,
            writable: true,
            peer_closed: false,
            broken: false,
            wake_at: None,
            reset_wait: None,
            requests: 0,
            bytes_in: 0,
            bytes_out: 0,
            waiting: None,
        }
    }

    pub fn stream_mut(&mut self) -> &mut TcpStream {
        &mut self.stream
    }

    /// A timer the connection wants (once): the worker calls [`on_timer`](Self::on_timer) then.
    pub fn take_wake(&mut self) -> Option<Instant> {
        self.wake_at.take()
    }

    /// The socket became readable and/or writable.
    pub fn on_ready(&mut self, readable: bool, writable: bool, ctx: &Context) -> Verdict {
        self.readable |= readable;
        self.writable |= writable;
        self.drive(ctx)
    }

    /// A timer asked for earlier is due (or stale: then nothing happens).
    pub fn on_timer(&mut self, ctx: &Context) -> Verdict {
        match &self.phase {
            Phase::Delayed(until, _) if *until <= ctx.now => {
                if let Phase::Delayed(_, answer) =
                    std::mem::replace(&mut self.phase, Phase::Requests)
                {
                    let reply = answer::write(*answer, ctx.date, &mut self.out);
                    self.follow(reply);
                }
            }
            Phase::Lingering(until) if *until <= ctx.now => return Verdict::Close,
            _ => {}
        }
        self.drive(ctx)
    }

    /// Called periodically: whether the connection has kept the server waiting longer than
    /// `timeouts` allow, and if so, end it as nginx would. Idle after its answers
    /// (`keepalive`), with a request head begun and not ended or none begun on a new
    /// connection (`header`): closed with nothing sent. Nothing more of a request body
    /// (`body`): 408 and the close. Nothing of its answer taken by the client (`send`):
    /// closed, the rest unsent. A wait is timed from the first call that finds it, and
    /// ends when it changes or its count moves (a request read; for a body, any byte
    /// read; for an answer, any byte the client acknowledged), so a timeout is never
    /// early, and a request, a read or a write costs an addition, no timer.
    pub fn sweep(&mut self, ctx: &Context, timeouts: &crate::Timeouts) -> Verdict {
        let Some(wait) = self.waiting_for() else {
            self.waiting = None;
            return Verdict::Keep;
        };
        let limit = match wait {
            Wait::Head => timeouts.header,
            Wait::NextRequest => timeouts.keepalive,
            Wait::Body => timeouts.body,
            Wait::Send => timeouts.send,
        };
        let Some(limit) = limit else {
            self.waiting = None;
            return Verdict::Keep;
        };
        let count = match wait {
            Wait::Head | Wait::NextRequest => self.requests,
            Wait::Body => self.bytes_in,
            // What the client has taken: written, less what its kernel has yet to
            // acknowledge. The socket may have room again only long after the client began
            // to read (epoll calls it writable once a good part of it is free), and an
            // acknowledgement shows every piece the client reads.
            Wait::Send => self
                .bytes_out
                .wrapping_sub(unacknowledged(&self.stream) as u64),
        };
        let since = match self.waiting {
            Some((seen, counted, since)) if seen == wait && counted == count => since,
            _ => {
                self.waiting = Some((wait, count, ctx.now));
                ctx.now
            }
        };
        let overstayed = ctx.now.saturating_duration_since(since) >= limit;
        match (overstayed, wait) {
            (false, _) => Verdict::Keep,
            (true, Wait::Body) => self.time_out_body(ctx),
            (true, _) => Verdict::Close,
        }
    }

    /// What the connection waits for from the client, if it cannot go on by itself: the
    /// client to read (output the socket would not take), more of a body, or a request.
    /// A delay, a stall, a close or a reset under way waits for no one (the last two have
    /// their own limit, [`LINGER`]).
    fn waiting_for(&self) -> Option<Wait> {
        if !self.output_done() {
            Some(Wait::Send)
        } else if matches!(self.phase, Phase::Body(..)) {
            Some(Wait::Body)
        } else if !matches!(self.phase, Phase::Requests) || self.after != After::Continue {
            None
        } else if self.requests == 0 || !self.input.is_empty() {
            Some(Wait::Head)
        } else {
            Some(Wait::NextRequest)
        }
    }

    /// A body stopped coming: 408 with `Connection: close` (its text unless the request was
    /// HEAD), then the close, which discards what may still come.
    fn time_out_body(&mut self, ctx: &Context) -> Verdict {
        let head_only = match &self.phase {
            Phase::Body(_, answer) => answer.head_only,
            _ => false,
        };
        self.phase = Phase::Requests;
        self.waiting = None;
        let reply = answer::refuse(408, head_only, ctx.date, &mut self.out);
        self.follow(reply);
        self.drive(ctx)
    }

    /// Send, parse and read until nothing more can be done now.
    /// Answers to pipelined requests are queued together and sent with one write.
    fn drive(&mut self, ctx: &Context) -> Verdict {
        loop {
            let mut progress = false;
            while self.step(ctx) {
                progress = true;
            }
            match self.flush() {
                Ok(sent) => progress |= sent,
                Err(_) => return Verdict::Close,
            }
            if self.output_done() {
                match self.after {
                    After::Continue => {}
                    After::Reset => return self.reset(ctx),
                    After::Close => {
                        self.start_lingering(ctx);
                        progress = true;
                    }
                }
            }
            progress |= self.fill();
            if !progress {
                return self.verdict_when_idle();
            }
        }
    }

    fn verdict_when_idle(&self) -> Verdict {
        let finished = match self.phase {
            Phase::Requests | Phase::Body(..) => self.peer_closed && self.output_done(),
            Phase::Stalled | Phase::Lingering(_) => self.peer_closed,
            Phase::Delayed(..) => false,
        };
        if self.broken || finished {
            Verdict::Close
        } else {
            Verdict::Keep
        }
    }

    fn output_done(&self) -> bool {
        self.sent == self.out.len() && self.pending_body.is_none()
    }

    /// Abort: SO_LINGER 0 makes the close send RST instead of FIN. An abort also discards
    /// what the socket has not yet had acknowledged, so the earlier answers (pipelined
    /// before `/reset`) must have reached the client first: until they have, look again
    /// every [`RESET_POLL`], giving up after [`LINGER`] without progress.
    fn reset(&mut self, ctx: &Context) -> Verdict {
        let unacknowledged = unacknowledged(&self.stream);
        if unacknowledged > 0 && !self.broken {
            let give_up = match self.reset_wait {
                Some((before, give_up)) if unacknowledged >= before => give_up,
                _ => ctx.now + LINGER,
            };
            if ctx.now < give_up {
                self.reset_wait = Some((unacknowledged, give_up));
                self.wake_at = Some(ctx.now + RESET_POLL);
                return Verdict::Keep;
            }
        }
        let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
        Verdict::Close
    }

    /// Send FIN, then keep reading for a while so unread input does not cause a reset.
    fn start_lingering(&mut self, ctx: &Context) {
        self.after = After::Continue;
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let until = ctx.now + LINGER;
        self.phase = Phase::Lingering(until);
        self.wake_at = Some(until);
    }

    /// Read what the socket has into the input buffer; true if anything happened.
    fn fill(&mut self) -> bool {
        if !self.readable || self.peer_closed || self.broken {
            return false;
        }
        let Some(space) = self.input.space() else {
            return false;
        };
        match self.stream.read(space) {
            Ok(0) => self.peer_closed = true,
            Ok(n) => {
                self.input.filled(n);
                self.bytes_in = self.bytes_in.wrapping_add(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.readable = false;
                return false;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.broken = true,
        }
        true
    }

    /// Send output while the socket takes it; true if anything was sent.
    fn flush(&mut self) -> io::Result<bool> {
        let mut progress = false;
        loop {
            if self.sent < self.out.len() {
                if !self.writable {
                    return Ok(progress);
                }
                match self.stream.write(&self.out[self.sent..]) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.sent += n;
                        self.bytes_out = self.bytes_out.wrapping_add(n as u64);
                        progress = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.writable = false;
                        return Ok(progress);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            self.out.clear();
            self.sent = 0;
            if self.out.capacity() > 4 * PIECE {
                self.out.shrink_to(PIECE);
            }
            if self.pending_body.is_none() || !self.writable {
                return Ok(progress);
            }
            progress |= self.next_piece()?;
        }
    }

    /// Send the next piece of the body, straight from the pattern or the file.
    fn next_piece(&mut self) -> io::Result<bool> {
        match &mut self.pending_body {
            Some(Stream::Pattern { offset, left }) => {
                let len = (*left).min(PIECE as u64) as usize;
                match self.stream.write(answer::pattern_piece(*offset, len)) {
                    Ok(0) => Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.bytes_out = self.bytes_out.wrapping_add(n as u64);
                        *offset += n as u64;
                        *left -= n as u64;
                        if *left == 0 {
                            self.pending_body = None;
                        }
                        Ok(true)
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.writable = false;
                        Ok(false)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Some(Stream::File { file, left }) => {
                // Straight from the page cache to the socket, as the pattern goes straight
                // from memory: no piece buffer held by the connection (it stayed allocated
                // while the connection idled: 1,000 keep-alive clients of a 1 MiB file
                // held 73 MB).
                let len = (*left).min(PIECE as u64) as usize;
                // SAFETY: both descriptors are open and owned by this connection; a null
                // offset makes sendfile use and advance the file's own offset.
                let sent = unsafe {
                    libc::sendfile(
                        self.stream.as_raw_fd(),
                        file.as_raw_fd(),
                        std::ptr::null_mut(),
                        len,
                    )
                };
                let n = match sent {
                    n if n >= 0 => {
                        self.bytes_out = self.bytes_out.wrapping_add(n as u64);
                        n as usize
                    }
                    _ => match io::Error::last_os_error() {
                        e if e.kind() == io::ErrorKind::WouldBlock => {
                            self.writable = false;
                            return Ok(false);
                        }
                        e if e.kind() == io::ErrorKind::Interrupted => return Ok(false),
                        // A file system without sendfile support: read the piece into the
                        // output instead, to be written like any other.
                        e if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                            self.out.resize(len, 0);
                            let n = file.read(&mut self.out)?;
                            self.out.truncate(n);
                            n
                        }
                        e => return Err(e),
                    },
                };
                if n == 0 {
                    // The file shrank under us: the response cannot be completed.
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n as u64;
                if *left == 0 {
                    self.pending_body = None;
                }
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Work on the input according to the phase; true if anything happened.
    fn step(&mut self, ctx: &Context) -> bool {
        match self.phase {
            Phase::Requests => self.next_request(ctx),
            Phase::Body(..) => self.read_body(ctx),
            Phase::Delayed(..) => false,
            Phase::Stalled | Phase::Lingering(_) => {
                let had = !self.input.is_empty();
                self.input.clear();
                had
            }
        }
    }

    /// Parse and start answering the next request, if one is complete and there is room.
    fn next_request(&mut self, ctx: &Context) -> bool {
        let backlog = self.out.len() - self.sent;
        if self.after != After::Continue || self.pending_body.is_some() || backlog >= HIGH_WATER {
            return false;
        }
        let (mut answer, framing, expect_continue, used) =
            match request::parse_head(self.input.unread()) {
                Ok(None) => return false,
                Ok(Some(head)) => {
                    let framing = head.framing;
                    (
                        Answer::of(&head, ctx.root, ctx.varied),
                        framing,
                        head.expect_continue,
                        head.head_len,
                    )
                }
                Err(e) => {
                    let head_only = request::is_head_request(self.input.unread());
                    self.refuse_request(e, head_only, ctx);
                    return true;
                }
            };
        self.input.consume(used);
        self.requests += 1;
        let decoder = match framing {
            Framing::None => return self.answer(answer, ctx),
            // A body that could only be refused: say so now, before the client sends it
            // (and without a 100 Continue asking for it); the close discards what comes.
            Framing::Length(n) if answer.refuses_body_of(n) => {
                let reply = answer::refuse(413, answer.head_only, ctx.date, &mut self.out);
                self.follow(reply);
                return true;
            }
            Framing::Length(n) => BodyDecoder::length(n),
            Framing::Chunked => BodyDecoder::chunked(),
        };
        if expect_continue && !answer.http10 {
            if answer.refuses_any_body() {
                // An answer the body cannot change (404, 405, a bad parameter): the final
                // status at once, without the 100 that would ask for the body (RFC 9110
                // section 10.1.1), and the close, as the client may send the body or not.
                answer.keep_alive = false;
                return self.answer(answer, ctx);
            }
            self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        self.phase = Phase::Body(decoder, Box::new(answer));
        true
    }

    /// A request that cannot be parsed: 400 (or 414, 431, 501 for a transfer coding the
    /// server does not implement, 505 for HTTP/2 and later), then the connection closes.
    /// A HEAD request (`head_only`) gets the same head and no content.
    fn refuse_request(&mut self, error: HeadError, head_only: bool, ctx: &Context) {
        let status = match error {
            HeadError::Malformed(_) => 400,
            HeadError::NotImplemented(_) => 501,
            HeadError::TooLarge => 431,
            HeadError::TargetTooLong => 414,
            HeadError::VersionNotSupported => 505,
        };
        self.input.clear();
        let reply = answer::refuse(status, head_only, ctx.date, &mut self.out);
        self.follow(reply);
    }

    /// Feed the input to the body decoder; answer once the body is complete.
    fn read_body(&mut self, ctx: &Context) -> bool {
        let Phase::Body(decoder, answer) = &mut self.phase else {
            return false;
        };
        let result = decoder.feed(self.input.unread(), &mut |data| answer.take_body(data));
        let used = match result {
            Ok(used) => used,
            Err(_) => {
                let head_only = answer.head_only;
                self.phase = Phase::Requests;
                self.refuse_request(HeadError::Malformed("bad body framing"), head_only, ctx);
                return true;
            }
        };
        self.input.consume(used);
        if answer.body_overflowed() {
            // Refused now (413 and the close, which discards the rest), as a body whose
            // `Content-Length` says too much is: it was read to its end first.
            let head_only = answer.head_only;
            self.phase = Phase::Requests;
            let reply = answer::refuse(413, head_only, ctx.date, &mut self.out);
            self.follow(reply);
            return true;
        }
        if !decoder.is_done() {
            return used > 0;
        }
        if let Phase::Body(_, answer) = std::mem::replace(&mut self.phase, Phase::Requests) {
            self.answer(*answer, ctx);
        }
        true
    }

    /// Answer a fully read request, or wait first if it asks for a delay.
    fn answer(&mut self, answer: Answer, ctx: &Context) -> bool {
        if let Some(wait) = answer.delay() {
            let until = ctx.now + wait;
            self.phase = Phase::Delayed(until, Box::new(answer));
            self.wake_at = Some(until);
        } else {
            let reply = answer::write(answer, ctx.date, &mut self.out);
            self.follow(reply);
        }
        true
    }

    /// Stream the reply's body and go where it says.
    fn follow(&mut self, reply: Reply) {
        self.pending_body = reply.stream;
        match reply.then {
            Then::Continue => {}
            Then::Close => self.after = After::Close,
            Then::Reset => self.after = After::Reset,
            Then::Stall => self.phase = Phase::Stalled,
        }
    }
}

/// Bytes the socket has sent or queued that the peer has not acknowledged (`SIOCOUTQ`);
/// 0 where the kernel cannot say.
fn unacknowledged(stream: &TcpStream) -> usize {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one int to the pointer, which is live.
    let done = unsafe { libc::ioctl(stream.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
    if done < 0 {
        0
    } else {
        usize::try_from(queued).unwrap_or(0)
    }
}
