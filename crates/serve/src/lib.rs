//! The built-in dual-stack target server (`dualbench serve`): static files and endpoints that
//! produce every outcome on purpose (`/bytes/N`, `/vary/N`, `/delay/MS`, `/status/CODE`,
//! `/reset`, `/stall`, `/close`, `/echo`).
//!
//! As a library: [`start`] binds every address of a [`ServeConfig`], starts the workers and
//! returns once listening; [`ServerHandle::addrs`] gives the real addresses (port 0 resolved),
//! and [`ServerHandle::stop`] (or dropping the handle) stops the workers and frees the ports.
//!
//! Layout: bytes in and out without I/O (`request`, `body`, `route`, `response`,
//! `answer`, `files`, `buffer`), one connection's state machine (`conn`), one worker's
//! event loop (`worker`), the listening sockets (`listen`), and the command line (`cli`).

mod answer;
mod body;
mod buffer;
mod cli;
mod conn;
mod files;
mod listen;
mod request;
mod response;
mod route;
mod worker;

pub use cli::{main, ServeCli};
pub use listen::Unavailable;
pub use response::INDEX_PAGE;
pub use route::{MAX_BYTES, MAX_DELAY_MS, MAX_VARY};

use dualbench_common::{Failure, Result};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use worker::{Bell, Shared, Worker};

/// The most worker threads a server runs.
pub const MAX_WORKERS: usize = 1024;

/// What to serve and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Addresses to listen on; port 0 picks a free port. An address whose family the host
    /// lacks is set aside (see [`ServerHandle::unavailable`]) as long as one remains.
    pub listen: Vec<SocketAddr>,
    /// Directory served as static files; without it `/` is the built-in 45-byte page.
    pub root: Option<PathBuf>,
    /// Worker threads, each with its own event loop; 0 means one per core.
    pub workers: usize,
    /// How long a connection may keep the server waiting for a request, a body or a read.
    pub timeouts: Timeouts,
}

impl Default for ServeConfig {
    /// `[::]:8080` and `0.0.0.0:8080`, no root, one worker per core.
    fn default() -> Self {
        ServeConfig {
            listen: vec![
                SocketAddr::from(([0u16; 8], 8080)),
                SocketAddr::from(([0u8; 4], 8080)),
            ],
            root: None,
            workers: 0,
            timeouts: Timeouts::default(),
        }
    }
}

/// How long a connection may keep the server waiting before the server gives up on it, as
/// nginx's `keepalive_timeout` (75 s), `client_header_timeout` (60 s),
/// `client_body_timeout` (60 s) and `send_timeout` (60 s) do. `None` never times out.
/// Connections are looked over a few times per timeout (at most once a second), not on
/// every request, so a connection goes up to a quarter of its timeout (2 s at most) past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// An idle keep-alive connection: its answers sent, no next request begun. Closed
    /// with nothing sent.
    pub keepalive: Option<Duration>,
    /// A request head not yet complete, counted from its first byte (on a new connection,
    /// from the accept): a client that sends half a head, or nothing at all. Closed with
    /// nothing sent.
    pub header: Option<Duration>,
    /// A request body of which nothing more has arrived this long (between two reads, not
    /// for the whole body): answered 408 with `Connection: close`, then closed.
    pub body: Option<Duration>,
    /// An answer of which the client has taken nothing this long (between two writes, not
    /// for the whole answer): closed, the rest unsent.
    pub send: Option<Duration>,
}

impl Default for Timeouts {
    /// nginx's defaults: 75 s idle, 60 s for a request head, a body and an answer.
    fn default() -> Self {
        Timeouts {
            keepalive: Some(Duration::from_secs(75)),
            header: Some(Duration::from_secs(60)),
            body: Some(Duration::from_secs(60)),
            send: Some(Duration::from_secs(60)),
        }
    }
}

/// The longest timeout [`Timeouts`] may have: one day.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);

