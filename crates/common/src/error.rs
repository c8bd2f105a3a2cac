//! Errors as values: every subcommand returns `Result<(), Failure>`, and `main` turns a
//! failure into one line on stderr and an exit code (2 for usage, 1 at run time).

use std::fmt;

/// Whether the user asked for something impossible (exit 2) or the run failed (exit 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Bad flags, bad files, a request the machine cannot satisfy: exit code 2.
    Usage,
    /// Something went wrong while running: exit code 1.
    Runtime,
}

/// One clear line naming the cause and, where possible, what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

pub type Result<T, E = Failure> = std::result::Result<T, E>;

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            kind: FailureKind::Usage,
            message: message.into(),
        }
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Failure {
            kind: FailureKind::Runtime,
            message: message.into(),
        }
    }

    /// Prefix the message with what was being done: `"reading plan.toml: ..."`.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    pub fn exit_code(&self) -> i32 {
        match self.kind {
            FailureKind::Usage => 2,
            FailureKind::Runtime => 1,
        }
    }
}

/// Always one line: a message that spans several (a parser's, such as toml's "invalid
/// array" over "expected `]`") has its lines joined with ": ".
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines = self
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty());
        if let Some(first) = lines.next() {
            f.write_str(first)?;
        }
        for line in lines {
            write!(f, ": {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

/// The message a panic carried (`panic!` gives a `&str` or a `String`), or "" for another
/// payload.
pub fn panic_message(payload: &dyn std::any::Any) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("")
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::runtime(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::Failure;

    #[test]
    fn a_failure_prints_as_one_line() {
        let f = Failure::usage("plan.toml:2: invalid array\nexpected `]`\n");
        assert_eq!(f.to_string(), "plan.toml:2: invalid array: expected `]`");
        assert_eq!(Failure::runtime("one line").to_string(), "one line");
    }
}
