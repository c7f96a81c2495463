//! Rock-paper-scissors with commit-reveal, as a rules module (`gamechain_sdk::rules`,
//! docs/channels.md). Imports nothing; SHA-256 runs in the guest.
//!
//! Moves: 0 = seat 0 commits, 1 = seat 1 commits, 2 = seat 0 reveals, 3 = seat 1 reveals.
//! A commit's data is 32 bytes, [`commitment`]`(tag, seat, choice, salt)` =
//! `sha256("gamechain rps commit v2" ‖ tag ‖ seat ‖ choice ‖ salt)`; a reveal's is 33 bytes,
//! `choice ‖ salt` (`choice` 0 rock, 1 paper, 2 scissors; `salt` 32 fresh random bytes), valid
//! only when it opens that seat's commitment **for this game's tag and this seat**. So a
//! commitment copied from the other seat (to force a draw) or from another game can never be
//! opened by the copier: the copier is challenged and forfeits. Seat 1 reveals last: if it
//! withholds a losing reveal it is challenged and forfeits. A second commit with another salt is
//! a second signed move for the same position: equivocation.
//!
//! State (99 bytes, fixed shape): the game tag (32, from `initial_state`), `moves_made` (1,
//! 0–4), seat 0's commitment (32), seat 1's commitment (32), seat 0's choice (1), seat 1's
//! choice (1; `0xff` until revealed). Over after move 3; paper beats rock, scissors beat paper,
//! rock beats scissors, equal choices draw.

mod schema;
pub use schema::SCHEMA;

use gamechain_sdk::rules::GameRules;
use sha2::{Digest, Sha256};

/// The rules value exported as the module.
pub struct RpsRules;

/// State length.
pub const STATE_LEN: usize = 99;
/// The domain text every commitment starts with.
pub const COMMIT_DOMAIN: &[u8] = b"gamechain rps commit v2";
/// A choice not revealed yet.
const HIDDEN: u8 = 0xff;
/// Where the fields sit in the state.
const TAG: usize = 0;
const MOVES: usize = 32;
const COMMITS: usize = 33;
const CHOICES: usize = 97;

/// The commitment a client signs as move 0 (seat 0) or 1 (seat 1) of the game tagged `game`:
/// `sha256("gamechain rps commit v2" ‖ game ‖ seat ‖ choice ‖ salt)`.
pub fn commitment(game: &[u8; 32], seat: u8, choice: u8, salt: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(COMMIT_DOMAIN);
    h.update(game);
    h.update([seat, choice]);
    h.update(salt);
    h.finalize().into()
}

/// The reveal move's data: `choice ‖ salt`.
pub fn reveal(choice: u8, salt: &[u8; 32]) -> Vec<u8> {
    let mut v = vec![choice];
    v.extend_from_slice(salt);
    v
}

fn well_formed(s: &[u8]) -> bool {
    s.len() == STATE_LEN && s[MOVES] <= 4
}

fn commit_range(seat: u8) -> std::ops::Range<usize> {
    let start = COMMITS + 32 * seat as usize;
    start..start + 32
}

impl GameRules for RpsRules {
    fn initial_state(&self, game: &[u8; 32]) -> Vec<u8> {
        let mut s = vec![0; STATE_LEN];
        s[TAG..TAG + 32].copy_from_slice(game);
        s[CHOICES] = HIDDEN;
        s[CHOICES + 1] = HIDDEN;
        s
    }

    fn mover_at(&self, n: u64) -> u8 {
        (n % 2) as u8
    }

    fn validate_move(&self, s: &[u8], n: u64, mover: u8, data: &[u8]) -> bool {
        if !well_formed(s) || n != u64::from(s[MOVES]) || n > 3 || mover != self.mover_at(n) {
            return false;
        }
        if n < 2 {
            return data.len() == 32;
        }
        if data.len() != 33 || data[0] > 2 {
            return false;
        }
        let tag: &[u8; 32] = s[TAG..TAG + 32].try_into().expect("32 bytes");
        let salt: &[u8; 32] = data[1..].try_into().expect("33 bytes");
        commitment(tag, mover, data[0], salt) == s[commit_range(mover)]
    }

