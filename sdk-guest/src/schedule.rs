//! Scheduled calls and draws: a module asks the chain to call it back at a later block
//! ([`Ctx::schedule`](crate::Ctx::schedule)), and only inside such a call may it draw randomness
//! ([`Ctx::draw`](crate::Ctx::draw)), from the beacon of the block that runs it — a beacon nobody
//! could know when the call was fixed (`docs/randomness.md`).
//!
//! This file holds what both sides of the ABI agree on: when a call is due ([`At`]), the bounds,
//! the refusals with their codes and texts ([`ScheduleError`]), what a module receives
//! ([`ScheduledCall`]), and the state layout of the queue (`sched/…` keys, written only by the
//! chain). The queue's operations are `native/scheduler.rs`.
//!
//! **When a call runs.** [`At::Height`]`(h)`: in block `h`. [`At::TimeMs`]`(t)`: in the first
//! block whose *parent's* time is at least `t` (the parent's time was fixed before the block's
//! beacon existed, so whoever makes a block cannot move a call into it or out of it by choosing
//! its time). Due calls run at the start of the block, before its transactions, over the
//! parent's state: at most [`MAX_SCHEDULED_PER_BLOCK`], half of them kept for each queue (calls
//! due at a height, calls due at a time) when both have more, each queue in order of due point
//! then call id; the rest stay due for the next block.
//!
//! **Who may schedule.** `apply` and `migrate` (paid by the transaction's sender) and a scheduled
//! call (paid by whoever scheduled it). Not `end_block`, which runs every block on nobody's fuel:
//! a call it scheduled would be free ([`ScheduleError::NotHere`]).
//!
//! **Cost.** Scheduling is charged when it is done, to the call that schedules: the host call's
//! base, the payload's bytes at `per_byte_stored`, `schedule_base`, and the whole `fuel` the
//! scheduled call will get (ABI.md, "Scheduled calls"). The scheduled call itself is then free.

use serde::{Deserialize, Serialize};

/// Most bytes of a scheduled call's payload.
pub const MAX_SCHEDULED_PAYLOAD_BYTES: usize = 4_096;

/// Most calls one module may have waiting.
pub const MAX_PENDING_PER_MODULE: u64 = 1_024;

/// Most scheduled calls one block runs.
pub const MAX_SCHEDULED_PER_BLOCK: usize = 64;

/// Furthest a call may be scheduled ahead: blocks.
pub const MAX_AHEAD_BLOCKS: u64 = 10_000_000;

/// Furthest a call may be scheduled ahead: milliseconds of block time (366 days).
pub const MAX_AHEAD_MS: u64 = 366 * 24 * 3_600_000;

/// When a scheduled call is due (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// In the block of this height (more than the current one).
    Height(u64),
    /// In the first block whose parent's time is at least this (ms since the Unix epoch, more
    /// than the current block's time).
    TimeMs(u64),
}

impl At {
    /// The ABI's `kind` argument: 0 for a height, 1 for a time.
    pub fn kind(self) -> i32 {
        match self {
            At::Height(_) => 0,
            At::TimeMs(_) => 1,
        }
    }

    /// The ABI's `at` argument.
    pub fn value(self) -> u64 {
        match self {
            At::Height(h) | At::TimeMs(h) => h,
        }
    }

    /// From the ABI's arguments; `None` for an unknown kind or a negative value.
    pub fn from_abi(kind: i32, value: i64) -> Option<At> {
        let value = u64::try_from(value).ok()?;
        match kind {
            0 => Some(At::Height(value)),
            1 => Some(At::TimeMs(value)),
            _ => None,
        }
    }
}

