//! Testbeds: dual-stack hosts, routers, switches and shaped links in network namespaces
//! (`dualbench testbed up | status | exec | down`). A topology is data ([`model`]), names
//! and addresses follow from numbers ([`addressing`]), the [`plan`] is a list of operations
//! that `--dry-run` prints and the executor ([`apply`]) performs while recording everything
//! in a [`state`] file, which is all `down` ever removes.

pub mod addressing;
mod apply;
mod down;
mod listening;
pub mod model;
mod ops;
pub mod plan;
mod procs;
pub mod routes;
mod runnable;
pub mod shaping;
pub mod state;
mod status;
mod system;
pub mod units;

/// Counts in text (`2 processes`), from `dualbench_common`, where the other crates find it.
pub use dualbench_common::plural;

use clap::{Args, Subcommand, ValueEnum};
use dualbench_common::stdio::print;
use dualbench_common::{clock, Failure, Result};
use shaping::Emulator;
use state::{Loaded, State, StateFile};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// Flags of `dualbench testbed`.
#[derive(Debug, Args)]
pub struct TestbedCli {
    #[command(subcommand)]
    command: TestbedCommand,
}

#[derive(Debug, Subcommand)]
enum TestbedCommand {
    /// Build the testbed a topology file describes (or print the plan with --dry-run).
    Up(UpArgs),
    /// Show a testbed's nodes, addresses, links, shaping and processes.
    Status(Which),
    /// Run a command inside a node's namespace (host names resolve to testbed addresses).
    Exec(ExecArgs),
    /// Remove everything a testbed's state file lists.
    Down(Which),
    /// What `exec` runs inside the node's namespace (`ip netns exec NS dualbench testbed
    /// exec-inside -- CMD…`): checks CMD as the namespace sees the files (`ip netns exec`
    /// mounts `/etc/netns/NS/*` over `/etc`) and execs it.
    #[command(hide = true)]
    ExecInside(InsideArgs),
}

#[derive(Debug, Args)]
struct InsideArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<String>,
}

/// Which testbed, and where testbeds keep their state.
#[derive(Debug, Args)]
struct Which {
    /// Testbed name (default: the only testbed that is up).
    #[arg(long)]
    name: Option<String>,
    /// Directory holding one state directory per testbed.
    #[arg(long, value_name = "DIR", default_value = state::DEFAULT_ROOT)]
    state_dir: PathBuf,
}

/// The name `up` gives a testbed, and where it keeps the state (`Which` picks a testbed
/// that is up; `up` names a new one, so its help says where the name comes from).
#[derive(Debug, Args)]
struct Naming {
    /// Testbed name (default: the file's `name` key, else the file's stem).
    #[arg(long)]
    name: Option<String>,
    /// Directory holding one state directory per testbed.
    #[arg(long, value_name = "DIR", default_value = state::DEFAULT_ROOT)]
    state_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DelayBy {
    /// netem if the kernel has it, else the wire emulator.
    Auto,
    Netem,
    Wire,
}

#[derive(Debug, Args)]
struct UpArgs {
    /// Topology file (TOML), e.g. testbeds/routed.toml.
    file: PathBuf,
    /// Print the operations without performing any.
    #[arg(long)]
    dry_run: bool,
    /// What does delay, jitter and loss.
    #[arg(long, value_enum, default_value = "auto")]
    delay_by: DelayBy,
    #[command(flatten)]
    which: Naming,
    /// Testing aid: stop after this many operations and wait to be killed.
    #[arg(long, hide = true)]
    stop_after: Option<usize>,
}

#[derive(Debug, Args)]
struct ExecArgs {
    /// Node to run in (a host or router; a switch's namespace works too).
    host: String,
    // As in Mininet's `h1 ping h2`, `--` may be left out: from the first word after the
    // node on, every word is the command's.
    /// The command and its arguments (`--` before it is optional); `dualbench` means this binary.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<String>,
    #[command(flatten)]
    which: Which,
}

/// Entry point of `dualbench testbed`.
pub fn main(cli: TestbedCli) -> Result<()> {
    match cli.command {
        TestbedCommand::Up(args) => up(args),
        TestbedCommand::Status(which) => show_status(&which),
        TestbedCommand::Exec(args) => exec(args),
        TestbedCommand::ExecInside(args) => exec_inside(args.command),
        TestbedCommand::Down(which) => {
            system::require(system::Needs::Down)?;
            if let Some(dir) = leftover(&which) {
                state::remove_leftover(&dir)?;
                return print(&format!(
                    "removed the logs a rolled-back `up` left in {}\n",
                    dir.display()
                ));
            }
            let dir = resolve(&which)?;
            match state::read(&dir)? {
                Loaded::Good(file) => down_testbed(*file),
                Loaded::Corrupt(why) => down_unreadable(&which, &dir, &why),
            }
        }
    }
}

/// `down` of a testbed; one whose `up` still runs is stopped first (see [`down::down_any`]).
fn down_testbed(file: StateFile) -> Result<()> {
    let name = file.state.testbed.clone();
    match down::down_any(file)? {
        None => Ok(()),
        Some(pid) => print(&format!(
            "stopped the `up` that was still building testbed '{name}' (pid {pid}) and removed what it had made\n"
        )),
    }
}

/// The state file of the testbed in `dir`; one that cannot be read is an error that says
/// how to remove the testbed all the same.
fn load_state(dir: &Path, which: &Which) -> Result<StateFile> {
    match state::read(dir)? {
        Loaded::Good(file) => Ok(*file),
        Loaded::Corrupt(why) => Err(unreadable(dir, which, &why)),
    }
}

/// `<dir>/state.json is not a dualbench testbed state file (...)`, and the way out.
fn unreadable(dir: &Path, which: &Which, why: &str) -> Failure {
    let name = dir
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().to_string());
    let way_out = match model::check_testbed_name(&name) {
        Ok(_) => format!(
            "`dualbench testbed down --name {name}{}` removes the testbed by its names instead: the namespaces `ip netns list | grep '^db-{name}-'` shows, their processes, and {}",
            state_dir_flag(&which.state_dir),
            dir.display()
        ),
        Err(_) => format!(
            "remove its namespaces by hand (`ip netns list`, then `ip netns del NAME`) and {}",
            dir.display()
        ),
    };
    Failure::runtime(format!(
        "{} is not a dualbench testbed state file ({why}): {way_out}",
        dir.join("state.json").display()
    ))
}

