//! `dualbench`: parse the command line, run one subcommand, turn its failure (if any) into
//! one line on stderr and an exit code (2 for usage errors, 1 for failures at run time).
//! A panic is a bug, and says so in one line too.

mod cli;

fn main() {
    cli::report_panics_as_bugs();
    let code = cli::run(std::env::args_os());
    std::process::exit(code);
}
