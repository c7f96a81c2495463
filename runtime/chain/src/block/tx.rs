//! Transactions: the wire form [`SignedTx`] (`{"body": "...", "signature": "..."}`, what a
//! client POSTs to `/v1/tx`), the parsed [`TxBody`] and its [`Action`], the txid, and the
//! stateless checks a node runs before anything else sees a transaction.
//!
//! The body is a JSON object `{"chain_id": "...", "from": "<address>", "nonce": <u64>,
//! "action": {...}}` (no other fields). The signed bytes are exactly the body string as sent,
//! never re-serialised: the signature is a Divi signed message of those bytes
//! ([`crate::keys::signed_message`]) and the txid is the lowercase hex SHA-256 of them. Actions (JSON
//! tag `type`):
//!
//! | action | JSON |
//! |---|---|
//! | faucet | `{"type": "faucet", "token": "GOLD"}` |
//! | transfer | `{"type": "transfer", "to": "<account>", "token": "GOLD", "amount": "<base units>"}` |
//! | game | `{"type": "game", "game": "tictactoe", "op": {...}}` (op kept byte for byte) |
//! | deploy | `{"type": "deploy", "module": "<id>", "code": "<standard base64, padded, of the .wasm bytes>", "policy": <policy, optional>}` |
//! | activate_upgrade | `{"type": "activate_upgrade", "module": "<id>"}` |
//! | cancel_upgrade | `{"type": "cancel_upgrade", "module": "<id>"}` |
//! | set_policy | `{"type": "set_policy", "module": "<id>", "policy": <policy>}` |
//! | authorize_session | `{"type": "authorize_session", "key": "<session key address>", "modules": ["<id>", …], "expires_at_ms": <block time ms>, "cap": "<GOLD base units>"}` |
//! | revoke_session | `{"type": "revoke_session", "key": "<session key address>"}` |
//! | session_game | `{"type": "session_game", "account": "<main address>", "session": <id>, "game": "<id>", "op": {...}}` |
//!
//! A `session_game` is signed by a session key (`from` is the session key's address) and acts
//! for `account`: its `nonce` is the account's, the module sees `account` as the sender, and the
//! session (`session/<account>/<from>`, id `session`) must allow it. What a session allows, and
//! every refusal, is `docs/session-keys.md` (`crate::session`, `transition/session.rs`).
//!
//! A policy is `{"kind": "immutable"}`, `{"kind": "timelocked", "delay_ms": N}` (N 1 to
//! [`crate::policy::MAX_TIMELOCK_DELAY_MS`]) or `{"kind": "owner"}` ([`UpgradePolicy`], `policy.rs`); a deploy
//! without one is an `owner` deploy (what every deploy was before policies existed). What each
//! action does is `transition/mod.rs`, "Deploy and upgrade".
//!
//! A deploy's `code` is at most [`MAX_CODE_BYTES`] once decoded; its body may be up to
//! [`MAX_DEPLOY_BODY_BYTES`], every other body up to [`MAX_BODY_BYTES`]. The base64 must be
//! canonical (RFC 4648 standard alphabet with `=` padding), so one code has one spelling.
//!
//! [`SignedTx::check`] verifies size, JSON shape, chain id, the sender address and the
//! signature. The nonce, balances, the module id and the code are checked by the executor
//! against state.

use core::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use gamechain_sdk::Amount;

use crate::hash::sha256;
use crate::keys::address::{check_address, AddressError, Network, SecretKey};
use crate::keys::signed_message::{sign_message, verify_message, SigError};
use crate::policy::UpgradePolicy;

/// Largest accepted body of every action but `deploy`, in bytes (64 KiB). Larger bodies are
/// refused with `too_large`.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Largest module code a `deploy` may carry, in bytes of wasm (1 MiB).
pub const MAX_CODE_BYTES: usize = 1 << 20;

/// Largest accepted body of a `deploy` transaction, in bytes (1.5 MiB): [`MAX_CODE_BYTES`] of
/// code is 1,398,104 characters of base64, plus room for the rest of the body.
pub const MAX_DEPLOY_BODY_BYTES: usize = 3 << 19;

/// Deepest nesting of arrays and objects a game op may have (32 levels). Guests parse ops
/// recursively on a small wasm stack (a Rust guest's serde_json exhausted tic-tac-toe's 32 KiB
/// stack at about 90 levels); a deeper op is refused before any guest runs, as `bad_json`.
pub const MAX_OP_DEPTH: usize = 32;

/// The deepest nesting of arrays and objects in JSON text `json` (0 for a scalar). Linear,
/// no recursion; brackets inside strings do not count.
pub fn json_depth(json: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in json.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Lowercase hex SHA-256 of the signed body bytes (64 characters).
pub fn txid(body: &[u8]) -> String {
    hex::encode(sha256(body))
}

/// A transaction as sent and stored: the exact body text and its base64 signature, with its
/// txid computed once when the value is made ([`SignedTx::new`] or deserialisation), so no
/// later step hashes the body again. JSON: `{"body": "{\"chain_id\":...}", "signature": "H..."}`
/// (no other fields).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "SignedTxFields")]
pub struct SignedTx {
    body: String,
    signature: String,
    txid: [u8; 32],
}

/// The two fields of a [`SignedTx`] on the wire.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignedTxFields {
    body: String,
    signature: String,
}