/// `down` of a testbed whose state file cannot be read: remove what its name owns by the
/// naming scheme (never a namespace another testbed's state file lists), and say what.
fn down_unreadable(which: &Which, dir: &Path, why: &str) -> Result<()> {
    let name = dir
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().to_string());
    if model::check_testbed_name(&name).is_err() {
        return Err(unreadable(dir, which, why));
    }
    let state_file = dir.join("state.json");
    let removed = down::down_unreadable(&name, dir, |ns| {
        owner_of_namespace(ns, &which.state_dir).is_some()
    })
    .map_err(|e| {
        Failure::runtime(format!(
            "{} is not a dualbench testbed state file ({why}); removing testbed '{name}' by its names instead failed: {}; remove the rest by hand (`ip netns list | grep '^db-{name}-'`, `ip netns del NAME`, `rm -r {}`)",
            state_file.display(),
            e.message,
            dir.display()
        ))
    })?;
    let processes = match removed.processes.as_slice() {
        [] => "no process".to_string(),
        pids => format!(
            "{} ({})",
            plural(pids.len(), "process"),
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let namespaces = match removed.namespaces.as_slice() {
        [] => format!("no namespace named db-{name}-<node> was left"),
        list => format!("namespaces {}", list.join(", ")),
    };
    print(&format!(
        "{} was not a dualbench testbed state file ({why}); removed testbed '{name}' by its names instead: {processes}, {namespaces}, and {}\n",
        state_file.display(),
        dir.display()
    ))
}

/// Read and check a topology file: one line with file, line, key on any mistake.
pub fn load(file: &Path) -> Result<model::Topology> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::usage(format!("cannot read topology {}: {e}", file.display())))?;
    model::parse(&text).map_err(|e| Failure::usage(e.render(&file.display().to_string())))
}

/// The testbed's name: `--name`, else the file's `name` key, else the file's stem.
fn testbed_name(args: &UpArgs, topology: &model::Topology) -> Result<String> {
    let stem = args
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().to_string());
    let name = args
        .which
        .name
        .clone()
        .or(topology.name.clone())
        .or(stem)
        .unwrap_or_default();
    model::check_testbed_name(&name)
        .map_err(|m| Failure::usage(format!("{m} (choose one with --name)")))
}

/// netem cannot keep jittered frames in order, so `--delay-by netem` with a link that
/// asks for it is refused (with `auto`, such a link gets the wire and the rest netem).
fn check_delay_by(delay_by: DelayBy, topology: &model::Topology) -> Result<()> {
    let ordered = topology.links.iter().find(|l| l.keeps_order());
    let (DelayBy::Netem, Some(link)) = (delay_by, ordered) else {
        return Ok(());
    };
    let name = |i: usize| &topology.nodes[i].name;
    Err(Failure::usage(format!(
        "link {} ({} <-> {}) keeps jittered frames in order (keep_order), which netem cannot do: use --delay-by auto or wire, or remove keep_order",
        link.number,
        name(link.a),
        name(link.b)
    )))
}

/// Why the wire, not netem, does a link's delay, jitter and loss (the words `up` prints).
fn why_wire(delay_by: DelayBy, chosen: Emulator) -> &'static str {
    match (delay_by, chosen) {
        // Only links with keep_order get the wire when netem is chosen.
        (_, Emulator::Netem) => "netem cannot keep jittered frames in order",
        (DelayBy::Wire, _) => "as --delay-by wire asks",
        _ => "no netem on this kernel",
    }
}

/// Whether any link has delay, jitter or loss (which netem or the wire must do).
fn needs_emulation(topology: &model::Topology) -> bool {
    topology
        .links
        .iter()
        .any(|l| l.a_to_b.needs_emulation() || l.b_to_a.needs_emulation())
}

