//! Listening sockets: one per requested address, IPv6 ones with IPV6_V6ONLY so that
//! `[::]:P` and `0.0.0.0:P` can both be bound. An address of a family the host does not
//! have (no IPv6 in the kernel, or no `::1`/`127.0.0.1`) is set aside with the reason
//! instead of failing, as long as some address remains. Addresses that would take each
//! other's port (one given twice, or a wildcard and a specific address of its family at
//! one port) are refused before anything is bound, naming both.

use dualbench_common::{Failure, Family, Result};
use socket2::{Domain, Protocol, Socket, Type};
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};

/// Pending-connection queue length asked for (the kernel caps it at `somaxconn`).
const BACKLOG: i32 = 4096;

/// An address that could not be listened on because its family is missing on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub addr: SocketAddr,
    pub family: Family,
    pub reason: String,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no {} on this host (cannot listen on {}: {})",
            self.family, self.addr, self.reason
        )
    }
}

/// The sockets bound, their real addresses (port 0 resolved), and what was set aside.
#[derive(Debug)]
pub struct Bound {
    pub listeners: Vec<TcpListener>,
    pub addrs: Vec<SocketAddr>,
    pub unavailable: Vec<Unavailable>,
}

/// Bind and listen on every address in `wanted`. Addresses asking for port 0 get the same
/// port where it is free, so that `127.0.0.1:0` and `[::1]:0` differ only by family.
pub fn bind_all(wanted: &[SocketAddr]) -> Result<Bound> {
    if let Some(why) = overlap(wanted) {
        return Err(Failure::usage(why));
    }
    let mut bound = Bound {
        listeners: Vec::new(),
        addrs: Vec::new(),
        unavailable: Vec::new(),
    };
    let mut picked_port: Option<u16> = None;
    for &addr in wanted {
        if is_v6_any(&addr) && no_ipv6_address() {
            let reason = "no interface has an IPv6 address".to_string();
            bound.unavailable.push(Unavailable {
                addr,
                family: Family::V6,
                reason,
            });
            continue;
        }
        match bind_picking(addr, picked_port) {
            Ok(listener) => {
                let real = listener.local_addr()?;
                if addr.port() == 0 {
                    picked_port.get_or_insert(real.port());
                }
                bound.addrs.push(real);
                bound.listeners.push(listener);
            }
            Err(e) if family_missing(&addr, &e) => bound.unavailable.push(Unavailable {
                addr,
                family: Family::of_addr(&addr),
                reason: e.to_string(),
            }),
            Err(e) => return Err(bind_failure(addr, &e)),
        }
    }
    if bound.listeners.is_empty() {
        let why = bound
            .unavailable
            .iter()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Failure::usage(format!("nothing to listen on: {why}")));
    }
    Ok(bound)
}

/// Two addresses asked for that would take the same port: one address given twice, or a
/// wildcard (`0.0.0.0`, `[::]`) and a specific address of the same family at the same port
/// (port 0 picks a free port for each, so never clashes). The kernel would refuse the
/// second as "address in use", as if another program held it.
fn overlap(wanted: &[SocketAddr]) -> Option<String> {
    for (i, a) in wanted.iter().enumerate() {
        for b in &wanted[i + 1..] {
            if a == b {
                return Some(format!(
                    "--listen {a} is given twice: give each address once"
                ));
            }
            let one_port = a.port() == b.port() && a.port() != 0 && a.is_ipv4() == b.is_ipv4();
            if one_port && a.ip().is_unspecified() != b.ip().is_unspecified() {
                let (any, one) = if a.ip().is_unspecified() {
                    (a, b)
                } else {
                    (b, a)
                };
                return Some(format!(
                    "--listen {any} and --listen {one} overlap: {any} already listens on every \
                     {} address at port {}; give one or the other",
                    Family::of_addr(any),
                    any.port()
                ));
            }
        }
    }
    None
}

/// Port 0 with a port already picked: try that port first, then any free one.
fn bind_picking(addr: SocketAddr, picked: Option<u16>) -> io::Result<TcpListener> {
    match (addr.port(), picked) {
        (0, Some(port)) => bind_one(SocketAddr::new(addr.ip(), port)).or_else(|_| bind_one(addr)),
        _ => bind_one(addr),
    }
}

