//! What the reference live game (`docs/tictactoe.md`, "Live game") says each step of
//! `gamechain demo` must produce, and the comparisons that find the first difference.
//!
//! Pure functions only: the expected receipts, events and views are built from the players'
//! addresses, the game id and block heights of this run (the reference run's were `xxURsC5w…`,
//! `80566b04265ced78`, heights 1410–1420); everything else is the reference's literal value.
//! `demo.rs` calls them as it plays; the unit tests below run them against the reference transcript.

use std::fmt;

use gamechain_runtime::chain::{Event, Receipt};
use gamechain_sdk::Amount;
use serde_json::{json, Value};

/// The module the demo plays.
pub const MODULE: &str = "tictactoe";
/// GOLD one faucet call pays, base units (1000.00 GOLD).
pub const FAUCET_AMOUNT: Amount = Amount(100_000);
/// The stake Alice puts up, base units (1.00 GOLD).
pub const STAKE: Amount = Amount(100);
/// Blocks after the last move before a timeout can be claimed (the reference run: move at 1414, claim
/// from 1564).
pub const TIMEOUT_BLOCKS: u64 = 150;
/// The error of a move on an occupied cell.
pub const CELL_TAKEN: &str = "invalid: cell is taken";
/// The final board after Alice's win.
pub const FINAL_BOARD: &str = "xxxoo....";

/// The first outcome of a run that differs from the reference game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Which outcome (e.g. `move bob 0 (taken): error`).
    pub check: String,
    /// The reference value.
    pub expected: String,
    /// This run's value.
    pub found: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} differs from the seed: expected {}, got {}",
            self.check, self.expected, self.found
        )
    }
}

impl std::error::Error for Mismatch {}

/// `Ok` when `found == expected`, else a [`Mismatch`] naming `check` (values shown as JSON).
pub fn expect_eq<T: PartialEq + serde::Serialize>(
    check: impl Into<String>,
    expected: &T,
    found: &T,
) -> Result<(), Mismatch> {
    if expected == found {
        return Ok(());
    }
    let show = |v: &T| serde_json::to_string(v).unwrap_or_else(|e| format!("<{e}>"));
    Err(Mismatch {
        check: check.into(),
        expected: show(expected),
        found: show(found),
    })
}

/// What a receipt must say; `fuel_used` is not compared (it follows the build of the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedReceipt {
    /// Whether the action succeeds.
    pub ok: bool,
    /// The error text of a failure.
    pub error: Option<String>,
    /// The events, in order.
    pub events: Vec<Event>,
}

impl ExpectedReceipt {
    /// A success with these events.
    pub fn success(events: Vec<Event>) -> Self {
        Self {
            ok: true,
            error: None,
            events,
        }
    }

    /// A failure with this error text and no events.
    pub fn failure(error: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(error.into()),
            events: Vec::new(),
        }
    }
}

/// Compares `found` with `expected` field by field; the mismatch names `step` and the field.
pub fn check_receipt(
    step: &str,
    expected: &ExpectedReceipt,
    found: &Receipt,
) -> Result<(), Mismatch> {
    expect_eq(format!("{step}: ok"), &expected.ok, &found.ok)?;
    expect_eq(format!("{step}: error"), &expected.error, &found.error)?;
    let events = |list: &[Event]| {
        list.iter()
            .map(|e| json!({"kind": e.kind, "data": e.data}))
            .collect::<Vec<_>>()
    };
    expect_eq(
        format!("{step}: events"),
        &events(&expected.events),
        &events(&found.events),
    )
}

fn event(kind: &str, data: Value) -> Event {
    Event {
        kind: kind.to_string(),
        data,
    }
}

/// The game id a create transaction makes: the first 16 hex characters of its txid.
pub fn game_id_of(create_txid: &str) -> &str {
    &create_txid[..create_txid.len().min(16)]
}

/// `faucet alice`, `faucet bob`: 1000 GOLD to `to`.
pub fn faucet(to: &str) -> ExpectedReceipt {
    ExpectedReceipt::success(vec![event(
        "faucet",
        json!({"amount": FAUCET_AMOUNT, "to": to, "token": "GOLD"}),
    )])
}