/// `--delay-by netem` on a kernel without netem is refused before anything is made (it
/// used to build half the testbed, fail at the first netem qdisc and roll back). Only
/// asked when building: the probe needs root, and `--dry-run` shows the plan as asked.
fn check_netem(delay_by: DelayBy, topology: &model::Topology) -> Result<()> {
    if delay_by != DelayBy::Netem || !needs_emulation(topology) || system::netem_available() {
        return Ok(());
    }
    Err(Failure::usage(
        "--delay-by netem: this kernel has no netem (adding a netem qdisc fails): use --delay-by auto or wire, which does delay, jitter and loss with `dualbench wire`",
    ))
}

fn emulator(delay_by: DelayBy, topology: &model::Topology) -> Emulator {
    let needed = needs_emulation(topology);
    match delay_by {
        DelayBy::Netem => Emulator::Netem,
        DelayBy::Wire => Emulator::Wire,
        DelayBy::Auto if needed && system::netem_available() => Emulator::Netem,
        DelayBy::Auto => Emulator::Wire,
    }
}

/// The plan for a topology file, as `--dry-run` prints it.
pub fn dry_run_text(
    file: &Path,
    name: Option<&str>,
    state_root: &Path,
    emulator: Emulator,
) -> Result<String> {
    let topology = load(file)?;
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = name
        .map(String::from)
        .or(topology.name.clone())
        .unwrap_or(stem);
    let state_dir = state::testbed_dir(state_root, &name);
    let p = plan::plan(
        &topology,
        &plan::Settings {
            testbed: &name,
            state_dir: &state_dir,
            emulator,
        },
    );
    Ok(plan::render(&p, &state_dir))
}

fn up(mut args: UpArgs) -> Result<()> {
    // Paths under the state directory go into the state file and the wire's argv: relative
    // ones would only work from this directory (`status` elsewhere lost the wire's counters).
    args.which.state_dir = std::path::absolute(&args.which.state_dir).map_err(|e| {
        Failure::usage(format!(
            "--state-dir {}: {e}",
            args.which.state_dir.display()
        ))
    })?;
    let topology = load(&args.file)?;
    let name = testbed_name(&args, &topology)?;
    let state_dir = state::testbed_dir(&args.which.state_dir, &name);
    check_state_dir(&args.which.state_dir, &state_dir, &name)?;
    check_delay_by(args.delay_by, &topology)?;
    if !args.dry_run {
        system::require(system::Needs::Up)?;
        check_netem(args.delay_by, &topology)?;
    }
    let emulator = emulator(args.delay_by, &topology);
    let settings = plan::Settings {
        testbed: &name,
        state_dir: &state_dir,
        emulator,
    };
    let plan = plan::plan(&topology, &settings);
    if args.dry_run {
        return print(&plan::render(&plan, &state_dir));
    }
    if StateFile::exists(&state_dir) {
        let there = StateFile::load(&state_dir).ok().map(|f| f.state);
        return Err(Failure::usage(already_there(
            there.as_ref(),
            &name,
            &state_dir,
            &args.which.state_dir,
        )));
    }
    refuse_strangers(&plan, &args.which.state_dir)?;
    build(&plan, &args, &state_dir)?;
    let l = &plan.layout;
    let mut out = String::new();
    for link in &l.links {
        if let Some(line) = status::wire_notice(link, why_wire(args.delay_by, emulator)) {
            out += &format!("{line}\n");
        }
    }
    out += &format!(
        "testbed {name} is up: {}, {}; `dualbench testbed status --name {name}{}` shows it\n",
        plural(l.nodes.len(), "node"),
        plural(l.links.len(), "link"),
        state_dir_flag(&args.which.state_dir)
    );
    print(&out)
}

/// The state directory `dir` of testbed `name` (under `--state-dir root`) can be made only
/// if the nearest part of its path that exists is a directory. A regular file there used to
/// pass every check and fail at the state file, exit 1: `cannot create /tmp/f/lab: Not a
/// directory (os error 20)`.
fn check_state_dir(root: &Path, dir: &Path, name: &str) -> Result<()> {
    let Some((path, meta)) = dir
        .ancestors()
        .find_map(|p| std::fs::metadata(p).ok().map(|m| (p, m)))
    else {
        return Ok(());
    };
    if meta.is_dir() {
        return Ok(());
    }
    let what = if path == dir {
        format!(
            "{}, where testbed '{name}' would keep its state, is not a directory: remove it, or choose another --name or --state-dir",
            path.display()
        )
    } else {
        format!(
            "{} is not a directory: give a directory (made if missing), or leave --state-dir out for {}",
            path.display(),
            state::DEFAULT_ROOT
        )
    };
    Err(Failure::usage(format!(
        "--state-dir {}: {what}",
        root.display()
    )))
}

