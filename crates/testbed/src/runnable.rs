//! Whether `testbed exec` can run a program, decided inside the node's namespace (by the
//! hidden `testbed exec-inside` that `ip netns exec` runs there, so files are judged as the
//! command would see them: `ip netns exec` mounts `/etc/netns/NS/hosts` over `/etc/hosts`)
//! before the program is exec'd. `ip netns exec` alone exits 1 for every program it cannot
//! start (`exec of "/etc/hosts" failed: Permission denied`), where a shell says 127 (not
//! found) or 126 (found but cannot run: no execute permission, a directory, a file system
//! mounted noexec, an interpreter line naming no interpreter, an ELF file of another
//! machine or whose loader is missing). The verdict is one line, `CMD: command not found
//! (…)` or `CMD: not executable (…)`; an exec that fails all the same gets one from its
//! error ([`exec_failure`]). Reading a file's first bytes is kept apart from judging them
//! ([`format_problem`]).

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The shell's exit code for a program that cannot run, and why, in one line.
pub type NotRunnable = (i32, String);

/// Whether `program` can be run as `ip netns exec` would run it (a path, or a name on
/// `PATH`): else the shell's exit code for it and why.
pub fn runnable(program: &str) -> Result<(), NotRunnable> {
    let name = shown(program);
    if program.is_empty() {
        // Joined to each PATH folder it named the folder itself ("/usr/bin/ is not an
        // executable file", 126); a shell says "command not found" (127).
        return Err((
            127,
            format!("{name}: command not found (the command name is empty)"),
        ));
    }
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .collect()
    };
    // The file a PATH name was found as, when it is not the name itself.
    let as_found = |c: &Path| {
        if program.contains('/') {
            String::new()
        } else {
            format!("{}: ", shown(&c.to_string_lossy()))
        }
    };
    if let Some(found) = candidates.iter().find(|c| executable(c)) {
        return match format_problem(&head(found), &|p| executable(p)) {
            Some(why) => Err((
                126,
                format!("{name}: not executable ({}{why})", as_found(found)),
            )),
            None => Ok(()),
        };
    }
    match candidates.iter().find(|c| c.exists()) {
        Some(c) => Err((
            126,
            format!("{name}: not executable ({}{})", as_found(c), why_not(c)),
        )),
        None if program.contains('/') => {
            Err((127, format!("{name}: command not found (no such file)")))
        }
        None => Err((
            127,
            format!("{name}: command not found (not on PATH: install it or give its path)"),
        )),
    }
}

/// The verdict on `program` when exec'ing it failed with `err` after [`runnable`] passed it
/// (a file that changed in between, or a refusal the judging does not foresee): 127 when
/// the kernel found no file (`ENOENT`, `ENOTDIR`), else 126, with the system's words.
pub fn exec_failure(program: &str, err: &std::io::Error) -> NotRunnable {
    let text = err.to_string();
    let words = text.split(" (os error").next().unwrap_or(&text);
    let name = shown(program);
    match err.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => (127, format!("{name}: command not found ({words})")),
        _ => (126, format!("{name}: not executable ({words})")),
    }
}

/// A command name as a message shows it: as it is, or quoted when it is empty or holds a
/// control character (a newline would break the one line).
fn shown(program: &str) -> String {
    if program.is_empty() || program.chars().any(char::is_control) {
        format!("{program:?}")
    } else {
        program.to_string()
    }
}

/// A regular file this process may execute: execute permission for it (root needs one
/// execute bit) on a file system not mounted noexec, as access(2) judges both.
fn executable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let may = unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0;
    may && p.metadata().is_ok_and(|m| m.is_file())
}

/// Why `p`, which exists, is no file this process may execute.
fn why_not(p: &Path) -> &'static str {
    let Ok(meta) = p.metadata() else {
        return "it cannot be read";
    };
    if meta.is_dir() {
        return "a directory";
    }
    if !meta.is_file() {
        return "not a regular file";
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return "no execute permission";
    }
    if noexec(p) {
        return "its file system is mounted noexec";
    }
    "permission denied"
}

/// Whether the file system holding `p` is mounted noexec.
fn noexec(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs(3) writes only into `stat`, which is large enough for it.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::statvfs(c.as_ptr(), &mut stat) } == 0;
    ok && stat.f_flag & libc::ST_NOEXEC != 0
}

/// The file's first bytes (enough for an interpreter line, an ELF header and, in the
/// programs of a Linux distribution, the ELF loader's name); none when it cannot be read,
/// which leaves the verdict to exec.
fn head(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(4096).read_to_end(&mut buf);
    }
    buf
}

