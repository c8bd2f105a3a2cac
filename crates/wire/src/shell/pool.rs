//! Frame buffers: one allocation of fixed-size slots, handed out by index and returned
//! when a frame is sent or dropped, so the steady state allocates nothing. Slots are
//! page-aligned in size; the kernel only backs the pages a frame actually touches.

use crate::core::Frames;

/// Room for a vnet header and the largest GSO frame (64 KiB + headers), in whole pages.
pub const SLOT_BYTES: usize = 17 * 4096;

/// A slot holding one frame: its index and its length (vnet header included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub index: u32,
    pub len: u32,
    /// When the frame arrived (CLOCK_MONOTONIC ns), to measure the delay actually added.
    pub arrived: u64,
}

pub struct Pool {
    memory: Vec<u8>,
    free: Vec<u32>,
}

impl Pool {
    /// `slots` buffers in one zeroed allocation, or `None` when the system refuses that
    /// much address space (`--buffers 1000000` is 70 GB of it): an error to report, where
    /// `vec![0; n]` would abort the process.
    pub fn new(slots: usize) -> Option<Self> {
        Some(Pool {
            memory: zeroed(slots.checked_mul(SLOT_BYTES)?)?,
            free: (0..slots as u32).rev().collect(),
        })
    }

    pub fn take(&mut self) -> Option<u32> {
        self.free.pop()
    }

    pub fn give(&mut self, index: u32) {
        self.free.push(index);
    }

    pub fn free(&self) -> usize {
        self.free.len()
    }

    /// Start of slot `index`, for handing to the kernel.
    pub fn ptr(&mut self, index: u32) -> *mut u8 {
        self.memory[index as usize * SLOT_BYTES..].as_mut_ptr()
    }

    pub fn bytes(&self, slot: &Slot) -> &[u8] {
        let start = slot.index as usize * SLOT_BYTES;
        &self.memory[start..start + slot.len as usize]
    }
}

/// `bytes` zero bytes, left to the kernel to back as they are touched; `None` when the
/// allocator refuses.
fn zeroed(bytes: usize) -> Option<Vec<u8>> {
    if bytes == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(bytes).ok()?;
    // SAFETY: the layout's size is above zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `bytes` u8s, all
    // of them initialised (zero); the Vec takes ownership with that capacity.
    Some(unsafe { Vec::from_raw_parts(ptr, bytes, bytes) })
}

impl Frames<Slot> for Pool {
    fn copy(&mut self, item: &Slot) -> Option<Slot> {
        let index = self.take()?;
        let (from, to) = (
            item.index as usize * SLOT_BYTES,
            index as usize * SLOT_BYTES,
        );
        self.memory.copy_within(from..from + item.len as usize, to);
        Some(Slot { index, ..*item })
    }

    fn recycle(&mut self, item: Slot) {
        self.give(item.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_copies_carry_the_bytes() {
        let mut pool = Pool::new(2).unwrap();
        let a = pool.take().unwrap();
        // SAFETY: slot a has SLOT_BYTES of room.
        unsafe { std::ptr::copy_nonoverlapping(b"hello".as_ptr(), pool.ptr(a), 5) };
        let slot = Slot {
            index: a,
            len: 5,
            arrived: 1,
        };
        let twin = pool.copy(&slot).unwrap();
        assert_eq!(pool.bytes(&twin), b"hello");
        assert_eq!(pool.copy(&slot), None, "only two slots");
        pool.recycle(twin);
        assert_eq!(pool.free(), 1);
        assert_eq!(pool.take(), Some(twin.index));
    }

    /// `--buffers 1000000` (70 GB of address space) aborted the wire with "memory
    /// allocation failed" and a backtrace; a refused allocation is now a value.
    #[test]
    fn a_pool_larger_than_the_address_space_is_refused_not_aborted() {
        // 2^44 slots of 68 KiB: 17 × 2^56 bytes, beyond any machine's address space
        // (2^57 bytes even with 5-level page tables).
        assert!(Pool::new(1 << 44).is_none());
        assert!(Pool::new(usize::MAX).is_none(), "the byte count overflows");
        assert_eq!(Pool::new(16).unwrap().free(), 16);
    }
}
