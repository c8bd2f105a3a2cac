//! `dualbench experiment --dry-run`: the runs a plan expands to, which of them the
//! database already holds (with `--resume`), how often the background traffic starts, and
//! each run's exact command (and the server-side capture around it) — nothing is run.

use super::{
    capture, check_programs, clock, command::shell_line, refuse_file_out, run_args,
    server_capture_iface, testbed, testbed_listen, Bases, Options, TESTBED_PORT,
};
use crate::db::Db;
use crate::plan::{self, Placement, Plan, Point, RunSpec};
use crate::server::site;
use dualbench_common::stdio::note;
use dualbench_common::{plural, Result};
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

pub(super) fn dry_run(plan: &Plan, runs: &[RunSpec], opts: &Options) -> Result<()> {
    refuse_file_out(&opts.out)?;
    if let Err(e) = check_programs(plan) {
        note(&format!(
            "dualbench: note: a real run would be refused: {}",
            e.message
        ));
    }
    let stored = match (opts.resume, opts.db.exists()) {
        (true, true) => {
            let db = Db::open_existing(&opts.db)?;
            match db.latest_named(&plan.name)? {
                Some(e) => db.run_ids(e.id)?,
                None => HashSet::new(),
            }
        }
        _ => HashSet::new(),
    };
    let points = plan::points(plan).len();
    let todo = runs.iter().filter(|r| !stored.contains(&r.id)).count();
    let mut out = format!(
        "{}: {} ({} × {}, {} per point); {todo} to run\n",
        plan.name,
        plural(runs.len(), "run"),
        plural(points, "point"),
        plural(plan.repeats, "repeat"),
        plural(plan.warmup, "warm-up run")
    );
    if let Some(line) = background_rounds(plan) {
        out += &line;
    }
    let superseded = stored
        .iter()
        .filter(|id| !runs.iter().any(|r| &r.id == *id))
        .count();
    if superseded > 0 {
        out += &format!(
            "{superseded} stored run(s) no longer match the plan; --resume would remove them from the experiment\n"
        );
    }
    for (k, r) in runs.iter().enumerate() {
        let state = if stored.contains(&r.id) {
            "stored"
        } else {
            "to run"
        };
        out += &format!(
            "{:>4}  {}  {state:<6}  {} repeat {}/{}  {}\n",
            k + 1,
            r.id,
            r.point.label(plan),
            r.repeat,
            plan.repeats,
            dry_command(plan, &r.point, r.repeat)?
        );
        if let (Some(iface), Some(t)) = (server_capture_iface(plan, &r.point), &plan.testbed) {
            let argv = capture::argv(
                Path::new("dualbench"),
                t,
                iface,
                TESTBED_PORT,
                &format!("RUNDIR/{}", super::CAPTURE_PCAP),
            );
            out += &format!(
                "      around it, in the server host: {}\n",
                shell_line(&argv)
            );
        }
    }
    dualbench_common::stdio::print(&out)
}

/// For a plan with background traffic: how many times it is started (once per round —
/// each warm-up and each repeat — of each congested testbed group) and the settling time
/// that adds.
fn background_rounds(plan: &Plan) -> Option<String> {
    let t = plan.testbed.as_ref().filter(|t| !t.background.is_empty())?;
    let mut groups: Vec<usize> = plan::points(plan)
        .into_iter()
        .filter(|p| p.placement == Placement::Testbed && p.congestion != "none")
        .map(|p| p.group)
        .collect();
    groups.dedup();
    if groups.is_empty() {
        return None;
    }
    let rounds = groups.len() * (plan.warmup + plan.repeats) as usize;
    Some(format!(
        "background traffic: started afresh for each of {} ({} × ({} warm-up + {})), each round's families under the same instance; {} s to settle each, {} in all\n",
        plural(rounds, "round"),
        plural(groups.len(), "congested group"),
        plan.warmup,
        plural(plan.repeats, "repeat"),
        t.settle_s,
        clock(Duration::from_secs_f64(rounds as f64 * t.settle_s))
    ))
}

/// Placeholder in `--dry-run` commands for the server's pids, known once it runs.
pub const PID_PLACEHOLDER: &str = "PID";

/// The command a run would be, with `PORT` for a loopback server's port and `PID` for the
/// server's processes.
fn dry_command(plan: &Plan, point: &Point, repeat: u32) -> Result<String> {
    let route = site::route(point.server, point.handler, site::have_mod_perl());
    let (mut argv, bases) = match (point.placement, &plan.testbed) {
        (Placement::Testbed, Some(t)) => (
            testbed::exec_prefix(Path::new("dualbench"), t, &t.client),
            Bases::of(&testbed_listen(t)?),
        ),
        _ => (
            Vec::new(),
            Bases {
                v4: "http://127.0.0.1:PORT".into(),
                v6: "http://[::1]:PORT".into(),
            },
        ),
    };
    argv.push("dualbench".into());
    argv.extend(run_args(
        plan,
        point,
        &bases,
        &route,
        &[PID_PLACEHOLDER.to_string()],
        Some(repeat),
    ));
    Ok(shell_line(&argv))
}
