//! The state file (`<state-dir>/<testbed>/state.json`): what a testbed is (its layout) and
//! every object `up` made, each recorded *before* it is made, so that `down` can remove
//! exactly those even after the controller was killed mid-build. Created exclusively (one
//! `up` per name), then saved atomically (write to a temporary file, then rename) after
//! every change.

use crate::plan::Layout;
use dualbench_common::{Failure, Result};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where testbeds keep their state unless `--state-dir` says otherwise.
pub const DEFAULT_ROOT: &str = "/run/dualbench/testbeds";
const FILE: &str = "state.json";

/// Something `up` made that `down` must remove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Object {
    /// A named network namespace (`/run/netns/<name>`); its veths, bridges and qdiscs go with it.
    Namespace { name: String },
    /// `/etc/netns/<ns>/` holding the hosts file `ip netns exec` mounts over `/etc/hosts`.
    EtcNetns { dir: PathBuf },
    /// A service or wire emulator. `pid` and `start_time` (clock ticks since boot, from
    /// `/proc/PID/stat`) are filled in right after it starts; together they name it exactly.
    Process {
        role: String,
        namespace: String,
        program: String,
        pid: Option<u32>,
        start_time: Option<u64>,
    },
}

/// The `up` process building a testbed, named exactly (pid and start time, as a service).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Builder {
    pub pid: u32,
    pub start_time: Option<u64>,
}

impl Builder {
    /// This process.
    pub fn this() -> Builder {
        let pid = std::process::id();
        Builder {
            pid,
            start_time: crate::procs::start_time(pid),
        }
    }

    /// Whether it is still the same process, running.
    pub fn is_running(&self) -> bool {
        crate::procs::is_running(self.pid)
            && self.start_time.is_some()
            && crate::procs::start_time(self.pid) == self.start_time
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub testbed: String,
    pub topology_file: PathBuf,
    pub created_unix_ns: u64,
    /// True once `up` finished every step.
    pub complete: bool,
    /// The `up` that builds it (absent from state files of older versions).
    #[serde(default)]
    pub builder: Option<Builder>,
    pub layout: Layout,
    pub objects: Vec<Object>,
}

#[cfg(test)]
impl State {
    /// The state of testbed `lab` (from `lab.toml`) as `up` begins it: incomplete, no
    /// builder, nothing made yet. For tests.
    pub(crate) fn empty_lab() -> State {
        State {
            testbed: "lab".into(),
            topology_file: "lab.toml".into(),
            created_unix_ns: 0,
            complete: false,
            builder: None,
            layout: Layout {
                testbed: "lab".into(),
                nodes: Vec::new(),
                links: Vec::new(),
                services: Vec::new(),
                hosts_file: String::new(),
            },
            objects: Vec::new(),
        }
    }
}

impl State {
    /// The pid of the `up` still building this testbed, if it is incomplete and that `up`
    /// still runs.
    pub fn building(&self) -> Option<u32> {
        let builder = self.builder.filter(|b| !self.complete && b.is_running())?;
        Some(builder.pid)
    }
}

/// A state file on disk and its contents in memory, kept in step.
pub struct StateFile {
    pub dir: PathBuf,
    pub state: State,
}

/// The directory of testbed `name` under `root`.
pub fn testbed_dir(root: &Path, name: &str) -> PathBuf {
    root.join(name)
}

impl StateFile {
    /// Start a new state file; refuses if one is there already (never clobbers a testbed).
    /// The file is created exclusively (`O_EXCL`), so of two `up`s of one name at once
    /// only one goes on: the other used to pass the same check, share the temporary file
    /// and fail half-way, rolling back namespaces by the names both had recorded.
    pub fn create(dir: &Path, state: State) -> Result<StateFile> {
        let path = dir.join(FILE);
        let exists = || {
            Failure::usage(format!(
                "testbed '{}' already exists (state {}): run `dualbench testbed down --name {}` first",
                state.testbed,
                path.display(),
                state.testbed
            ))
        };
        if path.exists() {
            return Err(exists());
        }
        fs::create_dir_all(dir.join("logs"))
            .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", dir.display())))?;
        let text =
            serde_json::to_string_pretty(&state).map_err(|e| Failure::runtime(e.to_string()))?;
        let mut f = match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(exists()),
            Err(e) => {
                return Err(Failure::runtime(format!(
                    "cannot write {}: {e}",
                    path.display()
                )))
            }
        };
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
        Ok(StateFile {
            dir: dir.to_path_buf(),
            state,
        })
    }