/// Why `up` of testbed `name` is refused when its state file exists, in the words for what
/// is there: a testbed that is up, one another `up` is still building (that `up` is told
/// apart from a dead one by its recorded pid and start time), or what a killed `up` left.
/// Each used to be "already up", also a half-built testbed whose `up` had been killed.
fn already_there(there: Option<&State>, name: &str, dir: &Path, root: &Path) -> String {
    let down = format!(
        "`dualbench testbed down --name {name}{}`",
        state_dir_flag(root)
    );
    let dir = dir.display();
    match there {
        Some(s) if s.complete => {
            format!("testbed '{name}' is already up (state in {dir}): run {down} first")
        }
        Some(s) => match s.building() {
            Some(pid) => format!(
                "testbed '{name}' is being built by another `up` (pid {pid}; state in {dir}): wait for it, or stop it and remove what it made with {down}"
            ),
            None => format!(
                "testbed '{name}' is left half-built by an `up` that never finished (state in {dir}): run {down} first"
            ),
        },
        None => format!(
            "testbed '{name}' already has a state file in {dir}, which cannot be read: run {down} first"
        ),
    }
}

/// Apply the plan with a fresh state file; on failure or interruption, roll back.
fn build(plan: &plan::Plan, args: &UpArgs, state_dir: &Path) -> Result<()> {
    let name = &plan.layout.testbed;
    let state = State {
        testbed: name.clone(),
        // Absolute, so `status` run from another directory names the file that was read.
        topology_file: std::path::absolute(&args.file).unwrap_or_else(|_| args.file.clone()),
        created_unix_ns: clock::unix_ns(),
        complete: false,
        builder: Some(state::Builder::this()),
        layout: plan.layout.clone(),
        objects: Vec::new(),
    };
    // Caught before the state file exists, so no signal can end `up` with it left behind.
    let interrupted = on_signals()?;
    let mut file = StateFile::create(state_dir, state)?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::runtime(format!("cannot find the dualbench binary: {e}")))?;
    let options = apply::Options {
        exe,
        stop_after: args.stop_after,
        interrupted,
    };
    if let Err(e) = apply::apply(plan, &mut file, &options) {
        let undo = match down::down(file, true) {
            Ok(()) => format!(
                "everything made so far is removed; the logs are in {}, which `dualbench testbed down --name {name}{}` removes",
                state_dir.join("logs").display(),
                state_dir_flag(&args.which.state_dir)
            ),
            Err(d) => format!("cleanup failed too: {d}"),
        };
        let message = format!("building testbed '{name}': {} ({undo})", e.message);
        return Err(Failure {
            kind: e.kind,
            message,
        });
    }
    std::fs::write(state_dir.join("hosts"), &plan.layout.hosts_file)?;
    file.state.complete = true;
    file.save()
}

/// A flag that SIGINT, SIGTERM and SIGHUP (a closed terminal; not under `nohup`) set to
/// their signal number instead of ending the process.
fn on_signals() -> Result<Arc<AtomicUsize>> {
    let flag = Arc::new(AtomicUsize::new(0));
    for signal in dualbench_common::signals::stop_signals() {
        signal_hook::flag::register_usize(signal, Arc::clone(&flag), signal as usize)
            .map_err(|e| Failure::runtime(format!("cannot handle signals: {e}")))?;
    }
    Ok(flag)
}

/// Namespaces with our names that no state file of ours knows are someone else's: never
/// touch them. If a live testbed's state file (under `root` or the default root) lists
/// one, say which testbed owns it rather than suggest removing it. The same goes for the
/// `/etc/netns/<ns>` directories the hosts files go in: `up` would overwrite a `hosts`
/// there and `down` would delete it (and fail on whatever else the directory holds).
fn refuse_strangers(plan: &plan::Plan, root: &Path) -> Result<()> {
    for op in &plan.ops {
        let (what, exists, remove) = match op {
            plan::Op::AddNamespace { ns } => (
                format!("namespace {ns}"),
                system::namespace_exists(ns),
                format!("ip netns del {ns}"),
            ),
            plan::Op::WriteHosts { ns, .. } => {
                let dir = plan::etc_netns_dir(ns);
                let what = dir.display().to_string();
                (what.clone(), dir.exists(), format!("rm -r {what}"))
            }
            _ => continue,
        };
        if !exists {
            continue;
        }
        let message = match owner_of(op, root) {
            Some((testbed, dir)) => format!(
                "{what} belongs to testbed '{testbed}', which is up (state in {}): take it down (`dualbench testbed down --name {testbed}{}`) or choose another --name",
                dir.display(),
                state_dir_flag(dir.parent().unwrap_or(root))
            ),
            None => format!(
                "{what} exists but no state file lists it: remove it (`{remove}`) if it is a leftover, or choose another --name"
            ),
        };
        return Err(Failure::usage(message));
    }
    Ok(())
}

/// The testbed (name and state directory) whose state file lists what `op` would make:
/// its namespace, or its `/etc/netns` directory.
fn owner_of(op: &plan::Op, root: &Path) -> Option<(String, PathBuf)> {
    let listed = |o: &state::Object| match (op, o) {
        (plan::Op::AddNamespace { ns }, state::Object::Namespace { name }) => name == ns,
        (plan::Op::WriteHosts { ns, .. }, state::Object::EtcNetns { dir }) => {
            *dir == plan::etc_netns_dir(ns)
        }
        _ => false,
    };
    owner(root, listed)
}

