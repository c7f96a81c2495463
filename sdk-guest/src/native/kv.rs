//! [`Kv`]: the sorted key-value store with raw string keys that every native [`Ctx`](crate::Ctx)
//! runs over ([`KvCtx`](crate::KvCtx), the bank of `ledger.rs`), and how every store reads as a
//! view's state ([`StateRead`], at most [`MAX_SCAN_LIMIT`] entries a scan).

use crate::StateRead;

/// Most entries one `scan`/`scan_raw` returns, whatever limit the module asks for (ABI.md).
pub const MAX_SCAN_LIMIT: usize = 1024;

/// A sorted key-value store with raw (unscoped) string keys.
pub trait Kv {
    /// The value at `key`.
    fn kv_get(&self, key: &str) -> Option<Vec<u8>>;
    /// Write `value` at `key`.
    fn kv_put(&mut self, key: &str, value: Vec<u8>);
    /// Remove `key` (no-op when absent).
    fn kv_delete(&mut self, key: &str);
    /// Entries whose keys start with `prefix`, in ascending byte order of the key, strictly after
    /// `start_after` (a whole key) when given, at most `limit`.
    fn kv_scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)>;

    /// What [`Ctx::call_code`](crate::Ctx::call_code) answers over this store: by default no
    /// code is found (a native store has no wasm engine; [`crate::MockKv`] runs code registered
    /// natively).
    fn kv_call_code(
        &self,
        code_hash: &[u8; 32],
        entry: &str,
        input: &[u8],
        fuel: u64,
    ) -> Result<Vec<u8>, crate::PureError> {
        let _ = (code_hash, entry, input, fuel);
        Err(crate::PureError::NotFound)
    }

    /// What [`Ctx::module_code_hash`](crate::Ctx::module_code_hash) answers over this store:
    /// by default `None`.
    fn kv_module_code_hash(&self, module: &str) -> Option<[u8; 32]> {
        let _ = module;
        None
    }
}

/// Every store is readable as a view's state.
impl<K: Kv + ?Sized> StateRead for K {
    fn read_raw(&self, key: &str) -> Option<Vec<u8>> {
        self.kv_get(key)
    }
    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.kv_scan(prefix, start_after, limit.min(MAX_SCAN_LIMIT))
    }
}
