//! Whether `testbed exec` can run a program, decided before `ip netns exec` is exec'd: that
//! one exits 1 for every program it cannot start, where a shell says 127 (not found) or
//! 126 (found but cannot run: no execute permission, an interpreter line naming no
//! interpreter, an ELF file of another machine). The namespace shares the file system, so
//! what is found here is found there. Reading a file's first bytes is kept apart from
//! judging them ([`format_problem`]).

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The shell's exit code for a program that cannot run, and why, in one line.
pub type NotRunnable = (i32, String);

/// Whether `program` can be run as `ip netns exec` would run it (a path, or a name on
/// `PATH`): else the shell's exit code for it and why.
pub fn runnable(program: &str) -> Result<(), NotRunnable> {
    if program.is_empty() {
        // Joined to each PATH folder it named the folder itself ("/usr/bin/ is not an
        // executable file", 126); a shell says "command not found" (127).
        return Err((127, "command not found: the command name is empty".into()));
    }
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .collect()
    };
    if let Some(found) = candidates.iter().find(|c| executable(c)) {
        return match format_problem(&head(found), &|p| executable(p)) {
            Some(why) => Err((126, format!("{} cannot run: {why}", found.display()))),
            None => Ok(()),
        };
    }
    match candidates.iter().find(|c| c.exists()) {
        Some(c) => Err((126, format!("{} is not an executable file", c.display()))),
        None if program.contains('/') => Err((127, format!("{program}: no such file"))),
        None => Err((
            127,
            format!("command not found: {program} (not on PATH: install it or give its path)"),
        )),
    }
}

fn executable(p: &Path) -> bool {
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The file's first bytes (enough for an interpreter line or an ELF header); none when
/// it cannot be read, which leaves the verdict to exec.
fn head(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(512).read_to_end(&mut buf);
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
/// interpreter line whose interpreter is no executable file, or an ELF file that is not
/// a program of this machine. Anything else runs (a file of neither kind is run by
/// `/bin/sh`, as `ip netns exec` and a shell do).
pub fn format_problem(head: &[u8], is_executable: &dyn Fn(&Path) -> bool) -> Option<String> {
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let interpreter = line.split_whitespace().next()?;
        return (!is_executable(Path::new(interpreter))).then(|| {
            format!("bad interpreter {interpreter} (no such executable file) in its #! line")
        });
    }
    if head.len() < 20 || &head[..4] != b"\x7fELF" {
        return None;
    }
    let half = |at: usize| match head[5] {
        2 => u16::from_be_bytes([head[at], head[at + 1]]),
        _ => u16::from_le_bytes([head[at], head[at + 1]]),
    };
    let (kind, machine) = (half(16), half(18));
    if ![2, 3].contains(&kind) {
        return Some(format!(
            "exec format error (an ELF file of type {kind}, not a program)"
        ));
    }
    let ours = machines()?;
    (!ours.contains(&machine)).then(|| {
        format!(
            "exec format error (an ELF program for another machine: e_machine {machine}, this one runs {})",
            ours[0]
        )
    })
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

    #[test]
    fn judges_interpreter_lines_and_elf_headers() {
        let only_sh = |p: &Path| p == Path::new("/bin/sh");
        assert_eq!(format_problem(b"#!/bin/sh -e\necho", &only_sh), None);
        assert_eq!(
            format_problem(b"#! /no/such/interp arg\n", &only_sh).as_deref(),
            Some("bad interpreter /no/such/interp (no such executable file) in its #! line")
        );
        assert_eq!(format_problem(b"echo hi\n", &only_sh), None, "run by sh");
        assert_eq!(format_problem(b"", &only_sh), None);
        let ours = machines().unwrap()[0];
        assert_eq!(format_problem(&elf(3, ours), &only_sh), None);
        assert_eq!(
            format_problem(&elf(1, ours), &only_sh).as_deref(),
            Some("exec format error (an ELF file of type 1, not a program)")
        );
        assert_eq!(
            format_problem(&elf(2, 0x9026), &only_sh),
            Some(format!(
                "exec format error (an ELF program for another machine: e_machine 36902, this one runs {ours})"
            ))
        );
        assert_eq!(
            format_problem(&elf(2, ours)[..19], &only_sh),
            None,
            "too short to judge"
        );
    }

    #[test]
    fn an_empty_command_name_is_not_found() {
        assert_eq!(
            runnable(""),
            Err((127, "command not found: the command name is empty".into()))
        );
    }

    #[test]
    fn this_test_binary_is_runnable() {
        let me = std::env::current_exe().unwrap();
        assert_eq!(runnable(me.to_str().unwrap()), Ok(()));
    }
}
