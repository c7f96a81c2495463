//! [`Modules`]: the guest modules a chain runs, loaded once from code bytes verified against
//! their code hashes, in id order.
//!
//! The order matters for consensus: every module's `end_block` runs after a block's
//! transactions in ascending id order (byte order of the id), and the end-of-block receipts are
//! committed in that order (see `transition.rs`). A `BTreeMap` gives that order by
//! construction.
//!
//! Which modules export `gc_end_block` is read from the module's export section here (ABI.md:
//! the export is optional). Only those get an end-of-block call and a receipt.

use core::fmt;
use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::chain::Genesis;
use crate::engine::Runtime;
use crate::module::{LoadError, WasmModule};

/// The optional end-of-block export of ABI v1.
const END_BLOCK_EXPORT: &str = "gc_end_block";

/// One loaded module.
#[derive(Debug, Clone)]
pub struct ModuleEntry {
    /// The compiled module (its id and code hash are [`WasmModule::id`] and
    /// [`WasmModule::code_hash`]).
    pub module: Arc<WasmModule>,
    /// Whether it exports `gc_end_block` (only such modules run at end of block).
    pub has_end_block: bool,
}

/// The chain's modules by id, in ascending id order.
#[derive(Debug, Clone, Default)]
pub struct Modules {
    map: BTreeMap<String, ModuleEntry>,
}

/// Why a module could not be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// Genesis names a code hash for which no code was given.
    MissingCode {
        /// The module id.
        id: String,
        /// The code hash genesis names.
        code_hash: String,
    },
    /// The code bytes do not hash to the expected code hash.
    CodeHash {
        /// The module id.
        id: String,
        /// The expected code hash.
        expected: String,
        /// SHA-256 of the bytes given.
        found: String,
    },
    /// A module with this id is registered already.
    Duplicate(String),
    /// The code is not a wasm binary whose export section can be read.
    Malformed(String),
    /// The runtime refused the module.
    Load {
        /// The module id.
        id: String,
        /// Why.
        error: LoadError,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingCode { id, code_hash } => {
                write!(f, "module `{id}`: no code with hash {code_hash}")
            }
            Self::CodeHash {
                id,
                expected,
                found,
            } => {
                write!(
                    f,
                    "module `{id}`: code hashes to {found}, expected {expected}"
                )
            }
            Self::Duplicate(id) => write!(f, "module `{id}` is registered twice"),
            Self::Malformed(id) => write!(f, "module `{id}`: not a readable wasm binary"),
            Self::Load { id, error } => write!(f, "module `{id}` {error}"),
        }
    }
}

impl std::error::Error for RegistryError {}

impl Modules {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads every module genesis lists: its code is `codes[code_hash]` (code hash: lowercase hex
    /// SHA-256 of the bytes), checked against the hash, compiled into `runtime` under the
    /// genesis id.
    pub fn from_genesis(
        runtime: &Arc<Runtime>,
        genesis: &Genesis,
        codes: &BTreeMap<String, Vec<u8>>,
    ) -> Result<Self, RegistryError> {
        let mut modules = Self::new();
        for m in &genesis.modules {
            let wasm = codes
                .get(&m.code_hash)
                .ok_or_else(|| RegistryError::MissingCode {
                    id: m.id.clone(),
                    code_hash: m.code_hash.clone(),
                })?;
            let found = hex::encode(Sha256::digest(wasm));
            if found != m.code_hash {
                return Err(RegistryError::CodeHash {
                    id: m.id.clone(),
                    expected: m.code_hash.clone(),
                    found,
                });
            }
            if modules.map.contains_key(&m.id) {
                return Err(RegistryError::Duplicate(m.id.clone()));
            }
            let module =
                WasmModule::new(runtime, &m.id, wasm).map_err(|error| RegistryError::Load {
                    id: m.id.clone(),
                    error,
                })?;
            modules.insert(Arc::new(module), wasm)?;
        }
        Ok(modules)
    }

    /// Registers an already loaded `module` under its id; `wasm` must be the bytes it was loaded
    /// from (they are checked against its code hash, and its exports are read from them).
    pub fn insert(&mut self, module: Arc<WasmModule>, wasm: &[u8]) -> Result<(), RegistryError> {
        let id = module.id().to_string();
        let found = hex::encode(Sha256::digest(wasm));
        if found != module.code_hash() {
            return Err(RegistryError::CodeHash {
                id,
                expected: module.code_hash().to_string(),
                found,
            });
        }
        if self.map.contains_key(&id) {
            return Err(RegistryError::Duplicate(id));
        }
        let has_end_block = exports_function(wasm, END_BLOCK_EXPORT)
            .ok_or_else(|| RegistryError::Malformed(id.clone()))?;
        self.map.insert(
            id,
            ModuleEntry {
                module,
                has_end_block,
            },
        );
        Ok(())
    }

    /// The module registered as `id`.
    pub fn get(&self, id: &str) -> Option<&Arc<WasmModule>> {
        self.map.get(id).map(|e| &e.module)
    }

    /// The entry registered as `id`.
    pub fn entry(&self, id: &str) -> Option<&ModuleEntry> {
        self.map.get(id)
    }

    /// Every entry, in ascending id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ModuleEntry)> {
        self.map.iter().map(|(id, e)| (id.as_str(), e))
    }

