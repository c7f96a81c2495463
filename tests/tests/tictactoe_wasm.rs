//! The seed's 11 tic-tac-toe tests (`000_a84a33e6fd262b23.txt`, section 4) run against the
//! compiled `tictactoe.wasm` through the wasmtime runtime, under the seed's names, and a check
//! that every scenario leaves the same state, balances and events as the native run.

use gamechain_sdk::{GameModule, MockCtx};
use gamechain_tests::TICTACTOE_WASM;
use tictactoe::scenarios;

tictactoe::seed_tests!(*TICTACTOE_WASM);

type Scenario = fn(&dyn GameModule) -> MockCtx;

const SCENARIOS: [(&str, Scenario); 11] = [
    ("bad_ops_are_invalid", scenarios::bad_ops_are_invalid),
    (
        "cancel_refunds_and_only_while_open",
        scenarios::cancel_refunds_and_only_while_open,
    ),
    (
        "invited_opponent_is_enforced",
        scenarios::invited_opponent_is_enforced,
    ),
    (
        "free_game_moves_no_gold",
        scenarios::free_game_moves_no_gold,
    ),
    (
        "occupied_or_bad_cell_is_invalid",
        scenarios::occupied_or_bad_cell_is_invalid,
    ),
    (
        "draw_refunds_both_players",
        scenarios::draw_refunds_both_players,
    ),
    (
        "join_without_enough_gold_fails",
        scenarios::join_without_enough_gold_fails,
    ),
    (
        "timeout_after_150_blocks",
        scenarios::timeout_after_150_blocks,
    ),
    (
        "only_the_player_to_move_may_move",
        scenarios::only_the_player_to_move_may_move,
    ),
    (
        "view_by_id_open_and_player",
        scenarios::view_by_id_open_and_player,
    ),
    (
        "x_wins_a_row_and_takes_the_pot",
        scenarios::x_wins_a_row_and_takes_the_pot,
    ),
];

#[test]
fn wasm_and_native_runs_leave_identical_state_and_events() {
    for (name, scenario) in SCENARIOS {
        let native = scenario(&tictactoe::TicTacToe);
        let wasm = scenario(&*TICTACTOE_WASM);
        assert_eq!(
            native.kv.state, wasm.kv.state,
            "{name}: state (incl. balances) differs"
        );
        assert_eq!(native.events, wasm.events, "{name}: events differ");
        assert_eq!(native.txid, wasm.txid, "{name}: txids differ");
        assert!(
            !native.kv.state.is_empty(),
            "{name}: a scenario that writes nothing proves nothing"
        );
    }
}
