//! Network interfaces by name: the one place dualbench asks the kernel for an interface's
//! index (`if_nametoindex`), for zones of link-local addresses, capture and the wire.

/// The index of interface `name` in the calling thread's network namespace; `None` when
/// there is no such interface (or the name cannot be one: it holds a NUL byte).
pub fn index(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: if_nametoindex reads the NUL-terminated string we own.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => None,
        index => Some(index),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_has_an_index_and_nonsense_has_none() {
        assert!(super::index("lo").is_some_and(|i| i > 0));
        assert_eq!(super::index("no-such-if0"), None);
        assert_eq!(super::index("l\0o"), None);
    }
}