/// The testbed whose state file lists namespace `ns`.
fn owner_of_namespace(ns: &str, root: &Path) -> Option<(String, PathBuf)> {
    owner(
        root,
        |o| matches!(o, state::Object::Namespace { name } if name == ns),
    )
}

/// The first testbed (under `root`, then the default root) whose state file lists an
/// object `listed` picks.
fn owner(root: &Path, listed: impl Fn(&state::Object) -> bool) -> Option<(String, PathBuf)> {
    let default = Path::new(state::DEFAULT_ROOT);
    let roots = if root == default {
        vec![root]
    } else {
        vec![root, default]
    };
    roots.into_iter().find_map(|r| {
        state::list(r).into_iter().find_map(|name| {
            let dir = state::testbed_dir(r, &name);
            let file = StateFile::load(&dir).ok()?;
            file.state
                .objects
                .iter()
                .any(&listed)
                .then_some((name, dir))
        })
    })
}

/// ` --state-dir ROOT` when `root` is not the default, for commands suggested to the user.
fn state_dir_flag(root: &Path) -> String {
    if root == Path::new(state::DEFAULT_ROOT) {
        String::new()
    } else {
        // Quoted when the shell would split it: the hint is meant to be pasted.
        let dir = dualbench_common::shell_word(&root.display().to_string());
        format!(" --state-dir {dir}")
    }
}

/// The directory of the testbed `which` names, when all that is left of it is a rolled-back
/// `up`'s logs.
fn leftover(which: &Which) -> Option<PathBuf> {
    let name = which.name.as_deref()?;
    model::check_testbed_name(name).ok()?;
    let dir = state::testbed_dir(&which.state_dir, name);
    state::is_leftover(&dir).then_some(dir)
}

/// The state directory of the testbed `which` names, or of the only one that is up.
fn resolve(which: &Which) -> Result<PathBuf> {
    let root = &which.state_dir;
    if root.exists() && !root.is_dir() {
        return Err(Failure::usage(format!(
            "--state-dir {} is not a directory: give the one `up` was given, or leave --state-dir out for {}",
            root.display(),
            state::DEFAULT_ROOT
        )));
    }
    if let Some(name) = &which.name {
        // `up` takes no other name, and one such as `../x` would lead out of the state root.
        model::check_testbed_name(name)
            .map_err(|why| Failure::usage(format!("{why}, so no testbed has it")))?;
        let dir = state::testbed_dir(&which.state_dir, name);
        if !StateFile::exists(&dir) {
            let logs = if state::is_leftover(&dir) {
                format!(
                    "; the logs of a rolled-back `up` are in {}, which `dualbench testbed down --name {name}{}` removes",
                    dir.join("logs").display(),
                    state_dir_flag(&which.state_dir)
                )
            } else {
                String::new()
            };
            return Err(Failure::usage(format!(
                "no testbed '{name}' is up (no state in {}){logs}",
                dir.display()
            )));
        }
        return Ok(dir);
    }
    match state::list(&which.state_dir).as_slice() {
        [] => Err(Failure::usage(nothing_up(&which.state_dir))),
        [one] => Ok(state::testbed_dir(&which.state_dir, one)),
        many => Err(Failure::usage(format!(
            "{} testbeds are up ({}): say which with --name",
            many.len(),
            many.join(", ")
        ))),
    }
}

/// `no testbed is up`, and where: `nothing in ROOT`, or the logs a rolled-back `up` left
/// there (which only `--name` reaches) and the `down` that removes them.
fn nothing_up(root: &Path) -> String {
    let leftovers = state::leftovers(root);
    let Some(name) = leftovers.first() else {
        return format!("no testbed is up (nothing in {})", root.display());
    };
    format!(
        "no testbed is up in {}, but the logs of a rolled-back `up` of '{name}' are in {}, which `dualbench testbed down --name {name}{}` removes",
        root.display(),
        state::testbed_dir(root, name).join("logs").display(),
        state_dir_flag(root)
    )
}

/// Print the report; a built testbed that lost a namespace or a process is degraded: the
/// report says what, and the command fails (exit 1) with one line saying what to do. So
/// does one whose `up` never finished: only a whole testbed makes `status` succeed.
fn show_status(which: &Which) -> Result<()> {
    let dir = resolve(which)?;
    let file = load_state(&dir, which)?;
    let objects = &file.state.objects;
    let live =
        status::Liveness {
            namespace_exists: objects
                .iter()
                .filter_map(|o| match o {
                    state::Object::Namespace { name } => Some(system::namespace_exists(name)),
                    _ => None,
                })
                .collect(),
            process_running: objects
                .iter()
                .filter_map(|o| match o {
                    state::Object::Process {
                        pid, start_time, ..
                    } => Some(pid.is_some_and(|p| {
                        procs::is_running(p) && procs::start_time(p) == *start_time
                    })),
                    _ => None,
                })
                .collect(),
            wire_stats: file
                .state
                .layout
                .links
                .iter()
                .map(|l| read_stats(l.wire_stats.as_deref()))
                .collect(),
            builder_running: file.state.building(),
        };
    print(&status::render(&file.state, &live))?;
    let problems = status::problems(&file.state, &live);
    let name = &file.state.testbed;
    if let Some(pid) = live.builder_running {
        return Err(Failure::runtime(format!(
            "testbed '{name}' is incomplete: its `up` (pid {pid}) is still building it; wait for it, or stop it and remove what it made with `dualbench testbed down --name {name}{}`",
            state_dir_flag(&which.state_dir)
        )));
    }
    if !file.state.complete {
        return Err(Failure::runtime(format!(
            "testbed '{name}' is incomplete: its `up` never finished (it was killed, or still runs); once it no longer runs, take the testbed down (`dualbench testbed down --name {name}{}`) and bring it up again",
            state_dir_flag(&which.state_dir)
        )));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::runtime(format!(
        "testbed '{name}' is degraded: {}; take it down (`dualbench testbed down --name {name}{}`) and bring it up again",
        problems.join("; "),
        state_dir_flag(&which.state_dir)
    )))
}