impl From<SignedTxFields> for SignedTx {
    fn from(f: SignedTxFields) -> Self {
        SignedTx::new(f.body, f.signature)
    }
}

impl Serialize for SignedTx {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("SignedTx", 2)?;
        s.serialize_field("body", &self.body)?;
        s.serialize_field("signature", &self.signature)?;
        s.end()
    }
}

impl SignedTx {
    /// A transaction of `body` (the exact JSON text that was signed) and `signature` (base64 of
    /// the 65-byte compact recoverable signature, Divi signed message). Hashes the body once
    /// for the txid; checks nothing else (see [`SignedTx::check`]).
    pub fn new(body: String, signature: String) -> Self {
        let txid = sha256(body.as_bytes());
        SignedTx {
            body,
            signature,
            txid,
        }
    }

    /// The body JSON text, exactly the bytes that were signed.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// Base64 of the 65-byte compact recoverable signature of the body.
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// `(body, signature)`, consuming the transaction.
    pub fn into_parts(self) -> (String, String) {
        (self.body, self.signature)
    }

    /// The txid: lowercase hex SHA-256 of the body (64 characters).
    pub fn txid(&self) -> String {
        hex::encode(self.txid)
    }

    /// The txid as 32 bytes (what `tx_root` is built over).
    pub fn txid_bytes(&self) -> [u8; 32] {
        self.txid
    }

    /// The stateless checks, in this order: size ([`TxError::TooLarge`]: above
    /// [`MAX_DEPLOY_BODY_BYTES`], or above [`MAX_BODY_BYTES`] for anything but a deploy), JSON
    /// shape ([`TxError::BadJson`]), chain id ([`TxError::WrongChain`]), `from` (and a
    /// `session_game`'s `account`) is an address of `network` ([`TxError::BadAddress`]), a
    /// `session_game`'s `account` is not `from` ([`TxError::BadJson`]), and the signature
    /// recovers to `from` ([`TxError::BadSignature`]). Returns the parsed body.
    pub fn check(&self, chain_id: &str, network: Network) -> Result<TxBody, TxError> {
        let len = self.body.len();
        if len > MAX_DEPLOY_BODY_BYTES {
            return Err(TxError::TooLarge {
                len,
                max: MAX_DEPLOY_BODY_BYTES,
            });
        }
        let body = TxBody::parse(&self.body)?;
        if len > MAX_BODY_BYTES && !matches!(body.action, Action::Deploy { .. }) {
            return Err(TxError::TooLarge {
                len,
                max: MAX_BODY_BYTES,
            });
        }
        if body.chain_id != chain_id {
            return Err(TxError::WrongChain {
                expected: chain_id.to_string(),
                found: body.chain_id,
            });
        }
        check_address(&body.from, network).map_err(TxError::BadAddress)?;
        if let Action::SessionGame { account, .. } = &body.action {
            check_address(account, network).map_err(TxError::BadAddress)?;
            if *account == body.from {
                return Err(TxError::BadJson(
                    "a session_game's account is its own signer: send a game action".into(),
                ));
            }
        }
        verify_message(&body.from, self.body.as_bytes(), &self.signature)
            .map_err(TxError::BadSignature)?;
        Ok(body)
    }
}

/// A parsed transaction body. Parse with [`TxBody::parse`] (unknown and duplicate fields are
/// refused); make a signed transaction with [`TxBody::sign`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TxBody {
    /// The chain this transaction is for (must equal the genesis `chain_id`).
    pub chain_id: String,
    /// The sender's address; the signature must recover to it.
    pub from: String,
    /// The sender's next nonce (0 for its first transaction), a JSON number.
    pub nonce: u64,
    /// What the transaction does.
    pub action: Action,
}

impl TxBody {
    /// Parses body text. [`TxError::BadJson`] with serde_json's message (or ours, for an
    /// action of the wrong shape) when it is not exactly a body object.
    ///
    /// A deploy whose code is over [`MAX_CODE_BYTES`] is [`TxError::CodeTooLarge`], a game op
    /// nested deeper than [`MAX_OP_DEPTH`] is [`TxError::BadJson`]. (This is where both are
    /// checked: deserialising a `TxBody` with serde alone does not.)
    pub fn parse(body: &str) -> Result<TxBody, TxError> {
        let body: TxBody =
            serde_json::from_str(body).map_err(|e| TxError::BadJson(e.to_string()))?;
        match &body.action {
            Action::Deploy { code, .. } if code.len() > MAX_CODE_BYTES => {
                return Err(TxError::CodeTooLarge { len: code.len() });
            }
            Action::Game { op, .. } | Action::SessionGame { op, .. } => {
                let depth = json_depth(op.get());
                if depth > MAX_OP_DEPTH {
                    return Err(TxError::BadJson(format!(
                        "op is nested {depth} levels deep, the limit is {MAX_OP_DEPTH}"
                    )));
                }
            }
            _ => {}
        }
        Ok(body)
    }

    /// The account this transaction acts for and whose nonce it carries: a `session_game`'s
    /// `account` (the session key `from` signs for it), else `from`. Fees are paid by it.
    pub fn account(&self) -> &str {
        match &self.action {
            Action::SessionGame { account, .. } => account,
            _ => &self.from,
        }
    }

