//! Tests of the reporters (`dualbench_load::report`) on synthetic runs: golden text and JSON,
//! the JSON schema against `docs/json-schema.md`, the figures themselves, record files, and
//! the ab part's shape against real ab's report (Debian package apache2-utils).

mod against_ab;
mod figures;
mod golden;
mod records;
mod scenarios;
mod schema;
