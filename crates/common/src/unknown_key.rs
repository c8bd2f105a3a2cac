//! The one line an unknown key of a TOML input gets, alike in an experiment plan, a
//! topology file and a traffic profile: the table it is in, the key, a close key when
//! there is one (`requets`: did you mean `requests`?), the table it belongs to when it is
//! another table's key, and every key its table takes:
//! ``[load]: unknown key `requets` (did you mean `requests`?); [load] takes requests, …``.
//!
//! A format names its tables once ([`Format`]), each with the keys read from the serde
//! type that reads it ([`fields_of`]), so no list can drift from what is accepted.
//! [`deserialize`] reads a value and keeps, when it fails, the names of the tables on the
//! way to the failure; [`Format::explain`] turns serde's `unknown field …` there into the
//! line. Pure: the caller adds the file and the line.

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, Visitor};
use std::fmt;

/// How the unknown key is written: `key = …`, `[key]` or `[[key]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Key,
    Table,
    ArrayOfTables,
}

impl Written {
    /// From the text of the line before the key (`[[`, `[`, or anything else).
    pub fn from_prefix(prefix: &str) -> Written {
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

/// How a table of a format is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// One table under a header of its own: `[load]`.
    One,
    /// An array of tables, each entry under `[[link]]`.
    Many,
    /// One table usually written inline (`mix = { … }`): a key among its parent's keys,
    /// named `[mix]` as a table.
    Inline,
}

/// One table of a format and the keys it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Its dotted path from the top level: `load`, `link.a_to_b`.
    pub path: &'static str,
    pub header: Header,
    pub keys: &'static [&'static str],
}

impl Table {
    /// `[path]`, written under a header of its own.
    pub fn one(path: &'static str, keys: &'static [&'static str]) -> Table {
        Table {
            path,
            header: Header::One,
            keys,
        }
    }

    /// `[[path]]`, an array of tables.
    pub fn many(path: &'static str, keys: &'static [&'static str]) -> Table {
        Table {
            path,
            header: Header::Many,
            keys,
        }
    }

    /// `path = { … }`, an inline table.
    pub fn inline(path: &'static str, keys: &'static [&'static str]) -> Table {
        Table {
            path,
            header: Header::Inline,
            keys,
        }
    }

    /// How messages name it: `[load]`, `[[link]]`, `[link.a_to_b]`, `[mix]`.
    pub fn name(&self) -> String {
        match self.header {
            Header::Many => format!("[[{}]]", self.path),
            Header::One | Header::Inline => format!("[{}]", self.path),
        }
    }

    /// Whether `other` lies inside this table (`link.a_to_b` inside `link`).
    fn holds(&self, other: &Table) -> bool {
        other
            .path
            .strip_prefix(self.path)
            .is_some_and(|rest| rest.starts_with('.'))
    }
}

/// A TOML input's keys: those of its top level and of each of its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// How messages name a file of the format: `a plan`.
    pub noun: &'static str,
    /// The top level's keys, tables among them, in the order the docs give them.
    pub top: &'static [&'static str],
    /// Every table whose keys are known, in the order owners are listed in.
    pub tables: Vec<Table>,
}

impl Format {
    pub fn new(noun: &'static str, top: &'static [&'static str], tables: Vec<Table>) -> Format {
        Format { noun, top, tables }
    }

    /// The table at `path` (`link.a_to_b`), if the format knows its keys.
    pub fn table(&self, path: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.path == path)
    }

    /// The line for a read that failed on a key its table does not take (serde's `unknown
    /// field …`; `None` for any other `message`): `names`, the tables and key on the way
    /// to it ([`Failed::names`]), the key last; `at`, where the key starts in `text`.
    pub fn explain(
        &self,
        message: &str,
        names: &[String],
        text: &str,
        at: usize,
    ) -> Option<String> {
        if !message.starts_with("unknown field") {
            return None;
        }
        let (key, tables) = names.split_last()?;
        let before = text.get(..at.min(text.len())).unwrap_or(text);
        let written = Written::from_prefix(before.rsplit('\n').next().unwrap_or(""));
        Some(self.unknown(&tables.join("."), key, written))
    }