/// `create`: an open table of `id` for `x` with the reference stake, open to anyone.
pub fn created(id: &str, x: &str) -> ExpectedReceipt {
    ExpectedReceipt::success(vec![event(
        "tictactoe.created",
        json!({"id": id, "opponent": null, "stake": STAKE, "x": x}),
    )])
}

/// `join bob`: `o` sits down at `id`.
pub fn joined(id: &str, o: &str) -> ExpectedReceipt {
    ExpectedReceipt::success(vec![event("tictactoe.joined", json!({"id": id, "o": o}))])
}

/// The `tictactoe.moved` event of `by` playing `cell`, leaving `board` with `turn` to move.
pub fn moved_event(id: &str, by: &str, cell: u8, board: &str, turn: &str) -> Event {
    event(
        "tictactoe.moved",
        json!({"board": board, "by": by, "cell": cell, "id": id, "turn": turn}),
    )
}

/// A move that does not end the game.
pub fn moved(id: &str, by: &str, cell: u8, board: &str, turn: &str) -> ExpectedReceipt {
    ExpectedReceipt::success(vec![moved_event(id, by, cell, board, turn)])
}

/// `move alice 2`: the last move, a line for `x`, who takes the whole pot.
pub fn winning_move(id: &str, x: &str) -> ExpectedReceipt {
    ExpectedReceipt::success(vec![
        moved_event(id, x, 2, FINAL_BOARD, "o"),
        event(
            "tictactoe.finished",
            json!({"id": id, "payout": Amount(2 * STAKE.0), "reason": "line", "result": "x_won", "winner": x}),
        ),
    ])
}

/// `claim_timeout alice (too early)`, sent after the last move was made at `move_height`.
pub fn claim_too_early(move_height: u64) -> ExpectedReceipt {
    ExpectedReceipt::failure(format!(
        "invalid: timeout can be claimed from height {}",
        move_height + TIMEOUT_BLOCKS
    ))
}

/// `move bob 0 (taken)`.
pub fn cell_taken() -> ExpectedReceipt {
    ExpectedReceipt::failure(CELL_TAKEN)
}

/// The table in `?open=1` between create (at `height`) and join.
pub fn open_game(id: &str, x: &str, height: u64) -> Value {
    json!({
        "board": ".........", "created_height": height, "id": id, "last_move_height": height, "moves": 0,
        "o": null, "opponent": null, "reason": null, "result": null, "stake": STAKE, "status": "open",
        "turn": "x", "winner": null, "x": x,
    })
}

/// `?id=<id>` after Alice's win: created at `created_height`, last move at `last_height`.
pub fn finished_game(id: &str, x: &str, o: &str, created_height: u64, last_height: u64) -> Value {
    json!({
        "board": FINAL_BOARD, "created_height": created_height, "id": id, "last_move_height": last_height,
        "moves": 5, "o": o, "opponent": null, "reason": "line", "result": "x_won", "stake": STAKE,
        "status": "finished", "turn": "o", "winner": x, "x": x,
    })
}

/// The entries of a `{"games": [...]}` view whose `id` is `id`.
pub fn games_with_id<'a>(list: &'a Value, id: &str) -> Vec<&'a Value> {
    list_games(list)
        .into_iter()
        .filter(|g| g["id"] == id)
        .collect()
}

