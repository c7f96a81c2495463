//! The move board's schema (`docs/modules.md`, "Schema"), embedded in `moveboard.wasm` as
//! `gamechain.schema`.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "moveboard";
    ops {
        "post" "Emits the payload as a posted event; stores nothing." {
            game: string "1-64 of 0-9, a-z and _",
            type: u32 "what the payload is; 1 is a channel's signed move",
            payload: string "at most 8192 bytes",
        },
    }
    events {
        "posted" "A payload was posted under a game." {
            game: string, from: address "the sender", type: u32, payload: string,
        },
    }
    views {
        "info" "What the board keeps (nothing) and its payload limit." {} => object {
            stores: string, max_payload_bytes: u32,
        },
    }
}
