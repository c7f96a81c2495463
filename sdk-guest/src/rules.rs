//! Rules modules: the pure game rules an off-chain game is played and settled by (the seed's
//! `IGameRulesV2` as wasm exports). A rules module is one type implementing [`GameRules`],
//! exported with [`crate::export_rules!`]. It imports nothing (not even `gamechain_v1`), so the
//! same `.wasm` runs unchanged on the chain (called by the channel module by its code hash,
//! through `call_code`, with no state) and in a browser's `WebAssembly` (instantiated with an
//! empty import object).
//!
//! Each game has a 32-byte **game tag** (the channel computes it from the chain, the channel
//! module and the game id: `channel::Domain::game_tag`) passed to
//! [`GameRules::initial_state`]. Rules that hide information keep it in their state and bind
//! every commitment to it (and to the seat), so a commitment copied from another game or the
//! other seat can never be opened; rules that need no such binding ignore it.
//!
//! Players are **seats** 0 and 1: rules never see addresses. The channel maps seat 0 to the
//! offer's creator and seat 1 to the joiner; [`GameRules::winner`] names a seat or a draw.
//!
//! ## Exports and their byte encodings (all integers little-endian)
//!
//! | export | input | output |
//! |---|---|---|
//! | `gc_pure_initial_state` | the 32-byte game tag | the initial state (refused for other lengths) |
//! | `gc_pure_mover_at` | `u64 move_number` | `u8` seat |
//! | `gc_pure_validate_move` | [`encode_move`] | `u8` 1 = valid, 0 = not |
//! | `gc_pure_apply_move` | [`encode_move`] | the next state (refused when the move is not valid) |
//! | `gc_pure_is_over` | the state | `u8` 1 = over |
//! | `gc_pure_winner` | the state | `u8` 0 or 1 = that seat won, 2 = draw (refused when not over) |
//!
//! [`encode_move`]: `u64 move_number ‖ u8 mover ‖ u32 state_len ‖ state ‖ move_data`. Malformed
//! input is refused (the export returns a negative value). Each export is
//! `(input_ptr, input_len: i32) -> i64` returning `(ptr << 32) | len` of its output in the
//! module's memory (ABI.md, "Pure entry points"); `gc_alloc` gives the input buffer.
//!
//! ## The rules every implementation follows
//!
//! 1. [`GameRules::is_over`] is the only way a game ends; an unfinished state is not over, and
//!    the channel refuses to settle it from history.
//! 2. [`GameRules::validate_move`] is false after the game is over, for a move number out of
//!    range, and for malformed move data (check lengths before decoding).
//! 3. [`GameRules::mover_at`] returns 0 or 1; the channel refuses the rules otherwise.
//! 4. The state has a fixed shape; its SHA-256 chains every signed move.
//! 5. Hidden information is commit-reveal (see `modules/rps_rules`).
//! 6. `is_over(initial_state(tag))` must be false (the lobby's usability check).
//! 7. Commitments are bound to the game tag and the seat (see `modules/rps_rules`).

/// Seat value [`GameRules::winner`] encodes a draw as, on the wire.
pub const DRAW: u8 = 2;

/// Length of a game tag, the input of `gc_pure_initial_state`.
pub const GAME_TAG_BYTES: usize = 32;

/// The rules of a two-player, turn-based game. Every method is a pure function of its
/// arguments: no state, no clock, no randomness.
pub trait GameRules {
    /// The state before move 0 of the game tagged `game` (32 bytes naming the chain, the
    /// channel and the game; keep it in the state to bind commitments to the game, or ignore
    /// it).
    fn initial_state(&self, game: &[u8; GAME_TAG_BYTES]) -> Vec<u8>;
    /// The seat (0 or 1) that makes move `move_number`.
    fn mover_at(&self, move_number: u64) -> u8;
    /// Whether `mover` may make `data` as move `move_number` in `state`.
    fn validate_move(&self, state: &[u8], move_number: u64, mover: u8, data: &[u8]) -> bool;
    /// The state after a move [`GameRules::validate_move`] accepts (only called for those).
    fn apply_move(&self, state: &[u8], move_number: u64, mover: u8, data: &[u8]) -> Vec<u8>;
    /// Whether `state` is final.
    fn is_over(&self, state: &[u8]) -> bool;
    /// The winning seat of a final state; `None` for a draw. Only asked when
    /// [`GameRules::is_over`].
    fn winner(&self, state: &[u8]) -> Option<u8>;
}

