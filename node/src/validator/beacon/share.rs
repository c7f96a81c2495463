//! A validator's share of the chain's threshold beacon key: the file
//! `<data>/beacon_share.json` (mode 0600), its checks against the genesis at start ([`load`]),
//! partial signing, and the trusted dealer `gamechain testnet` uses ([`deal`]).
//!
//! File (JSON, one object):
//!
//! ```json
//! {"index": 2, "share": "<64 hex>", "public": "<hex>", "output": "<hex>"}
//! ```
//!
//! - `index`: the share's index, which is the validator's position in the participant set the
//!   engine uses (the genesis set ordered by consensus key, `keys::participants`);
//! - `share`: the share's secret scalar, 32 bytes big-endian;
//! - `public`: the public polynomial, Commonware's encoded `Sharing<MinSig>` (mode
//!   `NonZeroCounter`: share `i` is the polynomial at `i + 1`; the number of shares `n`; the `t`
//!   coefficients' commitments, G2 points of 96 bytes), which every partial signature is checked
//!   against and whose constant term is the group key;
//! - `output` (optional): the dealing's whole public record (Commonware's encoded
//!   `dkg::feldman_desmedt::Output`: the polynomial, the players by consensus key), which a
//!   later reshare round starts from; when present it must hold the same polynomial.
//!
//! [`load`] refuses (each with its own message naming the file): a chain whose genesis names a
//! threshold beacon and a directory without the file; a file that does not parse; a polynomial
//! whose constant term is not the genesis group key, whose number of shares is not the set's,
//! or whose threshold is not the genesis `beacon.threshold`; an index that is not this
//! validator's position; a share whose public key is not the polynomial's value at its index.

use std::path::Path;

use commonware_codec::{Copying, Decode as _, DecodeExt as _, Encode as _};
use commonware_cryptography::bls12381::dkg::feldman_desmedt::{self, Output};
use commonware_cryptography::bls12381::primitives::group::{Private, Share, G1};
use commonware_cryptography::bls12381::primitives::ops;
use commonware_cryptography::bls12381::primitives::sharing::{Mode, ModeVersion, Sharing};
use commonware_cryptography::bls12381::primitives::variant::{MinSig, PartialSignature};
use commonware_cryptography::ed25519::PublicKey;
use commonware_utils::ordered::Set;
use commonware_utils::{N3f1, Participant};
use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};

use gamechain_runtime::chain::beacon::{
    beacon_message, BeaconPublicKey, BeaconSecretKey, BEACON_NAMESPACE,
};
use gamechain_runtime::chain::genesis::beacon::SCHEME_THRESHOLD;
use gamechain_runtime::chain::{Beacon, Genesis, ValidatorSet};

use gamechain_ledger::NodeError;

/// The file name of the beacon share in a data directory.
pub const SHARE_FILE: &str = "beacon_share.json";

/// Largest share file read: a polynomial of the largest set, hex, and the dealing's record.
const MAX_SHARE_FILE_BYTES: u64 = 256 << 10;

/// Most shares a polynomial is decoded for (the genesis set's bound).
fn max_participants() -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(gamechain_runtime::chain::validators::MAX_VALIDATORS as u32)
        .expect("the set's bound is not zero")
}

/// One validator's share and the public polynomial (module docs). Cheap to clone.
#[derive(Clone)]
pub struct BeaconShare {
    share: Share,
    sharing: Sharing<MinSig>,
}

impl std::fmt::Debug for BeaconShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "BeaconShare(index {}, {} of {})",
            self.index(),
            self.sharing.required(),
            self.sharing.total()
        )
    }
}

impl BeaconShare {
    /// The share's index (the validator's participant position).
    pub fn index(&self) -> u32 {
        self.share.index.get()
    }

    /// The public polynomial.
    pub fn sharing(&self) -> &Sharing<MinSig> {
        &self.sharing
    }

    /// Shares that recover a beacon.
    pub fn threshold(&self) -> u32 {
        self.sharing.required()
    }

