//! Finding a packet's connection: a hash map keyed by the 4-tuple in a fixed order (so both
//! directions meet), with a small multiplicative hash (keys come from our own captures,
//! not from an adversary). A client SYN with a new sequence number on a known 4-tuple
//! starts a new connection (port reuse).

use super::connection::Connection;
use crate::packet::{Packet, Quote, TcpSegment, TCP_ACK, TCP_SYN};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::{IpAddr, SocketAddr};

type Endpoint = (IpAddr, u16);

/// Every connection of a capture, in order of first packet.
#[derive(Debug, Default)]
pub struct Tracker {
    index: HashMap<(Endpoint, Endpoint), usize, BuildHasherDefault<FastHasher>>,
    pub connections: Vec<Connection>,
    /// The server port the user named (`--port`): who is the server of a connection whose
    /// handshake was not captured.
    server_port: Option<u16>,
}

impl Tracker {
    /// A tracker that takes the side with `server_port`, when given, as the server of a
    /// connection joined without its handshake.
    pub fn new(server_port: Option<u16>) -> Tracker {
        Tracker {
            server_port,
            ..Tracker::default()
        }
    }

    /// Account for one TCP segment.
    pub fn add(&mut self, ts_ns: u64, packet: &Packet<'_>, seg: &TcpSegment<'_>) {
        let (src, dst) = ((packet.src, seg.src_port), (packet.dst, seg.dst_port));
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        let client_syn = seg.flags & (TCP_SYN | TCP_ACK) == TCP_SYN;
        let found = self.index.get(&key).copied();
        let at = match found {
            Some(i) if !(client_syn && self.connections[i].is_new_syn(seg.seq)) => i,
            _ => {
                let (client, server) = roles(src, dst, seg.flags, self.server_port);
                let conn = Connection::new(packet.family, sock(client), sock(server), ts_ns);
                self.connections.push(conn);
                self.index.insert(key, self.connections.len() - 1);
                self.connections.len() - 1
            }
        };
        let conn = &mut self.connections[at];
        let mut from_client = conn.client == sock(src);
        if self.server_port.is_none() && conn.roles_reversed(from_client, seg) {
            // Joined without a handshake, the port guess was wrong: HTTP says who is who.
            conn.swap_roles();
            from_client = !from_client;
        }
        conn.add(ts_ns, from_client, seg, packet.ip_len);
    }
}

impl Tracker {
    /// An ICMP error said the quoted segment could not be delivered: mark its connection.
    pub fn unreachable(&mut self, ts_ns: u64, quote: &Quote) {
        let (src, dst) = ((quote.src, quote.src_port), (quote.dst, quote.dst_port));
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        if let Some(&at) = self.index.get(&key) {
            self.connections[at].unreachable_ns.get_or_insert(ts_ns);
        }
    }
}

/// Who is the client: the sender of a SYN, the receiver of a SYN/ACK, else the side
/// without the server port named (`--port`), else the side with the higher (ephemeral)
/// port, until its first payload says otherwise ([`Connection::roles_reversed`]).
fn roles(src: Endpoint, dst: Endpoint, flags: u8, server: Option<u16>) -> (Endpoint, Endpoint) {
    let named = |e: Endpoint| server == Some(e.1);
    match flags & (TCP_SYN | TCP_ACK) {
        TCP_SYN => (src, dst),
        f if f == TCP_SYN | TCP_ACK => (dst, src),
        _ if named(dst) && !named(src) => (src, dst),
        _ if named(src) && !named(dst) => (dst, src),
        _ if src.1 >= dst.1 => (src, dst),
        _ => (dst, src),
    }
}

fn sock((ip, port): Endpoint) -> SocketAddr {
    SocketAddr::new(ip, port)
}

/// FxHash-style: rotate, xor, multiply.
#[derive(Default)]
pub struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.add(v as u64);
    }
    fn write_u16(&mut self, v: u16) {
        self.add(v as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.add(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
