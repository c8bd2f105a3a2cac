//! The engine allocates nothing per request in steady state: buffers, queues and parsers
//! are reused, request bytes are built once, histograms are sized up front. A counting
//! global allocator (this test binary's own) compares a run of 2,000 requests with one of
//! 20,000 against the same loopback server: whatever the engine allocates per request
//! shows 18,000 times over in the difference.

use dualbench_load::cli::RunCli;
use dualbench_load::config::{self, Machine};
use dualbench_load::engine;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

/// A loopback server that allocates nothing per request or connection either (it shares
/// the counter): `THREADS` threads started up front, each accepting and serving one
/// connection at a time with a fixed buffer, one canned response per request head
/// (pipelined heads included), until the client closes. Returns its port.
fn server() -> u16 {
    const THREADS: usize = 8;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    for _ in 0..THREADS {
        let listener = listener.try_clone().unwrap();
        std::thread::spawn(move || {
            while let Ok((conn, _)) = listener.accept() {
                serve(conn);
            }
        });
    }
    port
}

fn serve(mut conn: TcpStream) {
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buf = [0u8; 4096];
    let mut out = [0u8; 64 * RESPONSE.len()];
    // How much of "\r\n\r\n" the bytes so far end with.
    let mut matched = 0;
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut heads = 0;
        for &b in &buf[..n] {
            matched = match (matched, b) {
                (0 | 2, b'\r') => matched + 1,
                (1 | 3, b'\n') => matched + 1,
                (_, b'\r') => 1,
                _ => 0,
            };
            if matched == 4 {
                heads += 1;
                matched = 0;
            }
        }
        for i in 0..heads {
            out[i * RESPONSE.len()..(i + 1) * RESPONSE.len()].copy_from_slice(RESPONSE);
        }
        if conn.write_all(&out[..heads * RESPONSE.len()]).is_err() {
            break;
        }
    }
    let _ = conn.shutdown(Shutdown::Both);
}

/// Allocations made while running `flags` with `-n n` against the server, checking that
/// all `n` requests completed.
fn allocations(port: u16, flags: &str, n: u64) -> u64 {
    let url = format!("http://127.0.0.1:{port}/");
    let n_flag = n.to_string();
    let args = ["run", "-n", n_flag.as_str(), "--workers", "1", "-s", "30"]
        .into_iter()
        .chain(flags.split_whitespace())
        .chain([url.as_str()]);
    let cli = RunCli::try_parse_args(args).unwrap();
    let machine = Machine {
        cores: 2,
        fd_limit: 1024,
    };
    let (plan, _) = config::plan(&cli, &cli.urls, machine).unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let measured = engine::run(plan, &mut ());
    let made = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let completed: u64 = measured.families.iter().map(|f| f.completed).sum();
    assert_eq!(completed, n, "{flags}: every request completed");
    assert!(measured.fatal.is_none() && measured.interrupted.is_none());
    made
}

/// Allocations in a run of 2,000 requests, and how many more a run of 20,000 made.
fn short_and_extra(flags: &str) -> (u64, u64) {
    let port = server();
    let short = allocations(port, flags, 2_000);
    let long = allocations(port, flags, 20_000);
    eprintln!("{flags}: {short} allocations for 2,000 requests, {long} for 20,000");
    (short, long.saturating_sub(short))
}

/// One test for every mode, so that nothing else in this process (the test harness
/// reporting another test) allocates while one is counted.
#[test]
fn no_allocation_per_request() {
    let modes = [
        ("keep-alive", "-k -c 8"),
        // A socket, a slab entry, a parser and a request queue per request, all reused.
        ("connection per request", "-c 8"),
        ("pipelined", "-k -c 8 --pipeline 4"),
        (
            "open loop",
            "-k -c 8 --rate 40000 --arrival poisson --seed 7",
        ),
    ];
    let mut failed = Vec::new();
    for (name, flags) in modes {
        let (short, extra) = short_and_extra(flags);
        // A few may differ with timing (the controller's progress ticks); one per request
        // would be 18,000.
        if extra > 20 {
            failed.push(format!(
                "{name} ({flags}): 18,000 more requests made {extra} more allocations ({short} for 2,000)"
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
