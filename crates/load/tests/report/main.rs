//! Tests of the reporters (`dualbench_load::report`) on synthetic runs: golden text and JSON,
//! the JSON schema against `docs/json-schema.md`, the figures themselves, and record files.

mod figures;
mod golden;
mod records;
mod scenarios;
mod schema;