    /// The group key (the polynomial's constant term).
    pub fn group_key(&self) -> BeaconPublicKey {
        BeaconPublicKey::from_point(*self.sharing.public())
    }

    /// This share's partial signature of height `height` of chain `chain_id`: a G1 point, 48
    /// bytes compressed (about 0.5 ms: a hash to the curve and a scalar multiplication).
    pub fn sign(&self, chain_id: &str, height: u64) -> G1 {
        ops::threshold::sign_message::<MinSig>(
            &self.share,
            BEACON_NAMESPACE,
            &beacon_message(chain_id, height),
        )
        .value
    }

    /// `true` when `partial` is the partial signature of height `height` by share `index`
    /// (two pairings, about 1 ms). An index outside the polynomial's shares is `false`.
    pub fn verify(&self, chain_id: &str, height: u64, index: u32, partial: &G1) -> bool {
        let partial = PartialSignature::<MinSig> {
            index: Participant::new(index),
            value: *partial,
        };
        ops::threshold::verify_message::<MinSig>(
            &self.sharing,
            BEACON_NAMESPACE,
            &beacon_message(chain_id, height),
            &partial,
        )
        .is_ok()
    }

    /// The beacon that `partials` (`(index, partial)`, each verified, at least
    /// [`BeaconShare::threshold`] of distinct indices) recover: the group's signature of their
    /// height. `None` when too few. The caller checks the result against the genesis key.
    pub fn recover(&self, partials: &[(u32, G1)]) -> Option<Beacon> {
        let partials: Vec<PartialSignature<MinSig>> = partials
            .iter()
            .map(|(i, value)| PartialSignature {
                index: Participant::new(*i),
                value: *value,
            })
            .collect();
        ops::threshold::recover::<MinSig, _>(
            &self.sharing,
            partials.iter(),
            &commonware_parallel::Sequential,
        )
        .ok()
        .map(Beacon::from)
    }
}

/// A point that is no beacon of this chain: the signature of a key nobody dealt
/// (`Fault::WrongBeacon` on block 1, whose parent has no beacon to replay).
pub fn not_a_beacon() -> Beacon {
    BeaconSecretKey::from_seed(b"gamechain.test.not-a-beacon").sign("", 0)
}

/// The file's JSON (module docs).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareFile {
    index: u32,
    share: String,
    public: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<String>,
}

/// What a dealer hands out: the group key, the threshold, one share per participant (in
/// participant order: share `i` to the validator at position `i`), and the file of each.
pub struct Dealt {
    /// The group key (genesis `beacon.public_key`).
    pub public_key: BeaconPublicKey,
    /// Shares that recover a beacon (genesis `beacon.threshold`): `2f + 1`.
    pub threshold: u32,
    /// Each participant's share, in participant order.
    pub shares: Vec<BeaconShare>,
    /// Each participant's file content, in participant order.
    pub files: Vec<String>,
}

/// Deals a threshold key to `participants` (the engine's ordered set) as a trusted dealer
/// (Commonware's `feldman_desmedt::deal`: a random polynomial of degree `2f`, share `i` its
/// value at `i + 1`), with randomness from `rng`. The dealer sees the secret: it must forget it
/// (`gamechain testnet` keeps nothing but the files it writes). Errors: an empty set.
pub fn deal(participants: &Set<PublicKey>, rng: impl CryptoRng) -> Result<Dealt, String> {
    let (output, shares) = feldman_desmedt::deal::<MinSig, PublicKey, N3f1>(
        rng,
        Mode::NonZeroCounter,
        participants.clone(),
    )
    .map_err(|e| format!("dealing the beacon key: {e:?}"))?;
    let sharing = output.public().clone();
    sharing.precompute_partial_publics();
    let public = hex::encode(sharing.encode());
    let record = hex::encode(output.encode());
    let shares: Vec<BeaconShare> = shares
        .values()
        .iter()
        .map(|share| BeaconShare {
            share: share.clone(),
            sharing: sharing.clone(),
        })
        .collect();
    let files = shares
        .iter()
        .map(|s| {
            let file = ShareFile {
                index: s.index(),
                share: hex::encode(s.share.private.encode()),
                public: public.clone(),
                output: Some(record.clone()),
            };
            serde_json::to_string_pretty(&file).expect("a share file serializes") + "\n"
        })
        .collect();
    Ok(Dealt {
        public_key: BeaconPublicKey::from_point(*sharing.public()),
        threshold: sharing.required(),
        shares,
        files,
    })
}

