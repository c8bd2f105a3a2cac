//! The subcommands of `dualbench` and where each one lives.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
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
    /// Merge the JSON reports of runs made at once from several clients into one report.
    Merge(dualbench_load::merge::cli::MergeCli),
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
        Command::Merge(c) => dualbench_load::merge::cli::main(c),
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
    let parsed = cli_command()
        .try_get_matches_from(&args)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
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

/// The whole command line's definition, every subcommand taking `-1` as a value (so
/// `--duration -1` is refused by the range it is out of, not as an unknown flag `-1`).
fn cli_command() -> clap::Command {
    fn negative_numbers_are_values(command: clap::Command) -> clap::Command {
        command
            .allow_negative_numbers(true)
            .mut_subcommands(negative_numbers_are_values)
    }
    negative_numbers_are_values(Cli::command())
}

/// One line on stderr; if stderr is gone (a closed terminal: EIO), the exit code still
/// tells (`eprintln!` would panic).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Help and version go to stdout with exit 0 (1 if stdout cannot take them: a full disk;
/// a reader that went away, as `| head -1`, is not a failure); any other parse error,
/// a missing subcommand too, is one line and exit 2.
fn usage_error(e: clap::Error, args: &[OsString]) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => match e.print() {
            Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                say(&format!("dualbench: writing to standard output: {err}"));
                1
            }
            _ => 0,
        },
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            say(&format!("dualbench: {}", missing_subcommand(args)));
            2
        }
        ErrorKind::InvalidUtf8 => {
            say(&format!("dualbench: {}", not_utf8(args)));
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

/// `dualbench`, `dualbench testbed` (...) without the subcommand they need: the one line
/// that names the subcommands to choose from, rather than a screen of help on stderr.
fn missing_subcommand(args: &[OsString]) -> String {
    let (path, mut command) = subcommand_at(args);
    // `build` adds `help`, as clap's own list of them has it; hidden ones (`testbed
    // exec-inside`, which `testbed exec` runs) are no choice.
    command.build();
    let names: Vec<&str> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name())
        .collect();
    format!(
        "'{path}' requires a subcommand but one was not provided [subcommands: {}] (see '{path} --help')",
        names.join(", ")
    )
}

/// clap's "invalid UTF-8 was detected in one or more arguments", naming the argument
/// when only one is not UTF-8 (and the option before it), so that it can be found.
fn not_utf8(args: &[OsString]) -> String {
    let path = subcommand_at(args).0;
    let bad: Vec<usize> = (1..args.len())
        .filter(|&i| args[i].to_str().is_none())
        .collect();
    let which = match bad[..] {
        [i] => {
            let after = args[i - 1]
                .to_str()
                .filter(|a| i > 1 && a.starts_with('-'))
                .map_or(String::new(), |a| format!(" (after {a})"));
            format!(
                "argument '{}'{after} is not valid UTF-8: give it as UTF-8 text",
                args[i].to_string_lossy()
            )
        }
        _ => "one or more arguments are not valid UTF-8: give them as UTF-8 text".to_string(),
    };
    format!("{which} (see '{path} --help')")
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
    let line = plain_parse_error(&line);
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
        .unwrap_or_else(|| subcommand_at(args).0);
    format!("{line} (see '{command} --help')")
}

/// A number flag's value that does not parse ends clap's line in the words of Rust's
/// parser (`invalid digit found in string` for `-n 1e6`, `-c 10k` or `--workers -1`;
/// `invalid float literal` for `--rate 100/s`): said as what to give instead.
fn plain_parse_error(line: &str) -> String {
    const PLAIN: [(&str, &str); 4] = [
        (
            "invalid digit found in string",
            "not a whole number: give digits alone (no sign, unit or exponent)",
        ),
        (
            "invalid float literal",
            "not a number: give one like 20000 or 2.5 (no unit)",
        ),
        ("number too large to fit in target type", "too large"),
        (
            "cannot parse integer from empty string",
            "empty: give a number",
        ),
    ];
    for (rust, plain) in PLAIN {
        if let Some(head) = line.strip_suffix(rust) {
            return format!("{head}{plain}");
        }
    }
    line.to_string()
}

/// `dualbench` and the subcommands `args` name in order (`dualbench testbed up`), up to
/// the first word that is not one, with the last one's definition.
fn subcommand_at(args: &[OsString]) -> (String, clap::Command) {
    let mut command = cli_command();
    let mut path = String::from("dualbench");
    for word in args.iter().skip(1).map_while(|a| a.to_str()) {
        let Some(sub) = command.find_subcommand(word).cloned() else {
            break;
        };
        path = format!("{path} {}", sub.get_name());
        command = sub;
    }
    (path, command)
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
    use super::{bug_line, cli_command, missing_subcommand, one_line};

    fn usage_line(args: &[&str]) -> String {
        let e = cli_command()
            .try_get_matches_from(args)
            .expect_err("a usage error");
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
        let args: Vec<std::ffi::OsString> = ["dualbench", "results", "--db", "r.db"]
            .iter()
            .map(Into::into)
            .collect();
        assert_eq!(
            missing_subcommand(&args),
            "'dualbench results' requires a subcommand but one was not provided [subcommands: list, show, export, help] (see 'dualbench results --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "run", "-n", "abc"]),
            "invalid value 'abc' for '--requests <N>': not a whole number: give digits alone (no sign, unit or exponent) (see 'dualbench run --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "traffic", "send", "--duration", "x", "s.mgn"]),
            "invalid value 'x' for '--duration <DURATION>': 'x' is not a duration (try 1s, 500ms, 2m) (see 'dualbench traffic send --help')"
        );
        assert_eq!(
            usage_line(&["dualbench", "nosuch"]),
            "unrecognized subcommand 'nosuch' (see 'dualbench --help')"
        );
    }

    #[test]
    fn a_negative_number_is_a_value_because_no_flag_is_a_digit() {
        fn digit_flags(command: &clap::Command, path: &str, found: &mut Vec<String>) {
            for arg in command.get_arguments() {
                if arg.get_short().is_some_and(|c| c.is_ascii_digit()) {
                    found.push(format!("{path} -{}", arg.get_short().unwrap()));
                }
            }
            for sub in command.get_subcommands() {
                digit_flags(sub, &format!("{path} {}", sub.get_name()), found);
            }
        }
        let mut found = Vec::new();
        digit_flags(&cli_command(), "dualbench", &mut found);
        assert_eq!(found, Vec::<String>::new());
        assert_eq!(
            usage_line(&["dualbench", "monitor", "--pid", "-5"]),
            "invalid value '-5' for '--pid <PID>': -5 is not in 0..=4294967295 (see 'dualbench monitor --help')"
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
