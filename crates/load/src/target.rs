//! Targets: what a run sends requests to. Parses URLs (IPv4 literals, bracketed IPv6
//! literals with optional zone — RFC 6874's `%25eth0` and the plain `%eth0` — and host
//! names resolved to all their A and AAAA records), ANMA-style address lists, the family
//! filter and the IPv6:IPv4 ratio, and turns them into a weighted list of socket
//! addresses whose interleaving is exact.

use dualbench_common::{Failure, Family, Result};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6, ToSocketAddrs};

/// A parsed `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Host as written, without brackets or zone (`::1`, `127.0.0.1`, `example.org`).
    pub host: String,
    /// Zone of a link-local IPv6 literal (`eth0`), if any.
    pub zone: Option<String>,
    /// Host as written in the URL, without brackets but with its zone as written
    /// (`fe80::1%25eth0`).
    pub written_host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Url {
    /// The Host header value: brackets around IPv6 literals, port when not 80.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 80 {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// Parse an `http://` URL. Anything else is a usage error naming what is wrong.
pub fn parse_url(s: &str) -> Result<Url> {
    let bad = |why: &str| Failure::usage(format!("bad URL '{}': {why}", s.escape_debug()));
    // The request line carries the URL as it is: a space or a control character would break
    // it, and the server would answer 400 to every request.
    if let Some((at, c)) = s.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        return Err(bad(&not_graphic(s, at, c)));
    }
    // The fragment is the client's own: it is never sent.
    let s_sent = s.split_once('#').map_or(s, |(before, _)| before);
    let rest = match s_sent.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) => {
            return Err(Failure::usage(format!(
                "unsupported scheme '{scheme}' in '{s}': dualbench speaks plain http:// only; benchmark an http:// URL (the server's plain port, or a TLS terminator's backend)"
            )))
        }
        // wrk's `-d 10s` is ab's `-d`, which takes no value: the time was taken for a URL.
        None if crate::ab_flags::parse_time_limit(s).is_ok() => {
            return Err(bad(
                "expected http://HOST[:PORT]/PATH; a time limit goes with -t, e.g. -t 10s \
                 (-d, wrk's flag for it, is ab's 'no percentiles' here: it takes no value)",
            ))
        }
        None => return Err(bad("expected http://HOST[:PORT]/PATH")),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        // hey and oha send `user:pass@` as Basic authentication; ab has -A for it.
        return Err(bad(
            "user information in URLs is not sent: leave it out of the URL and give it with -A USER:PASS (Basic authentication)",
        ));
    }
    let (host, zone, port) = split_authority(authority).map_err(|why| bad(&why))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    Ok(Url {
        written_host: written_host(authority),
        host,
        zone,
        port: port.unwrap_or(80),
        path,
    })
}

/// What to say about a character that cannot go into a request line as it is.
fn not_graphic(url: &str, at: usize, c: char) -> String {
    let in_host = url.find("://").is_some_and(|i| {
        let authority = &url[i + 3..];
        let len = authority.find(['/', '?', '#']).unwrap_or(authority.len());
        (i + 3..i + 3 + len).contains(&at)
    });
    match c {
        c if in_host && !c.is_ascii() => format!(
            "the host name has '{c}' (not ASCII): write the name in its ASCII (punycode, xn--) form"
        ),
        ' ' => "a space must be percent-encoded as %20".to_string(),
        c if c.is_ascii_control() => format!(
            "the control character {} must be percent-encoded as %{:02X}",
            c.escape_default(),
            c as u32
        ),
        c => {
            let mut utf8 = [0u8; 4];
            let encoded: String = c
                .encode_utf8(&mut utf8)
                .bytes()
                .map(|b| format!("%{b:02X}"))
                .collect();
            format!("'{c}' (not ASCII) must be percent-encoded as its UTF-8 bytes, {encoded}")
        }
    }
}

/// The host of an authority as written: without brackets or port, with any zone.
fn written_host(authority: &str) -> String {
    match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest).to_string(),
        None => authority.split(':').next().unwrap_or(authority).to_string(),
    }
}