/// [`deal`] to the genesis set `set` (in the engine's participant order) with the operating
/// system's randomness: what `gamechain testnet` writes. Errors: a consensus key of the set
/// that is not an ed25519 key, or listed twice.
pub fn deal_to_set(set: &ValidatorSet) -> Result<Dealt, String> {
    let participants = crate::proof::finality::participants(set)?;
    deal(&participants, commonware_utils::sys_rng())
}

/// Parses a share file's content and checks it against the genesis `beacon` section (group
/// key, threshold), the set's size `n` and this validator's position `index`. Errors: the
/// first check that fails (module docs), as text.
pub fn parse(text: &str, genesis: &Genesis, n: usize, index: u32) -> Result<BeaconShare, String> {
    let file: ShareFile =
        serde_json::from_str(text).map_err(|e| format!("not a beacon share file: {e}"))?;
    let config = genesis
        .beacon
        .as_ref()
        .filter(|b| b.scheme == SCHEME_THRESHOLD)
        .ok_or("the genesis names no threshold beacon")?;
    let bytes = |what: &str, s: &str| hex::decode(s).map_err(|_| format!("`{what}` is not hex"));
    let cfg = (max_participants(), ModeVersion::v0());
    let public = bytes("public", &file.public)?;
    let sharing = Sharing::<MinSig>::decode_cfg(Copying(public.as_slice()), &cfg)
        .map_err(|e| format!("`public` is not a public polynomial: {e}"))?;
    if BeaconPublicKey::from_point(*sharing.public()) != config.public_key {
        return Err(
            "`public` is the polynomial of another group key than the genesis beacon.public_key"
                .into(),
        );
    }
    if sharing.total().get() as usize != n {
        return Err(format!(
            "`public` deals {} shares, the genesis set has {n} validators",
            sharing.total()
        ));
    }
    if Some(sharing.required()) != config.threshold {
        return Err(format!(
            "`public` has threshold {}, the genesis beacon.threshold is {:?}",
            sharing.required(),
            config.threshold
        ));
    }
    if let Some(record) = &file.output {
        let record = bytes("output", record)?;
        let output = Output::<MinSig, PublicKey>::decode_cfg(Copying(record.as_slice()), &cfg)
            .map_err(|e| format!("`output` is not a dealing's record: {e}"))?;
        if output.public() != &sharing {
            return Err("`output` holds another polynomial than `public`".into());
        }
    }
    if file.index != index {
        return Err(format!(
            "`index` is {}, this validator's position in the set (ordered by consensus key) is \
             {index}",
            file.index
        ));
    }
    let secret = bytes("share", &file.share)?;
    let private = Private::decode(Copying(secret.as_slice()))
        .map_err(|_| "`share` is not a scalar (32 bytes, nonzero, below the group order)")?;
    let share = Share::new(Participant::new(index), private);
    let expected = sharing
        .partial_public(share.index)
        .map_err(|_| format!("index {index} is outside the polynomial's shares"))?;
    if share.public::<MinSig>() != expected {
        return Err(format!(
            "`share` is not share {index} of the polynomial `public` (its public key differs)"
        ));
    }
    sharing.precompute_partial_publics();
    Ok(BeaconShare { share, sharing })
}

