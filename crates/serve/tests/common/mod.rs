//! Helpers for the server tests: start a server on loopback, speak raw HTTP/1.x to it over
//! real sockets, and split responses into status, fields and body.

#![allow(dead_code)]

use dualbench_serve::{start, ServeConfig, ServerHandle};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A server on 127.0.0.1 and ::1 (the latter only where the host has IPv6).
pub fn loopback_server(root: Option<PathBuf>) -> ServerHandle {
    let config = ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()],
        root,
        workers: 2,
        ..Default::default()
    };
    start(config).expect("server starts")
}

/// One parsed response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub fields: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn length(&self) -> Option<usize> {
        self.field("content-length")
            .map(|v| v.parse().expect("numeric Content-Length"))
    }
}

/// A client connection that keeps bytes read past one response for the next.
pub struct Client {
    pub stream: TcpStream,
    pending: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        Client::over(TcpStream::connect(addr).expect("connect"))
    }

    pub fn over(stream: TcpStream) -> Client {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Client {
            stream,
            pending: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Read more input; false at end of stream.
    fn more(&mut self) -> bool {
        let mut buf = [0u8; 65536];
        let n = self.stream.read(&mut buf).expect("read");
        self.pending.extend_from_slice(&buf[..n]);
        n > 0
    }

    /// Read one response (no body if `head_only` or the status has none).
    pub fn response(&mut self, head_only: bool) -> Response {
        let (status, fields, used) = loop {
            let mut slots = [httparse::EMPTY_HEADER; 32];
            let mut parsed = httparse::Response::new(&mut slots);
            if let httparse::Status::Complete(used) =
                parsed.parse(&self.pending).expect("valid response")
            {
                let fields = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect::<Vec<_>>();
                break (parsed.code.unwrap(), fields, used);
            }
            assert!(self.more(), "connection closed inside a response head");
        };
        self.pending.drain(..used);
        let mut response = Response {
            status,
            fields,
            body: Vec::new(),
        };
        let length = if head_only || status == 204 || status == 304 {
            0
        } else {
            response.length().unwrap()
        };
        while self.pending.len() < length {
            assert!(self.more(), "connection closed inside a body");
        }
        response.body = self.pending.drain(..length).collect();
        response
    }

    /// Everything until the server closes (or resets).
    pub fn rest(&mut self) -> std::io::Result<Vec<u8>> {
        let mut out = std::mem::take(&mut self.pending);
        self.stream.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Whether the server closed the connection (end of stream with nothing more).
    pub fn closed(&mut self) -> bool {
        matches!(self.rest(), Ok(rest) if rest.is_empty())
    }
}

/// Send one request with `Connection: close` and read the answer.
pub fn get(addr: SocketAddr, path: &str) -> Response {
    let mut client = Client::connect(addr);
    client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes());
    let response = client.response(false);
    assert!(
        client.closed(),
        "server should close after Connection: close"
    );
    response
}

/// Whether a read error means the peer reset the connection.
pub fn is_reset(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::ConnectionReset
}

/// A fresh directory under the system temp dir, unique to this process and call.
pub fn temp_dir(tag: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("dualbench-serve-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `/bytes/N` bodies: byte i is `b'a' + i % 26`.
pub fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}