/// The input of `gc_pure_validate_move` and `gc_pure_apply_move`.
pub fn encode_move(move_number: u64, mover: u8, state: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(13 + state.len() + data.len());
    out.extend_from_slice(&move_number.to_le_bytes());
    out.push(mover);
    out.extend_from_slice(&(state.len() as u32).to_le_bytes());
    out.extend_from_slice(state);
    out.extend_from_slice(data);
    out
}

/// `(move_number, mover, state, data)` of an [`encode_move`] input; `None` when malformed.
pub fn decode_move(input: &[u8]) -> Option<(u64, u8, &[u8], &[u8])> {
    if input.len() < 13 {
        return None;
    }
    let n = u64::from_le_bytes(input[..8].try_into().ok()?);
    let mover = input[8];
    let len = u32::from_le_bytes(input[9..13].try_into().ok()?) as usize;
    let rest = &input[13..];
    if rest.len() < len {
        return None;
    }
    Some((n, mover, &rest[..len], &rest[len..]))
}

/// What one export answers for `input`: `Some(bytes)` or `None` (refused). This is the whole
/// behaviour of the wasm exports, so a native test of it tests them.
pub fn dispatch(rules: &dyn GameRules, entry: &str, input: &[u8]) -> Option<Vec<u8>> {
    match entry {
        "initial_state" => Some(rules.initial_state(input.try_into().ok()?)),
        "mover_at" => {
            let n = u64::from_le_bytes(input.try_into().ok()?);
            Some(vec![rules.mover_at(n)])
        }
        "validate_move" => {
            let (n, mover, state, data) = decode_move(input)?;
            Some(vec![u8::from(
                mover <= 1 && rules.validate_move(state, n, mover, data),
            )])
        }
        "apply_move" => {
            let (n, mover, state, data) = decode_move(input)?;
            (mover <= 1 && rules.validate_move(state, n, mover, data))
                .then(|| rules.apply_move(state, n, mover, data))
        }
        "is_over" => Some(vec![u8::from(rules.is_over(input))]),
        "winner" => rules
            .is_over(input)
            .then(|| vec![rules.winner(input).unwrap_or(DRAW)]),
        _ => None,
    }
}

/// Why [`replay`] stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// `mover_at` named a seat other than 0 or 1.
    BadRules(u64),
    /// Move `n` came after the game was over.
    AfterOver(u64),
    /// Move `n` is not valid.
    Illegal(u64),
}

/// Plays `moves` (move data, from move 0) from the initial state of the game tagged `game`
/// natively: the state after them, or the first move that fails. For author tests (the channel
/// does the same on chain, plus signatures).
pub fn replay(
    rules: &dyn GameRules,
    game: &[u8; GAME_TAG_BYTES],
    moves: &[&[u8]],
) -> Result<Vec<u8>, ReplayError> {
    let mut state = rules.initial_state(game);
    for (n, data) in moves.iter().enumerate() {
        let n = n as u64;
        let mover = rules.mover_at(n);
        if mover > 1 {
            return Err(ReplayError::BadRules(n));
        }
        if rules.is_over(&state) {
            return Err(ReplayError::AfterOver(n));
        }
        if !rules.validate_move(&state, n, mover, data) {
            return Err(ReplayError::Illegal(n));
        }
        state = rules.apply_move(&state, n, mover, data);
    }
    Ok(state)
}

