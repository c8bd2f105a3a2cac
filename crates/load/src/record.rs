//! The one record type that carries a request's life, from its intended start to how it
//! ended. Workers fill these in; histograms, counts, reports and record files read them.
//! [`AbSample`] is the part of it that ab's `-g` and `-e` files need.

use dualbench_common::Family;
use serde::Serialize;

/// How a request (and, when it was the connection's last, its connection) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A complete response was received (whatever its status code).
    Normal,
    /// Reset by the peer while connecting (e.g. a full accept queue).
    ResetConnect,
    /// Reset while the request was being sent.
    ResetRequest,
    /// Reset while waiting for or reading the response.
    ResetResponse,
    /// The connection was not established within the timeout.
    TimeoutConnect,
    /// The response did not complete within the timeout.
    TimeoutResponse,
    /// Connection refused (nothing listening).
    Refused,
    /// No route, network or host unreachable, or the address cannot be used.
    Unreachable,
    /// A malformed, truncated or empty response.
    ProtocolError,
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::Normal,
        Outcome::ResetConnect,
        Outcome::ResetRequest,
        Outcome::ResetResponse,
        Outcome::TimeoutConnect,
        Outcome::TimeoutResponse,
        Outcome::Refused,
        Outcome::Unreachable,
        Outcome::ProtocolError,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// ANMA's class: NORMAL, RESET, TIMEOUT, REFUSED, UNREACHABLE, PROTOCOL_ERROR.
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Normal => "NORMAL",
            Outcome::ResetConnect | Outcome::ResetRequest | Outcome::ResetResponse => "RESET",
            Outcome::TimeoutConnect | Outcome::TimeoutResponse => "TIMEOUT",
            Outcome::Refused => "REFUSED",
            Outcome::Unreachable => "UNREACHABLE",
            Outcome::ProtocolError => "PROTOCOL_ERROR",
        }
    }

    /// The phase a reset or timeout happened in, if any: connect, request or response.
    pub fn phase(self) -> Option<&'static str> {
        match self {
            Outcome::ResetConnect | Outcome::TimeoutConnect => Some("connect"),
            Outcome::ResetRequest => Some("request"),
            Outcome::ResetResponse | Outcome::TimeoutResponse => Some("response"),
            _ => None,
        }
    }

    /// `"normal"`, `"reset_connect"`, ... as in record files.
    pub fn key(self) -> &'static str {
        match self {
            Outcome::Normal => "normal",
            Outcome::ResetConnect => "reset_connect",
            Outcome::ResetRequest => "reset_request",
            Outcome::ResetResponse => "reset_response",
            Outcome::TimeoutConnect => "timeout_connect",
            Outcome::TimeoutResponse => "timeout_response",
            Outcome::Refused => "refused",
            Outcome::Unreachable => "unreachable",
            Outcome::ProtocolError => "protocol_error",
        }
    }

    pub fn is_normal(self) -> bool {
        self == Outcome::Normal
    }
}

/// One request's life. Times are nanoseconds since the run's start (on the shared
/// monotonic clock: add [`crate::summary::RunMeta::start_monotonic_ns`] for absolute);
/// a phase that did not happen is 0 (`connect_ns` is 0 on a reused connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Slot number in the run's schedule (0-based); gives the family interleaving.
    pub slot: u64,
    pub family: Family,
    /// Index of the target (address) in the run's target list.
    pub target: u16,
    /// Connection this request used, unique within the run.
    pub conn: u64,
    /// True when the connection had already carried a request (keep-alive reuse).
    pub reused: bool,
    /// When the request was meant to start (open loop); equals `start_ns` in closed loop.
    pub intended_ns: u64,
    /// When work on the request began (connect start, or write start on a reused connection).
    pub start_ns: u64,
    /// Connection establishment time (0 when reused).
    pub connect_ns: u64,
    /// When the request had been written completely.
    pub sent_ns: u64,
    /// When the first response byte arrived (0 if none did).
    pub first_byte_ns: u64,
    /// When the request ended (response complete, or the error was seen).
    pub end_ns: u64,
    /// HTTP status code (0 when no status line was received).
    pub status: u16,
    /// Response bytes received: headers and body as on the wire.
    pub bytes: u64,
    /// Response body bytes (after de-chunking).
    pub body_bytes: u64,
    pub outcome: Outcome,
}

impl Record {
    /// Time from the intended start to the end: the coordinated-omission-corrected latency.
    pub fn latency_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.intended_ns)
    }

    /// Time from the actual start to the end (ab's "Total").
    pub fn service_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Time from the request being sent to its first response byte (ab's "Waiting").
    pub fn waiting_ns(&self) -> u64 {
        if self.first_byte_ns == 0 {
            0
        } else {
            self.first_byte_ns.saturating_sub(self.sent_ns)
        }
    }

    /// Time from the first response byte to the end of the response.
    pub fn transfer_ns(&self) -> u64 {
        if self.first_byte_ns == 0 {
            0
        } else {
            self.end_ns.saturating_sub(self.first_byte_ns)
        }
    }
}

/// What ab keeps of each complete request, for its `-g` (gnuplot) and `-e` (CSV) files:
/// when it started and how long its phases took, in nanoseconds. 32 bytes a request, kept
/// only when one of those files is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbSample {
    /// When work on the request began, since the run's start (ab's `starttime`).
    pub start_ns: u64,
    /// Connection establishment, 0 on a reused connection (ab's `ctime`).
    pub connect_ns: u64,
    /// Start to end, as the report's Total: from the intended start in open loop (ab's `ttime`).
    pub total_ns: u64,
    /// Request written to first response byte (ab's `wait`).
    pub waiting_ns: u64,
}

impl AbSample {
    pub fn of(r: &Record) -> AbSample {
        AbSample {
            start_ns: r.start_ns,
            connect_ns: r.connect_ns,
            total_ns: r.latency_ns(),
            waiting_ns: r.waiting_ns(),
        }
    }
}
