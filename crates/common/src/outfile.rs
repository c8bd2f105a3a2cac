//! Output files the commands create: a new file, an existing one emptied, or a FIFO that
//! already has a reader (a pipe to Wireshark or a script), opened without the block that
//! `open` puts on a FIFO with none, which no signal could end.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Create (or empty) `path` for writing; `true` if the file did not exist before (so that
/// a command that fails before writing anything can remove it again). A FIFO without a
/// reader is an error saying so, not a wait for one.
pub fn create(path: &Path) -> io::Result<(File, bool)> {
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(file) => return Ok((file, true)),
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        Err(_) => {}
    }
    if !std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
        return Ok((File::create(path)?, false));
    }
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => io::Error::other("a FIFO with no reader: start its reader first"),
            _ => e,
        })?;
    // Blocking again for the writes, as for any file.
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0
        || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok((file, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_fifo_is_refused_without_a_reader_and_written_with_one() {
        let dir = std::env::temp_dir().join(format!("dualbench-outfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let e = create(&fifo).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a FIFO with no reader: start its reader first"
        );
        let mut reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let (mut file, created) = create(&fifo).unwrap();
        assert!(!created);
        file.write_all(b"sample\n").unwrap();
        let mut got = [0u8; 7];
        reader.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"sample\n");
        // A regular file: made, then emptied when made again.
        let plain = dir.join("plain");
        assert!(create(&plain).unwrap().1);
        std::fs::write(&plain, "old").unwrap();
        assert!(!create(&plain).unwrap().1);
        assert_eq!(std::fs::read(&plain).unwrap(), b"");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
