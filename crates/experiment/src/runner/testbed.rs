//! Testbed placement: bring the plan's topology up (and down), run a command inside a host
//! through `dualbench testbed exec HOST --`, apply a point's setup commands and start its
//! background traffic (stopped by pid after the point).

use crate::plan::{Point, Testbed};
use dualbench_common::{Failure, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `dualbench testbed exec --name NAME HOST --` as an argv prefix.
pub fn exec_prefix(dualbench: &Path, testbed: &Testbed, host: &str) -> Vec<String> {
    let d = dualbench.display().to_string();
    vec![
        d,
        "testbed".into(),
        "exec".into(),
        "--name".into(),
        testbed.testbed_name(),
        host.into(),
        "--".into(),
    ]
}

/// Replace `{link}` and `{congestion}` in a command by the point's values, `{plan_dir}` by
/// the plan's folder (see [`with_plan_dir`]), and a leading `dualbench` by this binary.
pub fn substitute(
    argv: &[String],
    point: &Point,
    plan_dir: &Path,
    dualbench: &Path,
) -> Vec<String> {
    let argv = argv.iter().map(|a| {
        a.replace("{link}", &point.link)
            .replace("{congestion}", &point.congestion)
    });
    with_binary(with_plan_dir(argv.collect(), plan_dir), dualbench)
}

/// Replace `{plan_dir}` by the plan's folder, made absolute against the current folder, so
/// a command can name files next to the plan (a traffic profile) from wherever
/// `dualbench experiment` was started. Run ids hash the commands as the plan writes them,
/// so they do not depend on where the checkout lies.
pub fn with_plan_dir(argv: Vec<String>, plan_dir: &Path) -> Vec<String> {
    if !argv.iter().any(|a| a.contains("{plan_dir}")) {
        return argv;
    }
    let dir = if plan_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        plan_dir
    };
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let dir = dir.display().to_string();
    argv.into_iter()
        .map(|a| a.replace("{plan_dir}", &dir))
        .collect()
}

/// A leading `dualbench` means this binary.
fn with_binary(mut argv: Vec<String>, dualbench: &Path) -> Vec<String> {
    if argv.first().map(String::as_str) == Some("dualbench") {
        argv[0] = dualbench.display().to_string();
    }
    argv
}

/// A testbed brought up by this experiment, with its long-running services (e.g. traffic
/// sinks); on drop the services are stopped, then the testbed is taken down if we made it.
pub struct Session {
    dualbench: PathBuf,
    name: String,
    managed: bool,
    services: Option<Background>,
}

impl Session {
    /// Bring the topology up (when the plan manages it) and start its services; their logs
    /// go to `dir`.
    pub fn up(testbed: &Testbed, plan_dir: &Path, dualbench: &Path, dir: &Path) -> Result<Session> {
        let topology = plan_dir.join(&testbed.topology).display().to_string();
        let name = testbed.testbed_name();
        let mut session = Session {
            dualbench: dualbench.into(),
            name: name.clone(),
            managed: false,
            services: None,
        };
        if testbed.manage {
            let args = [
                "testbed".to_string(),
                "up".into(),
                topology,
                "--name".into(),
                name,
            ];
            run_to_end(dualbench, &args, "bringing the testbed up")?;
            session.managed = true;
        }
        let commands = testbed
            .services
            .iter()
            .map(|c| with_binary(with_plan_dir(c.clone(), plan_dir), dualbench))
            .collect();
        session.services = Some(Background::spawn(commands, dir, "service")?);
        Ok(session)
    }

    /// Every service still running (see [`Background::check_alive`]).
    pub fn check_services(&mut self) -> Result<()> {
        match self.services.as_mut() {
            Some(services) => services.check_alive(),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.services.take());
        if self.managed {
            let args = [
                "testbed".to_string(),
                "down".into(),
                "--name".into(),
                self.name.clone(),
            ];
            if let Err(e) = run_to_end(&self.dualbench, &args, "taking the testbed down") {
                dualbench_common::stdio::note(&format!("dualbench: {e}"));
            }
        }
    }
}

/// Run `program args...` to completion; a failure names `what` and the command's stderr.
pub fn run_to_end(program: &Path, args: &[String], what: &str) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            Failure::runtime(format!("{what}: cannot start {} ({e})", program.display()))
        })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message");
    Err(Failure::runtime(format!(
        "{what}: `{} {}` failed: {last}",
        program.display(),
        args.join(" ")
    )))
}

