//! Tic-tac-toe as a rules module (`gamechain_sdk::rules`, docs/channels.md): the pure rules a
//! channel game is played by off-chain and settled by on-chain. Imports nothing. It has no
//! hidden information, so it ignores the game tag.
//!
//! State: 9 bytes, cells 0–8 row by row, `0` empty, `1` seat 0's mark (X), `2` seat 1's (O).
//! Seat 0 makes the even moves. Move data: one byte, the cell. Move `n` is valid only when the
//! board holds exactly `n` marks, the game is not over, the mover is `n % 2` and the cell is
//! empty. The game is over at three in a row or a full board (a draw).

mod schema;
pub use schema::SCHEMA;

use gamechain_sdk::rules::GameRules;

/// The rules value exported as the module.
pub struct TicTacToeRules;

/// The eight winning lines as cell indexes, defined once in the `tictactoe` module's
/// `lines.rs` and compiled in here as a module of this crate. Not a crate both depend on:
/// a new dependency changes a guest's symbol names, hence the order of its functions in the
/// `.wasm` and its code hash, and both guests' code stays byte for byte what it was. Nor a
/// dependency on `tictactoe` itself: that would link its wasm entry points in here, next to
/// the rules' own.
#[path = "../../tictactoe/src/lines.rs"]
mod lines;

use lines::LINES;

/// The seat owning a full line, if any (`None` for a malformed state too).
fn line_owner(s: &[u8]) -> Option<u8> {
    if s.len() != 9 {
        return None;
    }
    LINES
        .iter()
        .find(|l| s[l[0]] != 0 && s[l[0]] == s[l[1]] && s[l[1]] == s[l[2]])
        .map(|l| s[l[0]] - 1)
}

impl GameRules for TicTacToeRules {
    fn initial_state(&self, _game: &[u8; 32]) -> Vec<u8> {
        vec![0; 9]
    }

    fn mover_at(&self, n: u64) -> u8 {
        (n % 2) as u8
    }

    fn validate_move(&self, s: &[u8], n: u64, mover: u8, data: &[u8]) -> bool {
        if s.len() != 9 || s.iter().any(|&c| c > 2) || data.len() != 1 || self.is_over(s) {
            return false;
        }
        let marks = s.iter().filter(|&&c| c != 0).count() as u64;
        let cell = data[0] as usize;
        n < 9 && marks == n && mover == self.mover_at(n) && cell < 9 && s[cell] == 0
    }

    fn apply_move(&self, s: &[u8], _n: u64, mover: u8, data: &[u8]) -> Vec<u8> {
        let mut next = s.to_vec();
        next[data[0] as usize] = mover + 1;
        next
    }

    fn is_over(&self, s: &[u8]) -> bool {
        line_owner(s).is_some() || (s.len() == 9 && s.iter().all(|&c| c != 0))
    }

    fn winner(&self, s: &[u8]) -> Option<u8> {
        line_owner(s)
    }
}

gamechain_sdk::export_rules!(TicTacToeRules, schema = SCHEMA);

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::rules::{dispatch, usable, ReplayError, DRAW};

    const TAG: [u8; 32] = [5; 32];

    fn replay(r: &TicTacToeRules, moves: &[&[u8]]) -> Result<Vec<u8>, ReplayError> {
        gamechain_sdk::rules::replay(r, &TAG, moves)
    }

    #[test]
    fn x_wins_the_top_row() {
        let s = replay(&TicTacToeRules, &[&[0], &[4], &[1], &[8], &[2]]).unwrap();
        assert!(TicTacToeRules.is_over(&s));
        assert_eq!(TicTacToeRules.winner(&s), Some(0));
        assert_eq!(dispatch(&TicTacToeRules, "winner", &s), Some(vec![0]));
    }

    #[test]
    fn a_full_board_without_a_line_is_a_draw() {
        let moves: [&[u8]; 9] = [&[0], &[1], &[2], &[4], &[3], &[5], &[7], &[6], &[8]];
        let s = replay(&TicTacToeRules, &moves).unwrap();
        assert!(TicTacToeRules.is_over(&s));
        assert_eq!(dispatch(&TicTacToeRules, "winner", &s), Some(vec![DRAW]));
    }

    #[test]
    fn taken_cells_wrong_movers_and_moves_after_the_end_are_refused() {
        assert!(usable(&TicTacToeRules, &TAG));
        assert_eq!(
            replay(&TicTacToeRules, &[&[0], &[0]]),
            Err(ReplayError::Illegal(1))
        );
        assert_eq!(
            replay(&TicTacToeRules, &[&[9]]),
            Err(ReplayError::Illegal(0))
        );
        assert_eq!(
            replay(&TicTacToeRules, &[&[0, 1]]),
            Err(ReplayError::Illegal(0))
        );
        let s0 = TicTacToeRules.initial_state(&TAG);
        assert_eq!(
            s0,
            TicTacToeRules.initial_state(&[6; 32]),
            "the tag is ignored"
        );
        assert!(
            !TicTacToeRules.validate_move(&s0, 0, 1, &[0]),
            "seat 1 does not open"
        );
        assert!(
            !TicTacToeRules.validate_move(&s0, 2, 0, &[0]),
            "move number must match"
        );
        let won = replay(&TicTacToeRules, &[&[0], &[4], &[1], &[8], &[2]]).unwrap();
        assert!(!TicTacToeRules.validate_move(&won, 5, 1, &[3]), "over");
        assert!(
            !TicTacToeRules.validate_move(&[0; 8], 0, 0, &[0]),
            "malformed state"
        );
    }
}
