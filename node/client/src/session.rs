//! Session keys from a client (`docs/session-keys.md`): [`Session`] (a session key, the account
//! it acts for and the session's id), session files (JSON, mode 0600, like key files), and the
//! [`Client`] calls that authorize, use, list and revoke sessions.

use std::fs;
use std::path::Path;

use gamechain_chain::session::SessionList;
use gamechain_chain::{Action, SecretKey, TxBody};
use gamechain_sdk::Amount;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::{Client, ClientResult};
use gamechain_chain::key_file::write_secret_file;

/// A session key and what it acts for: sign with [`Session::key`], for [`Session::account`],
/// under session [`Session::id`] (the account's nonce of the `authorize_session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The session key (its own address is `key.address()`).
    pub key: SecretKey,
    /// The account it acts for (the main key's address).
    pub account: String,
    /// The session id.
    pub id: u64,
}

/// A session file: `{"account": "<address>", "key": "<session key WIF>", "session": <id>}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionFile {
    account: String,
    key: String,
    session: u64,
}

/// Longest session file read, bytes.
const MAX_SESSION_FILE_BYTES: u64 = 4096;

impl Session {
    /// The `session_game` body of `game`'s `op` for this session with the account's `nonce`
    /// on chain `chain_id` (sign it with [`Session::key`]).
    pub fn body(&self, chain_id: &str, nonce: u64, game: &str, op: &Value) -> TxBody {
        TxBody {
            chain_id: chain_id.to_string(),
            from: self.key.address(),
            nonce,
            action: Action::SessionGame {
                account: self.account.clone(),
                session: self.id,
                game: game.to_string(),
                op: serde_json::value::to_raw_value(op).expect("a Value always serialises"),
            },
        }
    }

    /// Writes this session to a new file at `path`, mode 0600 (it holds the session key).
    /// Errors (text naming the path): it exists (never overwritten), or cannot be written.
    pub fn write_file(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string(&SessionFile {
            account: self.account.clone(),
            key: self.key.to_wif(),
            session: self.id,
        })
        .expect("a session file always serialises");
        write_secret_file(path, "a session file", &format!("{text}\n"))
    }

    /// Reads a session file. Errors (text naming the path, never the key): unreadable, too
    /// long, not a session file.
    pub fn read_file(path: &Path) -> Result<Session, String> {
        let len = fs::metadata(path)
            .map_err(|e| format!("cannot read session file {}: {e}", path.display()))?
            .len();
        if len > MAX_SESSION_FILE_BYTES {
            return Err(format!(
                "{} is {len} bytes: not a session file",
                path.display()
            ));
        }
        let text = fs::read_to_string(path)
            .map_err(|e| format!("cannot read session file {}: {e}", path.display()))?;
        let file: SessionFile = serde_json::from_str(&text).map_err(|_| {
            format!(
                "{} is not a session file ({{\"account\", \"key\", \"session\"}})",
                path.display()
            )
        })?;
        let key = SecretKey::from_wif(&file.key)
            .map_err(|e| format!("{} does not hold a WIF session key: {e}", path.display()))?;
        Ok(Session {
            key,
            account: file.account,
            id: file.session,
        })
    }
}

impl Client {
    /// `GET /v1/account/<address>/sessions`. Errors: `bad_address` (400).
    pub async fn sessions(&self, account: &str) -> ClientResult<SessionList> {
        self.get(&["v1", "account", account, "sessions"], &[]).await
    }

    /// Authorizes `session_key` as a session key of `main`'s account: game ops of `modules`
    /// (ascending, no duplicates) until block time `expires_at_ms`, moving at most `cap` GOLD
    /// base units. Posts the `authorize_session` (signed by `main`, at its next nonce, which is
    /// the session's id) and returns its txid and the [`Session`]; the session exists once the
    /// transaction is in a block with an ok receipt ([`Client::wait_for_receipt`]).
    pub async fn authorize_session(
        &self,
        main: &SecretKey,
        session_key: SecretKey,
        modules: &[String],
        expires_at_ms: u64,
        cap: u128,
    ) -> ClientResult<(String, Session)> {
        let action = Action::AuthorizeSession {
            key: session_key.address(),
            modules: modules.to_vec(),
            expires_at_ms,
            cap: Amount(cap),
        };
        let body = self.next_body(main, action).await?;
        let id = body.nonce;
        let txid = self.post_tx(&body.sign(main)).await?;
        Ok((
            txid,
            Session {
                key: session_key,
                account: main.address(),
                id,
            },
        ))
    }

    /// Revokes `main`'s session of the key whose address is `key`; returns the txid.
    pub async fn revoke_session(&self, main: &SecretKey, key: &str) -> ClientResult<String> {
        self.send(
            main,
            Action::RevokeSession {
                key: key.to_string(),
            },
        )
        .await
    }

    /// Signs `game`'s `op` with the session key, for the session's account at the account's
    /// `next_nonce`, and posts it; returns the txid. Errors: as [`Client::post_tx`], notably
    /// `session_refused` (403) with the session's fixed text.
    pub async fn send_session(
        &self,
        session: &Session,
        game: &str,
        op: &Value,
    ) -> ClientResult<String> {
        let chain_id = self.chain_id().await?;
        let nonce = self.account(&session.account).await?.next_nonce;
        let body = session.body(&chain_id, nonce, game, op);
        self.post_tx(&body.sign(&session.key)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_chain::Network;

    #[test]
    fn session_files_round_trip_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("alice.session");
        let s = Session {
            key: SecretKey::generate(Network::Testnet),
            account: SecretKey::generate(Network::Testnet).address(),
            id: 7,
        };
        s.write_file(&path).unwrap();
        assert_eq!(Session::read_file(&path).unwrap(), s);
        assert!(s.write_file(&path).is_err(), "never overwritten");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }
}
