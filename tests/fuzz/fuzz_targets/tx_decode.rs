//! Fuzz target `tx_decode`: arbitrary bytes into the transaction decoders of `gamechain-chain`
//! (`tx.rs`, `wire/tx.rs`): `SignedTx` JSON, `SignedTx::check`, `TxBody::parse` and the
//! `TxRecord` wire object.
//!
//! Invariants: nothing panics; what decodes re-encodes to something that decodes to an equal
//! value with the same txid (the SHA-256 of the body bytes, never of a re-serialisation); a
//! body that parses, signed by a key that matches its `from`, passes `check` and yields the
//! same body; every `check` error has one of the five stable codes.
#![no_main]

use std::sync::OnceLock;

use gamechain_chain::tx::{txid, SignedTx, TxBody, TxError, MAX_BODY_BYTES};
use gamechain_chain::wire::TxRecord;
use gamechain_chain::{Network, SecretKey};
use libfuzzer_sys::fuzz_target;

const CHAIN: &str = "fuzz-chain";
const NETWORK: Network = Network::Testnet;

fn key() -> &'static SecretKey {
    static KEY: OnceLock<SecretKey> = OnceLock::new();
    KEY.get_or_init(|| SecretKey::from_bytes(NETWORK, [7; 32]).expect("a valid key"))
}

fn check_error(e: &TxError) {
    let code = e.code();
    assert!(
        [
            "too_large",
            "bad_json",
            "wrong_chain",
            "bad_address",
            "bad_signature"
        ]
        .contains(&code),
        "{code}"
    );
    let _ = e.to_string();
}

/// A decoded `SignedTx`: its txid is the body's hash, and its JSON decodes to an equal value.
fn signed_round_trip(tx: &SignedTx) {
    assert_eq!(tx.txid(), txid(tx.body().as_bytes()));
    let text = serde_json::to_string(tx).expect("a SignedTx serialises");
    let again: SignedTx = serde_json::from_str(&text).expect("a re-encoded SignedTx decodes");
    assert_eq!(&again, tx);
    assert_eq!(again.txid(), tx.txid());
    assert_eq!(again.txid_bytes(), tx.txid_bytes());
    let first = tx.check(CHAIN, NETWORK);
    if let Err(e) = &first {
        check_error(e);
    }
    assert_eq!(
        first,
        again.check(CHAIN, NETWORK),
        "check is a function of the bytes"
    );
}

/// A body that parses: `to_json` parses back to an equal body and is a fixed point; signed by
/// the fuzzing key (as its `from`, on this chain) it passes `check`.
fn body_round_trip(body: &TxBody) {
    let json = body.to_json();
    let again = TxBody::parse(&json).expect("to_json output parses");
    assert_eq!(&again, body);
    assert_eq!(again.to_json(), json, "to_json is a fixed point");

    let mut mine = body.clone();
    mine.from = key().address();
    mine.chain_id = CHAIN.to_string();
    let tx = mine.sign(key());
    assert_eq!(tx.txid(), txid(tx.body().as_bytes()));
    match tx.check(CHAIN, NETWORK) {
        Ok(checked) => assert_eq!(checked, mine),
        Err(TxError::TooLarge { .. }) => assert!(tx.body().len() > MAX_BODY_BYTES),
        Err(e) => panic!("a body signed by its sender is refused: {e}"),
    }
    signed_round_trip(&tx);
}

fuzz_target!(|data: &[u8]| {
    // The whole input as the JSON a client POSTs.
    if let Ok(tx) = serde_json::from_slice::<SignedTx>(data) {
        signed_round_trip(&tx);
        if let Ok(body) = TxBody::parse(tx.body()) {
            body_round_trip(&body);
        }
    }
    // The whole input as the wire record of a transaction.
    if let Ok(record) = serde_json::from_slice::<TxRecord>(data) {
        let text = serde_json::to_string(&record).expect("a TxRecord serialises");
        let again: TxRecord = serde_json::from_str(&text).expect("a re-encoded TxRecord decodes");
        assert_eq!(again, record);
        assert_eq!(again.txid(), record.txid());
    }
    // The input as body text, with a signature taken from its tail.
    if let Ok(text) = std::str::from_utf8(data) {
        match TxBody::parse(text) {
            Ok(body) => body_round_trip(&body),
            Err(e) => check_error(&e),
        }
        let cut = text.len() - text.len().min(88) / 2 * 2;
        let (body, signature) = if text.is_char_boundary(cut) {
            text.split_at(cut)
        } else {
            (text, "")
        };
        let tx = SignedTx::new(body.to_string(), signature.to_string());
        signed_round_trip(&tx);
    }
});