/// The wire emulator's last counters, if it has written any.
fn read_stats(path: Option<&Path>) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path?).ok()?;
    serde_json::from_str(&text).ok()
}

/// Replace this process with `ip netns exec NS dualbench testbed exec-inside -- CMD...`,
/// so exit status, signals and the terminal pass straight through (each step execs the
/// next: one process from `dualbench testbed exec` to CMD). Host names resolve through the
/// testbed's hosts file, which `ip netns exec` mounts over `/etc/hosts`.
fn exec(args: ExecArgs) -> Result<()> {
    system::require(system::Needs::Exec)?;
    let file = load_state(&resolve(&args.which)?, &args.which)?;
    let layout = &file.state.layout;
    let node = layout
        .nodes
        .iter()
        .find(|n| n.name == args.host)
        .ok_or_else(|| Failure::usage(no_such_node(layout, &args.host)))?;
    if !system::namespace_exists(&node.namespace) {
        return Err(Failure::runtime(missing_namespace(
            &file.state,
            &node.name,
            &node.namespace,
            &args.which.state_dir,
        )));
    }
    let me = std::env::current_exe()?;
    let mut command = args.command;
    if command[0] == "dualbench" {
        command[0] = me.display().to_string();
    }
    system::own_hostname(node.name.as_bytes())
        .map_err(|e| system::hostname_error(&node.name, e))?;
    let err = std::process::Command::new("ip")
        .args(["netns", "exec", &node.namespace])
        .arg(&me)
        .args(["testbed", "exec-inside", "--"])
        .args(&command)
        .exec();
    Err(system::spawn_error("ip", err))
}

/// Inside the node's namespace, exec `command` as a shell would: a command that is not
/// found is one line and exit 127, one that cannot be executed one line and 126 (these
/// are the command's exit codes, not dualbench's own 1 or 2, so the line is printed here
/// and the process ends with the shell's code). Judged before the exec, for the reason in
/// words ([`runnable`]), and by it, for what the judging does not foresee.
fn exec_inside(command: Vec<String>) -> Result<()> {
    let refuse = |(code, why): runnable::NotRunnable| -> ! {
        dualbench_common::stdio::note(&format!("dualbench: testbed exec: {why}"));
        std::process::exit(code)
    };
    if let Err(verdict) = runnable::runnable(&command[0]) {
        refuse(verdict);
    }
    let err = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    refuse(runnable::exec_failure(&command[0], &err))
}

/// Why `exec` cannot enter a node whose namespace is gone (deleted from outside, or never
/// made by an `up` that did not finish), and the way out; `ip netns exec` would only say
/// `Cannot open network namespace` and exit 255.
fn missing_namespace(state: &state::State, node: &str, ns: &str, root: &Path) -> String {
    let name = &state.testbed;
    let why = if state.complete {
        "is degraded"
    } else {
        "was never completely built"
    };
    format!(
        "testbed '{name}' {why}: namespace {ns} of node '{node}' is missing; take it down (`dualbench testbed down --name {name}{}`) and bring it up again",
        state_dir_flag(root)
    )
}

