//! The schema of a rules module (`docs/modules.md`, "Schema"): no ops, events or views (its
//! `gc_apply` and `gc_view` refuse every call; it is called by code hash through its pure
//! entry points, `gamechain_sdk::rules`). Embedded in `rps_rules.wasm` as `gamechain.schema`, so
//! tools can tell it has nothing to submit or view.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "rps_rules";
    ops {}
    events {}
    views {}
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_is_empty() {
        let schema = gamechain_sdk::schema::Schema::parse(super::SCHEMA).unwrap();
        assert!(schema.ops.is_empty() && schema.events.is_empty() && schema.views.is_empty());
    }
}
