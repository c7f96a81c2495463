//! gamechain's tic-tac-toe as a CosmWasm contract: `execute` takes the op (the JSON gamechain's
//! `gc_apply` takes, e.g. `{"kind":"move","id":…,"cell":0}`) as its message and runs
//! `tictactoe::TicTacToe::apply` on it, with the message's sender as the player, over a [`Ctx`]
//! that keeps gamechain's state layout (`m/<module>/<key>`, `bal/<account>/<TOKEN>`,
//! `tictactoe::ID` as the module) in the contract's storage. Events become CosmWasm events of
//! the same kind with the data as one `data` attribute. The op is checked against tic-tac-toe's
//! schema around `apply`, as the chain's `gc_apply` checks it.
//!
//! It exists for the move bench (`tests/benches/support/cosmwasm_peer.rs`): the same game logic,
//! compiled by the same compiler with the same allocator, on CosmWasm's VM instead of ours. It
//! offers what tic-tac-toe uses: state, balances and escrow, events, the block's height and
//! time, the txid (`env.transaction.hash`). Tokens, `public_random` and calls into other modules
//! fail with their name, and the ledger's checks of account and token names are left out; a
//! real port would have to build those.

use cosmwasm_std::{entry_point, DepsMut, Env, Event, MessageInfo, Order, Response};
use gamechain_sdk::keys::{balance_key, escrow_account, module_key, module_prefix};
use gamechain_sdk::prelude::*;
use gamechain_sdk::schema::Schema;
use gamechain_sdk::Checkpoint;
use serde_json::Value;
use tictactoe::TicTacToe;

/// Tic-tac-toe's op declarations, made from its schema at compile time, as `export_module!`
/// makes them for the chain's build.
const OPS: &str = {
    const LEN: usize = gamechain_sdk::schema::op_text_len(tictactoe::SCHEMA);
    const BYTES: [u8; LEN] = gamechain_sdk::schema::op_text_bytes::<LEN>(tictactoe::SCHEMA);
    gamechain_sdk::schema::op_text_str(&BYTES)
};

/// Most entries one scan returns, as on the chain (`gamechain_sdk::MAX_SCAN_LIMIT`, native only).
const MAX_SCAN_LIMIT: usize = 1024;

/// Runs one op of tic-tac-toe sent by `info.sender`. Errors: the game's `ActionError` text.
#[entry_point]
pub fn execute(deps: DepsMut, env: Env, info: MessageInfo, op: Value) -> Result<Response, String> {
    let txid: String = env
        .transaction
        .as_ref()
        .map(|t| t.hash.iter().map(|b| format!("{b:02x}")).collect())
        .unwrap_or_default();
    let mut ctx = StorageCtx {
        storage: deps.storage,
        module: tictactoe::ID.to_string(),
        height: env.block.height,
        block_time_ms: env.block.time.nanos() / 1_000_000,
        txid,
        sender: info.sender.to_string(),
        checkpoint: Checkpoint::default(),
        events: Vec::new(),
    };
    // As gamechain's `gc_apply` does: the op's declaration read from the schema's op text, the
    // op checked against it around `apply`.
    let schema = Schema::for_op(OPS, &op).map_err(|_| "the module's schema does not parse")?;
    schema
        .enforce_op(&op, || TicTacToe.apply(&mut ctx, info.sender.as_str(), &op))
        .map_err(|e| e.to_string())?;
    Ok(Response::new().add_events(
        ctx.events
            .into_iter()
            .map(|(kind, data)| Event::new(kind).add_attribute("data", data.to_string())),
    ))
}

/// A [`Ctx`] over the contract's storage for one call.
struct StorageCtx<'a> {
    storage: &'a mut dyn cosmwasm_std::Storage,
    module: String,
    height: u64,
    block_time_ms: u64,
    txid: String,
    sender: String,
    checkpoint: Checkpoint,
    events: Vec<(String, Value)>,
}

