//! Rock-paper-scissors with commit-reveal, as a rules module (`gamechain_sdk::rules`,
//! docs/channels.md). Imports nothing; SHA-256 runs in the guest.
//!
//! Moves: 0 = seat 0 commits, 1 = seat 1 commits, 2 = seat 0 reveals, 3 = seat 1 reveals.
//! A commit's data is 32 bytes, `sha256(choice ‖ salt)`; a reveal's is 33 bytes, `choice ‖ salt`
//! (`choice` 0 rock, 1 paper, 2 scissors; `salt` 32 fresh random bytes), valid only when it
//! opens that seat's commitment. Seat 1 reveals last: if it withholds a losing reveal it is
//! challenged and forfeits. A second commit with another salt is a second signed move for the
//! same position: equivocation.
//!
//! State (67 bytes): `moves_made` (0–4), seat 0's commitment, seat 1's commitment, seat 0's
//! choice, seat 1's choice (`0xff` until revealed). Over after move 3; paper beats rock,
//! scissors beat paper, rock beats scissors, equal choices draw.

use gamechain_sdk::rules::GameRules;
use sha2::{Digest, Sha256};

/// The rules value exported as the module.
pub struct RpsRules;

/// State length.
pub const STATE_LEN: usize = 67;
/// A choice not revealed yet.
const HIDDEN: u8 = 0xff;

/// `sha256(choice ‖ salt)`: the commitment a client signs as move 0 or 1.
pub fn commitment(choice: u8, salt: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([choice]);
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
    s.len() == STATE_LEN && s[0] <= 4
}

impl GameRules for RpsRules {
    fn initial_state(&self) -> Vec<u8> {
        let mut s = vec![0; STATE_LEN];
        s[65] = HIDDEN;
        s[66] = HIDDEN;
        s
    }

    fn mover_at(&self, n: u64) -> u8 {
        (n % 2) as u8
    }

    fn validate_move(&self, s: &[u8], n: u64, mover: u8, data: &[u8]) -> bool {
        if !well_formed(s) || n != u64::from(s[0]) || n > 3 || mover != self.mover_at(n) {
            return false;
        }
        if n < 2 {
            return data.len() == 32;
        }
        if data.len() != 33 || data[0] > 2 {
            return false;
        }
        let salt: &[u8; 32] = data[1..].try_into().expect("33 bytes");
        let committed = &s[1 + 32 * mover as usize..33 + 32 * mover as usize];
        commitment(data[0], salt) == committed
    }

    fn apply_move(&self, s: &[u8], n: u64, mover: u8, data: &[u8]) -> Vec<u8> {
        let mut next = s.to_vec();
        if n < 2 {
            next[1 + 32 * mover as usize..33 + 32 * mover as usize].copy_from_slice(data);
        } else {
            next[65 + mover as usize] = data[0];
        }
        next[0] += 1;
        next
    }

    fn is_over(&self, s: &[u8]) -> bool {
        well_formed(s) && s[0] == 4
    }

    fn winner(&self, s: &[u8]) -> Option<u8> {
        match (i16::from(s[65]) - i16::from(s[66])).rem_euclid(3) {
            0 => None,
            1 => Some(0),
            _ => Some(1),
        }
    }
}

gamechain_sdk::export_rules!(RpsRules);

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::rules::{replay, usable, ReplayError};

    const S0: [u8; 32] = [7; 32];
    const S1: [u8; 32] = [9; 32];

    fn game(c0: u8, c1: u8) -> Result<Vec<u8>, ReplayError> {
        let (m0, m1) = (commitment(c0, &S0), commitment(c1, &S1));
        let (r0, r1) = (reveal(c0, &S0), reveal(c1, &S1));
        replay(&RpsRules, &[&m0, &m1, &r0, &r1])
    }

    #[test]
    fn paper_beats_rock_and_equal_choices_draw() {
        assert!(usable(&RpsRules));
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
        let (m0, m1) = (commitment(0, &S0), commitment(1, &S1));
        let lie = reveal(1, &S0);
        assert_eq!(
            replay(&RpsRules, &[&m0, &m1, &lie]),
            Err(ReplayError::Illegal(2))
        );
        let short = [0u8; 31];
        assert_eq!(replay(&RpsRules, &[&short]), Err(ReplayError::Illegal(0)));
        let bad_choice = reveal(3, &S0);
        let m3 = commitment(3, &S0);
        assert_eq!(
            replay(&RpsRules, &[&m3, &m1, &bad_choice]),
            Err(ReplayError::Illegal(2))
        );
    }

    #[test]
    fn nothing_follows_the_last_reveal() {
        let s = game(0, 0).unwrap();
        assert!(!RpsRules.validate_move(&s, 4, 0, &[0; 32]));
    }
}
