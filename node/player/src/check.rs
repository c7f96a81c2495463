//! [`check_received`]: what a client does with a signed move it received (from the board or any
//! other transport) before keeping it. The next move is kept only when it continues our current
//! state (its text names our state hash as `prev`), its number is the next one, its signature
//! recovers to the game key of the seat `mover_at(n)` names, and the rules' `validate_move`
//! (run locally) says yes. A copy of a move we hold is ignored; a *different* move signed by the
//! same seat's key for a position we hold is kept apart as an equivocation proof. Anything else
//! is a [`Refusal`] and is never stored.

use std::fmt;

use gamechain_channel_protocol as protocol;
use gamechain_runtime::chain::verify_message;
use serde_json::Value;

use crate::error::ChannelError;
use crate::rules::{LocalRules, Replay};
use crate::store::{GameRecord, HeldMove};
use crate::MAX_MOVES_HELD;

/// What a received move is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// The next move, checked: append it.
    Next(HeldMove),
    /// A copy of move `n`, which we hold already.
    Held(u64),
    /// A second signed move of the opponent for a position we hold: keep it for `prove`.
    Equivocation(HeldMove),
}

/// Why a received move is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not `{"n": <u64>, "data": "<hex>", "sig": "<base64>"}` within the bounds.
    NotAMove(String),
    /// Move `n` when we hold `held` moves (it does not continue our state).
    NotNext {
        /// Its number.
        n: u64,
        /// Moves we hold (the number we expect).
        held: u64,
    },
    /// The game is over at move `n`.
    GameOver(u64),
    /// Move `n` is signed by the game key of `signed_by`, whose turn it is not.
    OutOfTurn {
        /// Its number.
        n: u64,
        /// The player whose move it is.
        due: String,
        /// The player whose key signed it.
        signed_by: String,
    },
    /// Move `n`'s signature is not by `player`'s game key over the move's text.
    BadSignature {
        /// Its number.
        n: u64,
        /// The player whose move it is.
        player: String,
    },
    /// Move `n` is not legal by the rules.
    Illegal(u64),
    /// We hold [`MAX_MOVES_HELD`] moves already.
    TooMany,
    /// A second move for a position of ours, signed by our own game key: we never signed it.
    OurKeyEquivocates(u64),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotAMove(why) => write!(f, "not a signed move: {why}"),
            Refusal::NotNext { n, held } => write!(
                f,
                "move {n} does not continue our state (we hold {held} moves, the next is {held})"
            ),
            Refusal::GameOver(n) => write!(f, "move {n} comes after the end of the game"),
            Refusal::OutOfTurn { n, due, signed_by } => write!(
                f,
                "move {n} is out of turn: it is {due}'s move, signed by {signed_by}'s game key"
            ),
            Refusal::BadSignature { n, player } => {
                write!(f, "move {n} is not signed by {player}'s game key")
            }
            Refusal::Illegal(n) => write!(f, "move {n} is not a legal move"),
            Refusal::TooMany => write!(
                f,
                "this client holds at most {MAX_MOVES_HELD} moves per game"
            ),
            Refusal::OurKeyEquivocates(n) => write!(
                f,
                "a second move {n} signed by our own game key: we never signed it (is the key leaked?)"
            ),
        }
    }
}

/// A signed move parsed from its JSON: `(n, data, sig)`, data as bytes.
pub fn parse_move(v: &Value) -> Result<(u64, Vec<u8>, String), Refusal> {
    let n = v
        .get("n")
        .and_then(Value::as_u64)
        .ok_or_else(|| Refusal::NotAMove("n must be a non-negative integer".into()))?;
    let data = v
        .get("data")
        .and_then(Value::as_str)
        .ok_or_else(|| Refusal::NotAMove("data must be hex".into()))?;
    if data.len() > 2 * protocol::MAX_MOVE_BYTES {
        return Err(Refusal::NotAMove(format!(
            "data is over {} bytes",
            protocol::MAX_MOVE_BYTES
        )));
    }
    let data = hex::decode(data).map_err(|_| Refusal::NotAMove("data must be hex".into()))?;
    let sig = v
        .get("sig")
        .and_then(Value::as_str)
        .filter(|s| s.len() <= 200)
        .ok_or_else(|| Refusal::NotAMove("sig must be a signature".into()))?;
    Ok((n, data, sig.to_string()))
}

