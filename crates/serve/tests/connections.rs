//! Connection handling over real sockets: keep-alive, pipelining, HTTP/1.0, bad requests,
//! static files under a root, and the library's start/stop.

mod common;

use common::{get, loopback_server, pattern, temp_dir, Client};
use dualbench_serve::{start, ServeConfig, INDEX_PAGE};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let mut client = Client::connect(addr);
        for n in 0..20 {
            client.send(format!("GET /bytes/{n} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            let r = client.response(false);
            assert_eq!(r.status, 200);
            assert_eq!(r.body, pattern(n));
            assert_eq!(r.field("connection"), None);
        }
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(
        b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\nGET /status/404 HTTP/1.1\r\nHost: t\r\n\r\nGET /delay/20 HTTP/1.1\r\nHost: t\r\n\r\n\
          GET / HTTP/1.1\r\nHost: t\r\n\r\nHEAD /bytes/9 HTTP/1.1\r\nHost: t\r\n\r\nGET /bytes/1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(client.response(false).body, b"abc");
    assert_eq!(client.response(false).status, 404);
    assert_eq!(client.response(false).body, b"delayed 20 ms\n");
    assert_eq!(client.response(false).body, INDEX_PAGE);
    assert_eq!(client.response(true).length(), Some(9));
    assert_eq!(client.response(false).body, b"a");
    assert!(client.closed());
}

#[test]
fn a_thousand_pipelined_requests_with_large_answers() {
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    let mut client = Client::connect(addr);
    let mut writer = client.stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        for _ in 0..1000 {
            writer
                .write_all(b"GET /bytes/5000 HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
        }
    });
    for _ in 0..1000 {
        let r = client.response(false);
        assert_eq!(r.body.len(), 5000);
    }
    sender.join().unwrap();
}

#[test]
fn http10_closes_unless_keep_alive_asked() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let mut client = Client::connect(addr);
        client.send(b"GET / HTTP/1.0\r\n\r\n");
        let r = client.response(false);
        assert_eq!((r.status, r.field("connection")), (200, Some("close")));
        assert!(client.closed());

        let mut client = Client::connect(addr);
        client.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(
            client.response(false).field("connection"),
            Some("keep-alive")
        );
        client.send(b"GET /bytes/2 HTTP/1.0\r\n\r\n");
        assert_eq!(client.response(false).body, b"ab");
        assert!(client.closed());
    }
}

#[test]
fn garbage_gets_400_and_the_server_goes_on() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let mut client = Client::connect(addr);
        client.send(b"\x16\x03\x01 this is not http\r\n\r\nmore garbage after it");
        let r = client.response(false);
        assert_eq!(r.status, 400);
        assert_eq!(r.field("connection"), Some("close"));
        assert!(client.closed());
        assert_eq!(get(addr, "/").body, INDEX_PAGE);
    }
}

#[test]
fn bad_framing_and_huge_heads_are_refused() {
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    let mut client = Client::connect(addr);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    );
    assert_eq!(client.response(false).status, 400);
    assert!(client.closed());

    let mut client = Client::connect(addr);
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    assert_eq!(client.response(false).status, 400);

    let mut client = Client::connect(addr);
    let long = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Long: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    client.send(long.as_bytes());
    assert_eq!(client.response(false).status, 431);
    assert_eq!(get(addr, "/").status, 200);
}

#[test]
fn a_client_that_closes_early_does_not_hurt() {
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    for path in ["/bytes/50000000", "/delay/100", "/stall"] {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .unwrap();
        drop(stream);
    }
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"GET /bytes/7 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    half.shutdown(std::net::Shutdown::Write).unwrap();
    let mut client = Client::over(half);
    assert_eq!(client.response(false).body, b"abcdefg");
    assert!(client.closed(), "half-closed client: answer, then close");
    assert_eq!(get(addr, "/").status, 200);
}

