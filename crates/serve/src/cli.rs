//! `dualbench serve` on the command line: flags into a checked [`ServeConfig`], one line per
//! listening address on stdout, one line per missing family on stderr, then serve until
//! SIGINT, SIGTERM or SIGHUP (its terminal closed; not under `nohup`) and exit 0.

use crate::{start, ServeConfig, ServerHandle, Timeouts, MAX_TIMEOUT, MAX_WORKERS};
use clap::Args;
use dualbench_common::{signals, Failure, Family, Result};
use signal_hook::iterator::Signals;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Flags of `dualbench serve`.
#[derive(Debug, Args)]
#[command(after_help = ENDPOINTS)]
pub struct ServeCli {
    // The help is given as a string: brackets in a doc comment would be read as links.
    #[arg(
        long = "listen",
        value_name = "ADDR:PORT",
        value_parser = parse_listen,
        help = "Address to listen on, as ADDR:PORT (IPv6 in brackets: [::1]:8080; port 0 picks a \
                free one); repeat for more. Default: [::]:8080 and 0.0.0.0:8080"
    )]
    pub listen: Vec<SocketAddr>,
    /// Serve the files under DIR (`/` is DIR/index.html); without it `/` is a built-in 45-byte page
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Worker threads, each with its own event loop [default: one per core]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS as i64))]
    pub workers: Option<u16>,
    /// Close a keep-alive connection idle this long after its last answer (nginx's
    /// keepalive_timeout), e.g. 75s, 500ms; 0: never
    #[arg(long, value_name = "DURATION", default_value = "75s", value_parser = parse_timeout)]
    pub keepalive_timeout: Duration,
    /// Close a connection whose request head is not complete this long after it began, or
    /// that sends nothing this long after it is accepted (nginx's client_header_timeout); 0: never
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub header_timeout: Duration,
    /// Answer 408 and close when nothing more of a request body has arrived this long
    /// (between two reads; nginx's client_body_timeout); 0: never
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub body_timeout: Duration,
    /// Close a connection whose client has taken nothing more of its answer this long (not
    /// the whole answer's time; nginx's send_timeout); 0: never
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub send_timeout: Duration,
}

/// A timeout flag's value: a duration (`75s`, `500ms`, `2m`, a plain number of seconds) of
/// at most [`MAX_TIMEOUT`]; 0 is no timeout.
fn parse_timeout(text: &str) -> std::result::Result<Duration, String> {
    let timeout = dualbench_common::parse_duration(text)?;
    if timeout > MAX_TIMEOUT {
        return Err(format!(
            "'{text}' is longer than the longest timeout, {}s (use 0 for none)",
            MAX_TIMEOUT.as_secs()
        ));
    }
    Ok(timeout)
}

const ENDPOINTS: &str = "\
Endpoints:
  /              the built-in 45-byte page (without --root)
  /bytes/N       exactly N body bytes (N up to 1073741824)
  /delay/MS      a small answer after MS milliseconds (MS up to 60000)
  /status/CODE   that status (200-599) with a small body
  /vary/N        answers of 0..N body bytes in turn (ab's Length failures; N up to 65536)
  /reset         read the request, then reset the connection (RST)
  /stall         read the request, never answer
  /close         a head announcing 1024 bytes, then close without them
  /echo          the request body sent back

Prints \"listening on http://ADDR/\" per address; runs until SIGINT, SIGTERM or SIGHUP, then
exits 0.";

fn parse_listen(text: &str) -> std::result::Result<SocketAddr, String> {
    let usage = || not_listen_address(text);
    // A link-local address names its interface as a zone: `[fe80::1%eth0]:8080`.
    if let Some((ip, rest)) = text
        .strip_prefix('[')
        .and_then(|t| t.split_once('%'))
        .filter(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok())
    {
        let (zone, port) = rest.split_once("]:").ok_or_else(usage)?;
        let scope = match zone.parse::<u32>() {
            Ok(index) => index,
            Err(_) => dualbench_common::netif::index(zone)
                .ok_or_else(|| format!("no network interface named '{zone}' (see 'ip link')"))?,
        };
        let addr: SocketAddr = format!("[{ip}]:{port}").parse().map_err(|_| usage())?;
        return Ok(match addr {
            SocketAddr::V6(mut v6) => {
                v6.set_scope_id(scope);
                SocketAddr::V6(v6)
            }
            other => other,
        });
    }
    text.parse().map_err(|_| usage())
}

/// Why `text` is not an `ADDR:PORT` to listen on (a port left out or out of range, an
/// IPv6 address without brackets, a host name), and what to give instead.
fn not_listen_address(text: &str) -> String {
    const GIVE: &str = "give ADDR:PORT, such as 0.0.0.0:8080 or [::1]:8080";
    let (host, port, bracketed) = if let Some(rest) = text.strip_prefix('[') {
        match rest.split_once(']') {
            None => return format!("missing ']' after the IPv6 address: {GIVE}"),
            Some((host, "")) => (host, None, true),
            Some((host, after)) => match after.strip_prefix(':') {
                Some(port) => (host, Some(port), true),
                None => return format!("expected ':PORT' after ']': {GIVE}"),
            },
        }
    } else if text.matches(':').count() > 1 {
        return format!("an IPv6 address goes in brackets with its port after them: {GIVE}");
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port), false),
            None => (text, None, false),
        }
    };
    let why = match port {
        None => "no port (0 picks a free one)".to_string(),
        Some(p) if p.parse::<u16>().is_err() => {
            format!("port '{p}' is not a number from 0 to 65535")
        }
        Some(_) if host.is_empty() => {
            "no address before the port (0.0.0.0 is every IPv4 address, [::] every IPv6 one)"
                .to_string()
        }
        Some(_) if bracketed => format!("'{host}' in brackets is not an IPv6 address"),
        Some(_) => format!("'{host}' is not an IP address (--listen takes addresses, not names)"),
    };
    format!("{why}: {GIVE}")
}