    /// The message for key `key` that table `table` (`""`: the top level) does not take,
    /// without the file and line.
    pub fn unknown(&self, table: &str, key: &str, written: Written) -> String {
        let shown_key = shown(key);
        if table.is_empty() {
            return self.unknown_at_top(key, written);
        }
        let Some(t) = self.table(table) else {
            return format!("[{table}]: unknown key {shown_key}");
        };
        let name = t.name();
        let elsewhere: Vec<String> = self
            .owners(key)
            .into_iter()
            .filter(|o| o.path != t.path)
            .map(Table::name)
            .collect();
        let hint = match (closest(key, t.keys), elsewhere.as_slice()) {
            (Some(k), _) => format!(" (did you mean {}?)", shown(k)),
            (None, [_, ..]) => format!(" (a key of {})", elsewhere.join(" and ")),
            (None, []) if self.is_plain_top_key(key) => {
                " (a top-level key: write it above the first table)".to_string()
            }
            (None, []) => String::new(),
        };
        format!(
            "{name}: unknown key {shown_key}{hint}; {name} takes {}",
            t.keys.join(", ")
        )
    }

    /// An unknown key or table at the top level: what the top level takes, and where the
    /// key goes when a table takes it.
    fn unknown_at_top(&self, key: &str, written: Written) -> String {
        let plain = self.top.iter().any(|k| self.is_plain_top_key(k));
        let what = match written {
            Written::Table => format!("unknown table [{key}]"),
            Written::ArrayOfTables => format!("unknown table [[{key}]]"),
            Written::Key if plain => format!("unknown key {}", shown(key)),
            Written::Key => format!("unknown key {} outside any table", shown(key)),
        };
        let owners: Vec<String> = self.owners(key).into_iter().map(Table::name).collect();
        let hint = match (written, owners.as_slice(), closest(key, self.top)) {
            (Written::Key, [_, ..], _) => format!(" (it goes under {})", owners.join(" or ")),
            (_, _, Some(k)) => format!(" (did you mean {}?)", self.top_shown(k)),
            (_, _, None) => String::new(),
        };
        let listed: Vec<String> = self.top.iter().map(|k| self.top_listed(k)).collect();
        let listed = listed.join(", ");
        let noun = self.noun;
        if plain {
            format!("{what}{hint}; {noun} takes {listed}")
        } else {
            format!("{what}{hint}; {noun} has the tables {listed}")
        }
    }

    /// A top-level key as a message names it: `` `name` ``, `[load]`, `[[link]]` (an
    /// inline table as a key).
    fn top_shown(&self, key: &str) -> String {
        match self.table(key).map(|t| t.header) {
            Some(Header::One | Header::Many) => self.top_listed(key),
            Some(Header::Inline) | None => shown(key),
        }
    }

    /// A top-level key as the list of what the top level takes gives it: `name`, `[load]`,
    /// `[[link]]`, as a table's keys are listed.
    fn top_listed(&self, key: &str) -> String {
        match self.table(key).map(|t| t.header) {
            Some(Header::One) => format!("[{key}]"),
            Some(Header::Many) => format!("[[{key}]]"),
            Some(Header::Inline) | None => key.to_string(),
        }
    }

    /// Whether `key` is a key of the top level written as `key = …` (a value or an inline
    /// table), which no table header may come before.
    fn is_plain_top_key(&self, key: &str) -> bool {
        self.top.contains(&key) && self.table(key).is_none_or(|t| t.header == Header::Inline)
    }

    /// The tables that take `key`, leaving out those inside another that does (`rate` is
    /// `[[link]]`'s, not also `[link.a_to_b]`'s).
    fn owners(&self, key: &str) -> Vec<&Table> {
        let all: Vec<&Table> = self
            .tables
            .iter()
            .filter(|t| t.keys.contains(&key))
            .collect();
        all.iter()
            .filter(|t| !all.iter().any(|o| o.holds(t)))
            .copied()
            .collect()
    }
}

/// A key as a message shows it: `bare` in backticks, anything else quoted as TOML would
/// quote it.
pub fn shown(key: &str) -> String {
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

/// The key of `keys` closest to `key` when one is close: the same but for case, or at
/// most a third of its letters apart (a swap of two neighbours counting as one), the
/// nearest first and, of equals, the first listed.
pub fn closest<'k>(key: &str, keys: &[&'k str]) -> Option<&'k str> {
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

/// A read that failed: the deserializer's error, and the names of the tables and keys on
/// the way to the value it is about (array indexes left out: `link`, `a_to_b`, `rat`).
#[derive(Debug)]
pub struct Failed<E> {
    pub error: E,
    pub names: Vec<String>,
}

