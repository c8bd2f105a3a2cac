//! ab's flags that are more than a field of [`crate::cli::RunCli`]: `-t` with a unit,
//! the header lines of `-C`, `-A` and `-P` as ab writes them, and the ab flags dualbench
//! refuses, each with one line saying what ab uses it for and what to use instead.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use clap::Args;
use dualbench_common::{Failure, Result};

/// `-t` and `-s`: ab's seconds (`10`, `2.5`), or durations as wrk and oha take them: a
/// number with a unit (`500ms`, `10s`, `2m`, `1h`; also `us`), or several in a row
/// (`1m30s`). Returns seconds; the range is checked with the plan.
pub fn parse_time_limit(text: &str) -> std::result::Result<f64, String> {
    let bad = || {
        format!("'{text}' is not a time: give seconds (10, 2.5) or a number with a unit (500ms, 10s, 2m, 1h, 1m30s)")
    };
    if let Ok(secs) = text.parse::<f64>() {
        return if secs.is_finite() {
            Ok(secs)
        } else {
            Err(bad())
        };
    }
    if text.is_empty() {
        return Err(bad());
    }
    let mut rest = text;
    let mut total = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit] {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += number * scale;
        rest = &rest[unit..];
    }
    Ok(total)
}

/// The header lines of `-C`, `-A` and `-P`, in ab's order: `Cookie`, then
/// `Authorization: Basic` for each `-A`, then `Proxy-Authorization: Basic` for each `-P`
/// (ab keeps the order of the command line between the two: a `-P` typed before an `-A`
/// comes first there). Each credential is base64 of the text after its leading white
/// space, as ab encodes it. ab 2.3 sends only the last `-C` although its help calls it
/// repeatable; every `-C` is sent here, joined in one `Cookie` line with `; ` as a browser
/// joins cookies (RFC 6265), so a single `-C` gives ab's line byte for byte.
pub fn credential_lines(
    cookies: &[String],
    auth: &[String],
    proxy_auth: &[String],
) -> Result<Vec<String>> {
    if let Some(bad) = cookies
        .iter()
        .find(|c| c.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)))
    {
        return Err(Failure::usage(format!(
            "bad -C '{}': a cookie is one line 'name=value' (one -C per cookie)",
            bad.escape_default()
        )));
    }
    if let Some(bad) = cookies.iter().find(|c| !c.contains('=')) {
        return Err(Failure::usage(format!(
            "bad -C '{}': a cookie is 'name=value' (RFC 6265)",
            bad.escape_default()
        )));
    }
    for (flag, credentials) in [("-A", auth), ("-P", proxy_auth)] {
        if let Some(bad) = credentials.iter().find(|c| !c.contains(':')) {
            return Err(Failure::usage(format!(
                "bad {flag} '{}': Basic authentication takes 'user:password' (RFC 7617)",
                bad.escape_default()
            )));
        }
    }
    let basic = |name: &str, text: &str| {
        // C's isspace, as ab skips it.
        let text = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
        format!("{name}: Basic {}", STANDARD.encode(text))
    };
    let cookie = (!cookies.is_empty()).then(|| format!("Cookie: {}", cookies.join("; ")));
    Ok(cookie
        .into_iter()
        .chain(auth.iter().map(|a| basic("Authorization", a)))
        .chain(proxy_auth.iter().map(|p| basic("Proxy-Authorization", p)))
        .collect())
}

/// ab's flags that dualbench does not take. They are parsed (hidden from the help) so
/// that each is refused by name, with what ab uses it for and what to use instead, rather
/// than as an unknown argument.
#[derive(Debug, Default, Args)]
pub struct RefusedAbFlags {
    #[arg(short = 'w', hide = true)]
    html: bool,
    #[arg(short = 'x', hide = true, value_name = "ATTRIBUTES")]
    table_attributes: Option<String>,
    #[arg(short = 'y', hide = true, value_name = "ATTRIBUTES")]
    row_attributes: Option<String>,
    #[arg(short = 'z', hide = true, value_name = "ATTRIBUTES")]
    cell_attributes: Option<String>,
    #[arg(short = 'X', hide = true, value_name = "PROXY:PORT")]
    proxy: Option<String>,
    #[arg(short = 'b', hide = true, value_name = "WINDOWSIZE")]
    window_size: Option<String>,
    #[arg(short = 'f', hide = true, value_name = "PROTOCOL")]
    tls_protocol: Option<String>,
    #[arg(short = 'Z', hide = true, value_name = "CIPHERSUITE")]
    tls_ciphers: Option<String>,
    #[arg(short = 'E', hide = true, value_name = "CERTFILE")]
    tls_certificate: Option<String>,
    #[arg(short = 'I', hide = true)]
    no_sni: bool,
}

