//! `dualbench experiment`: expand a plan, skip the runs the database holds (`--resume`),
//! and for each group of points (those that differ only in family or ratio) provision its
//! server, run the warm-up rounds and one round per repeat — every point of the group once
//! per round, under background traffic started afresh for the round at a congested testbed
//! point — as `dualbench run` children, and store every finished run at once, so an
//! interrupt loses only the run in flight.

mod capture;
mod command;
mod dry_run;
mod exec;
mod lock;
mod progress;
mod testbed;

pub use command::{run_args, Bases};
pub use exec::{
    CAPTURE_ANALYSIS, CAPTURE_PCAP, MONITOR_SERIES, RUNNER_FILES, RUN_DOCUMENT, RUN_STDERR,
};
pub use progress::{clock, Progress};

use crate::db::{Db, RunRecord};
use crate::plan::{self, Placement, Plan, Point, RunSpec};
use crate::server::{self, site};
use dualbench_common::stdio::note;
use dualbench_common::{clock::unix_ns, plural, shell_word, Failure, Result};
use exec::Outcome;
use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What `dualbench experiment` was asked to do.
pub struct Options {
    pub plan: PathBuf,
    pub dry_run: bool,
    pub resume: bool,
    pub db: PathBuf,
    pub out: PathBuf,
    pub dualbench: PathBuf,
}

/// The port servers listen on inside a testbed host (the namespace is ours alone).
const TESTBED_PORT: u16 = 8080;

fn now() -> f64 {
    unix_ns() as f64 / 1e9
}

/// Run (or list, with `--dry-run`) an experiment plan.
pub fn run(opts: &Options) -> Result<()> {
    let plan = plan::load(&opts.plan)?;
    let runs = plan::expand(&plan);
    if opts.dry_run {
        return dry_run::dry_run(&plan, &runs, opts);
    }
    check_programs(&plan)?;
    crate::db::check_path(&opts.db)?;
    check_out(&opts.out)?;
    // Caught from before the experiment is stored: a signal while its environment is
    // collected would otherwise end the process and leave it `running`, without a word.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in dualbench_common::signals::stop_signals() {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| Failure::runtime(e.to_string()))?;
    }
    let mut db = Db::open(&opts.db)?;
    let (experiment, stored, _lock) = open_experiment(&mut db, &plan, &runs, opts)?;
    db.set_environment(experiment, &crate::env::collect(&plan, &opts.dualbench))?;
    let todo: Vec<&RunSpec> = runs.iter().filter(|r| !stored.contains(&r.id)).collect();
    if todo.is_empty() {
        note(&format!(
            "{}: nothing to run, the plan's {} already stored in {}",
            plan.name,
            plural(runs.len(), "run"),
            opts.db.display()
        ));
        return db.finish_experiment(experiment, "complete", now());
    }
    let mut ctx = Context {
        plan: &plan,
        opts,
        db: &mut db,
        experiment,
        stop: &stop,
        testbed: None,
    };
    let result = ctx.run_all(&runs, &todo);
    drop(ctx.testbed.take());
    let stored_now = db.run_ids(experiment)?.len();
    match result {
        Ok(()) if stop.load(Ordering::SeqCst) => {
            db.finish_experiment(experiment, "interrupted", now())?;
            Err(Failure::runtime(format!(
                "interrupted: {stored_now} of {} of {} stored in {}; run the same command with --resume to finish",
                plural(runs.len(), "run"),
                plan.name,
                opts.db.display()
            )))
        }
        Ok(()) => {
            db.finish_experiment(experiment, "complete", now())?;
            note(&format!(
                "{}: {} stored in {} (experiment id {experiment}); `{}` writes its report",
                plan.name,
                plural(stored_now, "run"),
                opts.db.display(),
                report_command(&plan.name, &opts.db)
            ));
            Ok(())
        }
        Err(e) => {
            db.finish_experiment(experiment, "failed", now())?;
            Err(e.context(format!(
                "{} ({} stored; --resume continues)",
                plan.name,
                plural(stored_now, "run")
            )))
        }
    }
}