/// ELF `e_machine` of this build's architecture, and of one it also runs (32-bit x86 on
/// x86-64); `None` for an architecture not listed here, which is then not judged.
fn machines() -> Option<&'static [u16]> {
    match std::env::consts::ARCH {
        "x86_64" => Some(&[62, 3]),
        "x86" => Some(&[3]),
        "aarch64" => Some(&[183, 40]),
        "arm" => Some(&[40]),
        "riscv64" => Some(&[243]),
        "powerpc64" => Some(&[21]),
        "s390x" => Some(&[22]),
        _ => None,
    }
}

/// Why a file with execute permission starting with `head` cannot be exec'd, as the
/// kernel would refuse it (pure; `is_executable` looks an interpreter up): an
/// interpreter line whose interpreter is no executable file, an ELF file that is not
/// a program of this machine, or one whose loader (its `PT_INTERP`, e.g.
/// `/lib/ld-musl-x86_64.so.1`) is no executable file. Anything else runs (a file of
/// neither kind is run by `/bin/sh`, as `ip netns exec` and a shell do).
pub fn format_problem(head: &[u8], is_executable: &dyn Fn(&Path) -> bool) -> Option<String> {
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let interpreter = line.split_whitespace().next()?;
        return (!is_executable(Path::new(interpreter))).then(|| {
            format!(
                "bad interpreter {} in its #! line: no such executable file",
                shown(interpreter)
            )
        });
    }
    let elf = Elf::read(head)?;
    if ![2, 3].contains(&elf.kind) {
        return Some(format!(
            "exec format error: an ELF file of type {}, not a program",
            elf.kind
        ));
    }
    let ours = machines()?;
    if !ours.contains(&elf.machine) {
        return Some(format!(
            "exec format error: an ELF program for another machine (e_machine {}; this one runs {})",
            elf.machine, ours[0]
        ));
    }
    let loader = elf.interpreter(head)?;
    (loader.starts_with('/') && !is_executable(Path::new(&loader))).then(|| {
        format!(
            "its ELF loader {} is no executable file: a program built for another system?",
            shown(&loader)
        )
    })
}

/// The parts of an ELF header the verdict needs.
struct Elf {
    wide: bool,
    big_endian: bool,
    kind: u16,
    machine: u16,
}

impl Elf {
    fn read(head: &[u8]) -> Option<Elf> {
        if head.len() < 20 || &head[..4] != b"\x7fELF" {
            return None;
        }
        let mut elf = Elf {
            wide: head[4] == 2,
            big_endian: head[5] == 2,
            kind: 0,
            machine: 0,
        };
        elf.kind = elf.uint(head, 16, 2)? as u16;
        elf.machine = elf.uint(head, 18, 2)? as u16;
        Some(elf)
    }

    /// The unsigned integer of `size` bytes at `at`, in the file's byte order.
    fn uint(&self, head: &[u8], at: usize, size: usize) -> Option<u64> {
        let bytes = head.get(at..at.checked_add(size)?)?;
        let fold = |n: u64, b: &u8| n << 8 | u64::from(*b);
        Some(if self.big_endian {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        })
    }