/// The lobby's usability check, natively, for the game tagged `game`: `mover_at(0)` is a seat
/// and the initial state is not over.
pub fn usable(rules: &dyn GameRules, game: &[u8; GAME_TAG_BYTES]) -> bool {
    rules.mover_at(0) <= 1 && !rules.is_over(&rules.initial_state(game))
}

/// Body of every `gc_pure_*` export of [`crate::export_rules!`]: reads the input, runs
/// [`dispatch`], leaves the output in memory (the bump allocator never frees) and returns
/// `(ptr << 32) | len`, or `-1` when refused.
///
/// # Safety
/// `(ptr, len)` must be a readable range of this module's memory (the host places inputs in
/// buffers from `gc_alloc`).
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub unsafe fn export_body(rules: &dyn GameRules, entry: &str, ptr: i32, len: i32) -> i64 {
    let input: &[u8] = if len <= 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { core::slice::from_raw_parts(ptr as u32 as usize as *const u8, len as usize) }
    };
    match dispatch(rules, entry, input) {
        Some(out) => {
            let out = out.leak();
            ((out.as_ptr() as usize as u64) << 32 | out.len() as u64) as i64
        }
        None => -1,
    }
}

/// Exports a [`GameRules`] value as a rules module: `gc_pure_initial_state`,
/// `gc_pure_mover_at`, `gc_pure_validate_move`, `gc_pure_apply_move`, `gc_pure_is_over`,
/// `gc_pure_winner`, plus the ABI's required `gc_abi_version`, `gc_alloc`, `gc_apply` and
/// `gc_view` (the last two answer `2`, which the chain reports as `internal: malformed module
/// output`: a rules module takes no transactions and has no views). Nothing is imported. On
/// other targets it expands to nothing.
///
/// ```
/// # use gamechain_sdk::rules::GameRules;
/// pub struct Coin;
/// impl GameRules for Coin {
///     fn initial_state(&self, _: &[u8; 32]) -> Vec<u8> { vec![0] }
///     fn mover_at(&self, n: u64) -> u8 { (n % 2) as u8 }
///     fn validate_move(&self, s: &[u8], n: u64, _: u8, d: &[u8]) -> bool { s[0] == 0 && n == 0 && d.len() == 1 }
///     fn apply_move(&self, _: &[u8], _: u64, _: u8, d: &[u8]) -> Vec<u8> { vec![1 + d[0] % 2] }
///     fn is_over(&self, s: &[u8]) -> bool { s[0] != 0 }
///     fn winner(&self, s: &[u8]) -> Option<u8> { Some(s[0] - 1) }
/// }
/// gamechain_sdk::export_rules!(Coin);
/// # fn main() {
/// assert_eq!(gamechain_sdk::rules::replay(&Coin, &[0; 32], &[&[1]]), Ok(vec![2]));
/// # }
/// ```
#[macro_export]
macro_rules! export_rules {
    ($rules:expr, schema = $schema:expr $(,)?) => {
        $crate::export_schema!($schema);
        $crate::export_rules!($rules);
    };
    ($rules:expr $(,)?) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            #[unsafe(no_mangle)]
            extern "C" fn gc_abi_version() -> i32 {
                $crate::guest::abi_version()
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_alloc(len: i32) -> i32 {
                $crate::guest::alloc(len)
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_apply(_: i32, _: i32, _: i32, _: i32) -> i32 {
                2
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_view(_: i32, _: i32) -> i32 {
                2
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_pure_initial_state(p: i32, l: i32) -> i64 {
                // SAFETY: the host (or a browser client) passes a buffer from `gc_alloc`.
                unsafe { $crate::rules::export_body(&$rules, "initial_state", p, l) }
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_pure_mover_at(p: i32, l: i32) -> i64 {
                // SAFETY: as above.
                unsafe { $crate::rules::export_body(&$rules, "mover_at", p, l) }
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_pure_validate_move(p: i32, l: i32) -> i64 {
                // SAFETY: as above.
                unsafe { $crate::rules::export_body(&$rules, "validate_move", p, l) }
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_pure_apply_move(p: i32, l: i32) -> i64 {
                // SAFETY: as above.
                unsafe { $crate::rules::export_body(&$rules, "apply_move", p, l) }
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_pure_is_over(p: i32, l: i32) -> i64 {
                // SAFETY: as above.
                unsafe { $crate::rules::export_body(&$rules, "is_over", p, l) }
            }
            #[unsafe(no_mangle)]
            extern "C" fn gc_pure_winner(p: i32, l: i32) -> i64 {
                // SAFETY: as above.
                unsafe { $crate::rules::export_body(&$rules, "winner", p, l) }
            }
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// First to move wins: move 0 of data `[1]` ends the game.
    struct OneMove;
    impl GameRules for OneMove {
        fn initial_state(&self, _: &[u8; GAME_TAG_BYTES]) -> Vec<u8> {
            vec![0]
        }
        fn mover_at(&self, n: u64) -> u8 {
            (n % 2) as u8
        }
        fn validate_move(&self, s: &[u8], n: u64, _: u8, d: &[u8]) -> bool {
            s == [0] && n == 0 && d == [1]
        }
        fn apply_move(&self, _: &[u8], _: u64, mover: u8, _: &[u8]) -> Vec<u8> {
            vec![1 + mover]
        }
        fn is_over(&self, s: &[u8]) -> bool {
            s != [0]
        }
        fn winner(&self, s: &[u8]) -> Option<u8> {
            Some(s[0] - 1)
        }
    }

    #[test]
    fn move_encoding_round_trips_and_refuses_truncation() {
        let enc = encode_move(7, 1, b"abc", b"xy");
        assert_eq!(decode_move(&enc), Some((7, 1, &b"abc"[..], &b"xy"[..])));
        assert_eq!(decode_move(&enc[..14]), None);
        assert_eq!(decode_move(&[0; 12]), None);
    }

    #[test]
    fn dispatch_answers_every_export_and_refuses_bad_input() {
        let r = &OneMove;
        assert_eq!(dispatch(r, "initial_state", &[9; 32]), Some(vec![0]));
        assert_eq!(
            dispatch(r, "initial_state", b""),
            None,
            "the input is the 32-byte game tag"
        );
        assert_eq!(dispatch(r, "initial_state", &[9; 33]), None);
        assert_eq!(dispatch(r, "mover_at", &3u64.to_le_bytes()), Some(vec![1]));
        assert_eq!(dispatch(r, "mover_at", b"short"), None);
        let good = encode_move(0, 0, &[0], &[1]);
        assert_eq!(dispatch(r, "validate_move", &good), Some(vec![1]));
        assert_eq!(dispatch(r, "apply_move", &good), Some(vec![1]));
        let bad = encode_move(0, 0, &[0], &[2]);
        assert_eq!(dispatch(r, "validate_move", &bad), Some(vec![0]));
        assert_eq!(
            dispatch(r, "apply_move", &bad),
            None,
            "an invalid move is refused"
        );
        let seat9 = encode_move(0, 9, &[0], &[1]);
        assert_eq!(dispatch(r, "validate_move", &seat9), Some(vec![0]));
        assert_eq!(dispatch(r, "is_over", &[0]), Some(vec![0]));
        assert_eq!(
            dispatch(r, "winner", &[0]),
            None,
            "no winner before the end"
        );
        assert_eq!(dispatch(r, "winner", &[2]), Some(vec![1]));
        assert_eq!(dispatch(r, "nope", b""), None);
    }

    #[test]
    fn replay_stops_at_the_first_bad_move() {
        let tag = [0; GAME_TAG_BYTES];
        assert!(usable(&OneMove, &tag));
        assert_eq!(replay(&OneMove, &tag, &[&[1]]), Ok(vec![1]));
        assert_eq!(
            replay(&OneMove, &tag, &[&[2]]),
            Err(ReplayError::Illegal(0))
        );
        assert_eq!(
            replay(&OneMove, &tag, &[&[1], &[1]]),
            Err(ReplayError::AfterOver(1))
        );
    }
}