    /// The state file in `dir`; one that does not parse is an error saying so (callers
    /// that can do better use [`read`]).
    pub fn load(dir: &Path) -> Result<StateFile> {
        match read(dir)? {
            Loaded::Good(file) => Ok(*file),
            Loaded::Corrupt(why) => Err(Failure::runtime(format!(
                "{} is not a dualbench testbed state file: {why}",
                dir.join(FILE).display()
            ))),
        }
    }

    pub fn exists(dir: &Path) -> bool {
        dir.join(FILE).exists()
    }

    /// Write the whole state to disk: temporary file, fsync, rename.
    pub fn save(&self) -> Result<()> {
        let path = self.dir.join(FILE);
        let tmp = self.dir.join(format!("{FILE}.tmp"));
        let text = serde_json::to_string_pretty(&self.state)
            .map_err(|e| Failure::runtime(e.to_string()))?;
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &path)
        };
        write().map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))
    }

    /// Add an object and save, before the object is made; returns its index.
    pub fn record(&mut self, object: Object) -> Result<usize> {
        self.state.objects.push(object);
        self.save()?;
        Ok(self.state.objects.len() - 1)
    }

    pub fn replace(&mut self, index: usize, object: Object) -> Result<()> {
        self.state.objects[index] = object;
        self.save()
    }

    /// Remove the state directory (state file, logs, wire counters) once everything is gone;
    /// with `keep_logs`, only the state file goes, so a failed build's logs can be read.
    pub fn remove(self, keep_logs: bool) -> Result<()> {
        let (path, result) = if keep_logs {
            let path = self.dir.join(FILE);
            let result = fs::remove_file(&path);
            (path, result)
        } else {
            (self.dir.clone(), fs::remove_dir_all(&self.dir))
        };
        result.map_err(|e| Failure::runtime(format!("cannot remove {}: {e}", path.display())))
    }
}

/// A state file as read: good, or there but not a state file (empty, garbage, binary,
/// from another version), with the parser's words.
pub enum Loaded {
    Good(Box<StateFile>),
    Corrupt(String),
}

/// Read the state file in `dir`; only failing to read it at all is an error.
pub fn read(dir: &Path) -> Result<Loaded> {
    let path = dir.join(FILE);
    let bytes = fs::read(&path)
        .map_err(|e| Failure::runtime(format!("cannot read {}: {e}", path.display())))?;
    let parsed = std::str::from_utf8(&bytes)
        .map_err(|_| "it is not text".to_string())
        .and_then(|text| serde_json::from_str(text).map_err(|e| e.to_string()));
    Ok(match parsed {
        Ok(state) => Loaded::Good(Box::new(StateFile {
            dir: dir.to_path_buf(),
            state,
        })),
        Err(why) if bytes.is_empty() => Loaded::Corrupt(format!("it is empty ({why})")),
        Err(why) => Loaded::Corrupt(why),
    })
}

/// Whether `dir` is what a rolled-back `up` leaves: no state file, but its logs.
pub fn is_leftover(dir: &Path) -> bool {
    !StateFile::exists(dir) && dir.join("logs").is_dir()
}

/// Remove what a rolled-back `up` left in `dir` (logs, wire counters, the hosts copy),
/// refusing if it holds anything dualbench does not write there.
pub fn remove_leftover(dir: &Path) -> Result<()> {
    remove_ours(dir, false)
}