/// Split `host[:port]` / `[v6%zone][:port]` into parts.
fn split_authority(a: &str) -> std::result::Result<(String, Option<String>, Option<u16>), String> {
    let parse_port = |p: &str| -> std::result::Result<u16, String> {
        match p.parse::<u16>() {
            Ok(0) => Err("port 0 cannot be connected to: give the server's port".to_string()),
            Ok(port) => Ok(port),
            Err(_) => Err(format!("bad port '{p}'")),
        }
    };
    if let Some(rest) = a.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or("missing ']' after IPv6 address")?;
        let (addr, zone) = match inside.split_once('%') {
            Some((addr, written)) => {
                // RFC 6874: '%25' is the percent sign itself, so '%25' alone has no zone.
                let zone = written.strip_prefix("25").unwrap_or(written);
                if zone.is_empty() {
                    return Err(format!(
                        "empty zone after '%{written}': name the interface, e.g. [{addr}%25eth0]"
                    ));
                }
                // `[fe80::1%lo:80]`: Linux would take `lo:80` for an alias of lo.
                if let Some((name, port)) = zone.split_once(':') {
                    return Err(format!(
                        "a port goes after the bracket: [{addr}%{name}]:{port}, not inside it"
                    ));
                }
                (addr, Some(zone.to_string()))
            }
            None => (inside, None),
        };
        addr.parse::<Ipv6Addr>()
            .map_err(|_| format!("'{addr}' is not an IPv6 address"))?;
        let port = match after {
            "" => None,
            p => Some(parse_port(p.strip_prefix(':').ok_or("junk after ']'")?)?),
        };
        return Ok((addr.to_string(), zone, port));
    }
    if a.matches(':').count() > 1 {
        return Err("IPv6 addresses in URLs need brackets, e.g. http://[::1]:8080/".into());
    }
    let (host, port) = match a.split_once(':') {
        Some((h, p)) => (h, Some(parse_port(p)?)),
        None => (a, None),
    };
    // `127.0.0.1%25lo`: only an IPv6 address takes a zone.
    if let Some((ip, _)) = host.split_once('%') {
        if ip.parse::<std::net::Ipv4Addr>().is_ok() {
            return Err(format!(
                "{ip} is IPv4, and a zone (%...) goes only with an IPv6 address: drop it"
            ));
        }
    }
    Ok((host.to_string(), None, port))
}

/// Which families a run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyChoice {
    V4,
    V6,
    Both,
}

impl FamilyChoice {
    pub fn allows(self, f: Family) -> bool {
        matches!(
            (self, f),
            (FamilyChoice::Both, _)
                | (FamilyChoice::V4, Family::V4)
                | (FamilyChoice::V6, Family::V6)
        )
    }
}

/// `--ratio V6:V4`, e.g. `4:1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    pub v6: u64,
    pub v4: u64,
}

pub fn parse_ratio(s: &str) -> Result<Ratio> {
    let bad = || {
        Failure::usage(format!(
            "bad --ratio '{s}': expected V6:V4 with whole numbers, e.g. 4:1"
        ))
    };
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let v6 = a.trim().parse().map_err(|_| bad())?;
    let v4 = b.trim().parse().map_err(|_| bad())?;
    if v6 == 0 && v4 == 0 {
        return Err(Failure::usage(format!(
            "--ratio {s} sends nothing: at least one side must be above 0"
        )));
    }
    Ok(Ratio { v6, v4 })
}

/// One address requests go to, with what to send there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub addr: SocketAddr,
    /// The zone of a link-local address as the user named it (`eth0`), if any.
    pub zone: Option<String>,
    pub family: Family,
    /// Requests per interleaving cycle.
    pub weight: u64,
    /// Host header value.
    pub host: String,
    pub path: String,
}

impl Target {
    /// The socket address as reports show it: `[fe80::1%eth0]:80` with the zone's name as
    /// given (the socket address itself holds the interface's index).
    pub fn label(&self) -> String {
        match (&self.zone, self.addr) {
            (Some(zone), SocketAddr::V6(v6)) => format!("[{}%{zone}]:{}", v6.ip(), v6.port()),
            _ => self.addr.to_string(),
        }
    }
}

/// A candidate before the family/ratio weighting: an address and its own weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub addr: SocketAddr,
    /// The zone as named in the URL or list, if any.
    pub zone: Option<String>,
    pub weight: u64,
    pub host: String,
    pub path: String,
}

/// Resolve a URL to all its addresses (literals need no lookup).
pub fn resolve(url: &Url) -> Result<Vec<SocketAddr>> {
    if let Ok(ip) = url.host.parse::<IpAddr>() {
        return Ok(vec![with_zone(
            SocketAddr::new(ip, url.port),
            url.zone.as_deref(),
        )?]);
    }
    if url.zone.is_some() {
        return Err(Failure::usage(format!(
            "a zone (%{}) needs an IPv6 address literal",
            url.zone.as_deref().unwrap_or("")
        )));
    }
    if ends_in_a_number(&url.host) {
        // getaddrinfo reads `18190` as 0.0.71.14 and `127.1` as 127.0.0.1: a port written
        // without its address would send the run to some other host.
        return Err(Failure::usage(format!(
            "'{}' is not an address: an IPv4 address is four numbers with dots (127.0.0.1), \
             and a port goes after one (127.0.0.1:8080)",
            url.host
        )));
    }
    let addrs = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| Failure::usage(format!("cannot resolve '{}': {e}", url.host)))?;
    let mut out: Vec<SocketAddr> = Vec::new();
    for a in addrs {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        return Err(Failure::usage(format!("'{}' has no addresses", url.host)));
    }
    Ok(out)
}

