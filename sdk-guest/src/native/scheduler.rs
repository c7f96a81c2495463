//! The queue of scheduled calls over a [`Kv`]: scheduling, cancelling, taking the calls a block
//! runs, and the draw formula. The one implementation the mock and the chain share
//! (`KvCtx::schedule`, the state transition's block start), so a module's timers behave the same
//! in a native test and on the chain. The layout and bounds are `schedule.rs`.

use sha2::{Digest, Sha256};

use crate::native::kv::Kv;
use crate::schedule::{
    count_key, id_key, round_key, At, QueuedCall, ScheduleError, SealBinding, SealCheck,
    MAX_AHEAD_BLOCKS, MAX_AHEAD_MS, MAX_PENDING_PER_MODULE, MAX_SCHEDULED_PAYLOAD_BYTES,
    MAX_SEALED_PER_ROUND, MAX_SEALED_ROUND_FUEL, MAX_SEAL_TAG_BYTES, SCHED_HEIGHT_PREFIX,
    SCHED_SEALED_PREFIX, SCHED_TIME_PREFIX, SEALED_BYTES,
};

/// Where a call is scheduled from: the module, the block, and the entry-point call doing it.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleFrom<'a> {
    /// The scheduling module.
    pub module: &'a str,
    /// The current block's height.
    pub height: u64,
    /// The current block's time, ms.
    pub block_time_ms: u64,
    /// The entry-point call scheduling it ([`Origin`]).
    pub origin: Origin<'a>,
    /// How many calls this entry-point call scheduled before (0 for its first).
    pub n: u32,
}

/// The entry-point call a call is scheduled from: what its id is derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin<'a> {
    /// A transaction (its txid, 64 lowercase hex) and what runs in it (`apply`, `migrate`).
    Tx(&'a str),
    /// Scheduled call `id`.
    Call(u64),
}

/// Ids are below 2^53, so they are exact in every JSON reader (JavaScript's numbers).
pub const ID_MASK: u64 = (1 << 53) - 1;

/// The id of the `n`-th call scheduled by `origin` in module `module`: the first 8
/// bytes (big-endian) of SHA-256 of `"gamechain.call.v1"` ‖ `u32 LE len(module)` ‖ module ‖ the
/// origin (`0x01` ‖ the txid's 32 bytes; `0x02` ‖ `u64 LE` parent id) ‖ `u32 LE n`, masked to 53
/// bits ([`ID_MASK`]). It depends only on what scheduled it, never on
/// other games' calls, so a verifier re-executing one game's transactions finds the ids the
/// chain used. (Another waiting call with the same id, a 2^-53 event, takes the next `n`.)
pub fn call_id(module: &str, origin: Origin<'_>, n: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(b"gamechain.call.v1");
    h.update((module.len() as u32).to_le_bytes());
    h.update(module.as_bytes());
    match origin {
        Origin::Tx(txid) => {
            h.update([1]);
            match hex::decode(txid) {
                Ok(bytes) => h.update(&bytes),
                Err(_) => h.update(txid.as_bytes()),
            }
        }
        Origin::Call(id) => {
            h.update([2]);
            h.update(id.to_le_bytes());
        }
    }
    h.update(n.to_le_bytes());
    let d: [u8; 32] = h.finalize().into();
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes")) & ID_MASK
}