/// Whether `sig` is seat `seat`'s game key's signature of move `n` = `data` over the state
/// hashing to `prev`.
pub fn signed_by_seat(
    record: &GameRecord,
    seat: u8,
    n: u64,
    prev: &str,
    data: &[u8],
    sig: &str,
) -> bool {
    let msg = record.domain.domain().move_message(
        &record.game,
        n,
        prev,
        &record.players[seat as usize],
        data,
    );
    verify_message(&record.signers[seat as usize], msg.as_bytes(), sig).is_ok()
}

/// Checks the received move `payload` (its JSON) against `record`, whose held moves replay to
/// `replay`. `Ok(Err(refusal))` for a move that must not be kept; `Err` when the rules
/// themselves fail to run.
pub fn check_received(
    rules: &LocalRules,
    record: &GameRecord,
    replay: &Replay,
    payload: &Value,
) -> Result<Result<Received, Refusal>, ChannelError> {
    let (n, data, sig) = match parse_move(payload) {
        Ok(m) => m,
        Err(r) => return Ok(Err(r)),
    };
    let held = record.moves.len() as u64;
    let data_hex = hex::encode(&data);
    if n < held {
        let mine = &record.moves[n as usize];
        if mine.data == data_hex {
            return Ok(Ok(Received::Held(n)));
        }
        let seat = mine.seat;
        let prev = replay.hash_before(n).expect("n < held");
        if !signed_by_seat(record, seat, n, &prev, &data, &sig) {
            let player = record.players[seat as usize].clone();
            return Ok(Err(Refusal::BadSignature { n, player }));
        }
        if Some(seat) == record.my_seat() {
            return Ok(Err(Refusal::OurKeyEquivocates(n)));
        }
        if record.conflicts.iter().any(|c| c.n == n) {
            return Ok(Ok(Received::Held(n)));
        }
        return Ok(Ok(Received::Equivocation(HeldMove {
            n,
            data: data_hex,
            sig,
            seat,
            posted: true,
            relayed: false,
        })));
    }
    if n > held {
        return Ok(Err(Refusal::NotNext { n, held }));
    }
    if held as usize >= MAX_MOVES_HELD {
        return Ok(Err(Refusal::TooMany));
    }
    let state = replay.state();
    if rules.is_over(state)? {
        return Ok(Err(Refusal::GameOver(n)));
    }
    let seat = rules.mover_at(n)?;
    let prev = protocol::state_hash(state);
    if !signed_by_seat(record, seat, n, &prev, &data, &sig) {
        let due = record.players[seat as usize].clone();
        let other = 1 - seat;
        if signed_by_seat(record, other, n, &prev, &data, &sig) {
            let signed_by = record.players[other as usize].clone();
            return Ok(Err(Refusal::OutOfTurn { n, due, signed_by }));
        }
        return Ok(Err(Refusal::BadSignature { n, player: due }));
    }
    if !rules.validate_move(state, n, seat, &data)? {
        return Ok(Err(Refusal::Illegal(n)));
    }
    Ok(Ok(Received::Next(HeldMove {
        n,
        data: data_hex,
        sig,
        seat,
        posted: true,
        relayed: false,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn channel_moves_parse_within_bounds() {
        let m = json!({"n": 3, "data": "0A", "sig": "c2ln"});
        assert_eq!(parse_move(&m), Ok((3, vec![10], "c2ln".to_string())));
        let long = "00".repeat(protocol::MAX_MOVE_BYTES + 1);
        for (bad, why) in [
            (json!({"data": "00", "sig": "s"}), "n must be"),
            (json!({"n": -1, "data": "00", "sig": "s"}), "n must be"),
            (
                json!({"n": 0, "data": "zz", "sig": "s"}),
                "data must be hex",
            ),
            (json!({"n": 0, "data": long, "sig": "s"}), "data is over"),
            (
                json!({"n": 0, "data": "00", "sig": "s".repeat(201)}),
                "sig must be",
            ),
        ] {
            let e = parse_move(&bad).unwrap_err().to_string();
            assert!(
                e.starts_with("not a signed move: ") && e.contains(why),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            Refusal::NotNext { n: 5, held: 2 }.to_string(),
            "move 5 does not continue our state (we hold 2 moves, the next is 2)"
        );
    }
}
