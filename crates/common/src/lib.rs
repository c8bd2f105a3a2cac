//! Types every part of dualbench shares: the address [`Family`], the error value that
//! becomes one line and an exit code at the top ([`Failure`]), and the monotonic
//! [`clock`] that lines up load, kernel samples and packets, and [`Netns`], the network
//! namespace a thread observes from; [`fds`], the open-file limit and per-worker
//! descriptor tables; [`shell_word`], quoting for the commands it prints; [`sockdiag`], the
//! kernel's list of TCP sockets; [`signals`], the signals that stop a command cleanly; [`netif`], interfaces by name;
//! [`link`], the bounds a shaped link keeps in the testbed and the wire alike; [`outfile`],
//! output files (a FIFO with no reader refused, not waited for); [`procstat`], the one
//! parser of `/proc/PID/stat`; [`stdio`], standard output and error that a full disk or a
//! closed pipe cannot make panic; [`plural`], counts in text for people ("1 run", "2 runs");
//! [`host`], this host's name; [`toml_key`], the key a TOML parse error is about;
//! [`unknown_key`], the one line an unknown key of a plan, topology or profile gets.

pub mod clock;
mod duration;
mod error;
mod family;
pub mod fds;
pub mod host;
pub mod link;
pub mod netif;
pub mod netns;
pub mod outfile;
pub mod procstat;
mod shell;
pub mod signals;
pub mod sockdiag;
pub mod stdio;
pub mod text;
pub mod timer;
pub mod toml_key;
pub mod unknown_key;

pub use duration::{parse_duration, parse_seconds};
pub use error::{panic_message, Failure, FailureKind, Result};
pub use family::Family;
pub use netns::Netns;
pub use shell::shell_word;
pub use text::plural;