/// The first key after every key that starts with `prefix` (`None`: no such key).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl StorageCtx<'_> {
    fn set_balance(&mut self, account: &str, token: &str, amount: u128) {
        let key = balance_key(account, token);
        if amount == 0 {
            self.storage.remove(key.as_bytes());
        } else {
            self.storage
                .set(key.as_bytes(), amount.to_string().as_bytes());
        }
    }

    /// As gamechain's ledger moves `amount`: `insufficient` when `from` holds less.
    fn transfer(
        &mut self,
        from: &str,
        to: &str,
        token: &str,
        amount: u128,
    ) -> Result<(), ActionError> {
        let have = self.balance(from, token);
        if have < amount {
            return Err(ActionError::Insufficient {
                token: token.to_string(),
                need: amount,
                have,
            });
        }
        if amount == 0 || from == to {
            return Ok(());
        }
        let credited = self.balance(to, token).checked_add(amount).ok_or_else(|| {
            ActionError::invalid(format!("balance of {to} in {token} would overflow"))
        })?;
        self.set_balance(from, token, have - amount);
        self.set_balance(to, token, credited);
        Ok(())
    }
}

fn unsupported(what: &str) -> ActionError {
    ActionError::internal(format!("{what}: not offered by the CosmWasm peer"))
}

impl Ctx for StorageCtx<'_> {
    fn module(&self) -> &str {
        &self.module
    }
    fn height(&self) -> u64 {
        self.height
    }
    fn block_time_ms(&self) -> u64 {
        self.block_time_ms
    }
    fn txid(&self) -> &str {
        &self.txid
    }
    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }
    fn sequencer(&self) -> &str {
        ""
    }
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.storage.get(module_key(&self.module, key).as_bytes())
    }
    fn put(&mut self, key: &str, value: Vec<u8>) {
        self.storage
            .set(module_key(&self.module, key).as_bytes(), &value);
    }
    fn delete(&mut self, key: &str) {
        self.storage
            .remove(module_key(&self.module, key).as_bytes());
    }
    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        let scope = module_prefix(&self.module).len();
        let start_after = start_after.map(|s| module_key(&self.module, s));
        self.scan_raw(
            &module_key(&self.module, prefix),
            start_after.as_deref(),
            limit,
        )
        .into_iter()
        .map(|(k, v)| (k[scope..].to_string(), v))
        .collect()
    }
    fn read_raw(&self, key: &str) -> Option<Vec<u8>> {
        self.storage.get(key.as_bytes())
    }
    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        let end = prefix_end(prefix.as_bytes());
        let start = match start_after {
            // The first key after `start_after` (keys are compared bytewise).
            Some(after) if after.as_bytes() >= prefix.as_bytes() => {
                [after.as_bytes(), &[0]].concat()
            }
            _ => prefix.as_bytes().to_vec(),
        };
        self.storage
            .range(Some(&start), end.as_deref(), Order::Ascending)
            .take(limit.min(MAX_SCAN_LIMIT))
            .filter_map(|(k, v)| String::from_utf8(k).ok().map(|k| (k, v)))
            .collect()
    }
    fn balance(&self, account: &str, token: &str) -> u128 {
        self.storage
            .get(balance_key(account, token).as_bytes())
            .and_then(|v| core::str::from_utf8(&v).ok()?.parse().ok())
            .unwrap_or(0)
    }
    fn escrow_in(&mut self, from: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        if from != self.sender {
            return Err(ActionError::unauthorized(
                "escrow_in takes funds only from the transaction sender",
            ));
        }
        let escrow = escrow_account(&self.module);
        self.transfer(from, &escrow, token, amount)
    }
    fn escrow_out(&mut self, to: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        let escrow = escrow_account(&self.module);
        self.transfer(&escrow, to, token, amount)
    }
    fn create_token(
        &mut self,
        _: &str,
        _: &str,
        _: u8,
        _: Option<u128>,
    ) -> Result<(), ActionError> {
        Err(unsupported("create_token"))
    }
    fn mint(&mut self, _: &str, _: &str, _: u128) -> Result<(), ActionError> {
        Err(unsupported("mint"))
    }
    fn burn(&mut self, _: &str, _: &str, _: u128) -> Result<(), ActionError> {
        Err(unsupported("burn"))
    }
    fn emit(&mut self, kind: &str, data: Value) {
        self.events.push((kind.to_string(), data));
    }
    fn public_random(&mut self) -> [u8; 32] {
        panic!("public_random: not offered by the CosmWasm peer")
    }
}