/// Whether a host that is not an address literal ends in a number (`18190`, `127.1`,
/// `0x7f.1`): no host name does (a top-level domain is never numeric), so it is an IPv4
/// address in a short form, which only the four dotted numbers may spell here.
fn ends_in_a_number(host: &str) -> bool {
    let last = host
        .trim_end_matches('.')
        .rsplit('.')
        .next()
        .unwrap_or_default();
    let hex = last
        .strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
    !last.is_empty() && (hex || last.chars().all(|c| c.is_ascii_digit()))
}

fn with_zone(addr: SocketAddr, zone: Option<&str>) -> Result<SocketAddr> {
    let Some(zone) = zone else {
        if let SocketAddr::V6(v6) = addr {
            if v6.ip().is_unicast_link_local() {
                return Err(Failure::usage(format!(
                    "{} is link-local: name the interface to reach it on as a zone, e.g. [{}%25eth0]",
                    v6.ip(),
                    v6.ip()
                )));
            }
        }
        return Ok(addr);
    };
    let SocketAddr::V6(v6) = addr else {
        return Err(Failure::usage(
            "a zone (%name) applies to IPv6 addresses only",
        ));
    };
    if let Some(v4) = v6.ip().to_ipv4_mapped() {
        return Err(Failure::usage(format!(
            "a zone (%{zone}) cannot go with {}, an IPv4-mapped address whose requests go over IPv4: write {v4} without a zone",
            v6.ip()
        )));
    }
    let scope = match zone.parse::<u32>() {
        Ok(n) => n,
        Err(_) => dualbench_common::netif::index(zone).ok_or_else(|| {
            Failure::usage(format!(
                "no network interface named '{zone}' (zone of {})",
                v6.ip()
            ))
        })?,
    };
    Ok(SocketAddr::V6(SocketAddrV6::new(
        *v6.ip(),
        v6.port(),
        v6.flowinfo(),
        scope,
    )))
}

/// Parse an ANMA-style address list: one address per line (an IP, with a zone if it is
/// link-local IPv6, `host:port`, `[v6]:port` or a URL), an optional whole-number weight
/// after whitespace, `#` comments.
/// `default_port` and `default_path` come from the command line's URL, if any.
pub fn parse_address_list(
    text: &str,
    file: &str,
    default_port: u16,
    default_path: &str,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    // A byte-order mark (Windows editors save one) is not part of the first address.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |why: String| Failure::usage(format!("{file}:{}: {why}", i + 1));
        let words_in_line = line.split_whitespace().count();
        if words_in_line > 2 {
            return Err(at(format!(
                "a line is ADDRESS [WEIGHT], but '{line}' has {words_in_line} words"
            )));
        }
        let mut words = line.split_whitespace();
        let addr_word = words.next().unwrap_or_default();
        let weight = match words.next() {
            None => 1,
            Some(w) => match w.parse::<u64>() {
                Ok(n) if n > 0 => n,
                Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
                    return Err(at(format!(
                        "weight '{w}' is too large: weights are relative, give smaller ones"
                    )))
                }
                _ => return Err(at(format!("weight '{w}' must be a whole number above 0"))),
            },
        };
        let url = if addr_word.contains("://") {
            parse_url(addr_word).map_err(|f| at(f.message))?
        } else if let Ok(ip) = addr_word.parse::<IpAddr>() {
            Url {
                written_host: addr_word.to_string(),
                host: ip.to_string(),
                zone: None,
                port: default_port,
                path: default_path.into(),
            }
        } else {
            // A bare address with a zone (`fe80::1%eth0`, as getaddrinfo takes it) reads as
            // its bracketed form: the port is the default one.
            let authority = match addr_word.split_once('%') {
                Some((ip, zone)) if zone.contains(':') && ip.parse::<Ipv6Addr>().is_ok() => {
                    return Err(at(format!(
                        "bad address '{addr_word}': a port goes after brackets, [{ip}%{}]:PORT",
                        zone.split(':').next().unwrap_or_default()
                    )));
                }
                Some((ip, _)) if ip.parse::<Ipv6Addr>().is_ok() => format!("[{addr_word}]"),
                _ => addr_word.to_string(),
            };
            let (host, zone, port) = split_authority(&authority)
                .map_err(|why| at(format!("bad address '{addr_word}': {why}")))?;
            Url {
                written_host: written_host(addr_word),
                host,
                zone,
                port: port.unwrap_or(default_port),
                path: default_path.into(),
            }
        };
        for addr in resolve(&url).map_err(|f| at(f.message))? {
            out.push(Candidate {
                addr,
                zone: url.zone.clone(),
                weight,
                host: url.host_header(),
                path: url.path.clone(),
            });
        }
    }
    if out.is_empty() {
        return Err(Failure::usage(format!(
            "{file}: the address list has no addresses: give one address, host:port or URL per line"
        )));
    }
    Ok(out)
}