    /// The body as compact JSON, fields in the order `chain_id, from, nonce, action`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a TxBody always serialises")
    }

    /// Serialises this body once and signs exactly those bytes with `sk`. The result checks
    /// only if `from` is `sk`'s address (clients set `from: sk.address()`).
    pub fn sign(&self, sk: &SecretKey) -> SignedTx {
        let body = self.to_json();
        let signature = sign_message(sk, body.as_bytes());
        SignedTx::new(body, signature)
    }
}

/// What a transaction does. JSON is tagged by `type`; see the module docs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", try_from = "RawAction")]
pub enum Action {
    /// Ask the faucet (dev chains) for its configured amount of `token` (GOLD).
    Faucet {
        /// Token symbol, e.g. `GOLD`.
        token: String,
    },
    /// Move `amount` base units of `token` from the sender to `to`.
    Transfer {
        /// An address of the chain's network (the state transition refuses `module:<id>`
        /// escrow accounts, whose funds only their module may move).
        to: String,
        /// Token symbol.
        token: String,
        /// Base units, a decimal string on the wire.
        amount: Amount,
    },
    /// Run one op of the module `game`.
    Game {
        /// The module id, e.g. `tictactoe`.
        game: String,
        /// The op exactly as sent (the guest receives these bytes); `op.get()` is its text.
        op: Box<RawValue>,
    },
    /// Deploy `code` as module `module` under `policy`, or upgrade it (its owner only; at once
    /// under `owner`, announced under `timelocked`, never under `immutable`): see
    /// `transition/mod.rs`.
    Deploy {
        /// The module id: 1–32 of `a-z0-9_`, starting with a letter, not reserved
        /// (`chain::genesis::check_module_id`; checked when the transaction runs).
        module: String,
        /// The wasm binary, at most [`MAX_CODE_BYTES`]; standard padded base64 on the wire.
        #[serde(with = "code_base64")]
        code: Vec<u8>,
        /// The new module's upgrade policy; `None` (absent on the wire) = `owner`. On an upgrade
        /// it may only name the module's current policy.
        #[serde(skip_serializing_if = "Option::is_none")]
        policy: Option<UpgradePolicy>,
    },
    /// Activate the pending upgrade of timelocked module `module` once its delay has passed
    /// (anyone may).
    ActivateUpgrade {
        /// The module id.
        module: String,
    },
    /// Cancel the pending upgrade of module `module` (its owner only).
    CancelUpgrade {
        /// The module id.
        module: String,
    },
    /// Put module `module` under a tighter `policy` (its owner only).
    SetPolicy {
        /// The module id.
        module: String,
        /// The new policy: stricter than the current one.
        policy: UpgradePolicy,
    },
    /// Authorize `key` as a session key of the sender (`docs/session-keys.md`): it may then send
    /// `session_game` ops of `modules` for the sender until block time `expires_at_ms`, moving
    /// at most `cap` GOLD base units out of the sender. Replaces an earlier session of the same
    /// key. Only a main key can send it (a session key can send only `session_game`).
    AuthorizeSession {
        /// The session key's address (of the chain's network, not the sender's own).
        key: String,
        /// The scope: 1 to [`crate::session::MAX_SESSION_MODULES`] module ids, no duplicates
        /// (stored sorted).
        modules: Vec<String>,
        /// Expiry, block time ms: after this block's time, at most
        /// [`crate::session::MAX_SESSION_HORIZON_MS`] after it.
        expires_at_ms: u64,
        /// Most GOLD base units the session may move out of the sender (stakes and fees).
        cap: Amount,
    },
    /// End the sender's session of `key` at once.
    RevokeSession {
        /// The session key's address.
        key: String,
    },
    /// A game op of module `game` sent by a session key (`from`) for `account`, under the
    /// session `session` (its id). The module sees `account` as the sender.
    SessionGame {
        /// The account acted for (the main key's address); the nonce is its.
        account: String,
        /// The session's id: the account's nonce of the `authorize_session` that made it.
        session: u64,
        /// The module id.
        game: String,
        /// The op exactly as sent.
        op: Box<RawValue>,
    },
}

/// The `code` field of a deploy: standard base64 with padding (RFC 4648 §4), canonical.
mod code_base64 {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use serde::Serializer;

    pub fn serialize<S: Serializer>(code: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(code))
    }

    /// Decodes `text`; the error says why (fixed text).
    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        STANDARD
            .decode(text)
            .map_err(|_| "a deploy's `code` must be standard base64 with padding".to_string())
    }
}

impl Action {
    /// A game action whose op is `op` serialised compactly (for clients and tests).
    pub fn game(game: impl Into<String>, op: &serde_json::Value) -> Action {
        let op = serde_json::value::to_raw_value(op).expect("a Value always serialises");
        Action::Game {
            game: game.into(),
            op,
        }
    }

    /// A deploy of `code` as module `module` without a policy: a new module gets the `owner`
    /// policy (its deployer may upgrade it at once), which is the wire form of every deploy made
    /// before policies existed. Name a policy with `Action::Deploy { policy: Some(..), .. }`
    /// for anything players are to stake in.
    pub fn deploy(module: impl Into<String>, code: Vec<u8>) -> Action {
        Action::Deploy {
            module: module.into(),
            code,
            policy: None,
        }
    }