/// The command that reports experiment `name` from `db` (with `--db` when it is not the
/// default, so it works as printed).
fn report_command(name: &str, db: &Path) -> String {
    let mut command = format!("dualbench report {name}");
    if db != Path::new(DEFAULT_DB) {
        command += &format!(" --db {}", shell_word(&db.display().to_string()));
    }
    command
}

/// The default of `--db`.
pub const DEFAULT_DB: &str = "results.db";

/// Every program (and file) the plan's servers and handlers need is looked up before the
/// database is touched: a missing one would otherwise be found only when its point starts,
/// after the points before it ran.
fn check_programs(plan: &Plan) -> Result<()> {
    let path = std::env::var_os("PATH");
    let at = plan::Locator::new(&plan.text, &plan.path);
    for r in server::requirements(&plan.axes.server, &plan.axes.handler) {
        if server::is_met(&r, path.as_deref()) {
            continue;
        }
        let missing = if r.needs.contains('/') {
            "which does not exist"
        } else {
            "which is not on PATH"
        };
        let message = format!(
            "{} needs {} ({}), {missing}; install Debian's {} package, or drop {} from the plan",
            r.value, r.needs, r.purpose, r.package, r.value
        );
        return Err(at.error_at(r.axis, &message));
    }
    Ok(())
}

/// The runs' folder must be a folder (or not exist yet): checked before the database is
/// touched, so a bad `--out` leaves no experiment behind.
fn check_out(out: &Path) -> Result<()> {
    refuse_file_out(out)?;
    std::fs::create_dir_all(out).map_err(|e| {
        Failure::usage(format!(
            "--out {}: cannot create the folder ({e}); give a folder you can write",
            out.display()
        ))
    })
}

/// `--out` naming something that is not a folder is refused, by `--dry-run` too.
fn refuse_file_out(out: &Path) -> Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(Failure::usage(format!(
            "--out {}: is not a directory; give a folder for the runs' files",
            out.display()
        )));
    }
    Ok(())
}

/// The experiment to store runs in, and the ids it already holds. `--resume` continues
/// the newest experiment of the plan's name, which first adopts the plan as it is now:
/// runs the plan no longer has are deleted from it (their files stay in the runs' folder),
/// so the report pools only runs of this plan. The experiment's lock is taken first and
/// held by the caller: another process running the experiment is refused.
fn open_experiment(
    db: &mut Db,
    plan: &Plan,
    runs: &[RunSpec],
    opts: &Options,
) -> Result<(i64, HashSet<String>, lock::Lock)> {
    if opts.resume {
        if let Some(e) = db.latest_named(&plan.name)? {
            let held = lock::acquire(
                &experiment_dir(&opts.out, &plan.name, e.id),
                &format!("experiment {} (id {})", plan.name, e.id),
            )?;
            let dropped = db.adopt_plan(e.id, plan, runs)?;
            if dropped > 0 {
                note(&format!(
                    "{}: the plan changed since experiment {}: {dropped} stored run(s) no longer match it and were removed from the experiment (their files stay in the runs' folder); runs with changed parameters run anew",
                    plan.name, e.id
                ));
            } else if e.plan_text != plan.text {
                note(&format!(
                    "{}: the plan's text changed since experiment {}, but no run's parameters did",
                    plan.name, e.id
                ));
            }
            return Ok((e.id, db.run_ids(e.id)?, held));
        }
        note(&format!(
            "{}: nothing to resume, starting a new experiment",
            plan.name
        ));
    }
    let id = db.create_experiment(plan, runs.len(), now())?;
    // A new experiment's folder exists only when another results database (or one since
    // deleted) gave an experiment of this name the same id: its runs would overwrite that
    // one's files (their run folders are named by run ids, the same for the same plan).
    let folder = experiment_dir(&opts.out, &plan.name, id);
    if folder.exists() {
        db.forget_new_experiment(id)?;
        return Err(Failure::usage(format!(
            "--out {}: {} already holds the runs of an experiment {} {id} that is not in {}; give another --out (or --db), or move that folder away",
            opts.out.display(),
            folder.display(),
            plan.name,
            opts.db.display()
        )));
    }
    // A folder that cannot be made (a name too long for the file system, a folder of
    // `--out` it may not write) leaves no experiment behind, `running` for ever.
    match lock::acquire(&folder, &format!("experiment {} (id {id})", plan.name)) {
        Ok(held) => Ok((id, HashSet::new(), held)),
        Err(e) => {
            db.forget_new_experiment(id)?;
            Err(e)
        }
    }
}