/// Reads and checks `<dir>/beacon_share.json` for the validator at position `index` of a set
/// of `n` ([`parse`]). `Ok(None)` on a chain without a threshold beacon (no file read).
/// Errors ([`NodeError::Refused`], naming the file): the file is missing, too large, or fails
/// a check.
pub fn load(
    dir: &Path,
    genesis: &Genesis,
    n: usize,
    index: u32,
) -> Result<Option<BeaconShare>, NodeError> {
    match &genesis.beacon {
        Some(b) if b.scheme == SCHEME_THRESHOLD => {}
        _ => return Ok(None),
    }
    let path = dir.join(SHARE_FILE);
    let refused = |what: String| NodeError::Refused(format!("{}: {what}", path.display()));
    let len = std::fs::metadata(&path)
        .map_err(|e| {
            refused(format!(
                "cannot read it ({e}); this chain's genesis names a threshold beacon, and each \
                 validator needs its share (`gamechain testnet` writes one per validator; \
                 docs/validators.md, \"Randomness beacon\")"
            ))
        })?
        .len();
    if len > MAX_SHARE_FILE_BYTES {
        return Err(refused(format!("{len} bytes: not a beacon share file")));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| refused(e.to_string()))?;
    parse(&text, genesis, n, index).map(Some).map_err(refused)
}