/// Read a `T` from `deserializer` (`toml::Deserializer::new(text)`), keeping on failure
/// the path to it ([`Failed::names`]), which the error itself does not tell.
pub fn deserialize<'de, D, T>(deserializer: D) -> Result<T, Failed<D::Error>>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    use serde_path_to_error::Segment;
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let names = e
            .path()
            .iter()
            .filter_map(|segment| match segment {
                // The fields toml's `Spanned` reads its value through are no keys.
                Segment::Map { key } if !key.starts_with("$__serde_spanned_private") => {
                    Some(key.clone())
                }
                _ => None,
            })
            .collect();
        Failed {
            error: e.into_inner(),
            names,
        }
    })
}

/// The field names serde's derive gives a struct, caught as it asks the deserializer for
/// them: [`Probe`] takes note of them and stops. Empty for a type that is not a struct.
pub fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
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
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Top {
        name: Option<String>,
        #[serde(default)]
        node: Vec<Node>,
        #[serde(default)]
        link: Vec<Link>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Node {
        name: String,
        #[serde(skip)]
        number: u32,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Link {
        a: String,
        rate: Option<String>,
        there: Option<Direction>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Direction {
        rate: Option<String>,
        delay: Option<String>,
    }

    /// A format with a plain key, arrays of tables, a nested inline table and a header.
    fn format() -> Format {
        Format::new(
            "a lab",
            fields_of::<Top>(),
            vec![
                Table::many("node", fields_of::<Node>()),
                Table::many("link", fields_of::<Link>()),
                Table::inline("link.there", fields_of::<Direction>()),
            ],
        )
    }

    /// Plans: tables only, each under its own header.
    fn tables_only() -> Format {
        Format::new(
            "a plan",
            &["load", "report"],
            vec![
                Table::one("load", &["requests", "concurrency"]),
                Table::one("report", &["rows", "notes"]),
            ],
        )
    }

    #[test]
    fn fields_are_those_serde_reads_and_a_skipped_one_is_none() {
        assert_eq!(fields_of::<Top>(), ["name", "node", "link"]);
        assert_eq!(fields_of::<Node>(), ["name"]);
        assert_eq!(fields_of::<String>(), [] as [&str; 0]);
    }

    #[test]
    fn close_keys_are_suggested_and_far_ones_are_not() {
        let keys = ["requests", "concurrency", "keepalive"];
        assert_eq!(closest("requets", &keys), Some("requests"));
        assert_eq!(
            closest("reqeusts", &keys),
            Some("requests"),
            "a swap is one"
        );
        assert_eq!(closest("KeepAlive", &keys), Some("keepalive"));
        assert_eq!(closest("procs", &keys), None);
        assert_eq!(closest("x", &keys), None);
        assert_eq!(shown("rate"), "`rate`");
        assert_eq!(shown("a b"), "\"a b\"");
        assert_eq!(shown(""), "\"\"");
    }

    #[test]
    fn a_table_names_itself_as_written() {
        let f = format();
        let names: Vec<String> = f.tables.iter().map(Table::name).collect();
        assert_eq!(names, ["[[node]]", "[[link]]", "[link.there]"]);
        assert_eq!(Table::one("load", &[]).name(), "[load]");
    }

    #[test]
    fn keys_in_tables() {
        let f = format();
        assert_eq!(
            f.unknown("link", "rat", Written::Key),
            "[[link]]: unknown key `rat` (did you mean `rate`?); [[link]] takes a, rate, there"
        );
        assert_eq!(
            f.unknown("link.there", "a", Written::Key),
            "[link.there]: unknown key `a` (a key of [[link]]); [link.there] takes rate, delay"
        );
        // `rate` is [[link]]'s, and so inside it [link.there]'s too: the outer one is named.
        assert_eq!(
            f.unknown("node", "rate", Written::Key),
            "[[node]]: unknown key `rate` (a key of [[link]]); [[node]] takes name"
        );
        assert_eq!(
            f.unknown("link", "name", Written::Key),
            "[[link]]: unknown key `name` (a key of [[node]]); [[link]] takes a, rate, there"
        );
        assert_eq!(
            f.unknown("link.there", "name", Written::Key),
            "[link.there]: unknown key `name` (a key of [[node]]); [link.there] takes rate, delay"
        );
        assert_eq!(
            f.unknown("node.extra", "x", Written::Key),
            "[node.extra]: unknown key `x`"
        );
        let plan = tables_only();
        assert_eq!(
            plan.unknown("report", "requests", Written::Key),
            "[report]: unknown key `requests` (a key of [load]); [report] takes rows, notes"
        );
        assert_eq!(
            plan.unknown("report", "load", Written::Key),
            "[report]: unknown key `load`; [report] takes rows, notes",
            "a table is no key to move above the tables"
        );
    }

    #[test]
    fn a_top_level_key_below_a_header_is_told_where_it_goes() {
        let f = Format::new(
            "a profile",
            &["rate", "mix", "destinations"],
            vec![
                Table::inline("mix", &["tcp", "udp"]),
                Table::one("destinations", &["ipv4", "ipv6"]),
            ],
        );
        assert_eq!(
            f.unknown("destinations", "rate", Written::Key),
            "[destinations]: unknown key `rate` (a top-level key: write it above the first table); [destinations] takes ipv4, ipv6"
        );
        assert_eq!(
            f.unknown("destinations", "mix", Written::Key),
            "[destinations]: unknown key `mix` (a top-level key: write it above the first table); [destinations] takes ipv4, ipv6"
        );
        assert_eq!(
            f.unknown("", "mixx", Written::Key),
            "unknown key `mixx` (did you mean `mix`?); a profile takes rate, mix, [destinations]"
        );
        assert_eq!(
            f.unknown("", "ipv4", Written::Key),
            "unknown key `ipv4` (it goes under [destinations]); a profile takes rate, mix, [destinations]"
        );
    }

    #[test]
    fn keys_and_tables_at_the_top() {
        let f = format();
        let takes = "a lab takes name, [[node]], [[link]]";
        assert_eq!(
            f.unknown("", "nodes", Written::ArrayOfTables),
            format!("unknown table [[nodes]] (did you mean [[node]]?); {takes}")
        );
        assert_eq!(
            f.unknown("", "names", Written::Key),
            format!("unknown key `names` (did you mean `name`?); {takes}")
        );
        assert_eq!(
            f.unknown("", "delay", Written::Key),
            format!("unknown key `delay` (it goes under [link.there]); {takes}")
        );
        assert_eq!(
            f.unknown("", "rate", Written::Key),
            format!("unknown key `rate` (it goes under [[link]]); {takes}")
        );
        assert_eq!(
            f.unknown("", "wire", Written::Table),
            format!("unknown table [wire]; {takes}")
        );
        let plan = tables_only();
        let tables = "a plan has the tables [load], [report]";
        assert_eq!(
            plan.unknown("", "rows", Written::Key),
            format!("unknown key `rows` outside any table (it goes under [report]); {tables}")
        );
        assert_eq!(
            plan.unknown("", "laod", Written::Table),
            format!("unknown table [laod] (did you mean [load]?); {tables}")
        );
        assert_eq!(Written::from_prefix("  [[x"), Written::ArrayOfTables);
        assert_eq!(Written::from_prefix("[x"), Written::Table);
        assert_eq!(Written::from_prefix("x = { "), Written::Key);
    }

    /// serde's words and its path, read by toml itself: an unknown key in an inline table
    /// of an array's entry, a table header at the top, and a wrong type (no unknown key).
    #[test]
    fn explain_reads_the_path_to_the_unknown_key() {
        let f = format();
        let read = |text: &str| {
            let failed = deserialize::<_, Top>(toml::Deserializer::new(text))
                .err()
                .expect("refused");
            let at = failed.error.span().expect("a place").start;
            (failed.error.message().to_string(), failed.names, at)
        };
        let text = "[[node]]\nname = \"a\"\n[[link]]\na = \"a\"\nthere = { delya = \"1ms\" }\n";
        let (message, names, at) = read(text);
        assert_eq!(names, ["link", "there", "delya"]);
        assert_eq!(at, text.find("delya").unwrap());
        assert_eq!(
            f.explain(&message, &names, text, at).as_deref(),
            Some("[link.there]: unknown key `delya` (did you mean `delay`?); [link.there] takes rate, delay")
        );
        let text = "name = \"x\"\n[[nodes]]\nname = \"a\"\n";
        let (message, names, at) = read(text);
        assert_eq!(
            f.explain(&message, &names, text, at).as_deref(),
            Some("unknown table [[nodes]] (did you mean [[node]]?); a lab takes name, [[node]], [[link]]")
        );
        let text = "[[node]]\nname = 1\n";
        let (message, names, at) = read(text);
        assert_eq!(names, ["node", "name"]);
        assert_eq!(
            f.explain(&message, &names, text, at),
            None,
            "a wrong type is no unknown key"
        );
        assert_eq!(f.explain("unknown field `x`", &[], "", 0), None);
    }
}