impl ServeCli {
    fn timeouts(&self) -> Timeouts {
        let given = |t: Duration| (!t.is_zero()).then_some(t);
        Timeouts {
            keepalive: given(self.keepalive_timeout),
            header: given(self.header_timeout),
            body: given(self.body_timeout),
            send: given(self.send_timeout),
        }
    }

    fn config(&self) -> ServeConfig {
        let defaults = ServeConfig::default();
        ServeConfig {
            listen: if self.listen.is_empty() {
                defaults.listen
            } else {
                self.listen.clone()
            },
            root: self.root.clone(),
            workers: self.workers.map_or(0, usize::from),
            timeouts: self.timeouts(),
        }
    }
}

/// Entry point of `dualbench serve`.
pub fn main(cli: ServeCli) -> Result<()> {
    let mut signals = Signals::new(signals::stop_signals())
        .map_err(|e| Failure::runtime(format!("cannot catch SIGINT/SIGTERM/SIGHUP: {e}")))?;
    // Each worker's connections count against the limit in its own table.
    dualbench_common::fds::raise_nofile_limit();
    let server = start(cli.config())?;
    // A server nobody can find (its port unknown) is worse than none: stop, and say why.
    announce(
        &server,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )?;
    let _ = signals.forever().next();
    server.stop();
    Ok(())
}

/// One line on `err` per family the host lacks, then one line on `out` per address.
/// Output that cannot be written (stdout on a full disk or a closed pipe) is a failure:
/// whoever started the server would never learn its port.
fn announce(server: &ServerHandle, out: &mut impl Write, err: &mut impl Write) -> Result<()> {
    for family in Family::ALL {
        let served = server.addrs().iter().any(|a| Family::of_addr(a) == family);
        let missing = server.unavailable().iter().find(|u| u.family == family);
        if let (Some(missing), false) = (missing, served) {
            let other = if family == Family::V4 {
                Family::V6
            } else {
                Family::V4
            };
            // A note only: where stderr cannot take it, the server goes on.
            let _ = writeln!(err, "dualbench serve: {missing}; serving {other} only");
        }
    }
    let lines: String = server
        .addrs()
        .iter()
        .map(|addr| format!("listening on {}\n", url_of(addr)))
        .collect();
    out.write_all(lines.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| {
            Failure::runtime(format!(
                "cannot write the listening addresses to stdout ({e}); \
                 give serve a stdout that takes them (a terminal, a pipe, a file with room)"
            ))
        })
}