fn read_u64(kv: &dyn Kv, key: &str) -> u64 {
    kv.kv_get(key)
        .and_then(|v| String::from_utf8(v).ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn write_count(kv: &mut dyn Kv, key: &str, n: u64) {
    if n == 0 {
        kv.kv_delete(key);
    } else {
        kv.kv_put(key, n.to_string().into_bytes());
    }
}

/// Schedules a call of `from.module` at `at` with `payload` and `fuel` (already checked against
/// the chain's `fuel_apply` and charged by the caller), returning its id ([`call_id`]). Checks,
/// in order: the due point is after the current block ([`ScheduleError::NotAhead`]) and within
/// reach ([`ScheduleError::TooFar`]), the payload's size, the module's count of waiting calls,
/// `fuel` at least 1 ([`ScheduleError::BadFuel`]). Writes the record, its index and the count;
/// nothing on an error.
pub fn schedule(
    kv: &mut dyn Kv,
    from: ScheduleFrom<'_>,
    at: At,
    payload: &[u8],
    fuel: u64,
) -> Result<u64, ScheduleError> {
    let (now, limit) = match at {
        At::Height(_) => (from.height, MAX_AHEAD_BLOCKS),
        At::TimeMs(_) => (from.block_time_ms, MAX_AHEAD_MS),
    };
    if at.value() <= now {
        return Err(ScheduleError::NotAhead);
    }
    if at.value() - now > limit {
        return Err(ScheduleError::TooFar);
    }
    if payload.len() > MAX_SCHEDULED_PAYLOAD_BYTES {
        return Err(ScheduleError::PayloadTooLarge);
    }
    let count = count_key(from.module);
    let waiting = read_u64(kv, &count);
    if waiting >= MAX_PENDING_PER_MODULE {
        return Err(ScheduleError::Full);
    }
    if fuel == 0 {
        return Err(ScheduleError::BadFuel);
    }
    Ok(store(kv, from, at, payload, fuel, None, waiting))
}

/// Writes a new call's record, index and the module's count; returns its id ([`call_id`]).
fn store(
    kv: &mut dyn Kv,
    from: ScheduleFrom<'_>,
    at: At,
    payload: &[u8],
    fuel: u64,
    sealed: Option<&[u8]>,
    waiting: u64,
) -> u64 {
    let mut n = from.n;
    let mut id = call_id(from.module, from.origin, n);
    while kv.kv_get(&id_key(id)).is_some() {
        n = n.wrapping_add(1);
        id = call_id(from.module, from.origin, n);
    }
    let call = QueuedCall {
        id,
        module: from.module.to_string(),
        at,
        fuel,
        payload: hex::encode(payload),
        scheduled_height: from.height,
        sealed: sealed.map(hex::encode),
    };
    let key = call.key();
    kv.kv_put(
        &key,
        serde_json::to_vec(&call).expect("a queued call always serialises"),
    );
    kv.kv_put(&id_key(id), key.into_bytes());
    write_count(kv, &count_key(from.module), waiting + 1);
    id
}

/// A sealed call's round use: how many sealed calls and how much of their fuel it holds.
fn round_use(kv: &dyn Kv, round: u64) -> (u64, u64) {
    let text = kv
        .kv_get(&round_key(round))
        .and_then(|v| String::from_utf8(v).ok())
        .unwrap_or_default();
    let mut parts = text.split(' ').map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn write_round_use(kv: &mut dyn Kv, round: u64, (count, fuel): (u64, u64)) {
    if count == 0 {
        kv.kv_delete(&round_key(round));
    } else {
        kv.kv_put(&round_key(round), format!("{count} {fuel}").into_bytes());
    }
}

/// Schedules a sealed call: a seat for one sealed move, opened in the block of height `round`,
/// where `from.module`'s `gc_scheduled` then runs with `payload`, `fuel` and what the move
/// sealed into it ([`seal`]) opens to (void when none was). `has_beacon`: whether the chain has
/// a beacon. Refusals, in order: [`ScheduleError::NoBeacon`], `NotAhead`, `TooFar`,
/// `PayloadTooLarge`, `Full`, `RoundFull`, `BadFuel`; nothing is written on any of them. The
/// seat is reserved from now on: nobody can fill its round to keep a player's move out.
pub fn schedule_sealed(
    kv: &mut dyn Kv,
    from: ScheduleFrom<'_>,
    round: u64,
    payload: &[u8],
    fuel: u64,
    has_beacon: bool,
) -> Result<u64, ScheduleError> {
    if !has_beacon {
        return Err(ScheduleError::NoBeacon);
    }
    if round <= from.height {
        return Err(ScheduleError::NotAhead);
    }
    if round - from.height > MAX_AHEAD_BLOCKS {
        return Err(ScheduleError::TooFar);
    }
    if payload.len() > MAX_SCHEDULED_PAYLOAD_BYTES {
        return Err(ScheduleError::PayloadTooLarge);
    }
    let waiting = read_u64(kv, &count_key(from.module));
    if waiting >= MAX_PENDING_PER_MODULE {
        return Err(ScheduleError::Full);
    }
    let (count, round_fuel) = round_use(kv, round);
    if count >= MAX_SEALED_PER_ROUND || round_fuel.saturating_add(fuel) > MAX_SEALED_ROUND_FUEL {
        return Err(ScheduleError::RoundFull);
    }
    if fuel == 0 {
        return Err(ScheduleError::BadFuel);
    }
    let id = store(
        kv,
        from,
        At::Height(round),
        payload,
        fuel,
        Some(&[]),
        waiting,
    );
    write_round_use(kv, round, (count + 1, round_fuel + fuel));
    Ok(id)
}

/// Seals `sealed` into waiting sealed call `id` of `module`, handed in by `sender` with the
/// module's `tag`, on a chain whose beacon key is `beacon_key`: the envelope's proof must bind it
/// to `beacon_key`, `module`, `sender`, `tag` and the call's round (`check`: the chain's proof check, or the
/// mock's). Refusals, in order:
/// [`ScheduleError::NotSealable`] (no such waiting sealed call of `module`), `AlreadySealed`,
/// `SealMalformed` (length or tag, then `check`'s), `SealUnbound`; nothing changes on any.
pub fn seal(
    kv: &mut dyn Kv,
    module: &str,
    sender: &str,
    id: u64,
    (sealed, tag, beacon_key): (&[u8], &[u8], &[u8; 96]),
    check: SealCheck,
) -> Result<(), ScheduleError> {
    let Some(key) = kv
        .kv_get(&id_key(id))
        .and_then(|k| String::from_utf8(k).ok())
    else {
        return Err(ScheduleError::NotSealable);
    };
    let Some(mut call) = read_call(kv, &key) else {
        return Err(ScheduleError::NotSealable);
    };
    let (Some(envelope), At::Height(round), true) = (&call.sealed, call.at, call.module == module)
    else {
        return Err(ScheduleError::NotSealable);
    };
    if !envelope.is_empty() {
        return Err(ScheduleError::AlreadySealed);
    }
    if sealed.len() != SEALED_BYTES || tag.len() > MAX_SEAL_TAG_BYTES {
        return Err(ScheduleError::SealMalformed);
    }
    let binding = SealBinding {
        module,
        sender,
        tag,
        round,
        beacon_key,
    };
    check(sealed, &binding)?;
    call.sealed = Some(hex::encode(sealed));
    kv.kv_put(
        &key,
        serde_json::to_vec(&call).expect("a queued call always serialises"),
    );
    Ok(())
}

/// Removes waiting call `id` of `module`: `true` when it was waiting and was `module`'s (a
/// module cannot cancel another's calls), `false` otherwise (nothing changes).
pub fn cancel(kv: &mut dyn Kv, module: &str, id: u64) -> bool {
    let index = id_key(id);
    let Some(key) = kv.kv_get(&index).and_then(|k| String::from_utf8(k).ok()) else {
        return false;
    };
    let Some(call) = read_call(kv, &key) else {
        return false;
    };
    if call.module != module {
        return false;
    }
    remove(kv, &key, &call);
    true
}

fn read_call(kv: &dyn Kv, key: &str) -> Option<QueuedCall> {
    serde_json::from_slice(&kv.kv_get(key)?).ok()
}

fn remove(kv: &mut dyn Kv, key: &str, call: &QueuedCall) {
    kv.kv_delete(key);
    kv.kv_delete(&id_key(call.id));
    let count = count_key(&call.module);
    let n = read_u64(kv, &count);
    write_count(kv, &count, n.saturating_sub(1));
    if let (Some(_), At::Height(round)) = (&call.sealed, call.at) {
        let (count, fuel) = round_use(kv, round);
        write_round_use(
            kv,
            round,
            (count.saturating_sub(1), fuel.saturating_sub(call.fuel)),
        );
    }
}

/// Takes (removes from the queue) the sealed calls block `height` opens: every one of a round up
/// to `height` (at most [`MAX_SEALED_PER_ROUND`] per round, so never more than a block can run),
/// in key order (round, then id). They run before the calls [`take_due`] takes.
pub fn take_sealed(kv: &mut dyn Kv, height: u64) -> Vec<QueuedCall> {
    let rows: Vec<(String, Vec<u8>)> = kv
        .kv_scan(SCHED_SEALED_PREFIX, None, MAX_SEALED_PER_ROUND as usize)
        .into_iter()
        .take_while(|(key, _)| {
            key.strip_prefix(SCHED_SEALED_PREFIX)
                .and_then(|r| r.get(..16))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .is_none_or(|d| d <= height)
        })
        .collect();
    let mut out = Vec::new();
    for (key, value) in rows {
        match serde_json::from_slice::<QueuedCall>(&value) {
            Ok(call) => {
                remove(kv, &key, &call);
                out.push(call);
            }
            Err(_) => kv.kv_delete(&key),
        }
    }
    out
}

/// Takes (removes from the queue) the calls block `height` runs, whose parent's time is
/// `parent_time_ms`: the due calls of each queue (due at a height up to `height`, due at a time
/// up to `parent_time_ms`) in key order (due point, then id), at most `limit` in all, half of
/// `limit` kept for each queue when both have more (so neither starves the other), the share one
/// does not use going to the other; calls due at a height come first in the result. A record that
/// does not parse (no module can write `sched/` keys, so only a damaged state has one) is removed
/// and skipped.
pub fn take_due(
    kv: &mut dyn Kv,
    height: u64,
    parent_time_ms: u64,
    limit: usize,
) -> Vec<QueuedCall> {
    let due = |kv: &dyn Kv, prefix: &str, until: u64| -> Vec<(String, Vec<u8>)> {
        kv.kv_scan(prefix, None, limit)
            .into_iter()
            .take_while(|(key, _)| {
                key.strip_prefix(prefix)
                    .and_then(|r| r.get(..16))
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .is_none_or(|d| d <= until)
            })
            .collect()
    };
    let by_height = due(kv, SCHED_HEIGHT_PREFIX, height);
    let by_time = due(kv, SCHED_TIME_PREFIX, parent_time_ms);
    let half = limit / 2;
    let heights = by_height.len().min(limit - by_time.len().min(half));
    let times = by_time.len().min(limit - heights);
    let mut out = Vec::new();
    for (key, value) in by_height
        .into_iter()
        .take(heights)
        .chain(by_time.into_iter().take(times))
    {
        match serde_json::from_slice::<QueuedCall>(&value) {
            Ok(call) => {
                remove(kv, &key, &call);
                out.push(call);
            }
            Err(_) => kv.kv_delete(&key),
        }
    }
    out
}

/// Puts a call [`take_due`] took back into the queue exactly as it was (its key, index and
/// count): a block that cannot run it leaves it due for the next.
pub fn requeue(kv: &mut dyn Kv, call: &QueuedCall) {
    let key = call.key();
    kv.kv_put(
        &key,
        serde_json::to_vec(call).expect("a queued call always serialises"),
    );
    kv.kv_put(&id_key(call.id), key.into_bytes());
    let count = count_key(&call.module);
    let n = read_u64(kv, &count);
    write_count(kv, &count, n + 1);
}

/// Draw `n` of scheduled call `id` of `module` in a block whose beacon is `beacon`: SHA-256 of
/// `"gamechain.draw.v1"` ‖ the 48 beacon bytes ‖ `u32 LE len(module)` ‖ module ‖ `u64 LE id` ‖
/// `u64 LE n` (ABI.md `draw`).
pub fn draw_bytes(beacon: &[u8; 48], module: &str, id: u64, n: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"gamechain.draw.v1");
    h.update(beacon);
    h.update((module.len() as u32).to_le_bytes());
    h.update(module.as_bytes());
    h.update(id.to_le_bytes());
    h.update(n.to_le_bytes());
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::MAX_SCHEDULED_PER_BLOCK;
    use crate::MockKv;

    const TXID: &str = "2f1e0d5c4b3a29181706f5e4d3c2b1a00f1e2d3c4b5a69788796a5b4c3d2e1f0";

    fn from(height: u64, time: u64) -> ScheduleFrom<'static> {
        ScheduleFrom {
            module: "dice",
            height,
            block_time_ms: time,
            origin: Origin::Tx(TXID),
            n: 0,
        }
    }

    fn nth(height: u64, time: u64, n: u32) -> ScheduleFrom<'static> {
        ScheduleFrom {
            n,
            ..from(height, time)
        }
    }

    #[test]
    fn calls_run_in_order_when_due_and_not_before() {
        let mut kv = MockKv::default();
        let a = schedule(&mut kv, nth(5, 1000, 0), At::Height(7), b"a", 10).unwrap();
        let b = schedule(&mut kv, nth(5, 1000, 1), At::Height(6), b"b", 10).unwrap();
        let c = schedule(&mut kv, nth(5, 1000, 2), At::TimeMs(1500), b"c", 10).unwrap();
        assert_eq!(a, call_id("dice", Origin::Tx(TXID), 0));
        assert!(a <= ID_MASK && b <= ID_MASK && a != b && b != c);
        assert_eq!(kv.kv_get("sched/n/dice"), Some(b"3".to_vec()));
        assert!(take_due(&mut kv, 5, 1400, 64).is_empty());
        let due = take_due(&mut kv, 6, 1500, 64);
        assert_eq!(due.iter().map(|c| c.id).collect::<Vec<_>>(), [b, c]);
        assert_eq!(hex::decode(&due[0].payload).unwrap(), b"b");
        let due = take_due(&mut kv, 9, 9999, 64);
        assert_eq!(due.iter().map(|c| c.id).collect::<Vec<_>>(), [a]);
        // Nothing is left.
        assert!(kv.state.is_empty());
        // The same origin and n again (a second waiting call) takes the next n's id.
        let again = schedule(&mut kv, nth(5, 1000, 0), At::Height(7), b"a", 10).unwrap();
        let twice = schedule(&mut kv, nth(5, 1000, 0), At::Height(7), b"a", 10).unwrap();
        assert_eq!((again, twice), (a, b));
        assert_ne!(call_id("dice", Origin::Tx(&"ab".repeat(32)), 0), a);
        assert_ne!(
            call_id("dice", Origin::Call(1), 0),
            call_id("dice", Origin::Call(2), 0)
        );
    }

    #[test]
    fn refusals_change_nothing() {
        let mut kv = MockKv::default();
        let f = from(5, 1000);
        assert_eq!(
            schedule(&mut kv, f, At::Height(5), b"", 1),
            Err(ScheduleError::NotAhead)
        );
        assert_eq!(
            schedule(&mut kv, f, At::TimeMs(1000), b"", 1),
            Err(ScheduleError::NotAhead)
        );
        assert_eq!(
            schedule(&mut kv, f, At::Height(5 + MAX_AHEAD_BLOCKS + 1), b"", 1),
            Err(ScheduleError::TooFar)
        );
        assert_eq!(
            schedule(&mut kv, f, At::Height(6), &[0; 4097], 1),
            Err(ScheduleError::PayloadTooLarge)
        );
        assert_eq!(
            schedule(&mut kv, f, At::Height(6), b"", 0),
            Err(ScheduleError::BadFuel)
        );
        assert!(kv.state.is_empty());
        for n in 0..MAX_PENDING_PER_MODULE as u32 {
            schedule(&mut kv, nth(5, 1000, n), At::Height(6), b"", 1).unwrap();
        }
        assert_eq!(
            schedule(&mut kv, f, At::Height(6), b"", 1),
            Err(ScheduleError::Full)
        );
        // A block runs at most its limit; the rest wait, in order.
        let first = take_due(&mut kv, 6, 0, MAX_SCHEDULED_PER_BLOCK);
        assert_eq!(first.len(), MAX_SCHEDULED_PER_BLOCK);
        // In id order within one due height, the rest next block.
        assert!(first.windows(2).all(|w| w[0].id < w[1].id));
        let next = take_due(&mut kv, 7, 0, MAX_SCHEDULED_PER_BLOCK);
        assert!(next[0].id > first[63].id);
    }

    #[test]
    fn a_flood_of_height_calls_leaves_time_calls_their_half() {
        let mut kv = MockKv::default();
        for n in 0..100 {
            schedule(&mut kv, nth(5, 1000, n), At::Height(6), b"", 1).unwrap();
        }
        for n in 100..110 {
            schedule(&mut kv, nth(5, 1000, n), At::TimeMs(1500), b"", 1).unwrap();
        }
        let first = take_due(&mut kv, 6, 2000, 64);
        let timed = first
            .iter()
            .filter(|c| matches!(c.at, At::TimeMs(_)))
            .count();
        assert_eq!((first.len(), timed), (64, 10));
        // Height calls first, in order; then the time calls.
        assert!(matches!(first[0].at, At::Height(_)) && matches!(first[63].at, At::TimeMs(_)));
        // Both queues full: half each.
        for n in 200..300 {
            schedule(&mut kv, nth(5, 1000, n), At::TimeMs(1500), b"", 1).unwrap();
        }
        let next = take_due(&mut kv, 7, 2000, 64);
        let timed = next
            .iter()
            .filter(|c| matches!(c.at, At::TimeMs(_)))
            .count();
        assert_eq!((next.len(), timed), (64, 32));
    }

    #[test]
    fn only_the_owner_cancels() {
        let mut kv = MockKv::default();
        let id = schedule(&mut kv, from(1, 0), At::Height(3), b"x", 1).unwrap();
        assert!(!cancel(&mut kv, "other", id));
        assert!(!cancel(&mut kv, "dice", id + 1));
        assert!(cancel(&mut kv, "dice", id));
        assert!(!cancel(&mut kv, "dice", id));
        assert!(take_due(&mut kv, 3, 0, 64).is_empty());
        assert_eq!(kv.kv_get("sched/n/dice"), None);
    }

    #[test]
    fn draws_depend_on_every_input() {
        let b = [1u8; 48];
        let d = draw_bytes(&b, "dice", 1, 0);
        assert_ne!(d, draw_bytes(&b, "dice", 1, 1));
        assert_ne!(d, draw_bytes(&b, "dice", 2, 0));
        assert_ne!(d, draw_bytes(&b, "dic", 1, 0));
        assert_ne!(d, draw_bytes(&[2; 48], "dice", 1, 0));
        assert_eq!(d, draw_bytes(&b, "dice", 1, 0));
    }

    #[test]
    fn messages_name_the_bounds() {
        assert!(ScheduleError::PayloadTooLarge
            .message()
            .contains(&MAX_SCHEDULED_PAYLOAD_BYTES.to_string()));
        assert!(ScheduleError::Full
            .message()
            .contains(&MAX_PENDING_PER_MODULE.to_string()));
        assert!(ScheduleError::TooFar
            .message()
            .contains(&MAX_AHEAD_BLOCKS.to_string()));
        for code in -7..=-1 {
            assert_eq!(ScheduleError::from_code(code).unwrap().code(), code);
        }
    }
}