    fn apply_move(&self, s: &[u8], n: u64, mover: u8, data: &[u8]) -> Vec<u8> {
        let mut next = s.to_vec();
        if n < 2 {
            next[commit_range(mover)].copy_from_slice(data);
        } else {
            next[CHOICES + mover as usize] = data[0];
        }
        next[MOVES] += 1;
        next
    }

    fn is_over(&self, s: &[u8]) -> bool {
        well_formed(s) && s[MOVES] == 4
    }

    fn winner(&self, s: &[u8]) -> Option<u8> {
        match (i16::from(s[CHOICES]) - i16::from(s[CHOICES + 1])).rem_euclid(3) {
            0 => None,
            1 => Some(0),
            _ => Some(1),
        }
    }
}

gamechain_sdk::export_rules!(RpsRules, schema = SCHEMA);

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::rules::{replay, usable, ReplayError};

    const G: [u8; 32] = [3; 32];
    const S0: [u8; 32] = [7; 32];
    const S1: [u8; 32] = [9; 32];

    fn game(c0: u8, c1: u8) -> Result<Vec<u8>, ReplayError> {
        let (m0, m1) = (commitment(&G, 0, c0, &S0), commitment(&G, 1, c1, &S1));
        let (r0, r1) = (reveal(c0, &S0), reveal(c1, &S1));
        replay(&RpsRules, &G, &[&m0, &m1, &r0, &r1])
    }

    #[test]
    fn paper_beats_rock_and_equal_choices_draw() {
        assert!(usable(&RpsRules, &G));
        let s = game(1, 0).unwrap();
        assert!(RpsRules.is_over(&s));
        assert_eq!(RpsRules.winner(&s), Some(0));
        assert_eq!(RpsRules.winner(&game(0, 1).unwrap()), Some(1));
        assert_eq!(RpsRules.winner(&game(2, 1).unwrap()), Some(0));
        assert_eq!(RpsRules.winner(&game(0, 2).unwrap()), Some(0));
        assert_eq!(RpsRules.winner(&game(2, 2).unwrap()), None);
    }

    #[test]
    fn a_reveal_must_open_the_commitment() {
        let (m0, m1) = (commitment(&G, 0, 0, &S0), commitment(&G, 1, 1, &S1));
        let lie = reveal(1, &S0);
        assert_eq!(
            replay(&RpsRules, &G, &[&m0, &m1, &lie]),
            Err(ReplayError::Illegal(2))
        );
        let short = [0u8; 31];
        assert_eq!(
            replay(&RpsRules, &G, &[&short]),
            Err(ReplayError::Illegal(0))
        );
        let bad_choice = reveal(3, &S0);
        let m3 = commitment(&G, 0, 3, &S0);
        assert_eq!(
            replay(&RpsRules, &G, &[&m3, &m1, &bad_choice]),
            Err(ReplayError::Illegal(2))
        );
    }

    #[test]
    fn a_copied_commitment_cannot_be_opened_by_the_copier() {
        // Seat 1 copies seat 0's commitment and, after seat 0 reveals, replays its reveal.
        let m0 = commitment(&G, 0, 1, &S0);
        let r0 = reveal(1, &S0);
        assert_eq!(
            replay(&RpsRules, &G, &[&m0, &m0, &r0, &r0]),
            Err(ReplayError::Illegal(3)),
            "the other seat's commitment"
        );
        // A commitment made for another game, with the salt known, opens only there.
        let other: [u8; 32] = [4; 32];
        let m1 = commitment(&other, 1, 0, &S1);
        assert_eq!(
            replay(&RpsRules, &G, &[&m0, &m1, &r0, &reveal(0, &S1)]),
            Err(ReplayError::Illegal(3)),
            "another game's commitment"
        );
        assert!(replay(
            &RpsRules,
            &other,
            &[&commitment(&other, 0, 1, &S0), &m1, &r0, &reveal(0, &S1)]
        )
        .is_ok());
    }

    #[test]
    fn the_state_keeps_the_tag_and_nothing_follows_the_last_reveal() {
        let s = game(0, 0).unwrap();
        assert_eq!(s.len(), STATE_LEN);
        assert_eq!(&s[..32], &G);
        assert!(!RpsRules.validate_move(&s, 4, 0, &[0; 32]));
        assert_ne!(RpsRules.initial_state(&G), RpsRules.initial_state(&[1; 32]));
    }
}
