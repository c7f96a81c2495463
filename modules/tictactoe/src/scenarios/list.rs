//! The list of tic-tac-toe's scenario names, written once:
//! [`for_each_scenario!`](crate::for_each_scenario) hands the names to a macro (the testkit's
//! `native_and_wasm_tests!` in `tests/scenarios.rs`), [`SCENARIOS`] holds them as values.

use gamechain_sdk::{GameModule, MockCtx};

use super::*;

/// One scenario: sets up a [`MockCtx`], runs ops against the module, asserts, and returns the
/// final context.
pub type Scenario = fn(&dyn GameModule) -> MockCtx;

/// The 11 scenario names, listed once (in the order of `docs/tictactoe.md`, "Tests"), handed to
/// a macro: `for_each_scenario!(path::to::mac!(args…))` expands to
/// `path::to::mac! { args… bad_ops_are_invalid, …, x_wins_a_row_and_takes_the_pot, }`. This
/// crate's `tests/scenarios.rs` hands them to `gamechain_runtime::native_and_wasm_tests!`;
/// [`SCENARIOS`] is the same list as values.
///
/// ```
/// macro_rules! count {
///     ($($name:ident,)*) => { [$(stringify!($name)),*].len() };
/// }
/// assert_eq!(tictactoe::for_each_scenario!(count!()), 11);
/// ```
#[macro_export]
macro_rules! for_each_scenario {
    ($($mac:ident)::+ ! ( $($args:tt)* )) => {
        $($mac)::+! {
            $($args)*
            bad_ops_are_invalid,
            cancel_refunds_and_only_while_open,
            invited_opponent_is_enforced,
            free_game_moves_no_gold,
            occupied_or_bad_cell_is_invalid,
            draw_refunds_both_players,
            join_without_enough_gold_fails,
            timeout_after_150_blocks,
            only_the_player_to_move_may_move,
            view_by_id_open_and_player,
            x_wins_a_row_and_takes_the_pot,
        }
    };
}

/// `[(name, scenario), …]` from a list of scenario names.
macro_rules! scenario_table {
    ($($name:ident,)*) => {
        [$((stringify!($name), $name as Scenario)),*]
    };
}

/// Every scenario with its name, in [`for_each_scenario!`](crate::for_each_scenario)'s order:
/// for a crate that runs them against its own module values (e.g. with and without instance
/// reuse).
pub const SCENARIOS: [(&str, Scenario); 11] = crate::for_each_scenario!(scenario_table!());