/// Turn candidates into targets: keep the families allowed, then weight them. With a
/// ratio, the families follow it exactly and addresses within a family share their
/// family's part by their own weights; without one, every address gets its own weight
/// (a host name with one A and one AAAA record is 1:1).
pub fn weigh(
    cands: Vec<Candidate>,
    choice: FamilyChoice,
    ratio: Option<Ratio>,
) -> Result<Vec<Target>> {
    let present = |f: Family| cands.iter().any(|c| Family::of_addr(&c.addr) == f);
    for f in Family::ALL {
        let only = choice == FamilyChoice::V4 && f == Family::V4
            || choice == FamilyChoice::V6 && f == Family::V6;
        if only && !present(f) {
            let other = if f == Family::V4 {
                Family::V6
            } else {
                Family::V4
            };
            return Err(Failure::usage(format!(
                "--family {} asked, but the targets have no {f} address: add an {f} URL or use --family {}",
                &f.label()[3..],
                &other.label()[3..]
            )));
        }
    }
    let mut family_weight = [0u64; 2];
    for f in Family::ALL {
        if choice.allows(f) && present(f) {
            family_weight[f.index()] = 1;
        }
    }
    let Some(r) = ratio else {
        return Ok(cands
            .into_iter()
            .filter(|c| choice.allows(Family::of_addr(&c.addr)))
            .map(|c| Target {
                family: Family::of_addr(&c.addr),
                addr: c.addr,
                zone: c.zone,
                weight: c.weight,
                host: c.host,
                path: c.path,
            })
            .collect());
    };
    {
        for (f, want) in [(Family::V4, r.v4), (Family::V6, r.v6)] {
            if want > 0 && !choice.allows(f) {
                return Err(Failure::usage(format!(
                    "--ratio {}:{} asks for {f} requests, but --family excludes {f}",
                    r.v6, r.v4
                )));
            }
            if want > 0 && !present(f) {
                let other = if f == Family::V4 {
                    Family::V6
                } else {
                    Family::V4
                };
                return Err(Failure::usage(format!(
                    "--ratio {}:{} asks for {f} requests, but the targets have no {f} address: add an {f} URL or use --family {}",
                    r.v6,
                    r.v4,
                    &other.label()[3..]
                )));
            }
            family_weight[f.index()] = want;
        }
    }
    if family_weight == [0, 0] {
        return Err(Failure::usage(
            "no target address is left after the family filter",
        ));
    }
    // Weight of a target = family share × own weight × (L / family's total own weight),
    // with L the least common multiple of the families' totals, so shares stay exact.
    // Past u64 the cycle would be far too long anyway; say so rather than wrap.
    let too_large = || {
        Failure::usage(format!(
            "--ratio {}:{} with these address-list weights makes weights too large to count: use smaller numbers",
            r.v6, r.v4
        ))
    };
    let mut sums = [0u64; 2];
    for c in &cands {
        let sum = &mut sums[Family::of_addr(&c.addr).index()];
        *sum = sum.checked_add(c.weight).ok_or_else(too_large)?;
    }
    let l = sums
        .iter()
        .filter(|&&s| s > 0)
        .try_fold(1u64, |acc, &s| lcm(acc, s))
        .ok_or_else(too_large)?;
    let mut targets = Vec::with_capacity(cands.len());
    for c in cands {
        let f = Family::of_addr(&c.addr);
        let share = family_weight[f.index()];
        if share == 0 {
            continue;
        }
        let weight = share
            .checked_mul(c.weight)
            .and_then(|w| w.checked_mul(l / sums[f.index()]))
            .ok_or_else(too_large)?;
        targets.push(Target {
            addr: c.addr,
            zone: c.zone,
            family: f,
            weight,
            host: c.host,
            path: c.path,
        });
    }
    Ok(targets)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> Option<u64> {
    (a / gcd(a, b)).checked_mul(b)
}

/// Parse `--bind ADDR[,ADDR...]`, where each item is an address or a CIDR block (hosts
/// of the block, network and broadcast excluded for IPv4), into per-family source lists.
pub fn parse_bind(s: &str) -> Result<[Vec<IpAddr>; 2]> {
    const MAX: u128 = 65_536;
    let mut out: [Vec<IpAddr>; 2] = [Vec::new(), Vec::new()];
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let bad = || {
            Failure::usage(format!(
                "bad --bind item '{item}': expected an IP address or CIDR block"
            ))
        };
        let (ip, prefix) = match item.split_once('/') {
            Some((ip, p)) => (
                ip.parse::<IpAddr>().map_err(|_| bad())?,
                Some(p.parse::<u32>().map_err(|_| bad())?),
            ),
            None => (item.parse::<IpAddr>().map_err(|_| bad())?, None),
        };
        let list = &mut out[Family::of(&ip).index()];
        let Some(prefix) = prefix else {
            list.push(ip);
            continue;
        };
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(bad());
        }
        let host_bits = bits - prefix;
        let count: u128 = if host_bits >= 17 {
            MAX + 1
        } else {
            1u128 << host_bits
        };
        if count > MAX {
            return Err(Failure::usage(format!(
                "--bind {item} has more than {MAX} addresses: use a longer prefix"
            )));
        }
        match ip {
            IpAddr::V4(v4) => {
                let base = u32::from(v4) & (u32::MAX.checked_shl(host_bits).unwrap_or(0));
                let (lo, hi) = if host_bits >= 2 {
                    (1, count as u32 - 1)
                } else {
                    (0, count as u32)
                };
                list.extend((lo..hi).map(|i| IpAddr::from(std::net::Ipv4Addr::from(base + i))));
            }
            IpAddr::V6(v6) => {
                let mask = if host_bits == 128 {
                    0
                } else {
                    u128::MAX << host_bits
                };
                let base = u128::from(v6) & mask;
                list.extend((0..count).map(|i| IpAddr::from(Ipv6Addr::from(base + i))));
            }
        }
    }
    if out.iter().all(Vec::is_empty) {
        // `-B ''` (an unset variable) bound nothing, without a word.
        return Err(Failure::usage(format!(
            "--bind '{s}' names no address: give addresses or CIDR blocks, e.g. 127.0.0.2,::1"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_list_without_an_address_is_refused() {
        for s in ["", " ", ",", " , "] {
            let e = parse_bind(s).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert_eq!(
                e.message,
                format!("--bind '{s}' names no address: give addresses or CIDR blocks, e.g. 127.0.0.2,::1")
            );
        }
        assert_eq!(parse_bind("127.0.0.2,").unwrap()[0].len(), 1);
    }

    #[test]
    fn urls_of_every_form() {
        let u = parse_url("http://127.0.0.1:8080/a?b=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8080, "/a?b=1")
        );
        let u = parse_url("http://[::1]:8080").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 8080, "/")
        );
        assert_eq!(u.host_header(), "[::1]:8080");
        let u = parse_url("http://[fe80::1%25eth0]/x").unwrap();
        assert_eq!(
            (u.host.as_str(), u.zone.as_deref(), u.port),
            ("fe80::1", Some("eth0"), 80)
        );
        let u = parse_url("http://[fe80::1%eth0]:81/").unwrap();
        assert_eq!(u.zone.as_deref(), Some("eth0"));
        let u = parse_url("HTTP://example.org?q").unwrap();
        assert_eq!(
            (u.host.as_str(), u.path.as_str(), u.host_header().as_str()),
            ("example.org", "/?q", "example.org")
        );
        // The fragment stays with the client, wherever it starts.
        let u = parse_url("http://127.0.0.1:8080/a?b=1#top").unwrap();
        assert_eq!((u.port, u.path.as_str()), (8080, "/a?b=1"));
        let u = parse_url("http://127.0.0.1:8080#top").unwrap();
        assert_eq!((u.port, u.path.as_str()), (8080, "/"));
    }

    #[test]
    fn bad_urls_say_why() {
        for (url, why) in [
            // `dualbench run -d 10s URL`, as wrk takes a duration.
            (
                "10s",
                "expected http://HOST[:PORT]/PATH; a time limit goes with -t, e.g. -t 10s (-d, wrk's flag for it, is ab's 'no percentiles' here: it takes no value)",
            ),
            (
                "https://x/",
                "unsupported scheme 'https' in 'https://x/': dualbench speaks plain http:// only; benchmark an http:// URL",
            ),
            // hey's and oha's `user:pass@` is ab's -A here.
            (
                "http://u:p@127.0.0.1/",
                "bad URL 'http://u:p@127.0.0.1/': user information in URLs is not sent: leave it out of the URL and give it with -A USER:PASS (Basic authentication)",
            ),
            ("example.org/", "expected http://"),
            ("http://::1/", "need brackets"),
            ("http://[::1/", "missing ']'"),
            ("http://[1.2.3.4]/", "not an IPv6 address"),
            ("http://x:99999/", "bad port"),
            ("http://127.0.0.1:0/", "port 0 cannot be connected to"),
            ("http:///", "no host"),
            ("http://x/a b", "a space must be percent-encoded as %20"),
            (
                "http://x/a\r\nX: y",
                "the control character \\r must be percent-encoded as %0D",
            ),
            (
                "http://x/é",
                "'é' (not ASCII) must be percent-encoded as its UTF-8 bytes, %C3%A9",
            ),
            // A host name is not percent-encoded but written in punycode; no '%20' hint.
            (
                "http://ünï.example/",
                "the host name has 'ü' (not ASCII): write the name in its ASCII (punycode, xn--) form",
            ),
            (
                "http://[fe80::1%25]/",
                "empty zone after '%25': name the interface, e.g. [fe80::1%25eth0]",
            ),
            (
                "http://[fe80::1%]/",
                "empty zone after '%': name the interface",
            ),
            (
                "http://[fe80::1%25lo:80]/",
                "a port goes after the bracket: [fe80::1%lo]:80, not inside it",
            ),
            (
                "http://127.0.0.1%25lo:8080/",
                "127.0.0.1 is IPv4, and a zone (%...) goes only with an IPv6 address: drop it",
            ),
        ] {
            let e = parse_url(url).unwrap_err();
            assert!(e.message.contains(why), "{url}: {}", e.message);
            assert_eq!(e.exit_code(), 2);
        }
    }

    /// Short IPv4 forms never reach getaddrinfo, which would read `18190` as 0.0.71.14;
    /// a name whose last label is not a number still does.
    #[test]
    fn a_host_ending_in_a_number_is_refused_before_any_lookup() {
        for host in [
            "18190",
            "127.1",
            "0x7f000001",
            "2130706433",
            "10.0.0.",
            "a.b.123",
        ] {
            let e = resolve(&parse_url(&format!("http://{host}/")).unwrap()).unwrap_err();
            assert_eq!(
                e.message,
                format!(
                    "'{host}' is not an address: an IPv4 address is four numbers with dots \
                     (127.0.0.1), and a port goes after one (127.0.0.1:8080)"
                )
            );
            assert_eq!(e.exit_code(), 2);
        }
        for host in ["127.0.0.1", "localhost", "0x.example", "host-1"] {
            assert!(
                !ends_in_a_number(host) || host.parse::<IpAddr>().is_ok(),
                "{host}"
            );
        }
        assert_eq!(
            resolve(&parse_url("http://localhost:81/").unwrap()).unwrap()[0].port(),
            81
        );
    }

    #[test]
    fn loopback_zone_resolves_to_a_scope() {
        let u = parse_url("http://[fe80::1%25lo]/").unwrap();
        let a = resolve(&u).unwrap();
        match a[0] {
            SocketAddr::V6(v6) => assert_ne!(v6.scope_id(), 0),
            _ => panic!("expected v6"),
        }
        let u = parse_url("http://[fe80::1%25nosuchif0]/").unwrap();
        assert!(resolve(&u)
            .unwrap_err()
            .message
            .contains("no network interface named 'nosuchif0'"));
    }

    #[test]
    fn zones_are_needed_on_link_local_and_refused_on_ipv4_mapped() {
        // Without a zone a link-local address has no route: it failed at run time.
        let u = parse_url("http://[fe80::1]:9/").unwrap();
        let e = resolve(&u).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "fe80::1 is link-local: name the interface to reach it on as a zone, e.g. [fe80::1%25eth0]"
        );
        let e = parse_address_list("fe80::1\n", "l", 80, "/").unwrap_err();
        assert!(
            e.message.starts_with("l:1: fe80::1 is link-local"),
            "{}",
            e.message
        );
        // An IPv4-mapped address goes over IPv4: its zone was dropped without a word.
        let u = parse_url("http://[::ffff:127.0.0.1%25lo]:9/").unwrap();
        let e = resolve(&u).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message.contains("write 127.0.0.1 without a zone"),
            "{}",
            e.message
        );
    }

    #[test]
    fn zones_are_reported_as_written() {
        let u = parse_url("http://[fe80::1%25lo]:9/").unwrap();
        assert_eq!(u.written_host, "fe80::1%25lo");
        let addr = resolve(&u).unwrap()[0];
        let c = Candidate {
            addr,
            zone: u.zone.clone(),
            weight: 1,
            host: u.host_header(),
            path: "/".into(),
        };
        let t = weigh(vec![c], FamilyChoice::Both, None).unwrap();
        // Not the interface's index ([fe80::1%1]:9).
        assert_eq!(t[0].label(), "[fe80::1%lo]:9");
        assert_eq!(parse_url("http://[::1]:9/").unwrap().written_host, "::1");
        assert_eq!(
            parse_url("http://localhost:9/").unwrap().written_host,
            "localhost"
        );
    }

    fn cand(s: &str, w: u64) -> Candidate {
        Candidate {
            addr: s.parse().unwrap(),
            zone: None,
            weight: w,
            host: "h".into(),
            path: "/".into(),
        }
    }

    #[test]
    fn ratio_weights_are_exact_across_unequal_families() {
        // 3 v4 addresses, 2 v6 addresses, ratio 4:1 (v6:v4).
        let c = vec![
            cand("127.0.0.1:1", 1),
            cand("127.0.0.2:1", 1),
            cand("127.0.0.3:1", 1),
            cand("[::1]:1", 1),
            cand("[::2]:1", 1),
        ];
        let t = weigh(c, FamilyChoice::Both, Some(Ratio { v6: 4, v4: 1 })).unwrap();
        let sum = |f: Family| {
            t.iter()
                .filter(|x| x.family == f)
                .map(|x| x.weight)
                .sum::<u64>()
        };
        assert_eq!(sum(Family::V6), 4 * sum(Family::V4));
        let v4: Vec<u64> = t
            .iter()
            .filter(|x| x.family == Family::V4)
            .map(|x| x.weight)
            .collect();
        assert!(v4.windows(2).all(|w| w[0] == w[1]));
    }

    #[test]
    fn weights_too_large_to_count_are_a_usage_error_not_a_wrap() {
        // The IPv4 weights add up past u64 (they wrapped, and made a wrong ratio).
        let c = vec![
            cand("127.0.0.1:1", u64::MAX),
            cand("127.0.0.2:1", u64::MAX),
            cand("[::1]:1", 1),
        ];
        let e = weigh(c, FamilyChoice::Both, Some(Ratio { v6: 1, v4: 1 })).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("too large to count"), "{}", e.message);
        // Coprime family totals whose product passes u64.
        let c = vec![cand("127.0.0.1:1", (1 << 40) + 1), cand("[::1]:1", 1 << 40)];
        let e = weigh(c, FamilyChoice::Both, Some(Ratio { v6: 3, v4: 2 })).unwrap_err();
        assert!(e.message.contains("too large to count"), "{}", e.message);
    }

    #[test]
    fn ratio_and_family_conflicts_are_usage_errors() {
        let c = vec![cand("127.0.0.1:1", 1), cand("[::1]:1", 1)];
        let e = weigh(c.clone(), FamilyChoice::V4, Some(Ratio { v6: 4, v4: 0 })).unwrap_err();
        assert!(
            e.message.contains("--family excludes IPv6"),
            "{}",
            e.message
        );
        let e = weigh(vec![cand("127.0.0.1:1", 1)], FamilyChoice::V6, None).unwrap_err();
        assert!(e.message.contains("no IPv6 address"), "{}", e.message);
        assert!(
            e.message.ends_with("add an IPv6 URL or use --family 4"),
            "{}",
            e.message
        );
        let e = weigh(vec![cand("[::1]:1", 1)], FamilyChoice::V4, None).unwrap_err();
        assert!(
            e.message
                .ends_with("no IPv4 address: add an IPv4 URL or use --family 6"),
            "{}",
            e.message
        );
        let four_to_one = Some(Ratio { v6: 4, v4: 1 });
        let e = weigh(
            vec![cand("127.0.0.1:1", 1)],
            FamilyChoice::Both,
            four_to_one,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "--ratio 4:1 asks for IPv6 requests, but the targets have no IPv6 address: add an IPv6 URL or use --family 4"
        );
        let t = weigh(c, FamilyChoice::Both, Some(Ratio { v6: 0, v4: 1 })).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].family, Family::V4);
    }

    #[test]
    fn address_list_with_weights_comments_and_errors() {
        let text = "# ANMA list\n127.0.0.1 3\n[::1]:9000  # six\nhttp://127.0.0.2:81/p 2\n\n";
        let c = parse_address_list(text, "list.txt", 8080, "/doc").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(
            (c[0].addr, c[0].weight, c[0].path.as_str()),
            ("127.0.0.1:8080".parse().unwrap(), 3, "/doc")
        );
        assert_eq!(c[1].addr, "[::1]:9000".parse().unwrap());
        assert_eq!((c[2].weight, c[2].path.as_str()), (2, "/p"));
        let e = parse_address_list("127.0.0.1\n::1 x\n", "l", 80, "/").unwrap_err();
        assert_eq!(e.message, "l:2: weight 'x' must be a whole number above 0");
        let e = parse_address_list("127.0.0.1 99999999999999999999\n", "l", 80, "/").unwrap_err();
        assert_eq!(
            e.message,
            "l:1: weight '99999999999999999999' is too large: weights are relative, give smaller ones"
        );
        // Three words: not a weight problem but a line of the wrong shape.
        let e = parse_address_list("bogus line here\n", "l", 80, "/").unwrap_err();
        assert_eq!(
            e.message,
            "l:1: a line is ADDRESS [WEIGHT], but 'bogus line here' has 3 words"
        );
        let e = parse_address_list("# nothing\n", "l", 80, "/").unwrap_err();
        assert!(e.message.contains("no addresses"));
        // A port alone: getaddrinfo took it for the address 0.0.71.14.
        let e = parse_address_list("18190\n", "l", 80, "/").unwrap_err();
        assert_eq!(
            e.message,
            "l:1: '18190' is not an address: an IPv4 address is four numbers with dots \
             (127.0.0.1), and a port goes after one (127.0.0.1:8080)"
        );
        // A list saved with a byte-order mark: it was "cannot resolve '\u{feff}127.0.0.1'".
        let c = parse_address_list("\u{feff}127.0.0.1:81 2\r\n[::1]\r\n", "l", 80, "/").unwrap();
        assert_eq!(
            c.iter().map(|c| (c.addr, c.weight)).collect::<Vec<_>>(),
            [
                ("127.0.0.1:81".parse().unwrap(), 2),
                ("[::1]:80".parse().unwrap(), 1)
            ]
        );
    }

    /// A link-local address needs a zone; written bare, as getaddrinfo takes it, it was
    /// refused as "IPv6 addresses in URLs need brackets".
    #[test]
    fn address_list_takes_a_bare_address_with_a_zone() {
        let c = parse_address_list("fe80::1%lo 2\nfe80::2%25lo\n", "l", 8080, "/").unwrap();
        assert_eq!(c.len(), 2);
        for (cand, ip, weight) in [(&c[0], "fe80::1", 2), (&c[1], "fe80::2", 1)] {
            let SocketAddr::V6(v6) = cand.addr else {
                panic!("expected IPv6: {:?}", cand.addr)
            };
            assert_eq!((v6.ip().to_string(), v6.port()), (ip.to_string(), 8080));
            assert_ne!(v6.scope_id(), 0);
            assert_eq!((cand.zone.as_deref(), cand.weight), (Some("lo"), weight));
        }
        let e = parse_address_list("fe80::1%nosuchif0\n", "l", 80, "/").unwrap_err();
        assert_eq!(
            e.message,
            "l:1: no network interface named 'nosuchif0' (zone of fe80::1)"
        );
        // Not a zone named "lo:80" (which the kernel takes for lo's alias).
        let e = parse_address_list("fe80::1%lo:80\n", "l", 80, "/").unwrap_err();
        assert_eq!(
            e.message,
            "l:1: bad address 'fe80::1%lo:80': a port goes after brackets, [fe80::1%lo]:PORT"
        );
        let e = parse_address_list("::ffff:127.0.0.1%lo\n", "l", 80, "/").unwrap_err();
        assert!(
            e.message.contains("write 127.0.0.1 without a zone"),
            "{}",
            e.message
        );
    }

    #[test]
    fn bind_lists_and_cidrs() {
        let b = parse_bind("127.0.0.1,::1,127.0.1.0/30,2001:2::/127").unwrap();
        assert_eq!(b[0].len(), 3); // 127.0.0.1, 127.0.1.1, 127.0.1.2
        assert_eq!(b[1].len(), 3); // ::1, 2001:2::, 2001:2::1
        assert!(parse_bind("10.0.0.0/8")
            .unwrap_err()
            .message
            .contains("more than"));
        assert!(parse_bind("nope").is_err());
    }

    #[test]
    fn ratio_parsing() {
        assert_eq!(parse_ratio("4:1").unwrap(), Ratio { v6: 4, v4: 1 });
        assert!(parse_ratio("0:0").is_err());
        assert!(parse_ratio("4").is_err());
        assert!(parse_ratio("a:1").is_err());
    }
}
