//! [`LoadError`]: why a module was refused at load, as a fixed text.

use core::fmt;

use crate::abi::ABI_VERSION;
use crate::load::validate::ValidationError;
use crate::run::trap::HostError;

/// Why a module was refused at load time. `Display` is a fixed text (no wasmtime or wasmparser
/// words): the node puts it in the receipt of a refused deploy (`invalid: module code: <text>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// A validation rule is broken (`validate.rs`; ABI.md, "Validation rules"). Displays as the
    /// rule's text, e.g. `import gamechain_v1.foo is not in ABI v1`.
    Invalid(ValidationError),
    /// The module passed validation but could not be instrumented or compiled. Not expected for
    /// any valid module (the validator's limits are below the engine's); a fixed text.
    Engine,
    /// Instantiating the module (data segments, start function) or `gc_abi_version` failed;
    /// the text is the fixed receipt text of the failure (e.g. `internal: out of fuel`).
    Instantiate(String),
    /// `gc_abi_version` returned something other than 1.
    AbiVersion(i32),
    /// The node could not try (pool or engine failure); loading may be retried. Not the
    /// module's fault: it must not become a receipt. Displays as a fixed text; the details are
    /// in the `HostError` (its `Debug`).
    Host(HostError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(e) => write!(f, "{e}"),
            Self::Engine => f.write_str("the engine cannot compile the module"),
            Self::Instantiate(e) => write!(f, "instantiation failed: {e}"),
            Self::AbiVersion(v) => write!(
                f,
                "gc_abi_version returned {v}, this runtime serves {ABI_VERSION}"
            ),
            Self::Host(_) => f.write_str("node failure while loading the module"),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<ValidationError> for LoadError {
    fn from(e: ValidationError) -> Self {
        Self::Invalid(e)
    }
}