    /// The modules that export `gc_end_block`, in ascending id order.
    pub fn with_end_block(&self) -> impl Iterator<Item = &Arc<WasmModule>> {
        self.map
            .values()
            .filter(|e| e.has_end_block)
            .map(|e| &e.module)
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Reads an unsigned LEB128 `u32` at `*pos`.
fn leb_u32(bytes: &[u8], pos: &mut usize) -> Option<u32> {
    let mut result: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        result |= u32::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(result);
        }
    }
    None
}

/// Whether the wasm binary `wasm` exports a function named `name`; `None` when the header or the
/// section layout cannot be read.
pub(crate) fn exports_function(wasm: &[u8], name: &str) -> Option<bool> {
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" || wasm[4..8] != [1, 0, 0, 0] {
        return None;
    }
    let mut pos = 8;
    while pos < wasm.len() {
        let id = wasm[pos];
        pos += 1;
        let size = leb_u32(wasm, &mut pos)? as usize;
        let end = pos.checked_add(size).filter(|&e| e <= wasm.len())?;
        if id == 7 {
            let section = &wasm[..end];
            let mut p = pos;
            let count = leb_u32(section, &mut p)?;
            for _ in 0..count {
                let len = leb_u32(section, &mut p)? as usize;
                let field = section.get(p..p.checked_add(len)?)?;
                p += len;
                let kind = *section.get(p)?;
                p += 1;
                leb_u32(section, &mut p)?;
                if kind == 0 && field == name.as_bytes() {
                    return Some(true);
                }
            }
            return Some(false);
        }
        pos = end;
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_function_exports() {
        let with = wat::parse_str(
            r#"(module (memory (export "memory") 1) (func (export "gc_end_block") (result i32) i32.const 0)
                (func (export "gc_apply") (result i32) i32.const 0))"#,
        )
        .unwrap();
        assert_eq!(exports_function(&with, "gc_end_block"), Some(true));
        assert_eq!(exports_function(&with, "gc_apply"), Some(true));
        assert_eq!(
            exports_function(&with, "memory"),
            Some(false),
            "a memory is not a function"
        );
        assert_eq!(exports_function(&with, "gc_view"), Some(false));
        let without =
            wat::parse_str(r#"(module (func (export "gc_end_blocks") (result i32) i32.const 0))"#)
                .unwrap();
        assert_eq!(exports_function(&without, "gc_end_block"), Some(false));
        assert_eq!(exports_function(b"(module)", "gc_end_block"), None);
        assert_eq!(exports_function(&with[..6], "gc_end_block"), None);
        let mut bad_size = with[..8].to_vec();
        bad_size.extend_from_slice(&[7, 0x7f, 1]);
        assert_eq!(
            exports_function(&bad_size, "gc_end_block"),
            None,
            "a section longer than the binary"
        );
    }

    #[test]
    fn leb_reads_multi_byte_values() {
        let mut p = 0;
        assert_eq!(leb_u32(&[0xe5, 0x8e, 0x26], &mut p), Some(624_485));
        assert_eq!(p, 3);
        let mut p = 0;
        assert_eq!(leb_u32(&[0x80, 0x80], &mut p), None);
    }
}
