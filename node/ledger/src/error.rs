//! [`ChainError`]: why the node's core refused or failed a request, in the core's own terms.
//! `server/api_error.rs` maps each to its HTTP status and API code (`node/API.md`, "Errors").

use core::fmt;

use gamechain_chain::{SessionRefusal, TxError};
use gamechain_sdk::ActionError;

use crate::mempool::Refusal;

/// A refusal or failure of the shared core's (`chain.rs`) requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainError {
    /// The transaction failed a stateless check (size, JSON shape, chain id, address,
    /// signature).
    Tx(TxError),
    /// A deploy from a sender this node's `deploy` policy does not admit.
    DeployForbidden {
        /// The sender.
        from: String,
    },
    /// An upgrade-family action (`deploy` to an existing module, `cancel_upgrade`,
    /// `set_policy`) the module's record refuses: its policy (immutable, or a loosening) or its
    /// owner (another sender). The text is the receipt's (`gamechain_runtime::upgrade_refusal`).
    UpgradeRefused(String),
    /// The mempool refused the transaction (duplicate, nonce, full).
    Refused(Refusal),
    /// No such transaction, block, module, module account or code.
    NotFound(String),
    /// A block below this node's oldest one: it joined from a snapshot, or prunes its blocks
    /// (`retain_blocks`); an archive node has it.
    Pruned(String),
    /// A string that is not an address of this chain's network.
    BadAddress(String),
    /// A malformed parameter (e.g. a code hash that is not 64 hex characters).
    Invalid(String),
    /// A state proof asked of a chain whose state commitment has none (`lthash16`).
    NoProofs(String),
    /// A transfer to a module's escrow account (`module:<id>`), refused at admission: only
    /// modules move funds into escrow.
    EscrowRecipient {
        /// The recipient as sent.
        to: String,
    },
    /// On a chain with fees, a sender whose GOLD balance is below the minimum fee (refused at
    /// admission: no block could include its transaction). A faucet call is never refused so,
    /// nor a sender that already has pending transactions.
    CannotPayFee {
        /// The chain's minimum fee, base units.
        minimum: u128,
        /// The sender's balance at the head, base units.
        balance: u128,
    },
    /// A `session_game` its session does not allow (no such session, expired, out of scope, cap
    /// used up): refused at admission with the fixed text a block would refuse it with.
    Session(SessionRefusal),
    /// A deploy whose code the chain's load rules refuse (validation, instantiation, ABI
    /// version): refused at admission with the fixed text its receipt would carry.
    ModuleRefused(String),
    /// A deploy whose code did not compile within the node's `compile_budget_ms`, or that
    /// arrived while the node was compiling its limit of uploads already.
    TooCostly(String),
    /// A module's view refused its query with this error.
    View(ActionError),
    /// The node itself failed (database, corrupt state, a module it cannot load); the details
    /// are in its log.
    Internal(String),
}

impl ChainError {
    /// The API code of the error (`bad_signature`, `not_found`, …).
    pub fn code(&self) -> &'static str {
        match self {
            ChainError::Tx(e) => e.code(),
            ChainError::DeployForbidden { .. } => "deploy_forbidden",
            ChainError::UpgradeRefused(_) => "upgrade_refused",
            ChainError::EscrowRecipient { .. } => "escrow_recipient",
            ChainError::CannotPayFee { .. } => "cannot_pay_fee",
            ChainError::Session(r) => r.code(),
            ChainError::Refused(r) => r.code(),
            ChainError::NotFound(_) => "not_found",
            ChainError::Pruned(_) => "pruned",
            ChainError::BadAddress(_) => "bad_address",
            ChainError::Invalid(_) => "invalid",
            ChainError::NoProofs(_) => "no_proofs",
            ChainError::ModuleRefused(_) => "module_refused",
            ChainError::TooCostly(_) => "too_costly",
            ChainError::View(e) => e.code(),
            ChainError::Internal(_) => "internal",
        }
    }
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainError::Tx(e) => write!(f, "{e}"),
            ChainError::DeployForbidden { from } => write!(
                f,
                "this node's operator does not admit module deploys from {from}"
            ),
            ChainError::EscrowRecipient { to } => write!(
                f,
                "`{to}` is a module's escrow account; escrow accounts cannot receive transfers \
                 (a module moves stakes into its escrow itself)"
            ),
            ChainError::CannotPayFee { minimum, balance } => write!(
                f,
                "the sender holds {balance} GOLD base units, less than this chain's minimum fee \
                 of {minimum}: get GOLD first (a transfer to it, or the faucet where there is one)"
            ),
            ChainError::Refused(r) => write!(f, "{r}"),
            ChainError::Session(r) => write!(f, "{r}"),
            ChainError::View(e) => write!(f, "{e}"),
            ChainError::ModuleRefused(m) => write!(f, "module code: {m}"),
            ChainError::NotFound(m)
            | ChainError::Pruned(m)
            | ChainError::UpgradeRefused(m)
            | ChainError::TooCostly(m)
            | ChainError::BadAddress(m)
            | ChainError::Invalid(m)
            | ChainError::NoProofs(m)
            | ChainError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ChainError {}