#[test]
fn static_files_under_root() {
    let root = temp_dir("root");
    std::fs::write(root.join("index.html"), b"<p>home</p>").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/style.css"), b"p{}").unwrap();
    std::fs::write(root.join("sub/a b.txt"), b"spaced").unwrap();
    let big = pattern(300_000);
    std::fs::write(root.join("big.bin"), &big).unwrap();
    let outside = temp_dir("outside");
    std::fs::write(outside.join("secret.txt"), b"secret").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();

    let server = loopback_server(Some(root.clone()));
    for &addr in server.addrs() {
        let r = get(addr, "/");
        assert_eq!(
            (r.status, r.body.as_slice(), r.field("content-type")),
            (200, &b"<p>home</p>"[..], Some("text/html"))
        );
        let r = get(addr, "/sub/style.css");
        assert_eq!(
            (r.body.as_slice(), r.field("content-type")),
            (&b"p{}"[..], Some("text/css"))
        );
        assert_eq!(get(addr, "/sub/a%20b.txt").body, b"spaced");
        let r = get(addr, "/big.bin");
        assert_eq!(r.length(), Some(big.len()));
        assert!(r.body == big);
        // Pipelined on one kept-alive connection, file bodies (sent straight from the
        // file) and an in-memory answer come back whole and in order.
        let mut c = Client::connect(addr);
        let req = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
        c.send((req("/big.bin") + &req("/") + &req("/big.bin")).as_bytes());
        assert!(c.response(false).body == big);
        assert_eq!(c.response(false).body, b"<p>home</p>");
        assert!(c.response(false).body == big);
        assert_eq!(get(addr, "/missing.html").status, 404);
        // A trailing `/` names a directory: a file there is 404, as nginx has it (the
        // file was served).
        let r = get(addr, "/sub/style.css/");
        assert_eq!(
            (r.status, r.body.as_slice()),
            (404, &b"404 Not Found\n"[..])
        );
        assert_eq!(get(addr, "/sub/style.css").status, 200);
        // Also when the `/` is percent-encoded, or followed by a `.` segment (the file was
        // served for both).
        for dir in ["/sub/style.css%2f", "/sub/style.css/."] {
            assert_eq!(get(addr, dir).status, 404, "{dir}");
        }
        assert_eq!(
            get(addr, "/sub/").status,
            404,
            "a directory without index.html"
        );
        // Dot segments are resolved before the look-up, as nginx resolves them (a `..`
        // segment got 403); one that would go above the root is 400, as nginx has it.
        assert_eq!(get(addr, "/sub/../sub/./style.css").body, b"p{}");
        assert_eq!(get(addr, "/sub/%2e%2E/index.html").body, b"<p>home</p>");
        for escape in ["/../outside/secret.txt", "/sub/%2e%2e/%2e%2e/etc/passwd"] {
            let r = get(addr, escape);
            assert_eq!(
                (r.status, r.body.as_slice()),
                (
                    400,
                    &b"400 Bad Request: the path goes above / with '..'\n"[..]
                ),
                "{escape}"
            );
        }
        // An encoded `/` does not make a segment (it stays in the name, and the name
        // has a `..` in it), and a link out of the root is no way out either.
        for escape in ["/sub/..%2f..%2f..%2fetc/passwd", "/link.txt"] {
            let r = get(addr, escape);
            assert_eq!(r.status, 403, "{escape}");
            assert!(!r.body.starts_with(b"secret"));
        }
        assert_eq!(
            get(addr, "/bytes/3").body,
            b"abc",
            "endpoints still work with a root"
        );
    }
    drop(server);
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

/// A FIFO under the root is not a file to serve: 404 at once. Opening it blocking would
/// hold the worker until some writer came, and with it every later request and the
/// server's stop.
#[test]
fn a_fifo_under_the_root_is_404_and_holds_nothing_up() {
    let root = temp_dir("fifo");
    let fifo = root.join("pipe");
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    let server = start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        root: Some(root.clone()),
        workers: 1,
        ..Default::default()
    })
    .unwrap();
    let mut client = Client::connect(server.addrs()[0]);
    client
        .stream
        .set_read_timeout(Some(std::time::Duration::from_secs(3)))
        .unwrap();
    client.send(b"GET /pipe HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut status_line = [0u8; 12];
    let answered = client.stream.read_exact(&mut status_line);
    if answered.is_err() {
        // The worker is stuck in open(): give it a writer so the server can stop.
        drop(std::fs::OpenOptions::new().write(true).open(&fifo));
    }
    assert_eq!(&status_line, b"HTTP/1.1 404", "{answered:?}");
    assert_eq!(get(server.addrs()[0], "/pipe").status, 404);
    server.stop();
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn stop_frees_the_port_and_drop_stops_too() {
    let config = ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        root: None,
        workers: 1,
        ..Default::default()
    };
    let server = start(config.clone()).unwrap();
    let addr = server.addrs()[0];
    assert_ne!(addr.port(), 0);
    // A connection held open (and a stalled one) must not keep the server alive.
    let mut held = Client::connect(addr);
    held.send(b"GET /stall HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(get(addr, "/").status, 200);
    server.stop();
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens after stop"
    );
    drop(TcpListener::bind(addr).expect("the port is free again"));

    let again = start(ServeConfig {
        listen: vec![addr],
        ..config
    })
    .expect("same port again");
    assert_eq!(get(addr, "/").status, 200);
    drop(again);
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens after drop"
    );
}

#[test]
fn bad_config_is_a_usage_failure() {
    let none = ServeConfig {
        listen: vec![],
        root: None,
        workers: 1,
        ..Default::default()
    };
    assert_eq!(start(none).unwrap_err().exit_code(), 2);
    let missing = ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        root: Some("/nonexistent/dualbench".into()),
        workers: 1,
        ..Default::default()
    };
    let failure = start(missing).unwrap_err();
    assert_eq!(failure.exit_code(), 2);
    assert!(failure.message.contains("--root"), "{}", failure.message);
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = ServeConfig {
        listen: vec![busy.local_addr().unwrap()],
        root: None,
        workers: 1,
        ..Default::default()
    };
    assert_eq!(start(taken).unwrap_err().exit_code(), 2);
}

#[test]
fn the_handle_moves_between_threads() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<dualbench_serve::ServerHandle>();
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    std::thread::spawn(move || server.stop()).join().unwrap();
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn many_clients_at_once_on_both_families() {
    let server = loopback_server(None);
    let addrs = server.addrs().to_vec();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let addr = addrs[t % addrs.len()];
            std::thread::spawn(move || {
                let mut served = 0;
                for _ in 0..25 {
                    let mut client = Client::connect(addr);
                    for n in 0..20 {
                        client
                            .send(format!("GET /bytes/{n} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
                        assert_eq!(client.response(false).body.len(), n);
                        served += 1;
                    }
                }
                served
            })
        })
        .collect();
    let served: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(served, 8 * 25 * 20);
}

#[test]
fn port_zero_gives_both_families_the_same_port() {
    let server = loopback_server(None);
    if let [v4, v6] = server.addrs() {
        assert_eq!(v4.port(), v6.port());
    }
}

#[test]
fn random_garbage_never_stops_the_server() {
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..50 {
        let mut request = b"GET /bytes/10 HTTP/1.1\r\nHost: t\r\n\r\n".to_vec();
        for _ in 0..1 + next() % 4 {
            let at = (next() % request.len() as u64) as usize;
            request[at] = next() as u8;
        }
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        let _ = stream.write_all(&request);
        let _ = std::io::Read::read(&mut stream, &mut [0u8; 256]);
    }
    assert_eq!(get(addr, "/").body, INDEX_PAGE);
}
