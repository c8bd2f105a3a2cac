//! Types every part of dualbench shares: the address [`Family`], the error value that
//! becomes one line and an exit code at the top ([`Failure`]), and the monotonic
//! [`clock`] that lines up load, kernel samples and packets.

pub mod clock;
mod error;
mod family;

pub use error::{Failure, FailureKind, Result};
pub use family::Family;