/// The ids of a `{"games": [...]}` view, in its order.
pub fn game_ids(list: &Value) -> Vec<String> {
    list_games(list)
        .into_iter()
        .map(|g| g["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn list_games(list: &Value) -> Vec<&Value> {
    list["games"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// `?open=1` right after create: the table is listed once, exactly as the reference shows it.
pub fn check_open_before_join(
    open: &Value,
    id: &str,
    x: &str,
    height: u64,
) -> Result<(), Mismatch> {
    let found: Vec<Value> = games_with_id(open, id).into_iter().cloned().collect();
    expect_eq(
        "open tables before join",
        &vec![open_game(id, x, height)],
        &found,
    )
}

/// `?open=1` after the join: the table is gone.
pub fn check_open_after_join(open: &Value, id: &str) -> Result<(), Mismatch> {
    let found = games_with_id(open, id).len();
    expect_eq(
        format!("open tables after join: entries with id {id}"),
        &0,
        &found,
    )
}

/// GOLD of the two players and the escrow at one moment, base units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Balances {
    /// Alice's GOLD.
    pub alice: Amount,
    /// Bob's GOLD.
    pub bob: Amount,
    /// `module:tictactoe`'s GOLD.
    pub escrow: Amount,
}

/// Balances after both faucet calls: 1000 GOLD each. `escrow` is what the escrow held before
/// the demo (0 on a fresh chain; other games on a shared node may hold stakes).
pub fn balances_before(escrow: Amount) -> Balances {
    Balances {
        alice: FAUCET_AMOUNT,
        bob: FAUCET_AMOUNT,
        escrow,
    }
}

/// Balances after the win: Alice +1.00 GOLD, Bob -1.00 GOLD, the escrow back where it started.
pub fn balances_after(escrow_before: Amount) -> Balances {
    Balances {
        alice: Amount(FAUCET_AMOUNT.0 + STAKE.0),
        bob: Amount(FAUCET_AMOUNT.0 - STAKE.0),
        escrow: escrow_before,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The seed transcript's values (section 6, untrimmed output of play.mjs).
    const ALICE: &str = "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7";
    const BOB: &str = "xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki";
    const CREATE_TXID: &str = "80566b04265ced78cfb54f8695443c53cde48f3d6493d881ed0ea136d4ca163d";
    const ID: &str = "80566b04265ced78";

    fn receipt(ok: bool, error: Option<&str>, events: &[&str]) -> Receipt {
        let events = events
            .iter()
            .map(|line| {
                let (kind, data) = line.split_once(' ').unwrap();
                event(kind, serde_json::from_str(data).unwrap())
            })
            .collect();
        Receipt {
            ok,
            error: error.map(str::to_string),
            events,
            fuel_used: 41_234,
            fee: Default::default(),
        }
    }

    #[test]
    fn the_seed_transcript_passes_every_check() {
        assert_eq!(game_id_of(CREATE_TXID), ID);
        let steps: Vec<(&str, ExpectedReceipt, Receipt)> = vec![
            (
                "faucet alice",
                faucet(ALICE),
                receipt(
                    true,
                    None,
                    &[
                        r#"faucet {"amount":"100000","to":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","token":"GOLD"}"#,
                    ],
                ),
            ),
            (
                "create",
                created(ID, ALICE),
                receipt(
                    true,
                    None,
                    &[
                        r#"tictactoe.created {"id":"80566b04265ced78","opponent":null,"stake":"100","x":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7"}"#,
                    ],
                ),
            ),
            (
                "join bob",
                joined(ID, BOB),
                receipt(
                    true,
                    None,
                    &[
                        r#"tictactoe.joined {"id":"80566b04265ced78","o":"xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki"}"#,
                    ],
                ),
            ),
            (
                "move alice 0",
                moved(ID, ALICE, 0, "x........", "o"),
                receipt(
                    true,
                    None,
                    &[
                        r#"tictactoe.moved {"board":"x........","by":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","cell":0,"id":"80566b04265ced78","turn":"o"}"#,
                    ],
                ),
            ),
            (
                "claim_timeout",
                claim_too_early(1414),
                receipt(
                    false,
                    Some("invalid: timeout can be claimed from height 1564"),
                    &[],
                ),
            ),
            (
                "move bob 0 (taken)",
                cell_taken(),
                receipt(false, Some("invalid: cell is taken"), &[]),
            ),
            (
                "move bob 4",
                moved(ID, BOB, 4, "xx.oo....", "x"),
                receipt(
                    true,
                    None,
                    &[
                        r#"tictactoe.moved {"board":"xx.oo....","by":"xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki","cell":4,"id":"80566b04265ced78","turn":"x"}"#,
                    ],
                ),
            ),
            (
                "move alice 2",
                winning_move(ID, ALICE),
                receipt(
                    true,
                    None,
                    &[
                        r#"tictactoe.moved {"board":"xxxoo....","by":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","cell":2,"id":"80566b04265ced78","turn":"o"}"#,
                        r#"tictactoe.finished {"id":"80566b04265ced78","payout":"200","reason":"line","result":"x_won","winner":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7"}"#,
                    ],
                ),
            ),
        ];
        for (step, expected, found) in &steps {
            check_receipt(step, expected, found).unwrap();
        }

        let open: Value = serde_json::from_str(r#"{"games":[{"board":".........","created_height":1412,"id":"80566b04265ced78","last_move_height":1412,"moves":0,"o":null,"opponent":null,"reason":null,"result":null,"stake":"100","status":"open","turn":"x","winner":null,"x":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7"}]}"#).unwrap();
        check_open_before_join(&open, ID, ALICE, 1412).unwrap();
        check_open_after_join(&json!({"games": []}), ID).unwrap();

        let game: Value = serde_json::from_str(r#"{"board":"xxxoo....","created_height":1412,"id":"80566b04265ced78","last_move_height":1420,"moves":5,"o":"xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki","opponent":null,"reason":"line","result":"x_won","stake":"100","status":"finished","turn":"o","winner":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","x":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7"}"#).unwrap();
        expect_eq("game", &finished_game(ID, ALICE, BOB, 1412, 1420), &game).unwrap();

        let seen = |a, b, e| Balances {
            alice: Amount(a),
            bob: Amount(b),
            escrow: Amount(e),
        };
        expect_eq(
            "before",
            &balances_before(Amount(0)),
            &seen(100_000, 100_000, 0),
        )
        .unwrap();
        expect_eq(
            "after",
            &balances_after(Amount(0)),
            &seen(100_100, 99_900, 0),
        )
        .unwrap();
    }

    #[test]
    fn a_different_outcome_is_named() {
        let wrong_height = receipt(
            false,
            Some("invalid: timeout can be claimed from height 1563"),
            &[],
        );
        let m = check_receipt(
            "claim_timeout alice (too early)",
            &claim_too_early(1414),
            &wrong_height,
        )
        .unwrap_err();
        assert_eq!(m.check, "claim_timeout alice (too early): error");
        assert_eq!(
            m.expected,
            r#""invalid: timeout can be claimed from height 1564""#
        );

        let succeeded = receipt(true, None, &[]);
        assert_eq!(
            check_receipt("move bob 0 (taken)", &cell_taken(), &succeeded)
                .unwrap_err()
                .check,
            "move bob 0 (taken): ok"
        );

        let draw = receipt(
            true,
            None,
            &[
                r#"tictactoe.moved {"board":"xxxoo....","by":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","cell":2,"id":"80566b04265ced78","turn":"o"}"#,
                r#"tictactoe.finished {"id":"80566b04265ced78","payout":"100","reason":"draw","result":"draw","winner":null}"#,
            ],
        );
        assert_eq!(
            check_receipt("move alice 2", &winning_move(ID, ALICE), &draw)
                .unwrap_err()
                .check,
            "move alice 2: events"
        );

        let still_open: Value = json!({"games": [open_game(ID, ALICE, 1412)]});
        let m = check_open_after_join(&still_open, ID).unwrap_err();
        assert_eq!((m.expected.as_str(), m.found.as_str()), ("0", "1"));
        let m = check_open_before_join(&json!({"games": []}), ID, ALICE, 1412).unwrap_err();
        assert_eq!(m.found, "[]");

        let mut game = finished_game(ID, ALICE, BOB, 1412, 1420);
        game["board"] = json!("xxxoo...o");
        assert!(expect_eq("game", &finished_game(ID, ALICE, BOB, 1412, 1420), &game).is_err());
        let off = Balances {
            alice: Amount(100_100),
            bob: Amount(99_900),
            escrow: Amount(100),
        };
        let m = expect_eq("after", &balances_after(Amount(0)), &off).unwrap_err();
        assert_eq!(
            m.to_string(),
            r#"after differs from the seed: expected {"alice":"100100","bob":"99900","escrow":"0"}, got {"alice":"100100","bob":"99900","escrow":"100"}"#
        );
    }

    #[test]
    fn list_helpers_read_the_view_shape() {
        let list = json!({"games": [{"id": "a"}, {"id": "b"}, {"id": "a"}]});
        assert_eq!(game_ids(&list), ["a", "b", "a"]);
        assert_eq!(games_with_id(&list, "a").len(), 2);
        assert!(game_ids(&json!({"error": 1})).is_empty());
    }
}
