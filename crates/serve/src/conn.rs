//! One client connection's life on a worker: read requests, answer them in order (several
//! may be pipelined), stream bodies, and end the connection the way the endpoint asks
//! (keep it, close it gracefully, abort it with RST, or hold it without answering).
//! Each call does as much as it can without blocking and says whether to keep the
//! connection; the worker calls again on the next readiness event or timer.

use crate::body::BodyDecoder;
use crate::buffer::InputBuffer;
use crate::files::{self, Refusal, StaticFile};
use crate::request::{self, Framing, HeadError, Method};
use crate::response::{self, Connection, Head, INDEX_PAGE, TRUNCATED_LENGTH};
use crate::route::{self, Endpoint};
use mio::net::TcpStream;
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Unsent output beyond which pipelined requests wait until the client reads.
const HIGH_WATER: usize = 64 * 1024;
/// Largest body `/echo` sends back (a larger one gets 413).
pub const MAX_ECHO: usize = 16 * 1024 * 1024;
/// How long a connection the server is closing keeps reading (and discarding) what the
/// client still sends, so that the kernel does not turn the close into a reset.
const LINGER: Duration = Duration::from_secs(2);
/// Size of one piece of a streamed body.
const PIECE: usize = 64 * 1024;

/// `/bytes/N` bodies: byte i is `b'a' + i % 26`; a piece starts anywhere in the first 26.
static PATTERN: [u8; PIECE + 26] = pattern();

const fn pattern() -> [u8; PIECE + 26] {
    let mut out = [0u8; PIECE + 26];
    let mut i = 0;
    while i < out.len() {
        out[i] = b'a' + (i % 26) as u8;
        i += 1;
    }
    out
}

/// What the worker passes to every call: the time, the cached `Date`, the static root.
pub struct Context<'a> {
    pub now: Instant,
    pub date: &'a [u8],
    pub root: Option<&'a Path>,
}

/// Whether the worker keeps the connection or drops (closes) it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    Close,
}

/// What a request asked for, kept until its body has been read (or its delay is over).
#[derive(Debug)]
struct Answer {
    endpoint: Endpoint,
    head_only: bool,
    keep_alive: bool,
    http10: bool,
    content_type: Option<Vec<u8>>,
    file: Option<Result<StaticFile, Refusal>>,
    echo: Vec<u8>,
    echo_too_large: bool,
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

/// What happens once all output has been sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    Continue,
    Close,
    Reset,
}

/// A body sent after the head, piece by piece as the socket takes it.
#[derive(Debug)]
enum Body {
    Pattern { offset: u64, left: u64 },
    File { file: std::fs::File, left: u64 },
}