/// The folder of experiment `id` called `name`: its groups' servers and runs.
fn experiment_dir(out: &Path, name: &str, id: i64) -> PathBuf {
    out.join(format!("{name}-{id}"))
}

/// The server host's interface to capture on around each counted run at `point`: with
/// `load.capture_host = "server"` at a testbed point (the plan refuses it elsewhere).
fn server_capture_iface<'a>(plan: &'a Plan, point: &Point) -> Option<&'a str> {
    let l = &plan.load;
    match (l.capture_host, point.placement) {
        (plan::CaptureHost::Server, Placement::Testbed) => l.capture.as_deref(),
        _ => None,
    }
}

/// Everything one experiment invocation carries from point to point.
struct Context<'a> {
    plan: &'a Plan,
    opts: &'a Options,
    db: &'a mut Db,
    experiment: i64,
    stop: &'a AtomicBool,
    testbed: Option<testbed::Session>,
}

impl Context<'_> {
    fn run_all(&mut self, all: &[RunSpec], todo: &[&RunSpec]) -> Result<()> {
        let mut groups: Vec<Vec<&RunSpec>> = Vec::new();
        for &r in todo {
            match groups.last_mut() {
                Some(g) if g[0].point.group == r.point.group => g.push(r),
                _ => groups.push(vec![r]),
            }
        }
        let warmups: usize = groups
            .iter()
            .map(|g| points_of(g).len() * self.plan.warmup as usize)
            .sum();
        let mut progress = Progress::new(todo.len(), todo.len() + warmups);
        let started = Instant::now();
        for group in groups {
            if self.stopped() {
                break;
            }
            let seqs: Vec<usize> = group
                .iter()
                .map(|r| all.iter().position(|a| a.id == r.id).unwrap_or(0))
                .collect();
            self.run_group(&group, &seqs, &mut progress, started)?;
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The folder of a group's server: its configuration, logs and the runs' folders.
    fn group_dir(&self, point: &Point) -> PathBuf {
        let name = format!(
            "g{:03}-{}-{}",
            point.group,
            point.server.key(),
            point.handler.key()
        );
        experiment_dir(&self.opts.out, &self.plan.name, self.experiment).join(name)
    }

    /// One group (the points that differ only in family or ratio) under one server: the
    /// warm-up rounds, then one round per repeat. Each round runs every point of the group
    /// once under background traffic started for that round alone (at a congested testbed
    /// point), so repeats are independent samples of the background and the families of a
    /// repeat meet the same background.
    fn run_group(
        &mut self,
        group: &[&RunSpec],
        seqs: &[usize],
        progress: &mut Progress,
        started: Instant,
    ) -> Result<()> {
        let first = &group[0].point;
        let dir = self.group_dir(first);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Failure::runtime(format!("{}: {e}", dir.display())))?;
        self.prepare_testbed(first)?;
        let mut running = self.start_server(first, &dir)?;
        let route = site::route(first.server, first.handler, running.mod_perl);
        let bases = Bases::of(&running.listen);
        let version = server::software(first.server, &dir, &self.opts.dualbench)?;
        let serving = Serving {
            route: &route,
            version: &version,
            bases: &bases,
            dir: &dir,
        };
        let points = points_of(group);
        if !self.run_warmups(&points, &running, &serving, started)? {
            return Ok(());
        }
        progress.done_executions += points.len() * self.plan.warmup as usize;
        let runs: Vec<(&RunSpec, usize)> =
            group.iter().copied().zip(seqs.iter().copied()).collect();
        for round in runs.chunk_by(|a, b| a.0.repeat == b.0.repeat) {
            let repeat = round[0].0.repeat;
            let mut background = self.background(first, &dir, &format!("repeat-{repeat}"))?;
            for &(spec, seq) in round {
                let alongside = Alongside {
                    server: &mut running,
                    background: background.as_mut(),
                };
                if self.stopped()
                    || !self.run_counted(spec, seq, alongside, &serving, progress, started)?
                {
                    return Ok(());
                }
            }
        }
        running.stop()
    }

    /// The warm-up rounds of a group's `points` (not stored); false when interrupted.
    fn run_warmups(
        &self,
        points: &[Point],
        running: &server::Running,
        at: &Serving,
        started: Instant,
    ) -> Result<bool> {
        for w in 1..=self.plan.warmup {
            let _background = self.background(&points[0], at.dir, &format!("warmup-{w}"))?;
            for point in plan::round_order(points, w) {
                if self.stopped() {
                    return Ok(false);
                }
                note(&format!(
                    "warm-up {w}/{} {} · elapsed {}",
                    self.plan.warmup,
                    point.label(self.plan),
                    clock(started.elapsed())
                ));
                let run_dir = at.dir.join(format!(
                    "warmup-{w}-{}",
                    point.selector.key().replace(':', "-")
                ));
                let argv = self.run_argv(point, running, at.bases, at.route, None);
                if let Outcome::Interrupted = exec::run(&argv, &run_dir, self.stop, None)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// One counted run, stored when it finishes; false when the experiment was interrupted.
    fn run_counted(
        &mut self,
        spec: &RunSpec,
        seq: usize,
        alongside: Alongside,
        at: &Serving,
        progress: &mut Progress,
        started: Instant,
    ) -> Result<bool> {
        let Alongside {
            server: running,
            mut background,
        } = alongside;
        let point = &spec.point;
        let what = format!(
            "{} repeat {}/{}",
            point.label(self.plan),
            spec.repeat,
            self.plan.repeats
        );
        note(&progress.line(&what, started.elapsed()));
        running.check_alive()?;
        self.check_background(background.as_deref_mut())
            .map_err(|e| {
                e.context(format!(
                    "before run {}/{} ({what})",
                    progress.done_runs + 1,
                    progress.total
                ))
            })?;
        let run_started = now();
        let argv = self.run_argv(point, running, at.bases, at.route, Some(spec.repeat));
        let run_dir = at.dir.join(format!("run-{}-{}", spec.repeat, spec.id));
        std::fs::create_dir_all(&run_dir)?;
        let capture = match self.server_capture_argv(point, &run_dir)? {
            Some(c) => match capture::ServerCapture::start(&c, &run_dir, self.stop)? {
                Some(capture) => Some(capture),
                None => return Ok(false),
            },
            None => None,
        };
        let outcome = exec::run(&argv, &run_dir, self.stop, capture);
        // A run against a server that died during it measured refusals, not the server.
        if !self.stopped() {
            running.check_alive().map_err(|e| {
                e.context(format!(
                    "the server died during run {}/{} ({what}), which is not stored",
                    progress.done_runs + 1,
                    progress.total
                ))
            })?;
            // Nor does one that lost its background traffic or a testbed service measure
            // the point it is stored as.
            self.check_background(background).map_err(|e| {
                e.context(format!(
                    "during run {}/{} ({what}), which is not stored",
                    progress.done_runs + 1,
                    progress.total
                ))
            })?;
        }
        let finished = match outcome? {
            Outcome::Interrupted => return Ok(false),
            Outcome::Finished(f) => f,
        };
        let record = RunRecord {
            spec,
            seq,
            command: &argv.join(" "),
            server_version: at.version,
            handler_mechanism: at.route.mechanism,
            started_unix: run_started,
            doc: &finished.doc,
            doc_text: &finished.text,
            monitor: &finished.monitor,
            captures: &finished.captures,
        };
        self.db.store_run(self.experiment, &record)?;
        progress.done_runs += 1;
        progress.done_executions += 1;
        Ok(true)
    }

    /// The testbed's services and the round's background traffic (`background`) all
    /// still running.
    fn check_background(&mut self, background: Option<&mut testbed::Background>) -> Result<()> {
        if let Some(t) = self.testbed.as_mut() {
            t.check_services()
                .map_err(|e| e.context("a testbed service has ended"))?;
        }
        match background {
            Some(b) => b
                .check_alive()
                .map_err(|e| e.context("the background traffic has ended")),
            None => Ok(()),
        }
    }

    /// The whole `dualbench run` command of a run at `point`; with `load.monitor`, the
    /// server's first process is watched with all its descendants (`run --monitor` follows
    /// the tree at every sample: an nginx master's workers, Apache's children as they come
    /// and go, the CGI programs they run). `repeat`: the counted run's (its Poisson seed),
    /// `None` for a warm-up.
    fn run_argv(
        &self,
        point: &Point,
        running: &server::Running,
        bases: &Bases,
        route: &site::Route,
        repeat: Option<u32>,
    ) -> Vec<String> {
        let pids: Vec<String> = match self.plan.load.monitor {
            true => vec![running.pid.to_string()],
            false => Vec::new(),
        };
        let mut argv = self.client_prefix(point);
        argv.extend(run_args(self.plan, point, bases, route, &pids, repeat));
        argv
    }

    /// With `load.capture_host = "server"` at a testbed point, the `dualbench capture` run
    /// in the server host around a counted run, writing `run_dir/capture.pcap`.
    fn server_capture_argv(&self, point: &Point, run_dir: &Path) -> Result<Option<Vec<String>>> {
        let Some(iface) = server_capture_iface(self.plan, point) else {
            return Ok(None);
        };
        let Some(t) = &self.plan.testbed else {
            return Ok(None);
        };
        // The capture runs from the server host's view of the file system: give it the
        // whole path.
        let pcap = std::path::absolute(run_dir.join(CAPTURE_PCAP))?;
        let argv = capture::argv(
            &self.opts.dualbench,
            t,
            iface,
            TESTBED_PORT,
            &pcap.display().to_string(),
        );
        std::fs::write(
            run_dir.join("capture.cmd"),
            command::shell_line(&argv) + "\n",
        )?;
        Ok(Some(argv))
    }

    /// Wait `d`, or less when the experiment is interrupted.
    fn sleep_unless_stopped(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `dualbench` (loopback) or `dualbench testbed exec CLIENT -- dualbench` (testbed).
    fn client_prefix(&self, point: &Point) -> Vec<String> {
        let mut argv = Vec::new();
        if let (Placement::Testbed, Some(t)) = (point.placement, &self.plan.testbed) {
            argv = testbed::exec_prefix(&self.opts.dualbench, t, &t.client);
        }
        argv.push(self.opts.dualbench.display().to_string());
        argv
    }

    /// Bring the testbed up for the first testbed point, and run the plan's setup
    /// commands (`{link}`, `{congestion}` replaced) before each testbed group.
    fn prepare_testbed(&mut self, point: &Point) -> Result<()> {
        let Some(t) = &self.plan.testbed else {
            return Ok(());
        };
        if point.placement != Placement::Testbed {
            return Ok(());
        }
        if self.testbed.is_none() {
            let plan_dir = self.plan.path.parent().unwrap_or(Path::new("."));
            let dir = experiment_dir(&self.opts.out, &self.plan.name, self.experiment);
            std::fs::create_dir_all(&dir)?;
            self.testbed = Some(testbed::Session::up(
                t,
                plan_dir,
                &self.opts.dualbench,
                &dir,
            )?);
        }
        for command in &t.setup {
            let plan_dir = self.plan.path.parent().unwrap_or(Path::new("."));
            let argv = testbed::substitute(command, point, plan_dir, &self.opts.dualbench);
            let (program, args) = argv
                .split_first()
                .ok_or_else(|| Failure::usage("testbed.setup has an empty command"))?;
            testbed::run_to_end(Path::new(program), args, "point setup")?;
        }
        Ok(())
    }

    /// The plan's background traffic for one round (`tag`: `warmup-1`, `repeat-3`) at a
    /// congested testbed point, started afresh and given `settle_s` to reach its rate;
    /// stopped (SIGTERM by pid) when the value is dropped at the end of the round. None
    /// elsewhere.
    fn background(
        &self,
        point: &Point,
        dir: &Path,
        tag: &str,
    ) -> Result<Option<testbed::Background>> {
        let Some(t) = &self.plan.testbed else {
            return Ok(None);
        };
        if point.placement != Placement::Testbed {
            return Ok(None);
        }
        let background = testbed::Background::for_point(
            &t.background,
            point,
            dir,
            &format!("background-{tag}"),
            self.plan.path.parent().unwrap_or(Path::new(".")),
            &self.opts.dualbench,
        )?;
        if !background.is_empty() && t.settle_s > 0.0 {
            note(&format!(
                "{tag}: background traffic started; letting it settle for {} s",
                t.settle_s
            ));
            self.sleep_unless_stopped(Duration::from_secs_f64(t.settle_s));
        }
        Ok(Some(background))
    }

    fn start_server(&self, point: &Point, dir: &Path) -> Result<server::Running> {
        let handlers = [point.handler];
        let (listen, wrap) = match (point.placement, &self.plan.testbed) {
            (Placement::Testbed, Some(t)) => (
                testbed_listen(t)?,
                testbed::exec_prefix(&self.opts.dualbench, t, &t.server),
            ),
            _ => (server::loopback(server::free_loopback_port()?), Vec::new()),
        };
        let setup = server::Setup {
            kind: point.server,
            dir,
            handlers: &handlers,
            listen,
            wrap,
            dualbench: &self.opts.dualbench,
        };
        let mut running = server::start(&setup)?;
        if point.placement == Placement::Loopback {
            running.wait_ready(Duration::from_secs(15))?;
        } else {
            self.probe_testbed(point, &running)?;
        }
        Ok(running)
    }

    /// In a testbed the server is reachable only from the client host: ask `dualbench run`
    /// there for one request per family until both answer.
    fn probe_testbed(&self, point: &Point, running: &server::Running) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(15);
        for base in [Bases::of(&running.listen).v4, Bases::of(&running.listen).v6] {
            let mut argv = self.client_prefix(point);
            argv.extend([
                "run".into(),
                "-q".into(),
                "-n".into(),
                "1".into(),
                format!("{base}/index.html"),
            ]);
            loop {
                let ok = std::process::Command::new(&argv[0])
                    .args(&argv[1..])
                    .output()
                    .map(|o| o.status.success());
                if let Ok(true) = ok {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(Failure::runtime(format!(
                        "server in the testbed did not answer at {base} within 15 s"
                    )));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }
}

/// What a counted run needs running alongside it: the server, and the round's background
/// traffic when the point is congested.
struct Alongside<'a> {
    server: &'a mut server::Running,
    background: Option<&'a mut testbed::Background>,
}

/// A group's server as its runs use it: what answers, its version, its URLs, its folder.
struct Serving<'a> {
    route: &'a site::Route,
    version: &'a str,
    bases: &'a Bases,
    dir: &'a Path,
}

/// The distinct points of a group's runs, in the plan's order.
fn points_of(group: &[&RunSpec]) -> Vec<Point> {
    let mut points: Vec<Point> = Vec::new();
    for r in group {
        if !points.iter().any(|p| p.index == r.point.index) {
            points.push(r.point.clone());
        }
    }
    points.sort_by_key(|p| p.index);
    points
}

fn testbed_listen(t: &plan::Testbed) -> Result<Vec<SocketAddr>> {
    let parse = |s: &str, key: &str| {
        s.parse::<IpAddr>()
            .map(|ip| SocketAddr::new(ip, TESTBED_PORT))
            .map_err(|_| Failure::usage(format!("testbed.{key}: {s:?} is not an IP address")))
    };
    Ok(vec![
        parse(&t.server_ipv4, "server_ipv4")?,
        parse(&t.server_ipv6, "server_ipv6")?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new experiment whose folder cannot be made (here `--out` is a file's path; a
    /// 300-character name did it with `File name too long`) was left in the database as
    /// `running`, with no run and no way to end it.
    #[test]
    fn a_new_experiment_whose_folder_cannot_be_made_is_not_kept() {
        let dir = std::env::temp_dir().join(format!("dualbench-open-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, "").unwrap();
        let plan = plan::parse("[experiment]\nname = \"x\"\n", Path::new("p.toml")).unwrap();
        let runs = plan::expand(&plan);
        let mut db = Db::open(&dir.join("r.db")).unwrap();
        let opts = Options {
            plan: "p.toml".into(),
            dry_run: false,
            resume: false,
            db: dir.join("r.db"),
            out: file.clone(),
            dualbench: "dualbench".into(),
        };
        let e = open_experiment(&mut db, &plan, &runs, &opts).err().unwrap();
        let experiments = db.experiments().unwrap().len();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            e.message,
            format!(
                "{}: Not a directory (os error 20)",
                file.join("x-1").display()
            )
        );
        assert_eq!(experiments, 0);
    }
}