    /// The action's `type`: `faucet`, `transfer`, `game`, `deploy`, `activate_upgrade`,
    /// `cancel_upgrade`, `set_policy`, `authorize_session`, `revoke_session` or
    /// `session_game`.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Faucet { .. } => "faucet",
            Action::Transfer { .. } => "transfer",
            Action::Game { .. } => "game",
            Action::Deploy { .. } => "deploy",
            Action::ActivateUpgrade { .. } => "activate_upgrade",
            Action::CancelUpgrade { .. } => "cancel_upgrade",
            Action::SetPolicy { .. } => "set_policy",
            Action::AuthorizeSession { .. } => "authorize_session",
            Action::RevokeSession { .. } => "revoke_session",
            Action::SessionGame { .. } => "session_game",
        }
    }

    /// The module an action of the upgrade family (`deploy`, `activate_upgrade`,
    /// `cancel_upgrade`, `set_policy`) names; `None` for the others.
    pub fn upgrade_module(&self) -> Option<&str> {
        match self {
            Action::Deploy { module, .. }
            | Action::ActivateUpgrade { module }
            | Action::CancelUpgrade { module }
            | Action::SetPolicy { module, .. } => Some(module),
            _ => None,
        }
    }
}

impl PartialEq for Action {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Action::Faucet { token: a }, Action::Faucet { token: b }) => a == b,
            (
                Action::Transfer {
                    to: a,
                    token: b,
                    amount: c,
                },
                Action::Transfer {
                    to: x,
                    token: y,
                    amount: z,
                },
            ) => (a, b, c) == (x, y, z),
            (Action::Game { game: a, op: b }, Action::Game { game: x, op: y }) => {
                a == x && b.get() == y.get()
            }
            (
                Action::Deploy {
                    module: a,
                    code: b,
                    policy: c,
                },
                Action::Deploy {
                    module: x,
                    code: y,
                    policy: z,
                },
            ) => (a, b, c) == (x, y, z),
            (Action::ActivateUpgrade { module: a }, Action::ActivateUpgrade { module: x })
            | (Action::CancelUpgrade { module: a }, Action::CancelUpgrade { module: x }) => a == x,
            (
                Action::SetPolicy {
                    module: a,
                    policy: b,
                },
                Action::SetPolicy {
                    module: x,
                    policy: y,
                },
            ) => (a, b) == (x, y),
            (
                Action::AuthorizeSession {
                    key: a,
                    modules: b,
                    expires_at_ms: c,
                    cap: d,
                },
                Action::AuthorizeSession {
                    key: w,
                    modules: x,
                    expires_at_ms: y,
                    cap: z,
                },
            ) => (a, b, c, d) == (w, x, y, z),
            (Action::RevokeSession { key: a }, Action::RevokeSession { key: x }) => a == x,
            (
                Action::SessionGame {
                    account: a,
                    session: b,
                    game: c,
                    op: d,
                },
                Action::SessionGame {
                    account: w,
                    session: x,
                    game: y,
                    op: z,
                },
            ) => (a, b, c) == (w, x, y) && d.get() == z.get(),
            _ => false,
        }
    }
}

impl Eq for Action {}

/// Every field any action may carry. serde cannot keep a `RawValue` through an internally
/// tagged enum, so actions are read as this flat struct (directly from the JSON, which keeps
/// `op` raw) and then checked field by field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAction {
    #[serde(rename = "type")]
    kind: String,
    token: Option<String>,
    to: Option<String>,
    amount: Option<Amount>,
    game: Option<String>,
    op: Option<Box<RawValue>>,
    module: Option<String>,
    code: Option<String>,
    policy: Option<UpgradePolicy>,
    key: Option<String>,
    modules: Option<Vec<String>>,
    expires_at_ms: Option<u64>,
    cap: Option<Amount>,
    account: Option<String>,
    session: Option<u64>,
}