/// Remove a testbed's directory whose state file is unreadable, refusing if it holds
/// anything dualbench does not write there.
pub fn remove_unreadable(dir: &Path) -> Result<()> {
    remove_ours(dir, true)
}

fn remove_ours(dir: &Path, with_state: bool) -> Result<()> {
    let ours = |name: &str| {
        matches!(name, "logs" | "hosts" | "state.json.tmp")
            || (with_state && name == FILE)
            || (name.starts_with("wire")
                && (name.ends_with(".json") || name.ends_with(".json.tmp")))
    };
    let cannot =
        |e: std::io::Error| Failure::runtime(format!("cannot remove {}: {e}", dir.display()));
    let strangers: Vec<String> = fs::read_dir(dir)
        .map_err(cannot)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !ours(n))
        .collect();
    if !strangers.is_empty() {
        return Err(Failure::usage(format!(
            "{} holds files dualbench did not write ({}): not removed",
            dir.display(),
            strangers.join(", ")
        )));
    }
    fs::remove_dir_all(dir).map_err(cannot)
}

/// Names of the testbeds that have a state file under `root`, sorted.
pub fn list(root: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(FILE).exists())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// The testbeds under `root` of which only a rolled-back `up`'s logs are left, sorted.
pub fn leftovers(root: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| is_leftover(&e.path()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_file_that_does_not_parse_is_told_apart_from_one_that_cannot_be_read() {
        let dir = std::env::temp_dir().join(format!("dbtb-state-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let cases: [(&[u8], &str); 3] = [
            (b"", "it is empty"),
            (b"{garbage", "key must be a string"),
            (&[0xff, 0x00, 0x13], "it is not text"),
        ];
        for (bytes, why) in cases {
            fs::write(dir.join(FILE), bytes).unwrap();
            match read(&dir).unwrap() {
                Loaded::Corrupt(text) => assert!(text.contains(why), "{text}"),
                Loaded::Good(_) => panic!("{bytes:?} parsed"),
            }
        }
        fs::remove_file(dir.join(FILE)).unwrap();
        assert!(read(&dir).is_err(), "a missing file is an error of its own");
        // What dualbench writes there goes; anything else keeps the directory.
        fs::write(dir.join(FILE), b"x").unwrap();
        fs::create_dir_all(dir.join("logs")).unwrap();
        fs::write(dir.join("notes.txt"), b"mine").unwrap();
        let e = remove_unreadable(&dir).unwrap_err();
        assert!(e.message.contains("notes.txt"), "{}", e.message);
        fs::remove_file(dir.join("notes.txt")).unwrap();
        remove_unreadable(&dir).unwrap();
        assert!(!dir.exists());
    }

    /// Two `up`s of one name at once: exactly one creates the state file, the other is
    /// refused (exit 2) before it makes anything. Both used to pass the check and go on.
    #[test]
    fn of_several_creators_at_once_exactly_one_wins() {
        let root = std::env::temp_dir().join(format!("dbtb-race-{}", std::process::id()));
        let state = State::empty_lab();
        for round in 0..20 {
            let dir = root.join(format!("lab{round}"));
            let barrier = std::sync::Barrier::new(4);
            let results: Vec<Result<StateFile>> = std::thread::scope(|s| {
                let racers: Vec<_> = (0..4)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            StateFile::create(&dir, state.clone())
                        })
                    })
                    .collect();
                racers.into_iter().map(|r| r.join().unwrap()).collect()
            });
            let won = results.iter().filter(|r| r.is_ok()).count();
            assert_eq!(won, 1, "round {round}: {won} creators went on");
            for e in results.iter().filter_map(|r| r.as_ref().err()) {
                assert_eq!(e.exit_code(), 2, "{}", e.message);
                assert!(e.message.contains("already exists"), "{}", e.message);
            }
        }
        fs::remove_dir_all(&root).unwrap();
    }
}
