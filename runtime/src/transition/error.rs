//! Why a transaction cannot be included ([`TxRejection`]) and why the transition failed
//! ([`TransitionError`]).

use super::*;

/// Why a transaction cannot be in a block (it makes the block invalid; the sequencer leaves it
/// out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxRejection {
    /// A stateless check failed: size, shape, chain id, sender address or signature.
    Check(TxError),
    /// The nonce is not the sender's current nonce (`found < expected`: already used;
    /// `found > expected`: too early).
    Nonce {
        /// The sender's current nonce.
        expected: u64,
        /// The transaction's.
        found: u64,
    },
    /// The sender's nonce is `u64::MAX`: it can send nothing more.
    NonceExhausted,
    /// Including it would take the block over one of its bounds (`block_limits.rs`): a
    /// sequencer leaves it for a later block; a block that includes it is invalid.
    BlockFull {
        /// Which bound: `fuel`, `bytes written`, `bytes of events`, `bytes of transaction
        /// bodies`, or genesis's `deploys` / `bytes of deploy code` (`chain::block_caps`).
        what: &'static str,
        /// Its limit.
        limit: u64,
    },
    /// On a chain with fees, the sender's GOLD balance after the transaction is below the
    /// minimum fee (`fees.rs`): a sequencer leaves it out; a block that includes it is invalid.
    CannotPayFee {
        /// The schedule's minimum fee, base units.
        minimum: u128,
        /// What the sender would hold, base units.
        balance: u128,
    },
    /// A `session_game` its session does not allow (`session.rs`): no such session, expired,
    /// out of scope, cap used up. A sequencer drops it; a block that includes it is invalid.
    Session(SessionRefusal),
}

impl fmt::Display for TxRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Check(e) => write!(f, "{e}"),
            Self::Nonce { expected, found } => {
                write!(f, "nonce is {found}, the sender's next nonce is {expected}")
            }
            Self::NonceExhausted => f.write_str("the sender's nonce is exhausted"),
            Self::BlockFull { what, limit } => write!(
                f,
                "it would take the block over its bound of {limit} {what}"
            ),
            Self::CannotPayFee { minimum, balance } => write!(
                f,
                "the sender cannot pay the minimum fee of {minimum} GOLD base units (it holds {balance})"
            ),
            Self::Session(r) => write!(f, "{r}"),
        }
    }
}

/// Why a block could not be executed. Nothing of it may be committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionError {
    /// Transaction `index` (0-based, block order) cannot be included: the block is invalid.
    InvalidTx {
        /// Its position in the block.
        index: usize,
        /// Its txid.
        txid: String,
        /// Why.
        reason: TxRejection,
    },
    /// The block does not follow the given parent (state hash, time or height).
    BadParent(String),
    /// The block's randomness beacon is missing, unexpected or not the genesis key's signature
    /// of its height (`chain::beacon`).
    BadBeacon(String),
    /// A chain key holds a value this code never writes (a node's storage is corrupt).
    CorruptState {
        /// The key.
        key: String,
    },
    /// The node failed (wasm engine, instance pool): retry or stop; no receipt is produced.
    Host(HostError),
}

impl fmt::Display for TransitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidTx {
                index,
                txid,
                reason,
            } => write!(f, "transaction {index} ({txid}) is invalid: {reason}"),
            Self::BadParent(m) => write!(f, "block does not follow its parent: {m}"),
            Self::BadBeacon(m) => write!(f, "bad beacon: {m}"),
            Self::CorruptState { key } => write!(f, "state key `{key}` holds a malformed value"),
            Self::Host(e) => write!(f, "node failure: {e}"),
        }
    }
}

impl std::error::Error for TransitionError {}

impl From<HostError> for TransitionError {
    fn from(e: HostError) -> Self {
        Self::Host(e)
    }
}

impl From<ResolveError> for TransitionError {
    fn from(e: ResolveError) -> Self {
        match e {
            ResolveError::CorruptState { key } => Self::CorruptState { key },
            ResolveError::Host(e) => Self::Host(e),
        }
    }
}