fn bind_one(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

fn is_v6_any(addr: &SocketAddr) -> bool {
    addr.is_ipv6() && addr.ip().is_unspecified()
}

/// IPv6 is in the kernel but switched off everywhere (`disable_ipv6`): `[::]` would bind
/// yet never be reached, so it counts as missing.
fn no_ipv6_address() -> bool {
    std::fs::read_to_string("/proc/net/if_inet6").is_ok_and(|text| text.trim().is_empty())
}

/// The host lacks the family: no kernel support, or no loopback/any address of it.
fn family_missing(addr: &SocketAddr, e: &io::Error) -> bool {
    match e.raw_os_error() {
        Some(libc::EAFNOSUPPORT) => true,
        Some(libc::EADDRNOTAVAIL) => addr.ip().is_loopback() || addr.ip().is_unspecified(),
        _ => false,
    }
}

fn bind_failure(addr: SocketAddr, e: &io::Error) -> Failure {
    let mapped = match addr {
        SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped(),
        SocketAddr::V4(_) => None,
    };
    let hint = match (e.raw_os_error(), mapped) {
        (Some(libc::EADDRINUSE), _) => {
            "; another program uses that port: choose another with --listen".to_string()
        }
        (Some(libc::EACCES), _) => {
            "; ports below 1024 need root: choose a higher port with --listen".to_string()
        }
        (Some(libc::EADDRNOTAVAIL), _) => {
            "; that address is not on this host: see 'ip address'".to_string()
        }
        // IPv6 sockets are IPV6_V6ONLY, so an IPv4-mapped address cannot be bound.
        (_, Some(v4)) => format!(
            "; an IPv4-mapped address is IPv4: listen on {} instead",
            SocketAddr::from((v4, addr.port()))
        ),
        _ => String::new(),
    };
    Failure::usage(format!("cannot listen on {addr}: {e}{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_zero_resolves() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let bound = bind_all(&[addr]).unwrap();
        assert_eq!(bound.listeners.len(), 1);
        assert_ne!(bound.addrs[0].port(), 0);
    }

    /// Addresses that would clash with each other are refused before anything is bound,
    /// naming both — not blamed on "another program".
    #[test]
    fn addresses_that_take_each_others_port_are_named() {
        let clash = |list: &[&str]| {
            let addrs: Vec<SocketAddr> = list.iter().map(|a| a.parse().unwrap()).collect();
            overlap(&addrs)
        };
        assert_eq!(
            clash(&["0.0.0.0:8080", "[::1]:8080", "127.0.0.1:8080"]).as_deref(),
            Some(
                "--listen 0.0.0.0:8080 and --listen 127.0.0.1:8080 overlap: 0.0.0.0:8080 \
                 already listens on every IPv4 address at port 8080; give one or the other"
            )
        );
        assert!(clash(&["[::1]:9", "[::]:9"]).is_some_and(|m| m.starts_with(
            "--listen [::]:9 and --listen [::1]:9 overlap: [::]:9 already listens on every IPv6"
        )));
        assert_eq!(
            clash(&["127.0.0.1:0", "127.0.0.1:0"]).as_deref(),
            Some("--listen 127.0.0.1:0 is given twice: give each address once")
        );
        // Different families, different ports, or port 0 (a free port each): no clash.
        for fine in [
            &["[::]:8080", "0.0.0.0:8080"][..],
            &["0.0.0.0:8080", "127.0.0.1:8081"],
            &["0.0.0.0:0", "127.0.0.1:0"],
            &["127.0.0.1:8080", "127.0.0.2:8080"],
        ] {
            assert_eq!(clash(fine), None, "{fine:?}");
        }
        let e = bind_all(&["127.0.0.1:0".parse().unwrap(), "0.0.0.0:0".parse().unwrap()]);
        assert!(e.is_ok(), "port 0 twice binds two free ports");
    }

    #[test]
    fn port_zero_addresses_share_the_picked_port() {
        let wanted = [
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.2:0".parse().unwrap(),
        ];
        let bound = bind_all(&wanted).unwrap();
        assert_eq!(bound.addrs.len(), 2);
        assert_eq!(bound.addrs[0].port(), bound.addrs[1].port());
    }

    #[test]
    fn a_port_in_use_is_a_usage_failure() {
        let first = bind_all(&["127.0.0.1:0".parse().unwrap()]).unwrap();
        let failure = bind_all(&first.addrs).unwrap_err();
        assert_eq!(failure.exit_code(), 2);
        assert!(
            failure.message.contains("another program uses that port"),
            "{}",
            failure.message
        );
    }

    /// `[::ffff:127.0.0.1]:P` cannot be bound on an IPV6_V6ONLY socket: the error says
    /// which address to give instead (it used to end at "Invalid argument").
    #[test]
    fn an_ipv4_mapped_address_names_its_ipv4_form() {
        let failure = bind_all(&["[::ffff:127.0.0.1]:0".parse().unwrap()]).unwrap_err();
        assert_eq!(failure.exit_code(), 2);
        assert_eq!(
            failure.message,
            "cannot listen on [::ffff:127.0.0.1]:0: Invalid argument (os error 22); an \
             IPv4-mapped address is IPv4: listen on 127.0.0.1:0 instead"
        );
    }

    #[test]
    fn v4_and_v6_any_share_a_port() {
        let Ok(v6) = bind_all(&["[::]:0".parse().unwrap()]) else {
            return; // no IPv6 on this host
        };
        let port = v6.addrs[0].port();
        let v4 = bind_all(&[SocketAddr::from(([0, 0, 0, 0], port))]);
        assert!(v4.is_ok(), "IPV6_V6ONLY should leave the IPv4 port free");
    }

    #[test]
    fn missing_family_is_set_aside() {
        let e = io::Error::from_raw_os_error(libc::EADDRNOTAVAIL);
        assert!(family_missing(&"[::1]:80".parse().unwrap(), &e));
        assert!(!family_missing(&"192.0.2.1:80".parse().unwrap(), &e));
        let e = io::Error::from_raw_os_error(libc::EAFNOSUPPORT);
        assert!(family_missing(&"[2001:db8::1]:80".parse().unwrap(), &e));
    }
}
