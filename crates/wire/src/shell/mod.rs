//! The I/O shell around the pure core: AF_PACKET sockets on the two interfaces
//! ([`socket`]), a pool of reusable frame buffers ([`pool`]), epoll and a
//! nanosecond timerfd ([`poll`]), the one-wire-per-interface claim ([`lock`]), and the
//! event loop that drives the core with the monotonic clock ([`run`]).

pub mod lock;
pub mod poll;
pub mod pool;
pub mod run;
pub mod socket;