    /// The path in the program's `PT_INTERP` header, when the program has one and it lies
    /// within `head`.
    fn interpreter(&self, head: &[u8]) -> Option<String> {
        // e_phoff, e_phentsize, e_phnum; in a program header p_offset and p_filesz.
        let (phoff, entsize, count, offset, filesz) = if self.wide {
            (self.uint(head, 32, 8)?, 54, 56, (8, 8), (32, 8))
        } else {
            (self.uint(head, 28, 4)?, 42, 44, (4, 4), (16, 4))
        };
        let entsize = self.uint(head, entsize, 2)? as usize;
        let count = self.uint(head, count, 2)? as usize;
        let phoff = usize::try_from(phoff).ok()?;
        (0..count).find_map(|i| {
            let at = phoff.checked_add(i.checked_mul(entsize)?)?;
            if self.uint(head, at, 4)? != 3 {
                return None; // not PT_INTERP
            }
            let start = usize::try_from(self.uint(head, at + offset.0, offset.1)?).ok()?;
            let len = usize::try_from(self.uint(head, at + filesz.0, filesz.1)?).ok()?;
            let bytes = head.get(start..start.checked_add(len)?)?;
            let path = bytes.split(|&b| b == 0).next()?;
            Some(String::from_utf8_lossy(path).into_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(kind: u16, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        (h[4], h[5]) = (2, 1);
        h[16..18].copy_from_slice(&kind.to_le_bytes());
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h
    }

    /// A 64-bit little-endian program of this machine whose one program header is a
    /// `PT_INTERP` naming `loader`.
    fn elf_with_loader(loader: &str) -> Vec<u8> {
        let mut h = elf(3, machines().unwrap()[0]);
        h[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        h[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        h[56..58].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let mut ph = vec![0u8; 56];
        ph[..4].copy_from_slice(&3u32.to_le_bytes());
        ph[8..16].copy_from_slice(&120u64.to_le_bytes());
        ph[32..40].copy_from_slice(&(loader.len() as u64 + 1).to_le_bytes());
        h.extend(ph);
        h.extend(loader.as_bytes());
        h.push(0);
        h
    }

    #[test]
    fn judges_interpreter_lines_and_elf_headers() {
        let only_sh = |p: &Path| p == Path::new("/bin/sh");
        assert_eq!(format_problem(b"#!/bin/sh -e\necho", &only_sh), None);
        assert_eq!(
            format_problem(b"#! /no/such/interp arg\n", &only_sh).as_deref(),
            Some("bad interpreter /no/such/interp in its #! line: no such executable file")
        );
        assert_eq!(format_problem(b"echo hi\n", &only_sh), None, "run by sh");
        assert_eq!(format_problem(b"", &only_sh), None);
        let ours = machines().unwrap()[0];
        assert_eq!(format_problem(&elf(3, ours), &only_sh), None);
        assert_eq!(
            format_problem(&elf(1, ours), &only_sh).as_deref(),
            Some("exec format error: an ELF file of type 1, not a program")
        );
        assert_eq!(
            format_problem(&elf(2, 0x9026), &only_sh),
            Some(format!(
                "exec format error: an ELF program for another machine (e_machine 36902; this one runs {ours})"
            ))
        );
        assert_eq!(
            format_problem(&elf(2, ours)[..19], &only_sh),
            None,
            "too short to judge"
        );
    }

    #[test]
    fn a_program_whose_loader_is_missing_cannot_run() {
        let musl = elf_with_loader("/lib/ld-musl-x86_64.so.1");
        assert_eq!(
            Elf::read(&musl).unwrap().interpreter(&musl).as_deref(),
            Some("/lib/ld-musl-x86_64.so.1")
        );
        let only_sh = |p: &Path| p == Path::new("/bin/sh");
        assert_eq!(
            format_problem(&musl, &only_sh).as_deref(),
            Some("its ELF loader /lib/ld-musl-x86_64.so.1 is no executable file: a program built for another system?")
        );
        assert_eq!(format_problem(&musl, &|_| true), None);
        // The header cut short of the loader's name: not judged.
        assert_eq!(format_problem(&musl[..125], &only_sh), None);
        // This test program is linked dynamically, and its loader is here.
        let me = head(&std::env::current_exe().unwrap());
        let loader = Elf::read(&me)
            .unwrap()
            .interpreter(&me)
            .expect("a PT_INTERP");
        assert!(executable(Path::new(&loader)), "{loader}");
        assert_eq!(format_problem(&me, &|p| executable(p)), None);
    }

    #[test]
    fn messages_say_not_found_or_not_executable_as_a_shell_does() {
        assert_eq!(
            runnable(""),
            Err((
                127,
                "\"\": command not found (the command name is empty)".into()
            ))
        );
        assert_eq!(
            runnable("/nonexistent/hx-program"),
            Err((
                127,
                "/nonexistent/hx-program: command not found (no such file)".into()
            ))
        );
        assert_eq!(
            runnable("hx-no-such-program\nx"),
            Err((
                127,
                "\"hx-no-such-program\\nx\": command not found (not on PATH: install it or give its path)".into()
            ))
        );
        assert_eq!(
            runnable("/"),
            Err((126, "/: not executable (a directory)".into()))
        );
        assert_eq!(
            runnable("/dev/null"),
            Err((126, "/dev/null: not executable (not a regular file)".into()))
        );
        let me = std::env::current_exe().unwrap();
        let text = me.with_file_name(format!("hx-runnable-{}.txt", std::process::id()));
        std::fs::write(&text, "echo hi\n").unwrap();
        let verdict = runnable(text.to_str().unwrap());
        std::fs::remove_file(&text).unwrap();
        assert_eq!(
            verdict,
            Err((
                126,
                format!("{}: not executable (no execute permission)", text.display())
            ))
        );
    }

    #[test]
    fn a_failed_exec_is_127_for_no_file_and_126_for_the_rest() {
        let no_file = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            exec_failure("x", &no_file),
            (
                127,
                "x: command not found (No such file or directory)".into()
            )
        );
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            exec_failure("/etc/hosts", &denied),
            (126, "/etc/hosts: not executable (Permission denied)".into())
        );
        let busy = std::io::Error::from_raw_os_error(libc::ETXTBSY);
        assert_eq!(
            exec_failure("./a.out", &busy),
            (126, "./a.out: not executable (Text file busy)".into())
        );
    }

    #[test]
    fn this_test_binary_is_runnable() {
        let me = std::env::current_exe().unwrap();
        assert_eq!(runnable(me.to_str().unwrap()), Ok(()));
        assert_eq!(runnable("sh"), Ok(()));
    }
}
