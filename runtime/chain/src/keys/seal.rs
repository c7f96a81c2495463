//! Sealed moves: a 32-byte plaintext encrypted to a future round of the chain's beacon
//! (timelock encryption), with a proof that binds the ciphertext to one module, player, tag and
//! round. Nobody can open it before the beacon of its round exists; once it does, anyone can,
//! and the chain does so itself in a scheduled call (`docs/sealed-moves.md`).
//!
//! **Envelope** ([`SEALED_BYTES`] = 224 bytes): `U` (96, a compressed G2 point) ‖ `V` (32) ‖
//! `W` (32) ‖ `c` (32, a big-endian scalar) ‖ `s` (32, a big-endian scalar).
//!
//! - `U, V, W` are Commonware's timelock ciphertext (`bls12381::tle`, variant `MinSig`:
//!   Boneh–Franklin identity-based encryption with the Fujisaki–Okamoto transform) of the
//!   plaintext `M` to the identity `(BEACON_NAMESPACE, beacon_message(chain_id, round))`, which
//!   is exactly the message the beacon of that round signs ([`super::beacon`]). With
//!   `σ` random, `r = H3(σ ‖ M)` (RFC 9380 hash to a scalar, DST
//!   `TLE_BLS12381_XMD:SHA-256_SSWU_RO_H3_`), `U = r·G2`, `V = σ ⊕ SHA-256("h2" ‖
//!   e(r·P, Q_id))` (the pairing's 576 big-endian bytes), `W = M ⊕ SHA-256("h4" ‖ σ)`.
//! - `(c, s)` is a Schnorr proof of knowledge of `r` (so of the plaintext) bound to the
//!   [`SealContext`] and the beacon key: with `t` random and `T = t·G2`, `c = H(key ‖ context ‖ U
//!   ‖ V ‖ W ‖ T)` (RFC 9380 hash to a scalar, DST [`POK_DST`], the key's 96 bytes, the context as
//!   [`SealContext::encode`]) and `s = t + c·r`. Binding the key means an envelope made under a
//!   key that is not the chain's (a lying node's genesis) is refused when handed in, rather than
//!   stored to open void at the round. The checker recomputes `T = s·G2 − c·U`. Only whoever encrypted knows `r`,
//!   so a ciphertext copied into another game, seat, round or player's transaction has no proof
//!   for its new context and is refused before it is ever stored ([`check`]).
//!
//! **Opening** ([`open`]): `σ = V ⊕ SHA-256("h2" ‖ e(U, beacon))`, `M = W ⊕ SHA-256("h4" ‖ σ)`,
//! and `U = H3(σ ‖ M)·G2` must hold; otherwise the envelope does not open (it was encrypted to
//! another round, chain or key, or made wrongly) and the module is told so — never a trap.
//!
//! Points are decoded with subgroup and infinity checks and scalars must be below the group
//! order: anything else is [`SealError::Malformed`], never a panic.

use commonware_codec::{Copying, Decode as _, DecodeExt as _, Encode as _};
use commonware_cryptography::bls12381::primitives::group::{Scalar, ScalarReadCfg, G1, G2};
use commonware_cryptography::bls12381::primitives::ops::hash_with_namespace;
use commonware_cryptography::bls12381::primitives::variant::{MinSig, Variant};
use commonware_cryptography::bls12381::tle;
use commonware_math::algebra::CryptoGroup as _;
use sha2::{Digest, Sha256};

use super::beacon::{beacon_message, Beacon, BeaconPublicKey, BEACON_NAMESPACE};

/// Bytes of a sealed envelope.
pub const SEALED_BYTES: usize = 224;

/// Bytes of a sealed plaintext.
pub const PLAINTEXT_BYTES: usize = 32;

/// Most bytes of a [`SealContext::tag`].
pub const MAX_TAG_BYTES: usize = 64;

/// Domain of the proof's challenge (RFC 9380 hash to a scalar).
pub const POK_DST: &[u8] = b"gamechain.seal.pok.v1";

/// Domain of H3 (Commonware's `tle`).
const H3_DST: &[u8] = b"TLE_BLS12381_XMD:SHA-256_SSWU_RO_H3_";

/// What a sealed envelope is bound to: checked when a module accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealContext<'a> {
    /// The module that accepts it (its id).
    pub module: &'a str,
    /// The address whose transaction hands it in (the module's `sender`).
    pub sender: &'a str,
    /// The module's binding: its game and seat, an auction and bidder… (at most
    /// [`MAX_TAG_BYTES`]).
    pub tag: &'a [u8],
    /// The round: the block height whose beacon opens it.
    pub round: u64,
}

