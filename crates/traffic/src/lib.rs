//! Background traffic (`dualbench traffic`): MGEN-style TCP and UDP flows in any IPv4/IPv6
//! mix, and the sink that measures them.
//!
//! - [`script`] parses the MGEN script subset, [`profile`] the TOML profiles and presets;
//!   both end as a [`script::Script`]; [`share`] keeps a sender's family and part of its
//!   flows (`--family`, `--part`), which [`plan`] turns into per-flow phases; [`clone`]
//!   reads the captures a script's CLONE patterns name; [`describe`] is `--dry-run`'s text.
//! - [`pacer`] says when each message is due (on top of `dualbench_pace`), [`send`] runs one
//!   paced loop per flow over real sockets, [`sink`] receives and measures.
//! - [`rate`] defines payload, IP and wire bytes; [`message`] the header every message carries;
//!   [`addr`] reads socket addresses (zones, link-local and multicast checks); [`numbers`]
//!   keeps numbers in messages readable.

pub mod addr;
pub mod cli;
pub mod clone;
pub mod describe;
pub mod message;
pub mod numbers;
pub mod pacer;
pub mod plan;
pub mod profile;
pub mod rate;
pub mod report;
pub mod script;
pub mod send;
pub mod share;
pub mod signals;
pub mod sink;

pub use cli::{main, TrafficCli};

/// For `crates/dualbench/tests/traffic.rs`, which reads the JSON summaries but cannot add
/// dependencies of its own.
#[doc(hidden)]
pub use serde_json;