/// Writes `text` (a file of [`Dealt::files`]) to `<dir>/beacon_share.json`, mode 0600, never
/// replacing a file. Errors: the file exists or cannot be written.
pub fn write_new(dir: &Path, text: &str) -> Result<(), String> {
    gamechain_chain::key_file::write_secret_file(&dir.join(SHARE_FILE), "a beacon share", text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use commonware_cryptography::ed25519::PrivateKey;
    use commonware_cryptography::Signer as _;
    use gamechain_runtime::chain::BeaconConfig;

    fn set(n: u64) -> Set<PublicKey> {
        let keys: Vec<PublicKey> = (0..n)
            .map(|i| PrivateKey::from_seed(i).public_key())
            .collect();
        Set::from_iter_dedup(keys)
    }

    fn genesis(dealt: &Dealt) -> Genesis {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::NodeConfig {
            data_dir: dir.path().to_path_buf(),
            chain_id: "t".into(),
            genesis_modules: vec![],
            ..crate::config::NodeConfig::default()
        };
        let key = gamechain_runtime::chain::SecretKey::generate(config.network);
        let mut g = gamechain_ledger::genesis_setup::new_genesis(&config.ledger(), &key).unwrap();
        g.beacon = Some(BeaconConfig::threshold(
            dealt.public_key.clone(),
            dealt.threshold,
        ));
        g
    }

    #[test]
    fn dealt_shares_recover_the_group_signature_from_any_threshold() {
        let dealt = deal(&set(4), commonware_utils::TestRng::new(1)).unwrap();
        assert_eq!(dealt.threshold, 3);
        assert_eq!(dealt.threshold, BeaconConfig::quorum_threshold(4));
        let g = genesis(&dealt);
        let partials: Vec<(u32, G1)> = dealt
            .shares
            .iter()
            .map(|s| (s.index(), s.sign("t", 9)))
            .collect();
        for (i, s) in dealt.shares.iter().enumerate() {
            assert_eq!(s.index(), i as u32);
            assert!(s.verify("t", 9, i as u32, &partials[i].1));
            assert!(
                !s.verify("t", 10, i as u32, &partials[i].1),
                "another height"
            );
            assert!(
                !s.verify("t", 9, (i as u32 + 1) % 4, &partials[i].1),
                "another index"
            );
            assert!(!s.verify("t", 9, 99, &partials[i].1), "an index outside");
        }
        let a = dealt.shares[0].recover(&partials[..3]).unwrap();
        let b = dealt.shares[0].recover(&partials[1..]).unwrap();
        assert_eq!(a, b, "unique: any three shares give the same beacon");
        g.check_beacon(9, Some(&a)).unwrap();
        assert!(g.check_beacon(10, Some(&a)).is_err());
        assert!(dealt.shares[0].recover(&partials[..2]).is_none());
        assert!(g.check_beacon(9, Some(&not_a_beacon())).is_err());
    }

    /// Issue 42's promise on validators: a move sealed to a round stays closed for anyone holding
    /// fewer partials of that round than the threshold, whatever they do with them (each alone,
    /// their sum, a recovery), and opens once the threshold's partials recover the beacon.
    #[test]
    fn a_sealed_move_stays_closed_below_the_threshold() {
        use gamechain_runtime::chain::seal::{self, SealContext};
        let dealt = deal(&set(4), commonware_utils::TestRng::new(7)).unwrap();
        assert_eq!(dealt.threshold, 3);
        let ctx = SealContext {
            module: "sealed_rps",
            sender: "DAlice",
            tag: b"g/x",
            round: 12,
        };
        let secret = [42u8; 32];
        let envelope = seal::seal(&dealt.public_key, "t", &ctx, &secret);
        let partials: Vec<(u32, G1)> = dealt
            .shares
            .iter()
            .map(|s| (s.index(), s.sign("t", 12)))
            .collect();
        let two = &partials[..2];
        for (_, p) in two {
            assert_eq!(seal::open(&envelope, &Beacon::from(*p)), None);
        }
        let mut sum = two[0].1;
        sum += &two[1].1;
        assert_eq!(seal::open(&envelope, &Beacon::from(sum)), None);
        assert!(dealt.shares[0].recover(two).is_none());
        // Another round's full beacon does not open it either.
        let other: Vec<(u32, G1)> = dealt
            .shares
            .iter()
            .map(|s| (s.index(), s.sign("t", 11)))
            .collect();
        let eleven = dealt.shares[0].recover(&other[..3]).unwrap();
        assert_eq!(seal::open(&envelope, &eleven), None);
        let beacon = dealt.shares[0].recover(&partials[1..]).unwrap();
        assert_eq!(seal::open(&envelope, &beacon), Some(secret));
    }

    #[test]
    fn files_load_only_for_their_validator_and_genesis() {
        let dealt = deal(&set(4), commonware_utils::TestRng::new(2)).unwrap();
        let g = genesis(&dealt);
        let s = parse(&dealt.files[2], &g, 4, 2).unwrap();
        assert_eq!(s.index(), 2);
        assert_eq!(s.group_key(), dealt.public_key);
        let err = |text: &str, n, i| parse(text, &g, n, i).unwrap_err();
        assert!(err(&dealt.files[2], 4, 1).contains("position"));
        assert!(err(&dealt.files[2], 5, 2).contains("5 validators"));
        // Another dealing's polynomial: another group key.
        let other = deal(&set(4), commonware_utils::TestRng::new(3)).unwrap();
        assert!(err(&other.files[2], 4, 2).contains("another group key"));
        // Share 1's secret in share 2's file.
        let mut f: ShareFile = serde_json::from_str(&dealt.files[2]).unwrap();
        let f1: ShareFile = serde_json::from_str(&dealt.files[1]).unwrap();
        f.share = f1.share.clone();
        assert!(err(&serde_json::to_string(&f).unwrap(), 4, 2).contains("not share 2"));
        // The record of another dealing.
        let mut f: ShareFile = serde_json::from_str(&dealt.files[2]).unwrap();
        let o: ShareFile = serde_json::from_str(&other.files[2]).unwrap();
        f.output = o.output;
        assert!(err(&serde_json::to_string(&f).unwrap(), 4, 2).contains("another polynomial"));
        let mut f: ShareFile = serde_json::from_str(&dealt.files[2]).unwrap();
        f.share = "00".repeat(32);
        assert!(err(&serde_json::to_string(&f).unwrap(), 4, 2).contains("scalar"));
        assert!(err("{}", 4, 2).contains("not a beacon share file"));
        let mut wrong_t = g.clone();
        wrong_t.beacon.as_mut().unwrap().threshold = Some(4);
        assert!(parse(&dealt.files[2], &wrong_t, 4, 2)
            .unwrap_err()
            .contains("threshold"));
    }

    #[test]
    fn load_reads_the_file_and_refuses_a_missing_one() {
        let dealt = deal(&set(4), commonware_utils::TestRng::new(4)).unwrap();
        let g = genesis(&dealt);
        let dir = tempfile::tempdir().unwrap();
        let e = load(dir.path(), &g, 4, 0).unwrap_err().to_string();
        assert!(
            e.contains(SHARE_FILE) && e.contains("threshold beacon"),
            "{e}"
        );
        write_new(dir.path(), &dealt.files[0]).unwrap();
        assert!(
            write_new(dir.path(), &dealt.files[0]).is_err(),
            "never replaced"
        );
        assert_eq!(load(dir.path(), &g, 4, 0).unwrap().unwrap().index(), 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(SHARE_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let mut none = g.clone();
        none.beacon = None;
        assert!(load(dir.path(), &none, 4, 0).unwrap().is_none());
    }

    /// What the threshold beacon costs a block on this machine, for a set of 4 (threshold 3):
    /// the µs to sign a share, to verify one against the polynomial, to recover the beacon
    /// from three, and to check the beacon against the group key (what every node and
    /// verifier does per block), and the bytes it adds to the wire and to a header. Run in
    /// release: `cargo test -p gamechain-node --release --lib beacon_cost -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore = "a measurement: run it in release with --ignored --nocapture"]
    fn beacon_cost_per_block() {
        use crate::validator::beacon::pool::{ShareMessage, SHARE_MESSAGE_BYTES};
        use std::time::Instant;
        let dealt = deal(&set(4), commonware_utils::TestRng::new(5)).unwrap();
        let g = genesis(&dealt);
        let rounds = 200u64;
        let per = |t: Instant, ops: u64| t.elapsed().as_secs_f64() * 1e6 / ops as f64;
        let t = Instant::now();
        let partials: Vec<Vec<(u32, G1)>> = (0..rounds)
            .map(|h| {
                dealt
                    .shares
                    .iter()
                    .map(|s| (s.index(), s.sign("t", h)))
                    .collect()
            })
            .collect();
        let sign_us = per(t, rounds * 4);
        let t = Instant::now();
        for (h, ps) in partials.iter().enumerate() {
            for (i, p) in ps {
                assert!(dealt.shares[0].verify("t", h as u64, *i, p));
            }
        }
        let verify_us = per(t, rounds * 4);
        let t = Instant::now();
        let beacons: Vec<Beacon> = partials
            .iter()
            .map(|ps| dealt.shares[0].recover(&ps[..3]).unwrap())
            .collect();
        let recover_us = per(t, rounds);
        let t = Instant::now();
        for (h, b) in beacons.iter().enumerate().skip(1) {
            g.check_beacon(h as u64, Some(b)).unwrap();
        }
        let check_us = per(t, rounds - 1);
        let message = ShareMessage {
            height: 1,
            index: 0,
            partial: partials[1][0].1,
        }
        .encode();
        assert_eq!(message.len(), SHARE_MESSAGE_BYTES);
        let mut header = gamechain_runtime::chain::Header {
            height: 1,
            prev_hash: [0; 32],
            time_ms: 0,
            sequencer: "x".repeat(34),
            checkpoint: Default::default(),
            tx_root: [0; 32],
            receipt_root: [0; 32],
            state_root: [0; 32],
            beacon: None,
        };
        let plain = (
            borsh::to_vec(&header).unwrap().len(),
            serde_json::to_string(&header).unwrap().len(),
        );
        header.beacon = Some(beacons[1]);
        let with = (
            borsh::to_vec(&header).unwrap().len(),
            serde_json::to_string(&header).unwrap().len(),
        );
        println!("threshold beacon, 4 validators, threshold 3 (per block):");
        println!("  sign a share (each validator, once):          {sign_us:8.1} µs");
        println!("  verify a share (each validator, n - 1 times): {verify_us:8.1} µs");
        println!("  recover the beacon from 3 shares:             {recover_us:8.1} µs");
        println!("  check the beacon against the group key:       {check_us:8.1} µs");
        println!(
            "  share message: {} bytes; each validator sends n - 1 = 3 per block (and again every \
             500 ms while above its head)",
            message.len()
        );
        println!(
            "  header: +{} bytes hashed/stored (borsh), +{} bytes JSON",
            with.0 - plain.0,
            with.1 - plain.1
        );
    }
}
