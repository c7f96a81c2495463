//! Sealed moves on the chain: the check a module's `schedule_sealed` runs on an envelope (the
//! proof of `gamechain_chain::keys::seal`, against the module, the sender, the tag and the round)
//! and the opening of a sealed call in the block of its round (`docs/sealed-moves.md`).

use gamechain_chain::keys::beacon::Beacon;
use gamechain_chain::keys::seal::{self, SealContext, SealError};
use gamechain_sdk::{ScheduleError, SealBinding, Unsealed};

/// The chain's [`gamechain_sdk::schedule::SealCheck`]: the envelope's proof for `binding`.
pub fn chain_seal_check(sealed: &[u8], binding: &SealBinding<'_>) -> Result<(), ScheduleError> {
    let ctx = SealContext {
        module: binding.module,
        sender: binding.sender,
        tag: binding.tag,
        round: binding.round,
    };
    seal::check(sealed, &ctx, binding.beacon_key).map_err(|e| match e {
        SealError::Malformed => ScheduleError::SealMalformed,
        SealError::Unbound => ScheduleError::SealUnbound,
    })
}

/// What the sealed envelope `sealed_hex` (as the queue keeps it) opens to under `beacon`, the
/// beacon of the block running it (the block of its round). Void without a beacon, or when the
/// envelope does not open.
pub fn open_sealed(sealed_hex: &str, beacon: Option<&Beacon>) -> Unsealed {
    let (Some(beacon), Ok(bytes)) = (beacon, hex::decode(sealed_hex)) else {
        return Unsealed::Void;
    };
    match seal::open(&bytes, beacon) {
        Some(m) => Unsealed::Opened(m),
        None => Unsealed::Void,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_chain::keys::beacon::BeaconSecretKey;

    #[test]
    fn the_chain_check_and_opening_match_the_envelope() {
        let sk = BeaconSecretKey::from_seed(b"sealed.rs");
        let key = sk.public_key().to_bytes();
        let binding = SealBinding {
            module: "rps",
            sender: "DAlice",
            tag: b"g/1",
            round: 9,
            beacon_key: &key,
        };
        let ctx = SealContext {
            module: "rps",
            sender: "DAlice",
            tag: b"g/1",
            round: 9,
        };
        let env = seal::seal(&sk.public_key(), "gc", &ctx, &[5; 32]);
        assert_eq!(chain_seal_check(&env, &binding), Ok(()));
        let copied = SealBinding {
            sender: "DBob",
            ..binding
        };
        assert_eq!(
            chain_seal_check(&env, &copied),
            Err(ScheduleError::SealUnbound)
        );
        let mock = gamechain_sdk::mock_seal::seal(&binding, &[5; 32]);
        assert_eq!(
            chain_seal_check(&mock, &binding),
            Err(ScheduleError::SealMalformed)
        );
        let hex_env = hex::encode(env);
        assert_eq!(
            open_sealed(&hex_env, Some(&sk.sign("gc", 9))),
            Unsealed::Opened([5; 32])
        );
        assert_eq!(
            open_sealed(&hex_env, Some(&sk.sign("gc", 8))),
            Unsealed::Void
        );
        assert_eq!(open_sealed(&hex_env, None), Unsealed::Void);
        assert_eq!(open_sealed("zz", Some(&sk.sign("gc", 9))), Unsealed::Void);
    }
}
