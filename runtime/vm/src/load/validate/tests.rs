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