/// A running server. Dropping it stops the server, like [`stop`](Self::stop).
#[derive(Debug)]
pub struct ServerHandle {
    addrs: Vec<SocketAddr>,
    unavailable: Vec<Unavailable>,
    shared: Arc<Shared>,
    /// One per worker: rung to make it look at the stop flag.
    bells: Vec<Bell>,
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// The addresses being listened on, in the order asked for, with real port numbers.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Addresses not listened on because the host lacks their family.
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// Stop every worker, close every connection and listening socket, and wait for it.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        for bell in &self.bells {
            bell.ring();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Listen on every address of `config` and start the workers; returns once listening.
/// Its timeouts are checked first (each at most [`MAX_TIMEOUT`]).
pub fn start(config: ServeConfig) -> Result<ServerHandle> {
    let timeouts = config.timeouts;
    for (name, limit) in [
        ("keep-alive", timeouts.keepalive),
        ("request head", timeouts.header),
        ("request body", timeouts.body),
        ("send", timeouts.send),
    ] {
        if limit.is_some_and(|t| t.is_zero() || t > MAX_TIMEOUT) {
            return Err(Failure::usage(format!(
                "the {name} timeout must be from 1 ns to {} s (or none)",
                MAX_TIMEOUT.as_secs()
            )));
        }
    }
    let workers = worker_count(config.workers)?;
    if config.listen.is_empty() {
        return Err(Failure::usage(
            "no address to listen on: give at least one ADDR:PORT",
        ));
    }
    let root = config.root.as_deref().map(check_root).transpose()?;
    let bound = listen::bind_all(&config.listen)?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        root,
        varied: std::sync::atomic::AtomicU64::new(0),
        timeouts,
    });
    let mut handle = ServerHandle {
        addrs: bound.addrs,
        unavailable: bound.unavailable,
        shared,
        bells: Vec::with_capacity(workers),
        threads: Vec::with_capacity(workers),
    };
    for n in 0..workers {
        spawn_worker(&mut handle, &bound.listeners, n)
            .map_err(|e| Failure::runtime(format!("starting worker {n}: {e}")))?;
    }
    Ok(handle)
}

/// Start worker `n` and wait until it has taken what it needs from the listeners.
///
/// Each worker runs in a descriptor table of its own (see [`dualbench_common::fds`]), so
/// the open-file limit caps each worker's connections rather than the whole server's:
/// the worker copies the process's table, keeps the listeners and its bell at the same
/// numbers and closes everything else. The caller may drop the listeners once this returns.
fn spawn_worker(
    handle: &mut ServerHandle,
    listeners: &[std::net::TcpListener],
    n: usize,
) -> std::io::Result<()> {
    let bell = Bell::new()?;
    let bell_fd = bell.as_raw_fd();
    let listener_fds: Vec<_> = listeners.iter().map(|l| l.as_raw_fd()).collect();
    let shared = handle.shared.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    let thread = std::thread::Builder::new()
        .name(format!("serve-{n}"))
        .spawn(move || {
            let worker = Worker::new(&listener_fds, bell_fd, shared);
            let worker = match worker {
                Ok(w) => {
                    let _ = ready_tx.send(Ok(()));
                    w
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            if let Err(e) = worker.run() {
                // Not `eprintln!`, which panics where stderr cannot take the line.
                let line = format!("dualbench serve: worker {n} stopped: {e}\n");
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            }
        })?;
    let started = ready_rx
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the worker ended before it started")));
    handle.bells.push(bell);
    handle.threads.push(thread);
    started
}

fn worker_count(asked: usize) -> Result<usize> {
    match asked {
        0 => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
        n if n > MAX_WORKERS => Err(Failure::usage(format!(
            "{n} workers is too many: at most {MAX_WORKERS}"
        ))),
        n => Ok(n),
    }
}

/// The canonical path of a root directory, or a usage failure naming the problem.
fn check_root(dir: &Path) -> Result<PathBuf> {
    let real = dir.canonicalize().map_err(|e| {
        Failure::usage(format!(
            "--root {}: {e}: give an existing directory",
            dir.display()
        ))
    })?;
    if !real.is_dir() {
        return Err(Failure::usage(format!(
            "--root {}: not a directory: give the directory of files to serve",
            dir.display()
        )));
    }
    Ok(real)
}
