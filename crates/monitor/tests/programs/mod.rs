//! The C programs the monitor's tests watch, each kept once, as a `.c` file beside this
//! one, and compiled by the test that needs it. Used by `crates/monitor/tests/` (as
//! `mod programs;`) and by `crates/dualbench/tests/monitor.rs` (through `#[path]`), so
//! both test the same program.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The source of `mainexit`: a process whose main thread has exited (`pthread_exit`) while
/// another runs; what it does is told at the top of `mainexit.c`.
pub const MAIN_EXIT_SOURCE: &str = include_str!("mainexit.c");

/// `mainexit` compiled with `cc` into `dir` (as `dir/mainexit`, its source beside it);
/// `None`, with a line on stderr saying the test is skipped, without a `cc`.
pub fn main_thread_exit_program(dir: &Path) -> Option<PathBuf> {
    let source = dir.join("mainexit.c");
    std::fs::write(&source, MAIN_EXIT_SOURCE).unwrap();
    let program = dir.join("mainexit");
    let built = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&program)
        .arg(&source)
        .status();
    match built {
        Ok(status) => {
            assert!(status.success(), "cc failed: {status}");
            Some(program)
        }
        Err(e) => {
            eprintln!("skipped: no C compiler (`cc`: {e}); install gcc");
            None
        }
    }
}
