//! [`Limits`]: the resource limiter of one store (memory and table sizes, one instance).

use wasmtime::ResourceLimiter;

use crate::abi::MAX_TABLE_ELEMENTS;
use crate::run::trap::HostTrap;

/// The resource limiter of one store, identical in both allocation modes:
/// - a memory may not start or grow past `memory_bytes` (`internal: memory limit exceeded`; a
///   growth past the module's own declared maximum is refused with `-1` as wasm specifies);
/// - a table may not start or grow past [`MAX_TABLE_ELEMENTS`] (`table.grow` returns `-1`);
/// - one instance, one memory, one table per store.
pub(crate) struct Limits {
    pub(crate) memory_bytes: usize,
}

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            return Err(wasmtime::Error::new(HostTrap::MemoryLimit));
        }
        Ok(maximum.is_none_or(|max| desired <= max))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|max| desired <= max))
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        1
    }

    fn memories(&self) -> usize {
        1
    }
}