/// What to use instead of ab's TLS options.
const PLAIN_HTTP: &str = "dualbench speaks plain HTTP: benchmark an http:// URL (the server's plain port, or a TLS terminator's backend)";
/// What to use instead of ab's HTML output.
const TEXT_OR_JSON: &str = "use the text report, or --format json for a document to process";

impl RefusedAbFlags {
    /// The first refused flag given, as a usage error of one line: the flag, what ab uses
    /// it for, what to use instead.
    pub fn check(&self) -> Result<()> {
        let given = [
            (self.html, "-w", "prints its report as HTML tables", TEXT_OR_JSON),
            (self.table_attributes.is_some(), "-x", "sets the attributes of -w's HTML <table>", TEXT_OR_JSON),
            (self.row_attributes.is_some(), "-y", "sets the attributes of -w's HTML <tr>", TEXT_OR_JSON),
            (self.cell_attributes.is_some(), "-z", "sets the attributes of -w's HTML <td> and <th>", TEXT_OR_JSON),
            (
                self.proxy.is_some(),
                "-X",
                "sends every request through this HTTP proxy",
                "dualbench connects straight to each target; to benchmark a reverse proxy, give its address as the URL",
            ),
            (
                self.window_size.is_some(),
                "-b",
                "sets the TCP send and receive buffer sizes",
                "set the kernel's defaults with sysctl net.ipv4.tcp_rmem and net.ipv4.tcp_wmem (they apply to IPv6 too)",
            ),
            (self.tls_protocol.is_some(), "-f", "picks the TLS protocol version", PLAIN_HTTP),
            (self.tls_ciphers.is_some(), "-Z", "picks the TLS cipher suite", PLAIN_HTTP),
            (self.tls_certificate.is_some(), "-E", "sends a TLS client certificate", PLAIN_HTTP),
            (self.no_sni, "-I", "turns off TLS server name indication", PLAIN_HTTP),
        ];
        match given.into_iter().find(|g| g.0) {
            Some((_, flag, what, instead)) => Err(Failure::usage(format!(
                "{flag} is not supported (ab's {flag} {what}): {instead}"
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits_take_abs_seconds_or_a_unit() {
        for (text, secs) in [
            ("10", 10.0),
            ("2.5", 2.5),
            ("-1", -1.0),
            ("500ms", 0.5),
            ("10s", 10.0),
            ("2m", 120.0),
            ("1h", 3600.0),
            ("1m30s", 90.0),
            ("1.5s", 1.5),
            ("250us", 0.000_25),
        ] {
            assert_eq!(parse_time_limit(text), Ok(secs), "{text}");
        }
        for bad in [
            "", "s", "10x", "10 s", "ms10", "1m30", "inf", "NaN", "1..2s",
        ] {
            let e = parse_time_limit(bad).expect_err(bad);
            assert!(e.contains("500ms, 10s, 2m"), "{bad}: {e}");
        }
    }

    #[test]
    fn credentials_are_abs_lines() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            credential_lines(
                &v(&["a=1"]),
                &v(&["  alice:secret", "x:y"]),
                &v(&["bob:pw"])
            )
            .unwrap(),
            [
                "Cookie: a=1",
                "Authorization: Basic YWxpY2U6c2VjcmV0",
                "Authorization: Basic eDp5",
                "Proxy-Authorization: Basic Ym9iOnB3",
            ]
        );
        assert_eq!(
            credential_lines(&v(&["a=1", "b=2"]), &[], &[]).unwrap(),
            ["Cookie: a=1; b=2"]
        );
        assert!(credential_lines(&[], &[], &[]).unwrap().is_empty());
        let e = credential_lines(&v(&["a=1\r\nX: y"]), &[], &[]).unwrap_err();
        assert!(e.to_string().starts_with("bad -C 'a=1\\r\\nX: y'"), "{e}");
        for (c, a, p, want) in [
            (
                &["theme"][..],
                &[][..],
                &[][..],
                "bad -C 'theme': a cookie is 'name=value'",
            ),
            (
                &[],
                &["alice"],
                &[],
                "bad -A 'alice': Basic authentication takes 'user:password'",
            ),
            (
                &[],
                &["a:b"],
                &["bob"],
                "bad -P 'bob': Basic authentication",
            ),
        ] {
            let e = credential_lines(&v(c), &v(a), &v(p)).unwrap_err();
            assert!(e.to_string().starts_with(want), "{e}");
            assert_eq!(e.exit_code(), 2, "{e}");
        }
    }
}
