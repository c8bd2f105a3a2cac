//! One TCP connection as seen at the capture point: the handshake times, per direction
//! the packets, bytes (new and retransmitted, by sequence number), FIN and RST, the HTTP
//! exchange, and S3's delay (from the first request segment to the client's last ACK
//! before its FIN). [`Connection::close`] classifies the ending with `run`'s close classes.

use super::http::{self, Http};
use super::sequence::Sequence;
use crate::packet::{TcpSegment, TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN};
use dualbench_common::Family;
use std::net::SocketAddr;

/// How a connection ended, in `run`'s words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Close {
    Normal,
    Reset,
    Timeout,
    Refused,
    Unreachable,
    ProtocolError,
}

impl Close {
    pub const ALL: [Close; 6] = [
        Close::Normal,
        Close::Reset,
        Close::Timeout,
        Close::Refused,
        Close::Unreachable,
        Close::ProtocolError,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Close::Normal => "normal",
            Close::Reset => "reset",
            Close::Timeout => "timeout",
            Close::Refused => "refused",
            Close::Unreachable => "unreachable",
            Close::ProtocolError => "protocol_error",
        }
    }
}

/// The TCP-level ending: `rst` if either side reset, else `fin` if either closed, else `open`.
pub fn end_key(c: &Connection) -> &'static str {
    if c.dirs.iter().any(|d| d.rst_ns.is_some()) {
        "rst"
    } else if c.dirs.iter().any(|d| d.fin_ns.is_some()) {
        "fin"
    } else {
        "open"
    }
}

/// One direction of a connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Direction {
    pub packets: u64,
    /// IP bytes (headers included).
    pub ip_bytes: u64,
    /// Payload bytes sent for the first time.
    pub unique_bytes: u64,
    /// Segments that resent sequence space already seen (SYN and FIN included).
    pub retransmissions: u64,
    pub retransmitted_bytes: u64,
    pub fin_ns: Option<u64>,
    pub rst_ns: Option<u64>,
    sequence: Sequence,
}

/// One TCP connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub family: Family,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub first_ns: u64,
    pub last_ns: u64,
    pub syn_ns: Option<u64>,
    pub synack_ns: Option<u64>,
    /// The client's ACK of the SYN/ACK, which completes the handshake.
    pub handshake_ack_ns: Option<u64>,
    /// The first segment carrying the client's first request (S3's start).
    pub request_ns: Option<u64>,
    /// The first new payload from the server after that request: the answer's start.
    pub response_ns: Option<u64>,
    /// The client's last ACK before its FIN (or RST), or of what the server sent after a
    /// bare FIN while the client still read (S3's end).
    pub last_client_ack_ns: Option<u64>,
    /// When an ICMP "destination unreachable" about this connection was seen.
    pub unreachable_ns: Option<u64>,
    /// The server's FIN was reached in sequence order before the client closed: the client
    /// read the close. A FIN seen ahead of a hole whose bytes were not resent before the
    /// client gave up (its FIN or RST) is a close the client never read.
    pub server_closed: bool,
    /// The server's FIN reached in sequence order after the client's FIN, before any RST
    /// of the client's: a close the client read if that FIN only shut down its sending
    /// side ([`Connection::client_read_after_fin`]).
    pub server_closed_after_client_fin: bool,
    /// The server sent new payload after the client's FIN (and before any RST of its).
    pub server_data_after_client_fin: bool,
    /// The client acknowledged with a plain ACK what the server sent after its FIN: that
    /// FIN only shut down its sending side (`shutdown(SHUT_WR)`, a bare FIN), and it went
    /// on reading. A socket closed outright answers new data with a RST.
    pub client_read_after_fin: bool,
    /// Responses received in full when the client first closed (FIN or RST).
    pub complete_at_client_close: Option<u32>,
    /// `[client → server, server → client]`.
    pub dirs: [Direction; 2],
    pub http: Http,
    syn_seq: Option<u32>,
    synack_seq: Option<u32>,
}

impl Connection {
    pub fn new(family: Family, client: SocketAddr, server: SocketAddr, ts_ns: u64) -> Connection {
        Connection {
            family,
            client,
            server,
            first_ns: ts_ns,
            last_ns: ts_ns,
            syn_ns: None,
            synack_ns: None,
            handshake_ack_ns: None,
            request_ns: None,
            response_ns: None,
            last_client_ack_ns: None,
            unreachable_ns: None,
            server_closed: false,
            server_closed_after_client_fin: false,
            server_data_after_client_fin: false,
            client_read_after_fin: false,
            complete_at_client_close: None,
            dirs: Default::default(),
            http: Http::default(),
            syn_seq: None,
            synack_seq: None,
        }
    }

