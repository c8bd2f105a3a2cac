//! Files are sent with sendfile(2); where the kernel refuses it (EINVAL or ENOSYS: a file
//! system without it, an old kernel, a sandbox), the server reads each piece into its
//! output and writes that instead. No file system here refuses sendfile, so this test
//! makes the kernel refuse it: a seccomp filter, installed on a thread of its own before
//! the server's workers are started from it (they inherit it; nothing else does), answers
//! every sendfile with ENOSYS. The served bytes must still be exact.
//!
//! Its own test binary, so the filter can reach no other test's threads.

#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

mod common;

use common::{get, pattern, temp_dir, Client};
use dualbench_serve::{start, ServeConfig};
use std::fs::File;
use std::os::fd::AsRawFd;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// Make sendfile fail with ENOSYS on this thread and the threads it starts from now on.
fn refuse_sendfile() {
    use libc::{
        sock_filter, sock_fprog, BPF_ABS, BPF_JEQ, BPF_JMP, BPF_JUMP, BPF_K, BPF_LD, BPF_RET,
        BPF_STMT, BPF_W, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO,
    };
    let (ld, jeq, ret) = (
        (BPF_LD | BPF_W | BPF_ABS) as u16,
        (BPF_JMP | BPF_JEQ | BPF_K) as u16,
        (BPF_RET | BPF_K) as u16,
    );
    // seccomp_data: nr at offset 0, arch at offset 4.
    // SAFETY: BPF_STMT and BPF_JUMP only build plain structs.
    let mut program: Vec<sock_filter> = unsafe {
        vec![
            BPF_STMT(ld, 4),
            BPF_JUMP(jeq, AUDIT_ARCH, 1, 0),
            BPF_STMT(ret, SECCOMP_RET_ALLOW),
            BPF_STMT(ld, 0),
            BPF_JUMP(jeq, libc::SYS_sendfile as u32, 0, 1),
            BPF_STMT(ret, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
            BPF_STMT(ret, SECCOMP_RET_ALLOW),
        ]
    };
    let prog = sock_fprog {
        len: program.len() as u16,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: prctl with these arguments only changes this thread's own attributes; the
    // program outlives the call (the kernel copies it).
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        let set = libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const sock_fprog,
        );
        assert_eq!(set, 0, "seccomp: {}", std::io::Error::last_os_error());
    }
}

#[test]
fn files_are_served_whole_when_sendfile_is_refused() {
    let root = temp_dir("nosendfile");
    // Several 64 KiB pieces and a short last one.
    let big = pattern(300_000);
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::write(root.join("index.html"), b"<p>home</p>").unwrap();

    let server_root = root.clone();
    let server = std::thread::spawn(move || {
        refuse_sendfile();
        // The filter is in force: sendfile from a file to a socket fails as it will for
        // the server's workers.
        let file = File::open(server_root.join("index.html")).unwrap();
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        // SAFETY: both descriptors are open for the duration of the call.
        let sent =
            unsafe { libc::sendfile(a.as_raw_fd(), file.as_raw_fd(), std::ptr::null_mut(), 4) };
        let refused = std::io::Error::last_os_error().raw_os_error();
        assert_eq!((sent, refused), (-1, Some(libc::ENOSYS)));
        start(ServeConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()],
            root: Some(server_root),
            workers: 2,
            ..Default::default()
        })
        .expect("server starts")
    })
    .join()
    .expect("the filter installs and the server starts");

    for &addr in server.addrs() {
        let r = get(addr, "/big.bin");
        assert_eq!(r.length(), Some(big.len()));
        assert!(r.body == big, "body differs from the file");
        // Pipelined on one kept-alive connection: file bodies and an in-memory answer
        // between them come back whole and in order.
        let mut c = Client::connect(addr);
        let req = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
        c.send((req("/big.bin") + &req("/bytes/5") + &req("/index.html")).as_bytes());
        assert!(c.response(false).body == big);
        assert_eq!(c.response(false).body, b"abcde");
        assert_eq!(c.response(false).body, b"<p>home</p>");
    }
    drop(server);
    std::fs::remove_dir_all(&root).unwrap();
}