impl SealContext<'_> {
    /// `u8 len(module)` ‖ module ‖ `u8 len(sender)` ‖ sender ‖ `u8 len(tag)` ‖ tag ‖ `u64 BE
    /// round` (each length is below 256: module ids and addresses are short, tags are bounded).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(3 + self.module.len() + self.sender.len() + 72);
        for part in [self.module.as_bytes(), self.sender.as_bytes(), self.tag] {
            out.push(part.len().min(255) as u8);
            out.extend_from_slice(part);
        }
        out.extend_from_slice(&self.round.to_be_bytes());
        out
    }
}

/// Why an envelope is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealError {
    /// Not [`SEALED_BYTES`] long, `U` not a point of G2's subgroup (or the identity), a scalar
    /// not below the group order, or a tag over [`MAX_TAG_BYTES`].
    Malformed,
    /// Well formed, but its proof is not for this context: copied from another game, seat,
    /// round or player, or altered.
    Unbound,
}

impl core::fmt::Display for SealError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            SealError::Malformed => "the sealed move is malformed",
            SealError::Unbound => {
                "the sealed move is not bound to this game, seat, round and player"
            }
        })
    }
}

impl std::error::Error for SealError {}

fn h2(gt: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"h2");
    h.update(gt);
    h.finalize().into()
}

fn h4(sigma: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"h4");
    h.update(sigma);
    h.finalize().into()
}

fn xor(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    core::array::from_fn(|i| a[i] ^ b[i])
}

fn g2_bytes(p: &G2) -> [u8; 96] {
    p.encode()
        .as_ref()
        .try_into()
        .expect("a G2 point encodes to 96 bytes")
}

fn scalar_bytes(s: &Scalar) -> [u8; 32] {
    s.encode()
        .as_ref()
        .try_into()
        .expect("a scalar encodes to 32 bytes")
}

fn challenge(key: &[u8; 96], ctx: &SealContext<'_>, uvw: &[u8], t: &G2) -> Scalar {
    let mut input = key.to_vec();
    input.extend_from_slice(&ctx.encode());
    input.extend_from_slice(uvw);
    input.extend_from_slice(&g2_bytes(t));
    Scalar::map(POK_DST, &input)
}

/// Seals `plaintext` to `ctx.round` of chain `chain_id` under the beacon key `key` (the
/// genesis `beacon.public_key`), with 64 bytes of `entropy` (σ, then the proof's nonce): the
/// same entropy gives the same envelope, so tests and vectors are reproducible; callers pass
/// fresh randomness ([`seal`]). About 3 ms (one pairing, three G2 multiplications).
pub fn seal_with(
    key: &BeaconPublicKey,
    chain_id: &str,
    ctx: &SealContext<'_>,
    plaintext: &[u8; PLAINTEXT_BYTES],
    entropy: &[u8; 64],
) -> [u8; SEALED_BYTES] {
    let sigma: [u8; 32] = entropy[..32].try_into().expect("32 bytes");
    let mut hin = Vec::with_capacity(64);
    hin.extend_from_slice(&sigma);
    hin.extend_from_slice(plaintext);
    let r = Scalar::map(H3_DST, &hin);
    let mut u = G2::generator();
    u *= &r;
    let q_id = hash_with_namespace::<MinSig>(
        MinSig::MESSAGE,
        BEACON_NAMESPACE,
        &beacon_message(chain_id, ctx.round),
    );
    let mut r_pub = *key.point();
    r_pub *= &r;
    let gt = MinSig::pairing(&r_pub, &q_id);
    let v = xor(&sigma, &h2(&gt.as_slice()));
    let w = xor(plaintext, &h4(&sigma));

    let mut out = [0u8; SEALED_BYTES];
    out[..96].copy_from_slice(&g2_bytes(&u));
    out[96..128].copy_from_slice(&v);
    out[128..160].copy_from_slice(&w);

    // The proof's nonce: from the second half of the entropy, the plaintext and the context,
    // so a repeated entropy with another plaintext or context still gets another nonce.
    let mut nin = Vec::with_capacity(64 + 32);
    nin.extend_from_slice(&entropy[32..]);
    nin.extend_from_slice(&out[..160]);
    nin.extend_from_slice(&ctx.encode());
    let t = Scalar::map(b"gamechain.seal.nonce.v1", &nin);
    let mut big_t = G2::generator();
    big_t *= &t;
    let c = challenge(&key.to_bytes(), ctx, &out[..160], &big_t);
    let mut s = c.clone();
    s *= &r;
    s += &t;
    out[160..192].copy_from_slice(&scalar_bytes(&c));
    out[192..224].copy_from_slice(&scalar_bytes(&s));
    out
}