/// Why a call cannot be scheduled. Each is a fixed negative code of the `schedule` import and a
/// fixed text ([`ScheduleError::message`]); the SDK's `schedule` turns it into
/// `ActionError::invalid` with that text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleError {
    /// `-1`: not inside `apply`, `migrate` or a scheduled call (in `end_block`, which runs on
    /// nobody's fuel, so a call it scheduled would be unpaid; natively also a view).
    NotHere,
    /// `-2`: the height or time is not after the current block's, or the kind is unknown.
    NotAhead,
    /// `-3`: further ahead than [`MAX_AHEAD_BLOCKS`] or [`MAX_AHEAD_MS`].
    TooFar,
    /// `-4`: the payload is over [`MAX_SCHEDULED_PAYLOAD_BYTES`].
    PayloadTooLarge,
    /// `-5`: the module has [`MAX_PENDING_PER_MODULE`] calls waiting.
    Full,
    /// `-6`: `fuel` is 0 or more than the chain's `fuel_apply`.
    BadFuel,
    /// `-7`: the module exports no `gc_scheduled`.
    NoEntryPoint,
    /// `-8` (`seal`): the sealed move is not [`SEALED_BYTES`] of a well-formed envelope, or its
    /// tag is over [`MAX_SEAL_TAG_BYTES`].
    SealMalformed,
    /// `-9` (`seal`): the sealed move's proof is not for this module, sender, tag and
    /// round: it was copied from another game, seat, round or player, or altered.
    SealUnbound,
    /// `-10` (`schedule_sealed`): the round already holds [`MAX_SEALED_PER_ROUND`] sealed calls
    /// or [`MAX_SEALED_ROUND_FUEL`] of their fuel.
    RoundFull,
    /// `-11` (`schedule_sealed`): the chain has no beacon, so no round of it can open a sealed
    /// move.
    NoBeacon,
    /// `-12` (`seal`): no sealed call of this module with this id is waiting.
    NotSealable,
    /// `-13` (`seal`): the sealed call holds a sealed move already (a seat is sealed once).
    AlreadySealed,
}

impl ScheduleError {
    /// The import's return code.
    pub fn code(self) -> i64 {
        match self {
            ScheduleError::NotHere => -1,
            ScheduleError::NotAhead => -2,
            ScheduleError::TooFar => -3,
            ScheduleError::PayloadTooLarge => -4,
            ScheduleError::Full => -5,
            ScheduleError::BadFuel => -6,
            ScheduleError::NoEntryPoint => -7,
            ScheduleError::SealMalformed => -8,
            ScheduleError::SealUnbound => -9,
            ScheduleError::RoundFull => -10,
            ScheduleError::NoBeacon => -11,
            ScheduleError::NotSealable => -12,
            ScheduleError::AlreadySealed => -13,
        }
    }

    /// The error of a return code (`None` for a code that is not one).
    pub fn from_code(code: i64) -> Option<ScheduleError> {
        Some(match code {
            -1 => ScheduleError::NotHere,
            -2 => ScheduleError::NotAhead,
            -3 => ScheduleError::TooFar,
            -4 => ScheduleError::PayloadTooLarge,
            -5 => ScheduleError::Full,
            -6 => ScheduleError::BadFuel,
            -7 => ScheduleError::NoEntryPoint,
            -8 => ScheduleError::SealMalformed,
            -9 => ScheduleError::SealUnbound,
            -10 => ScheduleError::RoundFull,
            -11 => ScheduleError::NoBeacon,
            -12 => ScheduleError::NotSealable,
            -13 => ScheduleError::AlreadySealed,
            _ => return None,
        })
    }

    /// The fixed text.
    pub fn message(self) -> &'static str {
        match self {
            ScheduleError::NotHere => {
                "a call can be scheduled only from apply, end_block, migrate or a scheduled call"
            }
            ScheduleError::NotAhead => "a call must be scheduled after the current block",
            ScheduleError::TooFar => {
                "a call can be scheduled at most 10000000 blocks or 366 days ahead"
            }
            ScheduleError::PayloadTooLarge => "a scheduled call's payload is at most 4096 bytes",
            ScheduleError::Full => "this module has 1024 scheduled calls waiting already",
            ScheduleError::BadFuel => "a scheduled call's fuel must be 1 to the chain's fuel_apply",
            ScheduleError::NoEntryPoint => "this module exports no gc_scheduled",
            ScheduleError::SealMalformed => "the sealed move is malformed",
            ScheduleError::SealUnbound => {
                "the sealed move is not bound to this game, seat, round and player"
            }
            ScheduleError::RoundFull => {
                "this round already holds 64 sealed calls or their fuel: choose a later round"
            }
            ScheduleError::NoBeacon => {
                "this chain has no beacon: no round of it opens a sealed move"
            }
            ScheduleError::NotSealable => "no sealed call of this module with this id is waiting",
            ScheduleError::AlreadySealed => "this sealed call holds a sealed move already",
        }
    }
}

