//! Tests of the load-time validation rules and their fixed texts.

use super::*;

#[test]
fn abi_types_are_spelled_like_abi_md() {
    assert_eq!(abi_type("iiii", "I"), "(i32, i32, i32, i32) -> i64");
    assert_eq!(abi_type("", "i"), "() -> i32");
    assert_eq!(abi_type("ii", ""), "(i32, i32)");
}

#[test]
fn every_refused_feature_is_outside_the_allowed_set() {
    for &(name, f) in REFUSED_FEATURES {
        assert!(!allowed_features().intersects(f), "{name} is allowed");
    }
}

#[test]
fn exact_function_imports_are_refused_as_custom_descriptors() {
    // wasmparser reads an import of kind 0x20 (an exact function, custom-descriptors proposal)
    // even with that feature off, and wasmtime cannot compile it: found by the fuzz target
    // `validate_instrument` once it compiled with Winch (round 4).
    let wasm = [
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type 0: () -> ()
        0x02, 0x07, 0x01, 0x01, b'm', 0x01, b'f', 0x20, 0x00, // import m.f: exact func type 0
    ];
    assert_eq!(
        validate(&wasm, 16 << 20).unwrap_err(),
        ValidationError::Feature("custom_descriptors")
    );
    assert_eq!(
        validate(&wasm, 16 << 20).unwrap_err().to_string(),
        "feature custom_descriptors is not allowed"
    );
}
