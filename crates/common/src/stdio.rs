//! Standard output and error of every command. A reader that stops early (`dualbench
//! results export … | head -1`) closes the pipe: the command then ends quietly, as `head`
//! asked, instead of failing on the write; a stdout that cannot take the output (a full
//! disk) is a failure naming it. Notes on a closed or full stderr are dropped (there is
//! nowhere left to say anything): `print!` and `eprintln!` panicked there.

use crate::{Failure, Result};
use std::io::{ErrorKind, Write};

/// Write `text` to stdout; a closed stdout ends the output quietly, any other error is a
/// failure naming it.
pub fn print(text: &str) -> Result<()> {
    write_to(&mut std::io::stdout().lock(), text)
}

/// [`print`] to any writer (for tests).
pub fn write_to(out: &mut dyn Write, text: &str) -> Result<()> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Failure::runtime(format!("writing to standard output: {e}"))),
    }
}

/// One line on stderr (progress, notes); a closed stderr is not an error.
pub fn note(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_ends_quietly() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        drop(reader);
        let big = "x".repeat(1 << 20);
        assert!(write_to(&mut writer, &big).is_ok());
        let mut buf = Vec::new();
        write_to(&mut buf, "a\nb\n").unwrap();
        assert_eq!(buf, b"a\nb\n");
    }
}