impl core::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.message())
    }
}

impl From<ScheduleError> for crate::ActionError {
    fn from(e: ScheduleError) -> Self {
        crate::ActionError::invalid(e.message())
    }
}

/// A scheduled call as the module receives it in [`GameModule::scheduled`](crate::GameModule::scheduled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledCall {
    /// The id [`Ctx::schedule`](crate::Ctx::schedule) returned (below 2^53, derived from what
    /// scheduled it: `native/scheduler.rs`, `call_id`).
    pub id: u64,
    /// The payload given when it was scheduled.
    pub payload: Vec<u8>,
    /// For a sealed call ([`Ctx::schedule_sealed`](crate::Ctx::schedule_sealed)): what the move
    /// sealed into it ([`Ctx::seal`](crate::Ctx::seal)) opened to; [`Unsealed::Void`] when none
    /// was. `None` for an ordinary call.
    pub sealed: Option<Unsealed>,
}

/// What a sealed move opened to, in the block of its round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsealed {
    /// The 32 bytes the player sealed.
    Opened([u8; SEAL_PLAINTEXT_BYTES]),
    /// No move was sealed into the call, or it does not open under the round's beacon (sealed to
    /// another round, chain or key, or made wrongly): the module treats the seat's move as void.
    Void,
}

/// Bytes of a sealed move's envelope (`runtime/chain/src/keys/seal.rs`).
pub const SEALED_BYTES: usize = 224;

/// Bytes of what a sealed move holds.
pub const SEAL_PLAINTEXT_BYTES: usize = 32;

/// Most bytes of a sealed call's binding tag.
pub const MAX_SEAL_TAG_BYTES: usize = 64;

/// Most sealed calls one round (block height) opens, across all modules.
pub const MAX_SEALED_PER_ROUND: u64 = 64;

/// Most fuel the sealed calls of one round are given together (a quarter of a block's).
pub const MAX_SEALED_ROUND_FUEL: u64 = 500_000_000;

/// The bit `gc_scheduled`'s id carries for a sealed call, whose input is then the payload
/// followed by the opening: one byte (1 opened, 0 void) and 32 bytes (zeros when void).
pub const SEALED_CALL_FLAG: u64 = 1 << 62;

/// What a sealed move is bound to (`runtime/chain/src/keys/seal.rs`, `SealContext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealBinding<'a> {
    /// The module accepting it.
    pub module: &'a str,
    /// The transaction's sender.
    pub sender: &'a str,
    /// The module's tag (its game and seat, …).
    pub tag: &'a [u8],
    /// The round: the height whose beacon opens it.
    pub round: u64,
    /// The chain's beacon public key (96 bytes, the genesis `beacon.public_key`): an envelope
    /// made under another key is refused.
    pub beacon_key: &'a [u8; 96],
}

/// A sealed move's check: `Ok` when the envelope is well formed and bound to the binding. The
/// chain's is the proof check of `seal.rs`; [`crate::MockCtx`]'s is `native::mock_seal::check`.
pub type SealCheck = fn(&[u8], &SealBinding<'_>) -> Result<(), ScheduleError>;

/// The check of a context that takes no sealed moves: every one is malformed.
pub fn no_seal_check(_: &[u8], _: &SealBinding<'_>) -> Result<(), ScheduleError> {
    Err(ScheduleError::SealMalformed)
}

/// The input `gc_scheduled` gets for a sealed call: the payload, then the opening (one byte:
/// 1 opened, 0 void; then 32 bytes, zeros when void).
pub fn sealed_call_input(payload: &[u8], opened: Unsealed) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 33);
    out.extend_from_slice(payload);
    match opened {
        Unsealed::Opened(m) => {
            out.push(1);
            out.extend_from_slice(&m);
        }
        Unsealed::Void => out.extend_from_slice(&[0u8; 33]),
    }
    out
}

/// The payload and opening of a sealed call's input ([`sealed_call_input`]); `None` when it is
/// shorter than 33 bytes.
pub fn split_sealed_call_input(input: &[u8]) -> Option<(&[u8], Unsealed)> {
    let at = input.len().checked_sub(33)?;
    let (payload, tail) = input.split_at(at);
    let opened = match tail[0] {
        1 => Unsealed::Opened(tail[1..].try_into().expect("32 bytes")),
        _ => Unsealed::Void,
    };
    Some((payload, opened))
}

