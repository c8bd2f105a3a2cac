//! The subcommands of `dualbench` and where each one lives.

use clap::{CommandFactory, Parser, Subcommand};
use dualbench_common::Result;
use std::ffi::OsString;

/// Benchmark web servers over IPv4 and IPv6, side by side.
#[derive(Debug, Parser)]
#[command(name = "dualbench", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmark one or more URLs (ab-compatible flags), every figure split by family.
    Run(Box<dualbench_load::cli::RunCli>),
    /// Serve files and test endpoints on IPv4 and IPv6.
    Serve(dualbench_serve::ServeCli),
    /// Build, inspect and remove a testbed of network namespaces.
    Testbed(dualbench_testbed::TestbedCli),
    /// Emulate a link (delay, jitter, loss, rate) between two interfaces.
    Wire(dualbench_wire::WireCli),
    /// Send or receive background TCP/UDP traffic.
    Traffic(dualbench_traffic::TrafficCli),
    /// Sample kernel and process counters over time.
    Monitor(dualbench_monitor::MonitorCli),
    /// Capture packets to a pcap file.
    Capture(dualbench_capture::CaptureCli),
    /// Reconstruct TCP connections from a capture, per family.
    Analyze(dualbench_capture::AnalyzeCli),
    /// Run an experiment plan as a matrix of runs.
    Experiment(dualbench_experiment::ExperimentCli),
    /// List, show and export stored results.
    Results(dualbench_experiment::ResultsCli),
    /// Write HTML and Markdown reports from stored results.
    Report(dualbench_experiment::ReportCli),
}

fn dispatch(command: Command) -> Result<()> {
    match command {
        Command::Run(c) => dualbench_load::cli::main(*c),
        Command::Serve(c) => dualbench_serve::main(c),
        Command::Testbed(c) => dualbench_testbed::main(c),
        Command::Wire(c) => dualbench_wire::main(c),
        Command::Traffic(c) => dualbench_traffic::main(c),
        Command::Monitor(c) => dualbench_monitor::main(c),
        Command::Capture(c) => dualbench_capture::capture_main(c),
        Command::Analyze(c) => dualbench_capture::analyze_main(c),
        Command::Experiment(c) => dualbench_experiment::experiment_main(c),
        Command::Results(c) => dualbench_experiment::results_main(c),
        Command::Report(c) => dualbench_experiment::report_main(c),
    }
}

/// Parse `args`, run the subcommand, and return the process exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, &args),
    };
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(failure) => {
            say(&format!("dualbench: {failure}"));
            failure.exit_code()
        }
    }
}

/// One line on stderr; if stderr is gone (a closed terminal: EIO), the exit code still
/// tells (`eprintln!` would panic).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Help and version go to stdout with exit 0; any other parse error is one line and exit 2.
fn usage_error(e: clap::Error, args: &[OsString]) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            2
        }
        _ => {
            say(&format!(
                "dualbench: {}",
                one_line(&e.render().to_string(), args)
            ));
            2
        }
    }
}

/// clap's usage error in one line: its first line, with the list that follows it when it
/// ends in a colon (the missing arguments) or when the next line is a bracketed list (the
/// subcommands, the possible values), and the help to read: of the subcommand the usage
/// line names, or, when clap gives none (a bad value), of the subcommands `args` name.
fn one_line(text: &str, args: &[OsString]) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if line.ends_with(':') {
        let items: Vec<&str> = lines
            .take_while(|l| l.starts_with("  "))
            .map(str::trim)
            .collect();
        line = format!("{line} {}", items.join(", "));
    } else if let Some(list) = lines
        .next()
        .map(str::trim)
        .filter(|l| l.starts_with('[') && l.ends_with(']'))
    {
        line = format!("{line} {list}");
    }
    let command = text
        .lines()
        .find_map(|l| l.strip_prefix("Usage: "))
        .map(|usage| {
            let words: Vec<&str> = usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['-', '<', '[']))
                .collect();
            words.join(" ")
        })
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| subcommand_path(args));
    format!("{line} (see '{command} --help')")
}

/// `dualbench` and the subcommands `args` name in order (`dualbench testbed up`), up to
/// the first word that is not one.
fn subcommand_path(args: &[OsString]) -> String {
    let mut command = Cli::command();
    let mut path = String::from("dualbench");
    for word in args.iter().skip(1).map_while(|a| a.to_str()) {
        let Some(sub) = command.find_subcommand(word).cloned() else {
            break;
        };
        path = format!("{path} {}", sub.get_name());
        command = sub;
    }
    path
}

/// A panic is a bug in dualbench, not a fault of the input: instead of Rust's message and
/// its hint about backtraces, one line that says so, where, and what to do. With
/// RUST_BACKTRACE set, Rust's own hook stays (with the backtrace), for whoever debugs it.
pub fn report_panics_as_bugs() {
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let at = info.location().map(|l| (l.file(), l.line()));
        say(&bug_line(thread.name(), at, info.payload()));
    }));
}

/// The line a panic prints: thread, place and message.
fn bug_line(thread: Option<&str>, at: Option<(&str, u32)>, payload: &dyn std::any::Any) -> String {
    let message = match dualbench_common::panic_message(payload) {
        "" => "(no message)",
        m => m,
    };
    let at = at.map_or(String::new(), |(file, line)| format!(" at {file}:{line}"));
    format!(
        "dualbench: bug: thread '{}' panicked{at}: {message}; please report it with the command line (RUST_BACKTRACE=1 adds a backtrace)",
        thread.unwrap_or("unnamed")
    )
}

#[cfg(test)]
mod tests {
    use super::{bug_line, one_line, Cli};
    use clap::Parser;

    fn usage_line(args: &[&str]) -> String {
        let e = Cli::try_parse_from(args).expect_err("a usage error");
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        one_line(&e.render().to_string(), &args)
    }

    #[test]
    fn a_usage_error_is_one_line_naming_what_is_missing_and_whose_help() {
        assert_eq!(
            usage_line(&["dualbench", "run", "--bogus"]),
            "unexpected argument '--bogus' found (see 'dualbench run --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "wire"]),
            "the following required arguments were not provided: --a <IFACE>, --b <IFACE> (see 'dualbench wire --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "results", "--db", "r.db"]),
            "'dualbench results' requires a subcommand but one was not provided [subcommands: list, show, export, help] (see 'dualbench results --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "run", "-n", "abc"]),
            "invalid value 'abc' for '--requests <N>': invalid digit found in string (see 'dualbench run --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "traffic", "send", "--duration", "x", "s.mgn"]),
            "invalid value 'x' for '--duration <SECONDS>': invalid float literal (see 'dualbench traffic send --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "nosuch"]),
            "unrecognized subcommand 'nosuch' (see 'dualbench --help')"
        );
    }

    #[test]
    fn a_panic_is_one_line_naming_thread_place_and_message() {
        let line = bug_line(
            Some("dualbench-w0"),
            Some(("crates/load/src/engine/worker/mod.rs", 770)),
            &"injected",
        );
        assert_eq!(
            line,
            "dualbench: bug: thread 'dualbench-w0' panicked at crates/load/src/engine/worker/mod.rs:770: injected; please report it with the command line (RUST_BACKTRACE=1 adds a backtrace)"
        );
        let owned = bug_line(None, None, &String::from("index 3 out of range"));
        assert!(
            owned.starts_with("dualbench: bug: thread 'unnamed' panicked: index 3 out of range;")
        );
        assert!(bug_line(None, None, &42u8).contains("panicked: (no message);"));
    }
}