/// [`seal_with`] with 64 bytes of the operating system's randomness.
pub fn seal(
    key: &BeaconPublicKey,
    chain_id: &str,
    ctx: &SealContext<'_>,
    plaintext: &[u8; PLAINTEXT_BYTES],
) -> [u8; SEALED_BYTES] {
    use secp256k1::rand::RngCore as _;
    let mut entropy = [0u8; 64];
    secp256k1::rand::rng().fill_bytes(&mut entropy);
    seal_with(key, chain_id, ctx, plaintext, &entropy)
}

struct Parsed {
    u: G2,
    c: Scalar,
    s: Scalar,
}

fn parse(sealed: &[u8]) -> Result<Parsed, SealError> {
    if sealed.len() != SEALED_BYTES {
        return Err(SealError::Malformed);
    }
    let u = G2::decode(Copying(&sealed[..96])).map_err(|_| SealError::Malformed)?;
    let c = Scalar::decode_cfg(Copying(&sealed[160..192]), &ScalarReadCfg::AllowZero)
        .map_err(|_| SealError::Malformed)?;
    let s = Scalar::decode_cfg(Copying(&sealed[192..224]), &ScalarReadCfg::AllowZero)
        .map_err(|_| SealError::Malformed)?;
    Ok(Parsed { u, c, s })
}

/// `Ok` when `sealed` is a well-formed envelope whose proof is for `ctx` under the chain's beacon
/// key `key` (its 96 bytes; 0.42 ms here: two G2 multiplications). It does not say the envelope
/// will open: that needs the round's beacon. Errors: [`SealError::Malformed`],
/// [`SealError::Unbound`].
pub fn check(sealed: &[u8], ctx: &SealContext<'_>, key: &[u8; 96]) -> Result<(), SealError> {
    if ctx.tag.len() > MAX_TAG_BYTES {
        return Err(SealError::Malformed);
    }
    let p = parse(sealed)?;
    // T = s·G2 − c·U
    let mut t = G2::generator();
    t *= &p.s;
    let mut cu = p.u;
    cu *= &p.c;
    t -= &cu;
    if challenge(key, ctx, &sealed[..160], &t) == p.c {
        Ok(())
    } else {
        Err(SealError::Unbound)
    }
}

