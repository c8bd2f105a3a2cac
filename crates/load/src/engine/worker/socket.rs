//! Driving one connection's socket for its worker: finishing a connect, writing the
//! queued requests, reading and parsing responses as they arrive, and what an end of
//! stream means (the last response, a kept-alive connection the server closed, or a
//! protocol error), with the requests of a closed connection sent again on a new one.

use super::{Ready, Worker};
use crate::engine::conn::{self, Conn, Pending, Phase};
use crate::http::{Feed, ParseError};
use crate::record::Outcome;
use slab::Slab;
use std::io;

impl Worker {
    /// React to readiness on connection `key`.
    pub(super) fn drive(&mut self, key: usize, ready: Ready) {
        let c = &self.conns[key];
        let connecting = c.phase == Phase::Connecting;
        // The clock is read only when there is a connect or a request to time here; a
        // response takes its own reading when it is read.
        if (connecting || c.writing < c.pending.len()) && !self.connect_and_send(key, ready) {
            return;
        }
        if ready.readable {
            self.read(key, ready.peer_closed);
        }
    }

    /// Finish a pending connect and write what is queued. False when the connection
    /// closed (failed) or is still connecting.
    fn connect_and_send(&mut self, key: usize, ready: Ready) -> bool {
        let now = self.shared.elapsed_ns();
        if self.conns[key].phase == Phase::Connecting {
            if ready.failed {
                let o = match self.conns[key].sock.take_error() {
                    Ok(Some(e)) | Err(e) => conn::classify_connect(&e),
                    Ok(None) => Outcome::ResetConnect,
                };
                self.close(key, Some(o), now);
                return false;
            }
            if !ready.writable {
                return false;
            }
            // A non-blocking connect that reports writable without an error is established.
            self.connected(key, now);
        }
        if let Err(o) = self.write(key, now) {
            self.close(key, Some(o), now);
            return false;
        }
        true
    }

    fn connected(&mut self, key: usize, now: u64) {
        let c = &mut self.conns[key];
        c.phase = Phase::Open;
        c.connected_ns = now;
        let connect_ns = now - c.opened_ns;
        for p in c.pending.iter_mut() {
            p.connect_ns = connect_ns;
        }
    }

    fn write(&mut self, key: usize, now: u64) -> Result<(), Outcome> {
        let c = &mut self.conns[key];
        let req = &self.plan.requests[c.target];
        while c.writing < c.pending.len() {
            match c.send(&req[c.write_off..]) {
                Ok(0) => return Err(Outcome::ResetRequest),
                Ok(n) => {
                    c.write_off += n;
                    self.out.families[self.plan.targets[c.target].family.index()].request_bytes +=
                        n as u64;
                    if c.write_off == req.len() {
                        c.pending[c.writing].sent_ns = now;
                        c.writing += 1;
                        c.write_off = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(conn::classify_io(&e, true)),
            }
        }
        Ok(())
    }

    /// Read and parse until the socket is drained. `peer_closed`: the poll saw the peer's
    /// FIN, so read on to the end of stream even after a short read.
    fn read(&mut self, key: usize, peer_closed: bool) {
        // A completed response can end the connection and send what was queued on it again
        // (retry): a new connection may then take the same slab key, so check the id.
        let id = self.conns[key].id;
        let alive = |conns: &Slab<Conn>| conns.get(key).is_some_and(|c| c.id == id);
        loop {
            let now;
            let n = match self.conns[key].recv(&mut self.buf) {
                Ok(n) => {
                    now = self.shared.elapsed_ns();
                    n
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let now = self.shared.elapsed_ns();
                    let o = conn::classify_io(&e, false);
                    return self.close(key, Some(o), now);
                }
            };
            if n == 0 {
                return self.on_eof(key, now);
            }
            let mut off = 0;
            while off < n {
                if !alive(&self.conns) {
                    return;
                }
                let c = &mut self.conns[key];
                let Some(front) = c.pending.front_mut() else {
                    // Bytes nobody asked for.
                    return self.close(key, Some(Outcome::ProtocolError), now);
                };
                if !c.parser.started() {
                    front.first_byte_ns = now;
                    if front.sent_ns == 0 {
                        front.sent_ns = now;
                    }
                    if self.plan.verbosity >= 2 {
                        log_head(&self.buf[off..n]);
                    }
                }
                match c.parser.feed(&self.buf[off..n]) {
                    Ok(Feed::NeedMore) => break,
                    Ok(Feed::Done { used }) => {
                        off += used;
                        self.complete(key, now);
                    }
                    Err(
                        ParseError::Malformed | ParseError::HeadersTooLarge | ParseError::BadChunk,
                    ) => {
                        return self.close(key, Some(Outcome::ProtocolError), now);
                    }
                }
            }
            // A short read emptied the socket's receive queue: the next arrival raises a
            // new edge, so there is no need for another read just to see EAGAIN.
            if !alive(&self.conns) || (n < self.buf.len() && !peer_closed) {
                return;
            }
        }
    }

    fn on_eof(&mut self, key: usize, now: u64) {
        let c = &self.conns[key];
        if c.pending.is_empty() {
            return self.close(key, None, now);
        }
        if c.parser.until_close() {
            let id = c.id;
            self.complete(key, now);
            // Requests pipelined behind a response that ran until the close were never
            // answered: they go out again, like those on a connection closed between answers.
            // (complete() may have done so already, and a new connection taken the key.)
            match self.conns.get(key) {
                Some(c) if c.id != id => {}
                Some(c) if !c.pending.is_empty() => self.retry(key, now),
                Some(_) => self.close(key, None, now),
                None => {}
            }
            return;
        }
        if !c.parser.started() && c.served > 0 {
            // The server closed a kept-alive connection as we reused it: send again on a
            // new connection (the request never reached a response; nothing is lost).
            return self.retry(key, now);
        }
        self.close(key, Some(Outcome::ProtocolError), now)
    }

    /// The server closed a kept-alive connection before answering what was sent on it, or
    /// answered before a request was fully written: send the requests still queued again,
    /// together on one new connection as they were on the old.
    pub(super) fn retry(&mut self, key: usize, now: u64) {
        let mut c = self.remove(key, now);
        let target = c.target;
        let mut queue = std::mem::take(&mut c.pending);
        let mut on = None;
        for p in queue.drain(..) {
            // Behind the first, a request shares the new connection (as start() counts it).
            let again = Pending {
                start_ns: now,
                connect_ns: 0,
                sent_ns: 0,
                first_byte_ns: 0,
                reused: on.is_some(),
                ..p
            };
            if let Some(k) = on {
                self.conns[k].pending.push_back(again);
                self.arm_deadline(k, again.slot, now);
                continue;
            }
            match self.connect(target, again, now) {
                Ok(k) => on = k,
                Err(f) => return self.fail_run(f),
            }
        }
        self.spare_queues.push(queue);
    }
}

/// ab 2.3's log of a response's head from `-v 2` on: what of it arrived in the read that
/// began it (a cold path: only at -v 2 and above).
#[cold]
fn log_head(read: &[u8]) {
    let end = read
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(read.len(), |i| i + 4);
    dualbench_common::stdio::note(&format!(
        "LOG: header received:\n{}",
        String::from_utf8_lossy(&read[..end])
    ));
}
