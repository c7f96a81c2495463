//! What instrumentation gives the host: the [`Plan`] by which an instance is reset (export
//! names, initial size, whether it may be reused at all), and the chunks of the `dirty` mask
//! ([`CHUNKS`], [`chunk_mask`], the [`STORE_SPILL`] a store may run past its chunk).

/// Chunks tracked by the `dirty` mask.
pub(crate) const CHUNKS: u32 = 64;

/// Bytes past a chunk's end that a scalar store starting inside it may write (an 8-byte store
/// at the chunk's last byte).
pub(crate) const STORE_SPILL: usize = 7;

/// The most mutable globals of a module whose instances are reused (each is reset through a
/// host call after every call; a Rust module has one, the stack pointer).
pub(super) const MAX_RESET_GLOBALS: usize = 256;

/// What the host needs to reset an instance of an instrumented module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The export name of the `dirty` global.
    pub(crate) dirty_export: String,
    /// The export name of the stack-height global (`stack.rs`).
    pub(crate) stack_export: String,
    /// The export name of the fuel counter global (`meter.rs`).
    pub(crate) fuel_export: String,
    /// The export name of the module's start function, which the host calls right after
    /// instantiation (the start section is removed, so that a trap in it can be told apart
    /// from the stack limit; see `module.rs`). `None` without a start function.
    pub(crate) start_export: Option<String>,
    /// The export names of the module's mutable globals, in index order.
    pub(crate) global_exports: Vec<String>,
    /// The memory's initial size in bytes.
    pub(crate) initial_bytes: usize,
    /// `log2` of the chunk size.
    pub(crate) chunk_shift: u32,
    /// `Ok` when an instance may be reset and reused; otherwise why not.
    pub(crate) reuse: Result<(), String>,
}

impl Plan {
    /// The byte ranges to restore for the chunks in `mask`: each run of consecutive chunks, plus
    /// the spill of a store at its last byte, clipped to the initial memory.
    pub(crate) fn restore_ranges(
        &self,
        mut mask: u64,
    ) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        std::iter::from_fn(move || {
            if mask == 0 {
                return None;
            }
            let lo = mask.trailing_zeros();
            let end = lo + (mask >> lo).trailing_ones();
            mask = if end >= 64 {
                0
            } else {
                mask & (u64::MAX << end)
            };
            let start = (lo as usize) << self.chunk_shift;
            let stop = ((end as usize) << self.chunk_shift) + STORE_SPILL;
            Some(start.min(self.initial_bytes)..stop.min(self.initial_bytes))
        })
    }
}

/// The chunks (of `1 << shift` bytes) holding bytes `range`, as a `dirty` mask; bytes at or past
/// chunk 63 count as chunk 63. An empty range is no chunk.
pub(crate) fn chunk_mask(range: &std::ops::Range<usize>, shift: u32) -> u64 {
    if range.is_empty() {
        return 0;
    }
    let lo = (range.start >> shift).min(63) as u32;
    let hi = ((range.end - 1) >> shift).min(63) as u32;
    let upper = if hi == 63 {
        u64::MAX
    } else {
        (1u64 << (hi + 1)) - 1
    };
    upper & !((1u64 << lo) - 1)
}
