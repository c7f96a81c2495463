//! **Hostile rules, for tests only**: rock-paper-scissors exactly as `modules/rps_rules` plays
//! it (the same state, commitments and results), except that [`GameRules::apply_move`] traps on
//! the move that makes seat 0, the offer's creator and so the rules' author, lose. On the chain
//! that trap fails every op carrying that move (`invalid: rules module … apply_move: the callee
//! trapped`): the winner cannot settle by history, nor challenge with the winning history, nor
//! answer a challenge with it, so he loses by forfeit. No on-chain default can undo that
//! (docs/channels.md, "Rules that trap when their author loses"); the defence is that clients
//! play only genesis rules unless the player names the code
//! (`a_rules_module_that_traps_when_its_author_loses_is_refused_at_join`,
//! `node/tests/cli/channel_cli.rs`). Never put it in a genesis.
//!
//! The game is a copy, not a wrapper of `rps_rules::RpsRules`: a module crate's exported entry
//! points (`export_rules!`) are linked into any `.wasm` that depends on it, and would clash with
//! these. The unit tests check it against `RpsRules`, answer for answer.

use gamechain_sdk::rules::GameRules;
use sha2::{Digest, Sha256};

/// The rules value exported as the module.
pub struct TrapRules;

/// State length (as `rps_rules`).
pub const STATE_LEN: usize = 99;
const HIDDEN: u8 = 0xff;
const MOVES: usize = 32;
const COMMITS: usize = 33;
const CHOICES: usize = 97;

/// `rps_rules::commitment`: `sha256("gamechain rps commit v2" ‖ game ‖ seat ‖ choice ‖ salt)`.
pub fn commitment(game: &[u8; 32], seat: u8, choice: u8, salt: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"gamechain rps commit v2");
    h.update(game);
    h.update([seat, choice]);
    h.update(salt);
    h.finalize().into()
}

fn commit_range(seat: u8) -> std::ops::Range<usize> {
    let start = COMMITS + 32 * seat as usize;
    start..start + 32
}

impl GameRules for TrapRules {
    fn initial_state(&self, game: &[u8; 32]) -> Vec<u8> {
        let mut s = vec![0; STATE_LEN];
        s[..32].copy_from_slice(game);
        s[CHOICES] = HIDDEN;
        s[CHOICES + 1] = HIDDEN;
        s
    }

    fn mover_at(&self, n: u64) -> u8 {
        (n % 2) as u8
    }

    fn validate_move(&self, s: &[u8], n: u64, mover: u8, data: &[u8]) -> bool {
        if s.len() != STATE_LEN || n != u64::from(s[MOVES]) || n > 3 || mover != self.mover_at(n) {
            return false;
        }
        if n < 2 {
            return data.len() == 32;
        }
        if data.len() != 33 || data[0] > 2 {
            return false;
        }
        let tag: &[u8; 32] = s[..32].try_into().expect("32 bytes");
        let salt: &[u8; 32] = data[1..].try_into().expect("33 bytes");
        commitment(tag, mover, data[0], salt) == s[commit_range(mover)]
    }

    /// RPS's next state, but a trap (a panic: `unreachable` in the guest) when that state is
    /// over and seat 1 won.
    fn apply_move(&self, s: &[u8], n: u64, mover: u8, data: &[u8]) -> Vec<u8> {
        let mut next = s.to_vec();
        if n < 2 {
            next[commit_range(mover)].copy_from_slice(data);
        } else {
            next[CHOICES + mover as usize] = data[0];
        }
        next[MOVES] += 1;
        if self.is_over(&next) && self.winner(&next) == Some(1) {
            panic!("trap_rules: seat 0 would lose");
        }
        next
    }

    fn is_over(&self, s: &[u8]) -> bool {
        s.len() == STATE_LEN && s[MOVES] == 4
    }

    fn winner(&self, s: &[u8]) -> Option<u8> {
        match (i16::from(s[CHOICES]) - i16::from(s[CHOICES + 1])).rem_euclid(3) {
            0 => None,
            1 => Some(0),
            _ => Some(1),
        }
    }
}

gamechain_sdk::export_rules!(TrapRules);

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::rules::{replay, usable};
    use rps_rules::{reveal, RpsRules};

    const G: [u8; 32] = [3; 32];
    const S0: [u8; 32] = [7; 32];
    const S1: [u8; 32] = [9; 32];

    fn moves(c0: u8, c1: u8) -> [Vec<u8>; 4] {
        let (m0, m1) = (commitment(&G, 0, c0, &S0), commitment(&G, 1, c1, &S1));
        [m0.to_vec(), m1.to_vec(), reveal(c0, &S0), reveal(c1, &S1)]
    }

    #[test]
    fn answers_as_rps_rules_while_seat_0_wins_or_draws() {
        assert!(usable(&TrapRules, &G));
        assert_eq!(
            commitment(&G, 1, 2, &S1),
            rps_rules::commitment(&G, 1, 2, &S1)
        );
        for (c0, c1) in [(1, 0), (2, 1), (0, 2), (0, 0), (2, 2)] {
            let m = moves(c0, c1);
            let mut s = TrapRules.initial_state(&G);
            assert_eq!(s, RpsRules.initial_state(&G));
            for (n, data) in m.iter().enumerate() {
                let (n, seat) = (n as u64, TrapRules.mover_at(n as u64));
                assert_eq!(seat, RpsRules.mover_at(n));
                assert!(TrapRules.validate_move(&s, n, seat, data));
                assert!(!TrapRules.validate_move(&s, n, 1 - seat, data));
                assert!(!TrapRules.validate_move(&s, n, seat, &data[1..]));
                let next = TrapRules.apply_move(&s, n, seat, data);
                assert_eq!(next, RpsRules.apply_move(&s, n, seat, data));
                s = next;
                assert_eq!(TrapRules.is_over(&s), RpsRules.is_over(&s));
            }
            assert_eq!(TrapRules.winner(&s), RpsRules.winner(&s));
            assert_ne!(TrapRules.winner(&s), Some(1));
        }
        let m = moves(1, 0);
        let refs: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
        assert_eq!(replay(&TrapRules, &G, &refs).unwrap().len(), STATE_LEN);
    }

    #[test]
    #[should_panic(expected = "seat 0 would lose")]
    fn traps_on_the_move_that_makes_seat_0_lose() {
        let m = moves(0, 1);
        let refs: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
        let _ = replay(&TrapRules, &G, &refs);
    }
}