/// One accepted connection.
pub struct Conn {
    stream: TcpStream,
    input: InputBuffer,
    out: Vec<u8>,
    sent: usize,
    body: Option<Body>,
    phase: Phase,
    after: After,
    readable: bool,
    writable: bool,
    peer_closed: bool,
    broken: bool,
    wake_at: Option<Instant>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Self {
        Conn {
            stream,
            input: InputBuffer::default(),
            out: Vec::new(),
            sent: 0,
            body: None,
            phase: Phase::Requests,
            after: After::Continue,
            readable: true,
            writable: true,
            peer_closed: false,
            broken: false,
            wake_at: None,
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
                    self.answer_delay(*answer, ctx);
                }
            }
            Phase::Lingering(until) if *until <= ctx.now => return Verdict::Close,
            _ => {}
        }
        self.drive(ctx)
    }

    /// Send, parse and read until nothing more can be done now.
    fn drive(&mut self, ctx: &Context) -> Verdict {
        loop {
            let mut progress = match self.flush() {
                Ok(p) => p,
                Err(_) => return Verdict::Close,
            };
            if self.output_done() {
                match self.after {
                    After::Continue => {}
                    After::Reset => return self.reset(),
                    After::Close => {
                        self.start_lingering(ctx);
                        progress = true;
                    }
                }
            }
            progress |= self.step(ctx);
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
        self.sent == self.out.len() && self.body.is_none()
    }

    /// Abort: SO_LINGER 0 makes the close send RST instead of FIN.
    fn reset(&mut self) -> Verdict {
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
            Ok(n) => self.input.filled(n),
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
            if self.body.is_none() || !self.writable {
                return Ok(progress);
            }
            progress |= self.next_piece()?;
        }
    }

    /// Put the next piece of the body into the output (or send it straight from the pattern).
    fn next_piece(&mut self) -> io::Result<bool> {
        match &mut self.body {
            Some(Body::Pattern { offset, left }) => {
                let start = (*offset % 26) as usize;
                let len = (*left).min(PIECE as u64) as usize;
                match self.stream.write(&PATTERN[start..start + len]) {
                    Ok(0) => Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        *offset += n as u64;
                        *left -= n as u64;
                        if *left == 0 {
                            self.body = None;
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
            Some(Body::File { file, left }) => {
                let len = (*left).min(PIECE as u64) as usize;
                self.out.resize(len, 0);
                let n = file.read(&mut self.out)?;
                self.out.truncate(n);
                if n == 0 {
                    // The file shrank under us: the response cannot be completed.
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n as u64;
                if *left == 0 {
                    self.body = None;
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
        if self.after != After::Continue || self.body.is_some() || backlog >= HIGH_WATER {
            return false;
        }
        let (answer, framing, expect_continue, used) =
            match request::parse_head(self.input.unread()) {
                Ok(None) => return false,
                Ok(Some(head)) => {
                    let framing = head.framing;
                    (
                        Answer::of(&head, ctx.root),
                        framing,
                        head.expect_continue,
                        head.head_len,
                    )
                }
                Err(e) => {
                    self.refuse_request(e, ctx);
                    return true;
                }
            };
        self.input.consume(used);
        let decoder = match framing {
            Framing::None => return self.answer(answer, ctx),
            Framing::Length(n) => BodyDecoder::length(n),
            Framing::Chunked => BodyDecoder::chunked(),
        };
        if expect_continue && !answer.http10 {
            self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        self.phase = Phase::Body(decoder, Box::new(answer));
        true
    }

    /// A request that cannot be parsed: 400 (or 431), then the connection closes.
    fn refuse_request(&mut self, error: HeadError, ctx: &Context) {
        let status = match error {
            HeadError::Malformed(_) => 400,
            HeadError::TooLarge => 431,
        };
        self.input.clear();
        self.fixed(
            status,
            b"text/plain",
            &response::status_body(status),
            false,
            Connection::Close,
            ctx,
        );
        self.after = After::Close;
    }

    /// Feed the input to the body decoder; answer once the body is complete.
    fn read_body(&mut self, ctx: &Context) -> bool {
        let Phase::Body(decoder, answer) = &mut self.phase else {
            return false;
        };
        let collect = answer.endpoint == Endpoint::Echo;
        let result = decoder.feed(self.input.unread(), &mut |data| {
            if collect && !answer.echo_too_large {
                if answer.echo.len() + data.len() > MAX_ECHO {
                    answer.echo_too_large = true;
                    answer.echo = Vec::new();
                } else {
                    answer.echo.extend_from_slice(data);
                }
            }
        });
        let used = match result {
            Ok(used) => used,
            Err(_) => {
                self.phase = Phase::Requests;
                self.refuse_request(HeadError::Malformed("bad body framing"), ctx);
                return true;
            }
        };
        self.input.consume(used);
        if !decoder.is_done() {
            return used > 0;
        }
        if let Phase::Body(_, answer) = std::mem::replace(&mut self.phase, Phase::Requests) {
            self.answer(*answer, ctx);
        }
        true
    }

    /// Queue the answer to a fully read request (or enter the phase it asks for).
    fn answer(&mut self, answer: Answer, ctx: &Context) -> bool {
        let conn = answer.connection();
        let head_only = answer.head_only;
        match answer.endpoint {
            Endpoint::Index => self.fixed(200, b"text/html", INDEX_PAGE, head_only, conn, ctx),
            Endpoint::Bytes(n) => {
                self.head(200, b"application/octet-stream", Some(n), conn, ctx);
                if !head_only && n > 0 {
                    self.body = Some(Body::Pattern { offset: 0, left: n });
                }
            }
            Endpoint::Delay(0) => return self.answer_delay(answer, ctx),
            Endpoint::Delay(ms) => {
                let until = ctx.now + Duration::from_millis(ms);
                self.phase = Phase::Delayed(until, Box::new(answer));
                self.wake_at = Some(until);
                return true;
            }
            Endpoint::Status(code) => self.status(code, head_only, conn, ctx),
            Endpoint::Reset => self.after = After::Reset,
            Endpoint::Stall => self.phase = Phase::Stalled,
            Endpoint::Close => {
                self.head(200, b"text/plain", Some(TRUNCATED_LENGTH), conn, ctx);
                self.after = After::Close;
            }
            Endpoint::Echo if answer.echo_too_large => {
                self.fixed(
                    413,
                    b"text/plain",
                    &response::status_body(413),
                    head_only,
                    Connection::Close,
                    ctx,
                );
                self.after = After::Close;
            }
            Endpoint::Echo => {
                let ctype = answer
                    .content_type
                    .as_deref()
                    .unwrap_or(b"application/octet-stream");
                self.fixed(200, ctype, &answer.echo, head_only, conn, ctx);
            }
            Endpoint::File => self.file(answer.file, head_only, conn, ctx),
            Endpoint::NotFound => self.status(404, head_only, conn, ctx),
            Endpoint::Invalid(why) => {
                let text = format!("400 Bad Request: {why}\n");
                self.fixed(400, b"text/plain", text.as_bytes(), head_only, conn, ctx);
            }
        }
        if !answer.keep_alive
            && self.after == After::Continue
            && matches!(self.phase, Phase::Requests)
        {
            self.after = After::Close;
        }
        true
    }

    fn answer_delay(&mut self, answer: Answer, ctx: &Context) -> bool {
        let Endpoint::Delay(ms) = answer.endpoint else {
            return false;
        };
        let text = format!("delayed {ms} ms\n");
        self.fixed(
            200,
            b"text/plain",
            text.as_bytes(),
            answer.head_only,
            answer.connection(),
            ctx,
        );
        if !answer.keep_alive {
            self.after = After::Close;
        }
        true
    }

    fn file(
        &mut self,
        file: Option<Result<StaticFile, Refusal>>,
        head_only: bool,
        conn: Connection,
        ctx: &Context,
    ) {
        match file {
            Some(Ok(found)) => {
                self.head(
                    200,
                    found.content_type.as_bytes(),
                    Some(found.length),
                    conn,
                    ctx,
                );
                if !head_only && found.length > 0 {
                    self.body = Some(Body::File {
                        file: found.file,
                        left: found.length,
                    });
                }
            }
            Some(Err(refusal)) => self.status(refusal.status(), head_only, conn, ctx),
            None => self.status(405, head_only, conn, ctx),
        }
    }

    fn status(&mut self, code: u16, head_only: bool, conn: Connection, ctx: &Context) {
        if response::has_body(code) {
            self.fixed(
                code,
                b"text/plain",
                &response::status_body(code),
                head_only,
                conn,
                ctx,
            );
        } else {
            self.head(code, b"", None, conn, ctx);
        }
    }

    fn fixed(
        &mut self,
        code: u16,
        ctype: &[u8],
        body: &[u8],
        head_only: bool,
        conn: Connection,
        ctx: &Context,
    ) {
        self.head(code, ctype, Some(body.len() as u64), conn, ctx);
        if !head_only {
            self.out.extend_from_slice(body);
        }
    }

    fn head(
        &mut self,
        status: u16,
        content_type: &[u8],
        length: Option<u64>,
        connection: Connection,
        ctx: &Context,
    ) {
        let head = Head {
            status,
            content_type,
            length,
            connection,
        };
        response::write_head(&mut self.out, &head, ctx.date);
    }
}

impl Answer {
    fn of(head: &request::RequestHead, root: Option<&Path>) -> Self {
        let endpoint = route::route(head.path, root.is_some());
        let file = match (&endpoint, root) {
            (Endpoint::File, Some(root)) if matches!(head.method, Method::Get | Method::Head) => {
                Some(files::open(root, head.path))
            }
            _ => None,
        };
        let content_type = match endpoint {
            Endpoint::Echo => head.content_type.map(<[u8]>::to_vec),
            _ => None,
        };
        Answer {
            endpoint,
            head_only: head.method == Method::Head,
            keep_alive: head.keep_alive,
            http10: head.http10,
            content_type,
            file,
            echo: Vec::new(),
            echo_too_large: false,
        }
    }

    fn connection(&self) -> Connection {
        match (self.keep_alive, self.http10) {
            (false, _) => Connection::Close,
            (true, true) => Connection::KeepAlive,
            (true, false) => Connection::Default,
        }
    }
}
