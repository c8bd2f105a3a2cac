//! Socket addresses as scripts, profiles and `--listen` write them: MGEN's `addr/port`
//! (`127.0.0.1/5000`, `::1/5000`, `[::1]/5000`) or the usual `127.0.0.1:5000` / `[::1]:5000`,
//! IP literals only. An IPv6 address may carry a zone, by interface name or index
//! (`fe80::1%eth0/5000`, `[fe80::1%2]:5000`); a link-local address must, since it means
//! nothing without its interface. Multicast is refused (the sink joins no group); so are,
//! as destinations, the unspecified address (`0.0.0.0`, `::`: the kernel sends to this
//! host's loopback instead) and IPv4's limited broadcast.

use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6};

/// A destination: any of the forms above, port 1..=65535, unicast.
pub fn parse_destination(t: &str) -> Result<SocketAddr, String> {
    let addr = parse(
        t,
        "DST must be <addr>/<port>, e.g. 127.0.0.1/5000 or ::1/5000",
    )?;
    if addr.port() == 0 {
        return Err("port 0 is not a destination".into());
    }
    if addr.ip().is_unspecified() {
        // A sink's wildcard `--listen 0.0.0.0:5000` copied into DST: connect() quietly
        // takes it for this host's loopback, wherever the sink is.
        return Err(format!(
            "'{}' is the unspecified address, not a host: give the sink's address (127.0.0.1 or ::1 for this host)",
            addr.ip()
        ));
    }
    if addr.ip() == IpAddr::V4(std::net::Ipv4Addr::BROADCAST) {
        return Err("'255.255.255.255' is the broadcast address, which is not supported: give a unicast address".into());
    }
    Ok(addr)
}

/// A listening address: as a destination, but port 0 asks the kernel for a free port. Its
/// errors name the cause only: the caller adds the form it expects.
pub fn parse_listen(t: &str) -> Result<SocketAddr, String> {
    let addr = parse(t, &format!("'{t}' is not an address with a port"))?;
    // The sink's IPv6 sockets are v6-only, which cannot bind an IPv4-mapped address (the
    // kernel says only "Invalid argument"); it is an IPv4 address in IPv6's clothes.
    if let SocketAddr::V6(v6) = addr {
        if let Some(v4) = v6.ip().to_ipv4_mapped() {
            return Err(format!(
                "'{}' is an IPv4-mapped IPv6 address, which an IPv6 listener cannot take: listen on {v4}:{} instead",
                v6.ip(),
                v6.port()
            ));
        }
    }
    Ok(addr)
}

/// `unsplit` is the error for text that is no address-and-port at all.
fn parse(t: &str, unsplit: &str) -> Result<SocketAddr, String> {
    let (host, port) = split_host_port(t).ok_or(unsplit)?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("'{port}' is not a port number"))?;
    let (ip_text, zone) = match host.split_once('%') {
        Some((ip, zone)) => (ip, Some(zone)),
        None => (host, None),
    };
    let ip: IpAddr = ip_text
        .parse()
        .map_err(|_| format!("'{ip_text}' is not an IPv4 or IPv6 address"))?;
    if ip.is_multicast() {
        return Err(format!(
            "'{ip}' is a multicast address, which is not supported: give a unicast address"
        ));
    }
    let addr = match (ip, zone) {
        (IpAddr::V4(v4), None) => SocketAddr::new(v4.into(), port),
        (IpAddr::V4(_), Some(_)) => {
            return Err(format!(
                "'{host}': a zone (%...) belongs to an IPv6 link-local address, not to IPv4"
            ))
        }
        (IpAddr::V6(v6), zone) => {
            let scope = zone.map(scope_id).transpose()?.unwrap_or(0);
            if is_link_local(&v6) && scope == 0 {
                return Err(format!(
                    "'{v6}' is link-local: add its interface as a zone, e.g. {v6}%eth0/{port}"
                ));
            }
            SocketAddr::V6(SocketAddrV6::new(v6, port, 0, scope))
        }
    };
    Ok(addr)
}

/// `[host]:port`, `[host]/port`, `host/port` or `v4:port`.
fn split_host_port(t: &str) -> Option<(&str, &str)> {
    if let Some(rest) = t.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = after
            .strip_prefix(':')
            .or_else(|| after.strip_prefix('/'))?;
        return Some((host, port));
    }
    if let Some(split) = t.rsplit_once('/') {
        return Some(split);
    }
    match t.split_once(':') {
        Some((host, port)) if !port.contains(':') => Some((host, port)),
        _ => None,
    }
}