/// Processes that run alongside the runs, stopped in reverse order of starting (SIGTERM by
/// pid, then reaped) on drop.
pub struct Background {
    children: Vec<Child>,
    /// Each child's command line and log file, for [`Background::check_alive`].
    started: Vec<(String, PathBuf)>,
}

impl Background {
    /// Start every command, logging to `dir/<tag>-<i>.log`.
    pub fn spawn(commands: Vec<Vec<String>>, dir: &Path, tag: &str) -> Result<Background> {
        let mut background = Background {
            children: Vec::new(),
            started: Vec::new(),
        };
        for (i, argv) in commands.iter().enumerate() {
            let path = dir.join(format!("{tag}-{i}.log"));
            let log = std::fs::File::create(&path)?;
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .process_group(0);
            let child = crate::lifetime::end_with_this_thread(&mut cmd)
                .spawn()
                .map_err(|e| Failure::runtime(format!("cannot start {tag} {} ({e})", argv[0])))?;
            background.children.push(child);
            background.started.push((argv.join(" "), path));
        }
        Ok(background)
    }

    /// Every process still running: one that has ended (it is meant to run until it is
    /// stopped) is an error naming its command, how it ended and its log, since the runs
    /// since it ended did not have it alongside them.
    pub fn check_alive(&mut self) -> Result<()> {
        for (child, (command, log)) in self.children.iter_mut().zip(&self.started) {
            if let Some(status) = child.try_wait()? {
                return Err(Failure::runtime(format!(
                    "`{command}` ended ({status}); its log: {}",
                    log.display()
                )));
            }
        }
        Ok(())
    }

    /// The plan's background commands for `point`, logging to `dir/<tag>-<i>.log`; none
    /// at a point without congestion.
    pub fn for_point(
        commands: &[Vec<String>],
        point: &Point,
        dir: &Path,
        tag: &str,
        plan_dir: &Path,
        dualbench: &Path,
    ) -> Result<Background> {
        if point.congestion == "none" {
            return Ok(Background {
                children: Vec::new(),
                started: Vec::new(),
            });
        }
        Background::spawn(
            commands
                .iter()
                .map(|c| substitute(c, point, plan_dir, dualbench))
                .collect(),
            dir,
            tag,
        )
    }

    /// True when nothing was started.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            // SAFETY: kill(2) on our own, not yet reaped, child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{parse, points};

    #[test]
    fn substitutes_point_values() {
        let text = "[experiment]\nname = \"c\"\n[axes]\nplacement = [\"testbed\"]\ncongestion = [\"C1B\"]\n\
                    [testbed]\ntopology = \"t.toml\"\nserver_ipv4 = \"198.18.1.2\"\nserver_ipv6 = \"2001:2:0:1::2\"\n";
        let plan = parse(text, Path::new("c.toml")).unwrap();
        let p = &points(&plan)[0];
        let argv = vec![
            "dualbench".to_string(),
            "--preset".into(),
            "{congestion}".into(),
            "{link}".into(),
            "{plan_dir}/traffic/{congestion}-ipv4.toml".into(),
        ];
        assert_eq!(
            substitute(&argv, p, Path::new("/work/experiments"), Path::new("/x/db")),
            vec![
                "/x/db",
                "--preset",
                "C1B",
                "none",
                "/work/experiments/traffic/C1B-ipv4.toml"
            ]
        );
        // A relative plan folder is made absolute (the command may run elsewhere); a plan
        // given without a folder lies in the current one.
        let cwd = std::env::current_dir().unwrap();
        let own = |dir: &str| {
            with_plan_dir(
                vec!["dualbench".into(), "{plan_dir}/p.toml".into()],
                Path::new(dir),
            )
        };
        assert_eq!(own("exp")[1], format!("{}/exp/p.toml", cwd.display()));
        assert_eq!(own("")[1], format!("{}/p.toml", cwd.display()));
        assert_eq!(own("/abs")[0], "dualbench", "no binary replaced here");
        let untouched = vec!["x".to_string(), "{planDir}".into()];
        assert_eq!(
            with_plan_dir(untouched.clone(), Path::new("/abs")),
            untouched
        );
        assert_eq!(
            exec_prefix(
                Path::new("/bin/db"),
                plan.testbed.as_ref().unwrap(),
                "server"
            )
            .join(" "),
            "/bin/db testbed exec --name t server --"
        );
    }
}
