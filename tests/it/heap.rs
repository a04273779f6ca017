//! A counting global allocator for the integration tests, so the fuzz targets can assert that a
//! parser's memory stays proportional to its input (a length or count read from the input must
//! never size an allocation). It counts per thread: each test thread measures only its own work.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    /// Bytes this thread has allocated and not freed (frees of other threads' memory make it
    /// drift, which only loosens the measure), and the peak since the last [`Peak::start`].
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(n: isize) {
    // `try_with`: allocations while the thread's locals are being torn down are not counted.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + n;
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// const-initialised thread locals without destructors, so counting never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` (`ptr` came from this allocator, which is
        // the system's), passed on.
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// The peak of this thread's live heap bytes over a stretch of work.
pub struct Peak {
    base: isize,
}

impl Peak {
    pub fn start() -> Peak {
        let base = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(base));
        Peak { base }
    }

    /// The most bytes held at once since `start`, above what was held then.
    pub fn bytes(&self) -> usize {
        PEAK.with(Cell::get).saturating_sub(self.base).max(0) as usize
    }
}