/// A zone: an interface index (`2`) or the name of an interface in this namespace.
fn scope_id(zone: &str) -> Result<u32, String> {
    if !zone.is_empty() && zone.bytes().all(|b| b.is_ascii_digit()) {
        return match zone.parse::<u32>() {
            Ok(i) if i > 0 => Ok(i),
            _ => Err(format!("zone '{zone}' is not an interface index")),
        };
    }
    let missing = || {
        format!("zone '{zone}': no interface of that name here (see `ip link`), or give its index")
    };
    dualbench_common::netif::index(zone).ok_or_else(missing)
}

/// fe80::/10.
fn is_link_local(v6: &Ipv6Addr) -> bool {
    v6.segments()[0] & 0xffc0 == 0xfe80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_ports() {
        let v6: SocketAddr = "[2001:2::9]:7000".parse().unwrap();
        for t in ["2001:2::9/7000", "[2001:2::9]/7000", "[2001:2::9]:7000"] {
            assert_eq!(parse_destination(t), Ok(v6), "{t}");
        }
        let v4: SocketAddr = "198.18.0.9:7000".parse().unwrap();
        for t in ["198.18.0.9/7000", "198.18.0.9:7000"] {
            assert_eq!(parse_destination(t), Ok(v4), "{t}");
        }
        assert!(parse_destination("[::1]:0").unwrap_err().contains("port 0"));
        assert_eq!(parse_listen("[::1]:0").map(|a| a.port()), Ok(0));
        assert!(parse_destination("::1")
            .unwrap_err()
            .contains("DST must be"));
        assert!(parse_destination("::1/http")
            .unwrap_err()
            .contains("not a port"));
        // A listen address's error names the cause only: `--listen` adds its own form.
        assert_eq!(
            parse_listen("garbage").unwrap_err(),
            "'garbage' is not an address with a port"
        );
    }

    #[test]
    fn zones_by_index_and_name_and_link_local_needs_one() {
        // `lo` exists in every namespace, with index 1.
        for t in ["fe80::1%1/5000", "[fe80::1%lo]/5000", "[fe80::1%lo]:5000"] {
            match parse_destination(t) {
                Ok(SocketAddr::V6(a)) => assert_eq!((a.scope_id(), a.port()), (1, 5000), "{t}"),
                other => panic!("{t}: {other:?}"),
            }
        }
        assert_eq!(
            parse_destination("fe80::1/5000").unwrap_err(),
            "'fe80::1' is link-local: add its interface as a zone, e.g. fe80::1%eth0/5000"
        );
        assert!(parse_listen("[fe80::1]:0")
            .unwrap_err()
            .contains("link-local"));
        assert!(parse_destination("fe80::1%nosuch0/5000")
            .unwrap_err()
            .contains("zone 'nosuch0': no interface"));
        assert!(parse_destination("127.0.0.1%lo/5000")
            .unwrap_err()
            .contains("not to IPv4"));
    }

    #[test]
    fn a_mapped_listen_address_is_refused_with_its_ipv4_form() {
        assert_eq!(
            parse_listen("[::ffff:127.0.0.1]:5000").unwrap_err(),
            "'::ffff:127.0.0.1' is an IPv4-mapped IPv6 address, which an IPv6 listener cannot take: listen on 127.0.0.1:5000 instead"
        );
        assert!(parse_listen("[::1]:5000").is_ok());
        assert!(parse_listen("[::]:0").is_ok());
    }

    /// `DST 0.0.0.0/5000` (a sink's wildcard listen address copied) was sent to this host's
    /// loopback, whatever the namespace, while the summary named 0.0.0.0; the broadcast
    /// address failed every send with "Permission denied".
    #[test]
    fn unspecified_and_broadcast_destinations_are_refused() {
        assert_eq!(
            parse_destination("0.0.0.0/5000").unwrap_err(),
            "'0.0.0.0' is the unspecified address, not a host: give the sink's address (127.0.0.1 or ::1 for this host)"
        );
        assert!(parse_destination("[::]:5000")
            .unwrap_err()
            .starts_with("'::' is the unspecified address"));
        assert_eq!(
            parse_destination("255.255.255.255/5000").unwrap_err(),
            "'255.255.255.255' is the broadcast address, which is not supported: give a unicast address"
        );
        // A sink may listen on both.
        assert!(parse_listen("0.0.0.0:5000").is_ok() && parse_listen("[::]:5000").is_ok());
    }

    #[test]
    fn multicast_is_refused() {
        for t in ["224.1.2.3/5000", "ff02::1%1/5000", "[ff0e::1]:5000"] {
            assert!(
                parse_destination(t).unwrap_err().contains("multicast"),
                "{t}"
            );
        }
    }
}
