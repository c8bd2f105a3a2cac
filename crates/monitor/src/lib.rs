//! Kernel monitoring (`dualbench monitor`): per-CPU time, context switches, interrupts,
//! paging, disks, interfaces, IP/ICMP/TCP/UDP counters per family and watched processes
//! (CPU, memory and page faults, storage I/O, descriptors, context switches), sampled on
//! the monotonic clock `run` stamps its records with, so load, kernel and packets line up.
//!
//! Layout: [`procfs`] parses `/proc` text (pure), [`diag`] counts TCP sockets per family
//! over netlink, [`snapshot`] reads everything once, [`sample`] turns two snapshots into
//! rates, [`sampler`] runs the thread (library API: [`start`]), [`output`] writes JSON
//! lines or CSV, and [`cli`] is `dualbench monitor`.

mod cli;
pub mod diag;
pub mod output;
pub mod procfs;
pub mod sample;
pub mod sampler;
pub mod snapshot;

pub use cli::{main, MonitorCli};
pub use dualbench_common::parse_duration;
pub use dualbench_common::Netns;
pub use sample::Sample;
pub use sampler::{check, start, start_with_sink, MonitorConfig, MonitorHandle, Series};
