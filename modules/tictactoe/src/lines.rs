//! The eight winning lines of tic-tac-toe, as cell indexes (0–8, row by row, 0 top-left): the
//! one definition used by this module (`Game::has_line`) and by the channel rules of
//! `tictactoe_rules` (`line_owner`), which compiles this file in as a module of its own
//! (`#[path]`). It exports nothing and depends on nothing, so either crate can hold it.

/// Three rows, three columns, two diagonals.
pub(crate) const LINES: [[usize; 3]; 8] = [
    [0, 1, 2],
    [3, 4, 5],
    [6, 7, 8],
    [0, 3, 6],
    [1, 4, 7],
    [2, 5, 8],
    [0, 4, 8],
    [2, 4, 6],
];