    /// Whether a client SYN with this sequence number opens a new connection on the same
    /// addresses and ports (rather than repeating this one's SYN).
    pub fn is_new_syn(&self, seq: u32) -> bool {
        match self.syn_seq {
            Some(s) => s != seq,
            None => self.dirs.iter().any(|d| d.packets > 0),
        }
    }

    /// Whether this segment shows the client and server were guessed the wrong way round:
    /// the connection was joined without its handshake, no payload was seen yet, and the
    /// side taken as the client begins an HTTP response (or the server a request).
    pub fn roles_reversed(&self, from_client: bool, seg: &TcpSegment<'_>) -> bool {
        let starts = match from_client {
            true => http::starts_response,
            false => http::starts_request,
        };
        self.syn_ns.is_none()
            && self.synack_ns.is_none()
            && self.dirs.iter().all(|d| d.unique_bytes == 0)
            && starts(seg.payload)
    }

    /// Swap client and server (see [`Connection::roles_reversed`]): before any payload,
    /// so only the per-direction counts change sides.
    pub fn swap_roles(&mut self) {
        std::mem::swap(&mut self.client, &mut self.server);
        self.dirs.swap(0, 1);
        self.last_client_ack_ns = None;
    }

    /// Account for one segment.
    pub fn add(&mut self, ts_ns: u64, from_client: bool, seg: &TcpSegment<'_>, ip_len: u32) {
        // Files merged from several interfaces may step back in time: keep the span.
        (self.first_ns, self.last_ns) = (self.first_ns.min(ts_ns), self.last_ns.max(ts_ns));
        if self.dirs.iter().all(|d| d.packets == 0) && seg.flags & TCP_SYN == 0 {
            // The capture began inside this connection: its HTTP is read from the next
            // response on.
            self.http.joined();
        }
        self.handshake(ts_ns, from_client, seg);
        let side = if from_client { 0 } else { 1 };
        let client_closed = self.dirs[0].fin_ns.is_some() || self.dirs[0].rst_ns.is_some();
        let (dir, http) = (&mut self.dirs[side], &mut self.http);
        dir.packets += 1;
        dir.ip_bytes += ip_len as u64;
        let seen = dir.sequence.track(seg, &mut |data, len| {
            if from_client {
                http.client(data, len);
            } else {
                http.server(data, len);
            }
        });
        dir.unique_bytes += seen.new_bytes as u64;
        if seen.retransmission {
            dir.retransmissions += 1;
            dir.retransmitted_bytes += seen.seen_bytes as u64;
        }
        if seg.flags & TCP_RST != 0 {
            dir.rst_ns.get_or_insert(ts_ns);
        }
        if seg.flags & TCP_FIN != 0 {
            dir.fin_ns.get_or_insert(ts_ns);
        }
        // After a bare FIN the client's plain ACKs of what the server sends still count
        // (it is reading), until it resets the connection.
        let reading =
            !client_closed || (self.server_data_after_client_fin && self.dirs[0].rst_ns.is_none());
        if from_client && reading && seg.flags & (TCP_ACK | TCP_FIN | TCP_RST) == TCP_ACK {
            self.last_client_ack_ns = Some(ts_ns);
            self.client_read_after_fin |= client_closed;
        }
        if !from_client && client_closed && seen.new_bytes > 0 && self.dirs[0].rst_ns.is_none() {
            self.server_data_after_client_fin = true;
        }
        if seen.new_bytes > 0 {
            if from_client {
                self.request_ns.get_or_insert(ts_ns);
            } else if self.request_ns.is_some() {
                self.response_ns.get_or_insert(ts_ns);
            }
        }
        if from_client && !client_closed && seg.flags & (TCP_FIN | TCP_RST) != 0 {
            self.complete_at_client_close = Some(self.http.complete);
        }
        if !from_client && seen.fin_delivered {
            self.server_closed |= !client_closed;
            self.server_closed_after_client_fin |= client_closed && self.dirs[0].rst_ns.is_none();
            self.http.server_closed();
        }
    }