/// The text every draw outside a scheduled call of a chain with a beacon fails with (a trap on
/// chain; a panic natively).
pub const NO_DRAW: &str =
    "no draw here: randomness is drawn only in a scheduled call, on a chain with a beacon";

/// Prefix of the chain's queue of scheduled calls (never a module's key).
pub const SCHED_PREFIX: &str = "sched/";
/// Prefix of calls due at a height: `sched/h/<16 hex height>/<16 hex id>`.
pub const SCHED_HEIGHT_PREFIX: &str = "sched/h/";
/// Prefix of calls due at a time: `sched/t/<16 hex ms>/<16 hex id>`.
pub const SCHED_TIME_PREFIX: &str = "sched/t/";
/// Prefix of sealed calls, opened in the block of their round: `sched/s/<16 hex round>/<16 hex
/// id>`.
pub const SCHED_SEALED_PREFIX: &str = "sched/s/";
/// Prefix of each round's count and fuel of sealed calls: `sched/r/<16 hex round>` (`<count>
/// <fuel>`, canonical decimals).
pub const SCHED_ROUND_PREFIX: &str = "sched/r/";
/// Prefix of the index from call id to queue key: `sched/id/<16 hex id>`.
pub const SCHED_ID_PREFIX: &str = "sched/id/";
/// Prefix of the count of a module's waiting calls: `sched/n/<module>` (canonical decimal).
pub const SCHED_COUNT_PREFIX: &str = "sched/n/";

/// The queue key of call `id` due at `at`.
pub fn queue_key(at: At, id: u64) -> String {
    match at {
        At::Height(h) => format!("{SCHED_HEIGHT_PREFIX}{h:016x}/{id:016x}"),
        At::TimeMs(t) => format!("{SCHED_TIME_PREFIX}{t:016x}/{id:016x}"),
    }
}

/// The queue key of sealed call `id` of round `round`.
pub fn sealed_queue_key(round: u64, id: u64) -> String {
    format!("{SCHED_SEALED_PREFIX}{round:016x}/{id:016x}")
}

/// The key of round `round`'s count and fuel of sealed calls.
pub fn round_key(round: u64) -> String {
    format!("{SCHED_ROUND_PREFIX}{round:016x}")
}

/// The index key of call `id`.
pub fn id_key(id: u64) -> String {
    format!("{SCHED_ID_PREFIX}{id:016x}")
}

/// The key counting `module`'s waiting calls.
pub fn count_key(module: &str) -> String {
    format!("{SCHED_COUNT_PREFIX}{module}")
}

/// The due point (16 hex) of a queue key (a height, a time, or a sealed call's round), as a
/// number.
pub fn due_of(queue_key: &str) -> Option<u64> {
    let rest = queue_key
        .strip_prefix(SCHED_HEIGHT_PREFIX)
        .or_else(|| queue_key.strip_prefix(SCHED_TIME_PREFIX))
        .or_else(|| queue_key.strip_prefix(SCHED_SEALED_PREFIX))?;
    u64::from_str_radix(rest.get(..16)?, 16).ok()
}

/// A waiting call as the queue stores it (JSON at its queue key; `payload` in lowercase hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuedCall {
    /// The call id.
    pub id: u64,
    /// The module to call.
    pub module: String,
    /// When it is due.
    pub at: At,
    /// Its fuel limit (paid for when it was scheduled).
    pub fuel: u64,
    /// The payload, lowercase hex.
    pub payload: String,
    /// The height of the block that scheduled it.
    pub scheduled_height: u64,
    /// A sealed call's envelope, lowercase hex; empty while no move is sealed into it. Absent
    /// for an ordinary call, so ordinary records keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
}

impl QueuedCall {
    /// Its queue key: [`sealed_queue_key`] for a sealed call (due at its round's height), else
    /// [`queue_key`].
    pub fn key(&self) -> String {
        match (&self.sealed, self.at) {
            (Some(_), At::Height(round)) => sealed_queue_key(round, self.id),
            _ => queue_key(self.at, self.id),
        }
    }
}