impl TryFrom<RawAction> for Action {
    type Error = String;
    fn try_from(raw: RawAction) -> Result<Action, String> {
        let RawAction {
            kind,
            token,
            to,
            amount,
            game,
            op,
            module,
            code,
            policy,
            key,
            modules,
            expires_at_ms,
            cap,
            account,
            session,
        } = raw;
        if let Some(p) = &policy {
            p.validate()?;
        }
        let present = [
            ("token", token.is_some()),
            ("to", to.is_some()),
            ("amount", amount.is_some()),
            ("game", game.is_some()),
            ("op", op.is_some()),
            ("module", module.is_some()),
            ("code", code.is_some()),
            ("policy", policy.is_some()),
            ("key", key.is_some()),
            ("modules", modules.is_some()),
            ("expires_at_ms", expires_at_ms.is_some()),
            ("cap", cap.is_some()),
            ("account", account.is_some()),
            ("session", session.is_some()),
        ];
        let allowed: &[&str] = match kind.as_str() {
            "faucet" => &["token"],
            "transfer" => &["to", "token", "amount"],
            "game" => &["game", "op"],
            "deploy" => &["module", "code", "policy"],
            "activate_upgrade" | "cancel_upgrade" => &["module"],
            "set_policy" => &["module", "policy"],
            "authorize_session" => &["key", "modules", "expires_at_ms", "cap"],
            "revoke_session" => &["key"],
            "session_game" => &["account", "session", "game", "op"],
            other => {
                return Err(format!(
                    "unknown action type `{other}` (faucet, transfer, game, deploy, \
                     activate_upgrade, cancel_upgrade, set_policy, authorize_session, \
                     revoke_session or session_game)"
                ))
            }
        };
        for (field, is_present) in present {
            if is_present && !allowed.contains(&field) {
                return Err(format!("a {kind} action has no field `{field}`"));
            }
        }
        let missing = |field: &str| format!("a {kind} action needs `{field}`");
        Ok(match kind.as_str() {
            "faucet" => Action::Faucet {
                token: token.ok_or_else(|| missing("token"))?,
            },
            "transfer" => Action::Transfer {
                to: to.ok_or_else(|| missing("to"))?,
                token: token.ok_or_else(|| missing("token"))?,
                amount: amount.ok_or_else(|| missing("amount"))?,
            },
            "deploy" => {
                // Its size is checked by `TxBody::parse` (`TxError::CodeTooLarge`, not
                // `bad_json`).
                let code = code_base64::decode(&code.ok_or_else(|| missing("code"))?)?;
                Action::Deploy {
                    module: module.ok_or_else(|| missing("module"))?,
                    code,
                    policy,
                }
            }
            "activate_upgrade" => Action::ActivateUpgrade {
                module: module.ok_or_else(|| missing("module"))?,
            },
            "cancel_upgrade" => Action::CancelUpgrade {
                module: module.ok_or_else(|| missing("module"))?,
            },
            "set_policy" => Action::SetPolicy {
                module: module.ok_or_else(|| missing("module"))?,
                policy: policy.ok_or_else(|| missing("policy"))?,
            },
            "authorize_session" => Action::AuthorizeSession {
                key: key.ok_or_else(|| missing("key"))?,
                modules: session_scope(modules.ok_or_else(|| missing("modules"))?)?,
                expires_at_ms: expires_at_ms.ok_or_else(|| missing("expires_at_ms"))?,
                cap: cap.ok_or_else(|| missing("cap"))?,
            },
            "revoke_session" => Action::RevokeSession {
                key: key.ok_or_else(|| missing("key"))?,
            },
            "session_game" => Action::SessionGame {
                account: account.ok_or_else(|| missing("account"))?,
                session: session.ok_or_else(|| missing("session"))?,
                game: game.ok_or_else(|| missing("game"))?,
                op: op.ok_or_else(|| missing("op"))?,
            },
            _ => Action::Game {
                game: game.ok_or_else(|| missing("game"))?,
                op: op.ok_or_else(|| missing("op"))?,
            },
        })
    }
}

/// Checks a session's scope as sent: 1 to [`crate::session::MAX_SESSION_MODULES`] module ids
/// (`check_module_id`), no duplicates, in ascending order (one scope has one spelling, and the
/// record stores it as sent).
fn session_scope(modules: Vec<String>) -> Result<Vec<String>, String> {
    use crate::session::MAX_SESSION_MODULES;
    if modules.is_empty() || modules.len() > MAX_SESSION_MODULES {
        return Err(format!(
            "a session's scope names 1 to {MAX_SESSION_MODULES} modules, not {}",
            modules.len()
        ));
    }
    for m in &modules {
        if let Some(e) = crate::module_id::module_id_error(m) {
            return Err(format!("session scope: {e}"));
        }
    }
    if modules.windows(2).any(|w| w[0] >= w[1]) {
        return Err("a session's modules must be in ascending order, without duplicates".into());
    }
    Ok(modules)
}

/// Why a transaction was refused before execution. Nothing about it is recorded on chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxError {
    /// The body is longer than [`MAX_BODY_BYTES`] ([`MAX_DEPLOY_BODY_BYTES`] for a deploy).
    /// Code `too_large`.
    TooLarge {
        /// Body length, bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A deploy's code (decoded) is longer than [`MAX_CODE_BYTES`]. Code `too_large`.
    CodeTooLarge {
        /// Code length, bytes of wasm.
        len: usize,
    },
    /// The body is not a JSON body object of the right shape. Code `bad_json`.
    BadJson(String),
    /// `chain_id` is not this chain's. Code `wrong_chain`.
    WrongChain {
        /// This chain's id.
        expected: String,
        /// The body's.
        found: String,
    },
    /// `from` is not an address of this chain's network. Code `bad_address`.
    BadAddress(AddressError),
    /// The signature does not verify against `from`. Code `bad_signature`.
    BadSignature(SigError),
}

impl TxError {
    /// Stable machine code: `too_large`, `bad_json`, `wrong_chain`, `bad_address`,
    /// `bad_signature`.
    pub fn code(&self) -> &'static str {
        match self {
            TxError::TooLarge { .. } | TxError::CodeTooLarge { .. } => "too_large",
            TxError::BadJson(_) => "bad_json",
            TxError::WrongChain { .. } => "wrong_chain",
            TxError::BadAddress(_) => "bad_address",
            TxError::BadSignature(_) => "bad_signature",
        }
    }
}