    /// The handshake's times. A SYN or SYN/ACK sent again before the handshake completes
    /// moves its time to the latest copy, as tshark's `tcp.analysis.initial_rtt` takes it:
    /// the handshake RTT is that of the exchange that succeeded, not the retransmission
    /// timeout before it.
    fn handshake(&mut self, ts_ns: u64, from_client: bool, seg: &TcpSegment<'_>) {
        let flags = seg.flags & (TCP_SYN | TCP_ACK);
        let open = self.handshake_ack_ns.is_none();
        if from_client && flags == TCP_SYN {
            if self.syn_seq.is_none() || (open && self.syn_seq == Some(seg.seq)) {
                (self.syn_ns, self.syn_seq) = (Some(ts_ns), Some(seg.seq));
            }
        } else if !from_client && flags == TCP_SYN | TCP_ACK {
            if self.synack_seq.is_none() || (open && self.synack_seq == Some(seg.seq)) {
                (self.synack_ns, self.synack_seq) = (Some(ts_ns), Some(seg.seq));
            }
        } else if from_client
            && flags == TCP_ACK
            && open
            && self
                .synack_seq
                .is_some_and(|s| seg.ack == s.wrapping_add(1))
        {
            self.handshake_ack_ns = Some(ts_ns);
        }
    }

    /// The close class, as `run` would have recorded it.
    pub fn close(&self) -> Close {
        let [client, server] = &self.dirs;
        let http = &self.http;
        // A client that reset the connection read nothing after it first closed (a FIN
        // then a RST is a close, not a half-close): answers completed later were not its.
        let complete = match (client.rst_ns, self.complete_at_client_close) {
            (Some(_), Some(at_close)) => at_close,
            _ => http.complete,
        };
        let all_answered = complete >= http.requests;
        if self.synack_ns.is_none() && self.syn_ns.is_some() {
            return match (server.rst_ns, self.unreachable_ns) {
                (Some(_), _) => Close::Refused,
                (None, Some(_)) => Close::Unreachable,
                (None, None) => Close::Timeout,
            };
        }
        if self.syn_ns.is_some()
            && self.handshake_ack_ns.is_none()
            && client.rst_ns.is_some()
            && client.unique_bytes == 0
        {
            // The SYN/ACK came after the client had given up connecting: its kernel
            // answered with a RST.
            return Close::Timeout;
        }
        // A reset after the client closed (its FIN or RST) is not what ended the
        // client's requests: they were answered, or it had given up on them.
        let client_closed = client.fin_ns.into_iter().chain(client.rst_ns).min();
        if server
            .rst_ns
            .is_some_and(|r| client_closed.is_none_or(|c| r < c))
        {
            return Close::Reset;
        }
        if http.requests == 0 && http.responses == 0 {
            return match (
                client.rst_ns.or(server.rst_ns),
                client.fin_ns.or(server.fin_ns),
            ) {
                (Some(_), _) => Close::Reset,
                (None, Some(_)) => Close::Normal,
                (None, None) => Close::Timeout,
            };
        }
        // Bytes that are not HTTP are seen as they arrive; a short body only at the close,
        // which the client read before it closed, or after a bare FIN while still reading.
        let close_read = self.server_closed
            || (self.server_closed_after_client_fin
                && self.client_read_after_fin
                && client.rst_ns.is_none());
        if (http.not_http && server.fin_ns.is_some()) || (http.truncated() && close_read) {
            return Close::ProtocolError;
        }
        if !all_answered {
            return Close::Timeout;
        }
        Close::Normal
    }

    /// Handshake RTT at the capture point: SYN → the ACK of the SYN/ACK.
    pub fn handshake_ns(&self) -> Option<u64> {
        self.handshake_ack_ns?.checked_sub(self.syn_ns?)
    }

    /// S3's delay: the first request segment → the client's last ACK before its FIN (or
    /// RST); of a client that went on reading after a bare FIN, its last ACK of what the
    /// server sent (before any RST). `None` without a response: the server sent nothing
    /// after the request (reset, stalled, refused), or the client acknowledged none of it
    /// before closing.
    pub fn delay_ns(&self) -> Option<u64> {
        let (request, response) = (self.request_ns?, self.response_ns?);
        let ack = self.last_client_ack_ns.filter(|&a| a >= response)?;
        ack.checked_sub(request)
    }

    /// New payload both ways over S3's delay, in Mbit/s; over the connection's lifetime
    /// when there was no request; `None` for a request without a delay (no response).
    pub fn throughput_mbps(&self) -> Option<f64> {
        let window = match self.request_ns {
            Some(_) => self.delay_ns()?,
            None => self.last_ns - self.first_ns,
        };
        let bytes = self.dirs[0].unique_bytes + self.dirs[1].unique_bytes;
        (window > 0).then(|| bytes as f64 * 8.0 / (window as f64 / 1e9) / 1e6)
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
