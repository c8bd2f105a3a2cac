//! Bounds a shaped link keeps wherever it is described: in a testbed's topology file and
//! in `dualbench wire`'s link spec, so a spec the testbed writes is one the wire reads and
//! a delay the wire refuses is refused by the testbed with the same words.

/// The longest delay, or jitter, of one direction of a link: 60 s.
pub const MAX_DELAY_NS: u64 = 60_000_000_000;

/// Why delays stop at [`MAX_DELAY_NS`], for error messages.
pub const MAX_DELAY_WHY: &str = "delays and jitter are at most 60s (a longer one is almost surely a slip of unit, and nothing would cross such a link: TCP gives up on a connection after about 2 minutes without an answer, and every frame in flight holds a buffer)";