/// The plaintext of `sealed` under `beacon` (the beacon of the round it was sealed to), or
/// `None` when it does not open: malformed, or encrypted to another round, chain or key. About
/// 1.5 ms (a pairing and a G2 multiplication). The beacon must already have been checked
/// against the genesis key (every header's is).
pub fn open(sealed: &[u8], beacon: &Beacon) -> Option<[u8; PLAINTEXT_BYTES]> {
    if sealed.len() != SEALED_BYTES {
        return None;
    }
    let sig = G1::decode(Copying(beacon.0.as_slice())).ok()?;
    let ct = tle::Ciphertext::<MinSig> {
        u: G2::decode(Copying(&sealed[..96])).ok()?,
        v: tle::Block::new(sealed[96..128].try_into().ok()?),
        w: tle::Block::new(sealed[128..160].try_into().ok()?),
    };
    let m = tle::decrypt::<MinSig>(&sig, &ct)?;
    Some(m.as_ref().try_into().expect("a block is 32 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::beacon::BeaconSecretKey;

    fn ctx<'a>(tag: &'a [u8], round: u64) -> SealContext<'a> {
        SealContext {
            module: "rps",
            sender: "DAlice",
            tag,
            round,
        }
    }

    #[test]
    fn a_sealed_move_opens_only_with_its_rounds_beacon() {
        let sk = BeaconSecretKey::from_seed(b"seal");
        let pk = sk.public_key();
        let m = [7u8; 32];
        let env = seal_with(&pk, "gc", &ctx(b"g1/0", 10), &m, &[3; 64]);
        check(&env, &ctx(b"g1/0", 10), &pk.to_bytes()).unwrap();
        assert_eq!(open(&env, &sk.sign("gc", 10)), Some(m));
        assert_eq!(open(&env, &sk.sign("gc", 11)), None);
        assert_eq!(open(&env, &sk.sign("gd", 10)), None);
        let other = BeaconSecretKey::from_seed(b"other");
        assert_eq!(open(&env, &other.sign("gc", 10)), None);
        // Commonware's own ciphertexts open the same way (one format).
        let target = beacon_message("gc", 10);
        let ct = tle::encrypt::<_, MinSig>(
            &mut commonware_utils::test_rng(),
            *pk.point(),
            (BEACON_NAMESPACE, &target),
            &tle::Block::new(m),
        )
        .unwrap();
        let mut theirs = [0u8; SEALED_BYTES];
        theirs[..160].copy_from_slice(&ct.encode());
        assert_eq!(open(&theirs, &sk.sign("gc", 10)), Some(m));
    }

    #[test]
    fn a_copy_into_another_context_is_unbound() {
        let pk = BeaconSecretKey::from_seed(b"seal").public_key();
        let key = pk.to_bytes();
        let check = |env: &[u8], c: &SealContext<'_>| check(env, c, &key);
        let env = seal_with(&pk, "gc", &ctx(b"g1/0", 10), &[1; 32], &[9; 64]);
        // Sealed under another key (a lying node's genesis): refused, not stored to open void.
        let fake = BeaconSecretKey::from_seed(b"fake").public_key();
        let faked = seal_with(&fake, "gc", &ctx(b"g1/0", 10), &[1; 32], &[9; 64]);
        assert_eq!(check(&faked, &ctx(b"g1/0", 10)), Err(SealError::Unbound));
        assert_eq!(check(&env, &ctx(b"g1/1", 10)), Err(SealError::Unbound));
        assert_eq!(check(&env, &ctx(b"g1/0", 11)), Err(SealError::Unbound));
        let mut other_sender = ctx(b"g1/0", 10);
        other_sender.sender = "DBob";
        assert_eq!(check(&env, &other_sender), Err(SealError::Unbound));
        let mut other_module = ctx(b"g1/0", 10);
        other_module.module = "auction";
        assert_eq!(check(&env, &other_module), Err(SealError::Unbound));
        // Any altered byte of V, W or the proof unbinds it (or makes it malformed).
        for i in [96, 130, 170, 200, 223] {
            let mut bad = env;
            bad[i] ^= 1;
            assert!(check(&bad, &ctx(b"g1/0", 10)).is_err(), "byte {i}");
        }
    }

    #[test]
    fn malformed_envelopes_are_refused_without_panicking() {
        let c = ctx(b"t", 1);
        let key = BeaconSecretKey::from_seed(b"seal").public_key().to_bytes();
        let check = |env: &[u8], c: &SealContext<'_>| check(env, c, &key);
        assert_eq!(check(&[0; 10], &c), Err(SealError::Malformed));
        assert_eq!(check(&[0; SEALED_BYTES], &c), Err(SealError::Malformed));
        assert_eq!(check(&[0xff; SEALED_BYTES], &c), Err(SealError::Malformed));
        let pk = BeaconSecretKey::from_seed(b"seal").public_key();
        let mut env = seal_with(&pk, "gc", &c, &[0; 32], &[1; 64]);
        env[192..].fill(0xff); // s above the group order
        assert_eq!(check(&env, &c), Err(SealError::Malformed));
        assert_eq!(check(&env, &ctx(&[0; 65], 1)), Err(SealError::Malformed));
        let b = BeaconSecretKey::from_seed(b"seal").sign("gc", 1);
        assert_eq!(open(&[0; SEALED_BYTES], &b), None);
        assert_eq!(open(&[0; 3], &b), None);
    }

    /// Writes the vectors the JavaScript SDK's tests check its sealing and opening against:
    /// `cargo test -p gamechain-chain --lib seal::tests::write_vectors -- --ignored`.
    #[test]
    #[ignore]
    fn write_vectors() {
        let sk = BeaconSecretKey::from_seed(b"vectors");
        let pk = sk.public_key();
        let mut cases = Vec::new();
        for (i, (module, sender, tag, round)) in [
            ("rps", "DAlice", b"g1/0".as_slice(), 10u64),
            ("auction", "DBob", b"".as_slice(), 123_456),
            ("x", "DCarol", [0xabu8; 64].as_slice(), 1),
        ]
        .into_iter()
        .enumerate()
        {
            let c = SealContext {
                module,
                sender,
                tag,
                round,
            };
            let m: [u8; 32] = core::array::from_fn(|j| (i * 32 + j) as u8);
            let entropy: [u8; 64] = core::array::from_fn(|j| (j * 7 + i) as u8);
            let env = seal_with(&pk, "vec-chain", &c, &m, &entropy);
            cases.push(serde_json::json!({
                "module": module, "sender": sender, "tag": hex::encode(tag), "round": round,
                "plaintext": hex::encode(m), "entropy": hex::encode(entropy),
                "sealed": hex::encode(env),
                "beacon": sk.sign("vec-chain", round).to_hex(),
                "wrong_beacon": sk.sign("vec-chain", round + 1).to_hex(),
            }));
        }
        let out = serde_json::json!({
            "chain_id": "vec-chain",
            "beacon_public_key": pk.to_hex(),
            "cases": cases,
        });
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../node/web/sdk/test/fixtures/seal_vectors.json"
        );
        std::fs::write(path, serde_json::to_string_pretty(&out).unwrap() + "\n").unwrap();
    }
}
