//! A node's `sysctl` table: `net.*` keys of its network namespace, checked at load for
//! syntax only (dotted lowercase, a `net.` key, one word of value) and refused where the
//! testbed depends on the key itself (IPv6 on or off, forwarding on routers). Whether the
//! kernel has a key can only be told inside the namespace, so `up` finds that out.

use super::{Checker, FileError, NodeKind, Sysctl};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// The table as written, in file order (TOML itself refuses a key given twice). Values
/// carry no span (toml cannot span the table an unquoted dotted key makes), so a value's
/// place is found after its key's `=` (see [`value_at`]).
#[derive(Default)]
pub(super) struct RawSysctls(Vec<(Spanned<String>, RawValue)>);

/// A value as written: a string or an integer, or what else it is, to be refused with its
/// place and in our words (a table apart: an unquoted key's dots make one).
pub(super) enum RawValue {
    Integer(i64),
    Text(String),
    Table,
    Other(&'static str),
}

impl<'de> Deserialize<'de> for RawSysctls {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = RawSysctls;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of sysctls, like { \"net.ipv4.tcp_sack\" = \"0\" }")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSysctls, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(RawSysctls(entries))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

impl<'de> Deserialize<'de> for RawValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = RawValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E>(self, n: i64) -> Result<RawValue, E> {
                Ok(RawValue::Integer(n))
            }
            fn visit_u64<E>(self, n: u64) -> Result<RawValue, E> {
                Ok(i64::try_from(n).map_or(RawValue::Text(n.to_string()), RawValue::Integer))
            }
            fn visit_str<E>(self, t: &str) -> Result<RawValue, E> {
                Ok(RawValue::Text(t.to_string()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<RawValue, E> {
                Ok(RawValue::Other("a boolean"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<RawValue, E> {
                Ok(RawValue::Other("a float"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawValue, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawValue::Other("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawValue, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RawValue::Table)
            }
        }
        deserializer.deserialize_any(Any)
    }
}

/// The checked sysctls of node `name`, a `kind`, in file order.
pub(super) fn sysctls(
    check: &Checker,
    raw: &RawSysctls,
    name: &str,
    kind: NodeKind,
) -> Result<Vec<Sysctl>, FileError> {
    let mut checked = Vec::new();
    for (key, value) in &raw.0 {
        let at_key = |m: String| check.at(key.span(), "sysctl", m);
        let value_span = value_at(check.text, key.span());
        let key = key.get_ref();
        if matches!(value, RawValue::Table) && !key.contains('.') {
            return Err(at_key(format!("'{key}' is a table: a sysctl's name has dots, so write it in quotes, like \"net.ipv4.tcp_sack\" = \"0\" (unquoted, TOML reads the dots as nested tables)")));
        }
        check_key(key).map_err(at_key)?;
        if let Some(why) = testbeds_own(key, kind) {
            return Err(at_key(format!(
                "'{key}' is the testbed's own on {} '{name}': {why}",
                kind_word(kind)
            )));
        }
        let value =
            check_value(key, value).map_err(|m| check.at(value_span.clone(), "sysctl", m))?;
        checked.push(Sysctl {
            key: key.clone(),
            value,
        });
    }
    Ok(checked)
}

/// Where the value of the key at `key` starts: after the `=` and the blanks around it (all
/// TOML allows there).
fn value_at(text: &str, key: Range<usize>) -> Range<usize> {
    let rest = text.get(key.end..).unwrap_or("");
    let after = rest.trim_start_matches([' ', '\t']);
    let value = after
        .strip_prefix('=')
        .map_or(after, |v| v.trim_start_matches([' ', '\t']));
    let start = text.len() - value.len();
    start..start
}

fn kind_word(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Host => "host",
        NodeKind::Router => "router",
        NodeKind::Switch => "switch",
    }
}

/// Dotted lowercase (`a-z`, `0-9`, `_`, `-`, `.` between non-empty parts), and a `net.*`
/// key: only those belong to a network namespace, the rest are the whole machine's.
pub fn check_key(key: &str) -> Result<(), String> {
    let good_chars = key
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    let parts: Vec<&str> = key.split('.').collect();
    if !good_chars || parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!("'{key}' is not a sysctl name: write it dotted and in lowercase, like \"net.ipv4.tcp_sack\" (a-z, 0-9, '_', '-', and '.' between the parts)"));
    }
    if parts[0] != "net" {
        return Err(format!("'{key}' is not per network namespace: it would change the whole machine, not one node; only net.* sysctls can be set on a node"));
    }
    Ok(())
}

/// Why the testbed cannot let a node change `key`, if it cannot: IPv6 is on in hosts and
/// routers (every interface is dual-stack) and off in switches; routers forward.
fn testbeds_own(key: &str, kind: NodeKind) -> Option<&'static str> {
    let conf = |family: &str, last: &str| {
        key.strip_prefix(family)
            .and_then(|rest| rest.strip_suffix(last))
            .is_some_and(|device| !device.is_empty())
    };
    if conf("net.ipv6.conf.", ".disable_ipv6") {
        return Some("hosts and routers keep IPv6 on (every interface is dual-stack) and switches keep it off (they put nothing of their own on links)");
    }
    let forwarding = key == "net.ipv4.ip_forward"
        || conf("net.ipv4.conf.", ".forwarding")
        || conf("net.ipv6.conf.", ".forwarding");
    if forwarding && kind == NodeKind::Router {
        return Some("routers forward IPv4 and IPv6; a node that should not forward is a [[host]]");
    }
    None
}

/// A string or an integer, one word: `"1"`, `1`, `"cubic"`.
fn check_value(key: &str, raw: &RawValue) -> Result<String, String> {
    let value = match raw {
        RawValue::Integer(n) => return Ok(n.to_string()),
        RawValue::Text(t) => t,
        RawValue::Table => return Err(not_a_value(key, "a table")),
        RawValue::Other(what) => return Err(not_a_value(key, what)),
    };
    if value.is_empty() {
        return Err(format!("empty value for '{key}': give one, like \"1\""));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the value {value:?} of '{key}' has whitespace: a value is one word, like \"1\""
        ));
    }
    Ok(value.clone())
}

fn not_a_value(key: &str, what: &str) -> String {
    format!("the value of '{key}' is {what}: write a string or an integer, like \"1\" or 1")
}