/// The URL a client would use, a link-local address's zone written as RFC 6874 has it
/// (`http://[fe80::1%25eth0]:8080/`, which `dualbench run` takes as it is).
fn url_of(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V6(v6) if v6.scope_id() != 0 => {
            let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
            // SAFETY: if_indextoname writes at most IF_NAMESIZE bytes into `name`.
            let zone =
                if unsafe { libc::if_indextoname(v6.scope_id(), name.as_mut_ptr()) }.is_null() {
                    v6.scope_id().to_string()
                } else {
                    // SAFETY: on success `name` holds a NUL-terminated interface name.
                    unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                };
            format!("http://[{}%25{zone}]:{}/", v6.ip(), v6.port())
        }
        _ => format!("http://{addr}/"),
    }
}

#[cfg(test)]
mod tests {
    use super::ENDPOINTS;
    use crate::route::{route, Endpoint};

    /// A link-local address takes its interface as a zone, as `run` does ("expected
    /// ADDR:PORT" before); an unknown interface is named.
    #[test]
    fn listen_addresses_take_a_zone() {
        let lo = dualbench_common::netif::index("lo").unwrap();
        match super::parse_listen("[fe80::1%lo]:8080").unwrap() {
            std::net::SocketAddr::V6(v6) => {
                assert_eq!((v6.scope_id(), v6.port()), (lo, 8080));
                assert_eq!(v6.ip().to_string(), "fe80::1");
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            super::parse_listen("[fe80::1%no-such-if0]:80").unwrap_err(),
            "no network interface named 'no-such-if0' (see 'ip link')"
        );
        assert_eq!(
            super::parse_listen("[fe80::1%lo]").unwrap_err(),
            "no port (0 picks a free one): give ADDR:PORT, such as 0.0.0.0:8080 or [::1]:8080"
        );
        assert_eq!(
            super::parse_listen("127.0.0.1:80").unwrap().to_string(),
            "127.0.0.1:80"
        );
        // Announced as a URL `run` takes, with the interface's name.
        let addr = super::parse_listen("[fe80::1%lo]:8080").unwrap();
        assert_eq!(super::url_of(&addr), "http://[fe80::1%25lo]:8080/");
        let addr = super::parse_listen("[::1]:8080").unwrap();
        assert_eq!(super::url_of(&addr), "http://[::1]:8080/");
    }

    /// What is wrong with a `--listen` value is said, not only what the form is
    /// (`127.0.0.1:99999`, `localhost:80` and `::1:8080` all got "expected ADDR:PORT").
    #[test]
    fn a_bad_listen_address_says_what_is_wrong() {
        let give = "give ADDR:PORT, such as 0.0.0.0:8080 or [::1]:8080";
        for (text, why) in [
            ("127.0.0.1", "no port (0 picks a free one)"),
            ("[::1]", "no port (0 picks a free one)"),
            (
                "127.0.0.1:99999",
                "port '99999' is not a number from 0 to 65535",
            ),
            (
                "127.0.0.1:80x",
                "port '80x' is not a number from 0 to 65535",
            ),
            ("[::1]:", "port '' is not a number from 0 to 65535"),
            (
                "localhost:80",
                "'localhost' is not an IP address (--listen takes addresses, not names)",
            ),
            (
                "127.1:80",
                "'127.1' is not an IP address (--listen takes addresses, not names)",
            ),
            (
                "::1:8080",
                "an IPv6 address goes in brackets with its port after them",
            ),
            ("[::1", "missing ']' after the IPv6 address"),
            ("[::1]8080", "expected ':PORT' after ']'"),
            (
                "[1.2.3.4]:80",
                "'1.2.3.4' in brackets is not an IPv6 address",
            ),
            (
                ":8080",
                "no address before the port (0.0.0.0 is every IPv4 address, [::] every IPv6 one)",
            ),
        ] {
            assert_eq!(
                super::parse_listen(text).unwrap_err(),
                format!("{why}: {give}"),
                "{text}"
            );
        }
    }

    /// Every endpoint the router serves is in the help, with a path it answers.
    #[test]
    fn the_help_lists_every_endpoint() {
        let listed: Vec<&str> = ENDPOINTS
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(
            listed,
            [
                "/",
                "/bytes/N",
                "/delay/MS",
                "/status/CODE",
                "/vary/N",
                "/reset",
                "/stall",
                "/close",
                "/echo"
            ]
        );
        for path in [
            "/bytes/1",
            "/delay/1",
            "/status/200",
            "/vary/1",
            "/reset",
            "/stall",
            "/close",
            "/echo",
        ] {
            assert!(
                !matches!(
                    route(path, false),
                    Endpoint::NotFound | Endpoint::Invalid(_)
                ),
                "{path}"
            );
        }
    }
}
