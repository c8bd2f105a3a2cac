//! The keys each table of a plan takes, read from the types that read the tables (so the
//! list cannot drift from what is accepted), and the one line an unknown key or table
//! gets: which table it is in, a close key when there is one (`requets`: did you mean
//! `requests`?), the table it belongs to when it is another table's key, and every key its
//! table takes. Pure: the caller finds the key, its table and the line.

use serde::de::{self, DeserializeOwned, Visitor};
use std::fmt;

/// How the unknown key is written: `key = …`, `[key]` or `[[key]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    Key,
    Table,
    ArrayOfTables,
}

impl Written {
    /// From the text of the line before the key (`[[`, `[`, or anything else).
    pub(super) fn from_prefix(prefix: &str) -> Written {
        let prefix = prefix.trim_start();
        if prefix.starts_with("[[") {
            Written::ArrayOfTables
        } else if prefix.starts_with('[') {
            Written::Table
        } else {
            Written::Key
        }
    }
}

/// The plan's tables, in the order the docs give them.
pub(super) const TABLES: [&str; 5] = ["experiment", "load", "axes", "testbed", "report"];

/// The keys table `table` takes (`""` is the top level); `None` for a table not read by
/// one of the plan's types.
pub(super) fn keys_of(table: &str) -> Option<&'static [&'static str]> {
    Some(match table {
        "" => &TABLES,
        "experiment" => fields_of::<super::RawExperiment>(),
        "load" => fields_of::<super::Load>(),
        "axes" => fields_of::<super::RawAxes>(),
        "testbed" => fields_of::<super::Testbed>(),
        "report" => fields_of::<super::ReportSpec>(),
        _ => return None,
    })
}

/// The message for key `key` that table `table` (`""`: the top level) does not take,
/// without the file and line.
pub(super) fn unknown(table: &str, key: &str, written: Written) -> String {
    let tables = TABLES.map(|t| format!("[{t}]")).join(", ");
    let shown = shown(key);
    if table.is_empty() {
        let what = match written {
            Written::Table => format!("unknown table [{key}]"),
            Written::ArrayOfTables => format!("unknown table [[{key}]]"),
            Written::Key => format!("unknown key {shown} outside any table"),
        };
        let hint = match (written, owners(key).as_slice(), closest(key, &TABLES)) {
            (Written::Key, owners @ [_, ..], _) => {
                format!(" (it goes under {})", owners.join(" or "))
            }
            (_, _, Some(t)) => format!(" (did you mean [{t}]?)"),
            (_, _, None) => String::new(),
        };
        return format!("{what}{hint}; a plan has the tables {tables}");
    }
    let Some(keys) = keys_of(table) else {
        return format!("[{table}]: unknown key {shown}");
    };
    let elsewhere: Vec<String> = owners(key)
        .into_iter()
        .filter(|t| *t != format!("[{table}]"))
        .collect();
    let hint = match (closest(key, keys), elsewhere.as_slice()) {
        (Some(k), _) => format!(" (did you mean {}?)", self::shown(k)),
        (None, []) => String::new(),
        (None, owners) => format!(" (a key of {})", owners.join(" and ")),
    };
    format!(
        "[{table}]: unknown key {shown}{hint}; [{table}] takes {}",
        keys.join(", ")
    )
}

/// A key as the message shows it: `bare` in backticks, anything else quoted as TOML
/// would quote it.
fn shown(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        format!("`{key}`")
    } else {
        format!("{key:?}")
    }
}

/// The tables (`[load]`) that take `key`.
fn owners(key: &str) -> Vec<String> {
    TABLES
        .iter()
        .filter(|t| keys_of(t).is_some_and(|keys| keys.contains(&key)))
        .map(|t| format!("[{t}]"))
        .collect()
}

/// The key of `keys` closest to `key` when one is close: the same but for case, or at
/// most a third of its letters apart (a swap of two neighbours counting as one), the
/// nearest first and, of equals, the first listed.
fn closest<'k>(key: &str, keys: &[&'k str]) -> Option<&'k str> {
    let lower = key.to_ascii_lowercase();
    if let Some(k) = keys.iter().find(|k| k.to_ascii_lowercase() == lower) {
        return Some(k);
    }
    let most = (key.chars().count() / 3).max(1);
    keys.iter()
        .map(|k| (strsim::damerau_levenshtein(&lower, k), *k))
        .filter(|&(d, _)| d <= most)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// The field names serde's derive gives a struct, caught as it asks the deserializer for
/// them: [`Probe`] takes note of them and stops.
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe {
        fields: &mut fields,
    });
    fields
}

struct Probe<'a> {
    fields: &'a mut &'static [&'static str],
}

/// [`Probe`]'s only answer: it has what it wanted, and reads no value.
#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field names taken")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.fields = fields;
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_of_each_table_are_those_of_its_type() {
        assert_eq!(
            keys_of("experiment").unwrap(),
            ["name", "title", "description", "warmup", "repeats"]
        );
        assert_eq!(keys_of("report").unwrap().len(), 5);
        assert!(keys_of("testbed").unwrap().contains(&"server_ipv6"));
        assert!(
            !keys_of("testbed").unwrap().contains(&"topology_text"),
            "a skipped field is no key"
        );
        assert_eq!(keys_of("axes").unwrap().len(), 10);
        assert_eq!(keys_of("").unwrap(), TABLES);
        assert_eq!(keys_of("server"), None);
    }

    #[test]
    fn close_keys_are_suggested_and_far_ones_are_not() {
        let keys = keys_of("load").unwrap();
        assert_eq!(closest("requets", keys), Some("requests"));
        assert_eq!(closest("reqeusts", keys), Some("requests"), "a swap is one");
        assert_eq!(closest("Keepalive", keys), Some("keepalive"));
        assert_eq!(closest("concurency", keys), Some("concurrency"));
        assert_eq!(closest("procs", keys), None);
        assert_eq!(closest("x", keys), None);
        assert_eq!(closest("axis", &TABLES), Some("axes"));
        assert_eq!(closest("server", &TABLES), None);
    }

    #[test]
    fn messages_name_the_table_the_key_and_what_the_table_takes() {
        assert_eq!(
            unknown("report", "colums", Written::Key),
            "[report]: unknown key `colums` (did you mean `columns`?); [report] takes rows, columns, metrics, phase, notes"
        );
        assert_eq!(
            unknown("report", "repeats", Written::Key),
            "[report]: unknown key `repeats` (a key of [experiment]); [report] takes rows, columns, metrics, phase, notes"
        );
        assert_eq!(
            unknown("", "server", Written::Table),
            "unknown table [server]; a plan has the tables [experiment], [load], [axes], [testbed], [report]"
        );
        assert_eq!(
            unknown("", "axis", Written::ArrayOfTables),
            "unknown table [[axis]] (did you mean [axes]?); a plan has the tables [experiment], [load], [axes], [testbed], [report]"
        );
        assert_eq!(
            unknown("", "server", Written::Key),
            "unknown key `server` outside any table (it goes under [axes] or [testbed]); a plan has the tables [experiment], [load], [axes], [testbed], [report]"
        );
        assert_eq!(
            unknown("experiment", "a b", Written::Key),
            "[experiment]: unknown key \"a b\"; [experiment] takes name, title, description, warmup, repeats"
        );
        assert_eq!(Written::from_prefix("  [[x"), Written::ArrayOfTables);
        assert_eq!(Written::from_prefix("[x"), Written::Table);
        assert_eq!(Written::from_prefix("load = { "), Written::Key);
    }
}
