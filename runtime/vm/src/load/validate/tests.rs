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
        validate(&wasm, 16 << 20, crate::abi::ABI_REVISION).unwrap_err(),
        ValidationError::Feature("custom_descriptors")
    );
    assert_eq!(
        validate(&wasm, 16 << 20, crate::abi::ABI_REVISION)
            .unwrap_err()
            .to_string(),
        "feature custom_descriptors is not allowed"
    );
}

/// A minimal valid module of ABI v1 plus `extra` (WAT fields).
fn module_with(extra: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
  {extra}
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))"#
    ))
    .unwrap()
}

#[test]
fn scheduled_calls_belong_to_revision_2_only() {
    // Revision 1 (chains made before scheduled calls) refuses the imports as it always did,
    // and lets an export named gc_scheduled have any type; revision 2 takes the imports and
    // holds the export to its type.
    let importing = module_with(r#"(import "gamechain_v1" "draw" (func (param i32)))"#);
    assert_eq!(
        validate(&importing, 16 << 20, 1).unwrap_err().to_string(),
        "import gamechain_v1.draw is not in ABI v1"
    );
    validate(&importing, 16 << 20, 2).unwrap();
    let odd = module_with(r#"(func (export "gc_scheduled") (result i32) (i32.const 0))"#);
    validate(&odd, 16 << 20, 1).unwrap();
    assert_eq!(
        validate(&odd, 16 << 20, 2).unwrap_err().to_string(),
        "export gc_scheduled has type () -> i32, ABI v1 requires (i64, i32, i32) -> i32"
    );
}