impl fmt::Display for TxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxError::TooLarge { len, max } => write!(f, "body is {len} bytes, more than {max}"),
            TxError::CodeTooLarge { len } => write!(
                f,
                "a deploy's code is {len} bytes, the limit is {MAX_CODE_BYTES} (MAX_CODE_BYTES)"
            ),
            TxError::BadJson(msg) => write!(f, "body is not a valid transaction: {msg}"),
            TxError::WrongChain { expected, found } => {
                write!(f, "chain id is `{found}`, this chain is `{expected}`")
            }
            TxError::BadAddress(e) => write!(f, "`from` is not an address of this chain: {e}"),
            TxError::BadSignature(e) => write!(f, "bad signature: {e}"),
        }
    }
}

impl std::error::Error for TxError {}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use serde_json::json;

    const CHAIN: &str = "gamechain-dev";

    fn key(n: u8) -> SecretKey {
        SecretKey::from_bytes(Network::Testnet, [n; 32]).unwrap()
    }

    fn body(sk: &SecretKey, nonce: u64, action: Action) -> TxBody {
        TxBody {
            chain_id: CHAIN.into(),
            from: sk.address(),
            nonce,
            action,
        }
    }

    #[test]
    fn json_depth_counts_brackets_outside_strings() {
        for (text, depth) in [
            ("1", 0),
            ("{}", 1),
            (r#"{"a":[1,{"b":[]}]}"#, 4),
            (r#"{"a":"[[[[{{{{\"]]"}"#, 1),
            (r#"["\\",[]]"#, 2),
        ] {
            assert_eq!(json_depth(text), depth, "{text}");
        }
    }

    #[test]
    fn a_game_op_nested_too_deep_is_refused_before_any_guest_runs() {
        let sk = key(1);
        let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let op = |n: usize| -> serde_json::Value { serde_json::from_str(&nested(n)).unwrap() };
        let ok = body(&sk, 0, Action::game("tictactoe", &op(MAX_OP_DEPTH))).sign(&sk);
        assert!(ok.check(CHAIN, Network::Testnet).is_ok());
        let deep = body(&sk, 0, Action::game("tictactoe", &op(90))).sign(&sk);
        let err = deep.check(CHAIN, Network::Testnet).unwrap_err();
        assert_eq!(err.code(), "bad_json");
        assert_eq!(
            err.to_string(),
            "body is not a valid transaction: op is nested 90 levels deep, the limit is 32"
        );
    }

    #[test]
    fn sign_then_check_round_trips() {
        let sk = key(1);
        let actions = [
            Action::Faucet {
                token: "GOLD".into(),
            },
            Action::Transfer {
                to: key(2).address(),
                token: "GOLD".into(),
                amount: Amount(100),
            },
            Action::game(
                "tictactoe",
                &json!({"kind": "move", "id": "80566b04265ced78", "cell": 0}),
            ),
        ];
        for (nonce, action) in actions.into_iter().enumerate() {
            let b = body(&sk, nonce as u64, action);
            let tx = b.sign(&sk);
            assert_eq!(tx.check(CHAIN, Network::Testnet).unwrap(), b);
            assert_eq!(tx.txid(), hex::encode(sha256(tx.body.as_bytes())));
            assert_eq!(tx.txid().len(), 64);
        }
    }

    #[test]
    fn body_json_has_the_seed_shape() {
        let sk = key(1);
        let b = body(
            &sk,
            2,
            Action::game("tictactoe", &json!({"kind": "create", "stake": "100"})),
        );
        assert_eq!(
            b.to_json(),
            format!(
                r#"{{"chain_id":"gamechain-dev","from":"{}","nonce":2,"action":{{"type":"game","game":"tictactoe","op":{{"kind":"create","stake":"100"}}}}}}"#,
                sk.address()
            )
        );
        let t = body(
            &sk,
            0,
            Action::Transfer {
                to: "module:tictactoe".into(),
                token: "GOLD".into(),
                amount: Amount(5),
            },
        );
        assert!(t.to_json().ends_with(
            r#""action":{"type":"transfer","to":"module:tictactoe","token":"GOLD","amount":"5"}}"#
        ));
        let wire = serde_json::to_value(b.sign(&sk)).unwrap();
        assert_eq!(
            wire.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["body", "signature"]
        );
    }

    #[test]
    fn the_op_and_the_signed_bytes_are_kept_exactly() {
        let sk = key(1);
        // Whitespace, key order and number spelling a re-serialisation would change.
        let text = format!(
            "{{ \"nonce\": 7, \"from\": \"{}\", \"chain_id\": \"{CHAIN}\",\n \"action\": {{\"op\": {{ \"z\": 1.50, \"a\": [ ] }}, \"type\": \"game\", \"game\": \"tictactoe\"}} }}",
            sk.address()
        );
        let tx = SignedTx::new(text.clone(), sign_message(&sk, &text));
        let parsed = tx.check(CHAIN, Network::Testnet).unwrap();
        match &parsed.action {
            Action::Game { game, op } => {
                assert_eq!(game, "tictactoe");
                assert_eq!(op.get(), "{ \"z\": 1.50, \"a\": [ ] }");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(parsed.nonce, 7);
        assert_eq!(tx.txid(), hex::encode(sha256(text.as_bytes())));
        // Re-serialising would give other bytes, whose signature is not this one.
        let reserialised = SignedTx::new(parsed.to_json(), tx.signature().to_string());
        assert_eq!(
            reserialised
                .check(CHAIN, Network::Testnet)
                .unwrap_err()
                .code(),
            "bad_signature"
        );
    }

    #[test]
    fn each_refusal_has_its_code() {
        let sk = key(1);
        let good = body(
            &sk,
            0,
            Action::Faucet {
                token: "GOLD".into(),
            },
        )
        .sign(&sk);
        let check = |tx: &SignedTx| tx.check(CHAIN, Network::Testnet).unwrap_err();
        let resign = |text: String| {
            let signature = sign_message(&sk, &text);
            SignedTx::new(text, signature)
        };

        assert_eq!(
            good.check("other-chain", Network::Testnet)
                .unwrap_err()
                .code(),
            "wrong_chain"
        );
        assert_eq!(
            good.check("other-chain", Network::Testnet)
                .unwrap_err()
                .to_string(),
            "chain id is `gamechain-dev`, this chain is `other-chain`"
        );
        assert_eq!(
            good.check(CHAIN, Network::Mainnet).unwrap_err().code(),
            "bad_address"
        );

        let big = resign(format!("{}{}", good.body, " ".repeat(MAX_BODY_BYTES)));
        assert_eq!(
            check(&big),
            TxError::TooLarge {
                len: good.body.len() + MAX_BODY_BYTES,
                max: MAX_BODY_BYTES
            }
        );

        let bad_sig = SignedTx::new(good.body().to_string(), sign_message(&key(2), good.body()));
        assert!(matches!(
            check(&bad_sig),
            TxError::BadSignature(SigError::AddressMismatch { .. })
        ));
        let garbage = SignedTx::new(good.body().to_string(), "abc".into());
        assert_eq!(check(&garbage), TxError::BadSignature(SigError::BadBase64));

        let from = sk.address();
        let bad_json = [
            "not json".to_string(),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"faucet","token":"GOLD"}},"extra":1}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"faucet","token":"GOLD"}}}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":-1,"action":{{"type":"faucet","token":"GOLD"}}}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"mint","token":"GOLD"}}}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"faucet","token":"GOLD","to":"x"}}}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"transfer","to":"x","token":"GOLD","amount":100}}}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"game","game":"tictactoe"}}}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"game","game":"t","op":{{}},"bogus":1}}}}"#
            ),
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"faucet","token":"GOLD"}}}} x"#
            ),
        ];
        for text in bad_json {
            let err = check(&resign(text.clone()));
            assert_eq!(err.code(), "bad_json", "{text}: {err}");
        }
        let err = check(&resign(format!(
            r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"mint"}}}}"#
        )));
        assert!(
            err.to_string().contains("unknown action type `mint`"),
            "{err}"
        );
        let err = check(&resign(format!(
            r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"transfer","to":"x","token":"GOLD"}}}}"#
        )));
        assert!(
            err.to_string().contains("a transfer action needs `amount`"),
            "{err}"
        );
    }

    #[test]
    fn deploy_carries_base64_code_and_may_be_large() {
        let sk = key(1);
        let code = vec![0u8, 97, 115, 109, 1, 0, 0, 0, 0xff];
        let b = body(&sk, 0, Action::deploy("chess", code.clone()));
        assert_eq!(b.action.kind(), "deploy");
        assert!(b
            .to_json()
            .ends_with(r#""action":{"type":"deploy","module":"chess","code":"AGFzbQEAAAD/"}}"#));
        let tx = b.sign(&sk);
        assert_eq!(tx.check(CHAIN, Network::Testnet).unwrap(), b);

        // A deploy may exceed MAX_BODY_BYTES, up to MAX_DEPLOY_BODY_BYTES.
        let big = body(&sk, 1, Action::deploy("big", vec![7; MAX_CODE_BYTES]));
        let tx = big.sign(&sk);
        assert!(tx.body.len() > MAX_BODY_BYTES && tx.body.len() <= MAX_DEPLOY_BODY_BYTES);
        assert_eq!(tx.check(CHAIN, Network::Testnet).unwrap(), big);

        let resign = |text: String| {
            let signature = sign_message(&sk, &text);
            SignedTx::new(text, signature)
        };
        let from = sk.address();
        let deploy = |code: &str| {
            format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"deploy","module":"m1","code":"{code}"}}}}"#
            )
        };
        let too_much =
            base64::engine::general_purpose::STANDARD.encode(vec![1u8; MAX_CODE_BYTES + 1]);
        for (code, why) in [
            ("AGFzbQ", "missing padding"),
            ("AGFzbQ==x", "trailing garbage"),
            ("AGFzbR==", "non-canonical trailing bits"),
            ("AGF-bQ==", "URL-safe alphabet"),
        ] {
            let err = resign(deploy(code))
                .check(CHAIN, Network::Testnet)
                .unwrap_err();
            assert_eq!(err.code(), "bad_json", "{why}: {err}");
        }
        // Code over MAX_CODE_BYTES (in a body under MAX_DEPLOY_BODY_BYTES) is too_large, in our
        // words, without serde's position.
        let err = resign(deploy(&too_much))
            .check(CHAIN, Network::Testnet)
            .unwrap_err();
        assert_eq!(
            err,
            TxError::CodeTooLarge {
                len: MAX_CODE_BYTES + 1
            }
        );
        assert_eq!(err.code(), "too_large");
        assert_eq!(
            err.to_string(),
            "a deploy's code is 1048577 bytes, the limit is 1048576 (MAX_CODE_BYTES)"
        );
        let missing = resign(format!(
            r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"deploy","module":"m1"}}}}"#
        ));
        assert!(missing
            .check(CHAIN, Network::Testnet)
            .unwrap_err()
            .to_string()
            .contains("a deploy action needs `code`"));
        let stray = resign(format!(
            r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"game","game":"t","op":{{}},"code":""}}}}"#
        ));
        assert_eq!(
            stray.check(CHAIN, Network::Testnet).unwrap_err().code(),
            "bad_json"
        );

        // Any other action is still limited to MAX_BODY_BYTES.
        let padded = resign(format!(
            r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{{"type":"faucet","token":"GOLD"}}}}{}"#,
            " ".repeat(MAX_BODY_BYTES)
        ));
        assert_eq!(
            padded.check(CHAIN, Network::Testnet).unwrap_err(),
            TxError::TooLarge {
                len: padded.body.len(),
                max: MAX_BODY_BYTES
            }
        );
        let huge = resign(" ".repeat(MAX_DEPLOY_BODY_BYTES + 1));
        assert_eq!(
            huge.check(CHAIN, Network::Testnet).unwrap_err(),
            TxError::TooLarge {
                len: MAX_DEPLOY_BODY_BYTES + 1,
                max: MAX_DEPLOY_BODY_BYTES
            }
        );
    }

    #[test]
    fn upgrade_actions_have_one_wire_form_and_bounded_policies() {
        let sk = key(1);
        let from = sk.address();
        let tail = |action: Action| {
            let json = body(&sk, 0, action).to_json();
            json[json.find(r#""action":"#).unwrap()..].to_string()
        };
        let code = vec![0u8, 97, 115, 109];
        assert_eq!(
            tail(Action::deploy("g", code.clone())),
            r#""action":{"type":"deploy","module":"g","code":"AGFzbQ=="}}"#
        );
        assert_eq!(
            tail(Action::Deploy {
                module: "g".into(),
                code,
                policy: Some(UpgradePolicy::Timelocked { delay_ms: 5 }),
            }),
            r#""action":{"type":"deploy","module":"g","code":"AGFzbQ==","policy":{"kind":"timelocked","delay_ms":5}}}"#
        );
        assert_eq!(
            tail(Action::ActivateUpgrade { module: "g".into() }),
            r#""action":{"type":"activate_upgrade","module":"g"}}"#
        );
        assert_eq!(
            tail(Action::CancelUpgrade { module: "g".into() }),
            r#""action":{"type":"cancel_upgrade","module":"g"}}"#
        );
        assert_eq!(
            tail(Action::SetPolicy {
                module: "g".into(),
                policy: UpgradePolicy::Immutable
            }),
            r#""action":{"type":"set_policy","module":"g","policy":{"kind":"immutable"}}}"#
        );
        for action in [
            Action::ActivateUpgrade { module: "g".into() },
            Action::SetPolicy {
                module: "g".into(),
                policy: UpgradePolicy::Owner,
            },
        ] {
            let b = body(&sk, 3, action);
            assert_eq!(b.sign(&sk).check(CHAIN, Network::Testnet).unwrap(), b);
        }
        let parse = |action: &str| {
            TxBody::parse(&format!(
                r#"{{"chain_id":"{CHAIN}","from":"{from}","nonce":0,"action":{action}}}"#
            ))
        };
        for bad in [
            r#"{"type":"set_policy","module":"g"}"#,
            r#"{"type":"set_policy","module":"g","policy":{"kind":"timelocked","delay_ms":0}}"#,
            r#"{"type":"deploy","module":"g","code":"","policy":{"kind":"timelocked","delay_ms":31536000001}}"#,
            r#"{"type":"deploy","module":"g","code":"","policy":{"kind":"forever"}}"#,
            r#"{"type":"activate_upgrade","module":"g","policy":{"kind":"owner"}}"#,
            r#"{"type":"cancel_upgrade"}"#,
            r#"{"type":"game","game":"g","op":{},"policy":{"kind":"owner"}}"#,
        ] {
            assert_eq!(parse(bad).unwrap_err().code(), "bad_json", "{bad}");
        }
        let explicit =
            parse(r#"{"type":"deploy","module":"g","code":"","policy":{"kind":"owner"}}"#).unwrap();
        assert!(matches!(
            explicit.action,
            Action::Deploy {
                policy: Some(UpgradePolicy::Owner),
                ..
            }
        ));
    }

    #[test]
    fn wire_form_refuses_unknown_fields() {
        assert!(serde_json::from_str::<SignedTx>(r#"{"body":"{}","signature":"x"}"#).is_ok());
        assert!(
            serde_json::from_str::<SignedTx>(r#"{"body":"{}","signature":"x","txid":"y"}"#)
                .is_err()
        );
    }
}