/// `testbed 'wan' has no node 'x' (its nodes: hosts client, server; router r1)`.
fn no_such_node(layout: &plan::Layout, name: &str) -> String {
    let kinds = [
        (model::NodeKind::Host, "host"),
        (model::NodeKind::Router, "router"),
        (model::NodeKind::Switch, "switch"),
    ];
    let groups: Vec<String> = kinds
        .iter()
        .filter_map(|&(kind, noun)| {
            let names: Vec<&str> = layout
                .nodes
                .iter()
                .filter(|n| n.kind == kind)
                .map(|n| n.name.as_str())
                .collect();
            let noun = match (names.len(), noun) {
                (0, _) => return None,
                (1, _) => noun.to_string(),
                (_, "switch") => "switches".into(),
                _ => format!("{noun}s"),
            };
            Some(format!("{noun} {}", names.join(", ")))
        })
        .collect();
    format!(
        "testbed '{}' has no node '{name}' (its nodes: {})",
        layout.testbed,
        groups.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second `up` of a testbed whose first `up` was killed half-way said it was
    /// "already up"; and of one whose first `up` still ran, too.
    #[test]
    fn up_of_a_testbed_that_is_there_says_in_what_state() {
        let mut state = State {
            complete: true,
            builder: Some(state::Builder::this()),
            ..State::empty_lab()
        };
        let (dir, root) = (Path::new("/tmp/st/lab"), Path::new("/tmp/st"));
        let said = |s: Option<&State>| already_there(s, "lab", dir, root);
        assert_eq!(
            said(Some(&state)),
            "testbed 'lab' is already up (state in /tmp/st/lab): run `dualbench testbed down --name lab --state-dir /tmp/st` first"
        );
        state.complete = false;
        assert_eq!(
            said(Some(&state)),
            format!(
                "testbed 'lab' is being built by another `up` (pid {}; state in /tmp/st/lab): wait for it, or stop it and remove what it made with `dualbench testbed down --name lab --state-dir /tmp/st`",
                std::process::id()
            )
        );
        state.builder = None;
        assert_eq!(
            said(Some(&state)),
            "testbed 'lab' is left half-built by an `up` that never finished (state in /tmp/st/lab): run `dualbench testbed down --name lab --state-dir /tmp/st` first"
        );
        assert_eq!(
            said(None),
            "testbed 'lab' already has a state file in /tmp/st/lab, which cannot be read: run `dualbench testbed down --name lab --state-dir /tmp/st` first"
        );
    }

    #[test]
    fn the_state_dir_in_a_hint_is_one_shell_word() {
        // "/tmp/st dir" used to be pasted as two words.
        assert_eq!(
            state_dir_flag(Path::new("/tmp/st dir")),
            " --state-dir '/tmp/st dir'"
        );
        assert_eq!(state_dir_flag(Path::new("/tmp/st")), " --state-dir /tmp/st");
        assert_eq!(state_dir_flag(Path::new(state::DEFAULT_ROOT)), "");
    }

    #[test]
    fn a_missing_node_is_named_with_the_nodes_by_kind() {
        let text =
            "[[host]]\nname = \"client\"\n[[host]]\nname = \"server\"\n[[router]]\nname = \"r1\"\n\
            [[switch]]\nname = \"lan1\"\n[[switch]]\nname = \"lan2\"\n";
        let topology = model::parse(text).unwrap();
        let settings = plan::Settings {
            testbed: "wan",
            state_dir: Path::new("/tmp/x"),
            emulator: Emulator::Wire,
        };
        let layout = plan::plan(&topology, &settings).layout;
        assert_eq!(
            no_such_node(&layout, "nosuchnode"),
            "testbed 'wan' has no node 'nosuchnode' (its nodes: hosts client, server; router r1; switches lan1, lan2)"
        );
    }

    /// `up --help` once said the name defaults to "the only testbed that is up", which is
    /// what `status`, `exec` and `down` do; `up` takes the file's `name`, else its stem.
    #[test]
    fn up_help_says_where_the_name_comes_from() {
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Top {
            #[command(subcommand)]
            command: TestbedCommand,
        }
        let mut top = Top::command();
        let help = |top: &mut clap::Command, sub: &str| {
            let cmd = top.find_subcommand_mut(sub).unwrap();
            let arg = cmd.get_arguments().find(|a| a.get_id() == "name").unwrap();
            arg.get_help().unwrap().to_string()
        };
        assert_eq!(
            help(&mut top, "up"),
            "Testbed name (default: the file's `name` key, else the file's stem)"
        );
        assert_eq!(
            help(&mut top, "status"),
            "Testbed name (default: the only testbed that is up)"
        );
    }

    /// `exec client ping -c 1 server` (Mininet's `h1 ping h2`) used to be refused with
    /// "unexpected argument 'ping' found"; with `--` or without, the command is the same.
    #[test]
    fn exec_takes_the_command_with_or_without_the_double_dash() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Top {
            #[command(subcommand)]
            command: TestbedCommand,
        }
        let parse = |argv: &[&str]| match Top::try_parse_from(argv).unwrap().command {
            TestbedCommand::Exec(e) => (e.host, e.which.name, e.command),
            _ => panic!("not exec"),
        };
        let ping = || ["ping", "-c", "1", "server"].map(String::from).to_vec();
        let t = || Some("t".to_string());
        let cases: [(&[&str], Option<String>); 4] = [
            (
                &["top", "exec", "client", "ping", "-c", "1", "server"],
                None,
            ),
            (
                &["top", "exec", "client", "--", "ping", "-c", "1", "server"],
                None,
            ),
            (
                &[
                    "top", "exec", "--name", "t", "client", "ping", "-c", "1", "server",
                ],
                t(),
            ),
            (
                &[
                    "top", "exec", "client", "--name", "t", "--", "ping", "-c", "1", "server",
                ],
                t(),
            ),
        ];
        for (argv, name) in cases {
            assert_eq!(
                parse(argv),
                ("client".to_string(), name, ping()),
                "{argv:?}"
            );
        }
        // After the first word of the command, every word is the command's own.
        let (_, name, command) = parse(&["top", "exec", "client", "sh", "--name", "t"]);
        assert_eq!(
            (name, command),
            (None, ["sh", "--name", "t"].map(String::from).to_vec())
        );
        assert!(Top::try_parse_from(["top", "exec", "client"]).is_err());
        assert!(Top::try_parse_from(["top", "exec", "client", "--"]).is_err());
    }

    #[test]
    fn netem_cannot_keep_order() {
        let text =
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
            delay = \"10ms\"\njitter = \"2ms\"\nkeep_order = true\n";
        let topology = model::parse(text).unwrap();
        let e = check_delay_by(DelayBy::Netem, &topology).unwrap_err();
        assert_eq!(
            e.message,
            "link 1 (a <-> b) keeps jittered frames in order (keep_order), which netem cannot do: use --delay-by auto or wire, or remove keep_order"
        );
        assert!(check_delay_by(DelayBy::Auto, &topology).is_ok());
        assert!(check_delay_by(DelayBy::Wire, &topology).is_ok());
        assert_eq!(
            why_wire(DelayBy::Auto, Emulator::Wire),
            "no netem on this kernel"
        );
        assert_eq!(
            why_wire(DelayBy::Auto, Emulator::Netem),
            "netem cannot keep jittered frames in order"
        );
    }

    #[test]
    fn status_exec_and_down_refuse_a_name_no_testbed_has_and_a_state_dir_that_is_a_file() {
        let root = std::env::temp_dir().join(format!("hx-resolve-{}", std::process::id()));
        std::fs::create_dir_all(root.join("lab")).unwrap();
        std::fs::write(root.join("f"), "").unwrap();
        let which = |name: &str, dir: &Path| Which {
            name: Some(name.to_string()),
            state_dir: dir.to_path_buf(),
        };
        let outside = resolve(&which("../lab", &root.join("x"))).unwrap_err();
        let empty = resolve(&which("", &root)).unwrap_err();
        let file = resolve(&which("lab", &root.join("f"))).unwrap_err();
        let unnamed = resolve(&Which {
            name: None,
            state_dir: root.join("f"),
        })
        .unwrap_err();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            (outside.exit_code(), outside.message.as_str()),
            (2, "testbed name '../lab' must be 1 to 12 lowercase letters, digits or '-', starting with a letter, so no testbed has it")
        );
        assert_eq!(
            empty.message,
            "testbed name '' must be 1 to 12 lowercase letters, digits or '-', starting with a letter, so no testbed has it"
        );
        let wanted = format!(
            "--state-dir {}/f is not a directory: give the one `up` was given, or leave --state-dir out for /run/dualbench/testbeds",
            root.display()
        );
        assert_eq!((file.exit_code(), &file.message), (2, &wanted));
        assert_eq!(unnamed.message, wanted);
    }

    #[test]
    fn a_state_dir_that_is_a_file_is_a_usage_error() {
        let root = std::env::temp_dir().join(format!("tb10-state-file-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let file = root.join("f");
        std::fs::write(&file, "").unwrap();
        let check = |r: &Path| check_state_dir(r, &r.join("lab"), "lab");
        let under_file = check(&file).unwrap_err();
        let below_file = check(&file.join("deeper")).unwrap_err();
        std::fs::write(root.join("lab"), "").unwrap();
        let dir_is_file = check(&root).unwrap_err();
        let fine = check(&root.join("new/dirs"));
        std::fs::remove_dir_all(&root).unwrap();
        let f = file.display();
        assert_eq!(under_file.exit_code(), 2);
        assert_eq!(
            under_file.message,
            format!("--state-dir {f}: {f} is not a directory: give a directory (made if missing), or leave --state-dir out for /run/dualbench/testbeds")
        );
        assert_eq!(
            below_file.message,
            format!("--state-dir {f}/deeper: {f} is not a directory: give a directory (made if missing), or leave --state-dir out for /run/dualbench/testbeds")
        );
        assert_eq!(dir_is_file.exit_code(), 2);
        assert_eq!(
            dir_is_file.message,
            format!(
                "--state-dir {r}: {r}/lab, where testbed 'lab' would keep its state, is not a directory: remove it, or choose another --name or --state-dir",
                r = root.display()
            )
        );
        assert!(fine.is_ok());
    }

    /// After a rolled-back `up`, `status` and `down` without --name said "nothing in ROOT"
    /// while its logs were there: they name the testbed and the `down` that removes them.
    #[test]
    fn a_rolled_back_up_is_named_when_no_testbed_is_up() {
        let root = std::env::temp_dir().join(format!("dbtb-nothing-up-{}", std::process::id()));
        let which = Which {
            name: None,
            state_dir: root.clone(),
        };
        let message = |w: &Which| resolve(w).unwrap_err().message;
        assert_eq!(
            message(&which),
            format!("no testbed is up (nothing in {})", root.display())
        );
        std::fs::create_dir_all(root.join("lab/logs")).unwrap();
        let e = resolve(&which).unwrap_err();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            format!(
                "no testbed is up in {r}, but the logs of a rolled-back `up` of 'lab' are in {r}/lab/logs, which `dualbench testbed down --name lab --state-dir {r}` removes",
                r = root.display()
            )
        );
    }
}
