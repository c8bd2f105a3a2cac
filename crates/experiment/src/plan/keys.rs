//! The keys each table of a plan takes, read from the types that read the tables (so the
//! list cannot drift from what is accepted), and the one line an unknown key or table
//! gets: which table it is in, a close key when there is one (`requets`: did you mean
//! `requests`?), the table it belongs to when it is another table's key, and every key its
//! table takes. The message and the field lists are the shared ones of topology files and
//! traffic profiles ([`dualbench_common::unknown_key`]); this names a plan's tables. Pure:
//! the caller finds the key, its table and the line.

use dualbench_common::unknown_key::{fields_of, Format, Table};

pub(super) use dualbench_common::unknown_key::Written;

#[cfg(test)]
use dualbench_common::unknown_key::closest;

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

/// A plan as [`Format`] tells its keys: five tables, each under a header of its own.
fn format() -> Format {
    let tables = TABLES
        .iter()
        .filter_map(|t| Some(Table::one(t, keys_of(t)?)))
        .collect();
    Format::new("a plan", &TABLES, tables)
}

/// The message for key `key` that table `table` (`""`: the top level) does not take,
/// without the file and line.
pub(super) fn unknown(table: &str, key: &str, written: Written) -> String {
    format().unknown(table, key, written)
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
