//! The move board (module id `moveboard`): a transport for channel games between two clients
//! with no direct connection. It stores nothing and only emits events, which clients read over
//! the node's WebSocket or `/v1/events` (docs/channels.md, "Transport").
//!
//! Op `{"kind":"post","game":"<id>","type":<u32>,"payload":"<text>"}` emits
//! `posted {game, from, type, payload}` (`from` is the sender). `game` is 1–64 of `0-9a-z_`,
//! `payload` at most [`MAX_PAYLOAD_BYTES`]. Anyone can post anything under any game: a client
//! checks every payload (signature, mover, state hash, rules) before using it. The channel's
//! clients post a signed move (docs/channels.md, "Signed moves") as its JSON with `type` 1.
//! The op, the event and the view are declared in `src/schema.rs` ([`SCHEMA`], `docs/modules.md`,
//! "Schema").

use gamechain_sdk::prelude::*;

mod schema;
pub use schema::SCHEMA;

/// Largest payload, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 8_192;

/// The module value.
pub struct MoveBoard;

impl GameModule for MoveBoard {
    fn id(&self) -> &'static str {
        "moveboard"
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "post" => {
                let game = op_str(op, "game")?;
                if game.is_empty()
                    || game.len() > 64
                    || !game
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                {
                    return Err(ActionError::invalid("game must be 1-64 of 0-9, a-z and _"));
                }
                let kind = op
                    .get("type")
                    .and_then(Value::as_u64)
                    .filter(|&t| t <= u64::from(u32::MAX))
                    .ok_or_else(|| ActionError::invalid("type must be an integer 0-4294967295"))?;
                let payload = op_str(op, "payload")?;
                if payload.len() > MAX_PAYLOAD_BYTES {
                    return Err(ActionError::invalid(format!(
                        "payload is {} bytes, the limit is {MAX_PAYLOAD_BYTES}",
                        payload.len()
                    )));
                }
                ctx.emit(
                    "posted",
                    json!({ "game": game, "from": sender, "type": kind, "payload": payload }),
                );
                Ok(())
            }
            other => Err(ActionError::invalid(format!("unknown kind {other}"))),
        }
    }

    fn view(&self, _state: &dyn StateRead, _query: &Query) -> Result<Value, ActionError> {
        Ok(json!({ "stores": "nothing", "max_payload_bytes": MAX_PAYLOAD_BYTES }))
    }

    fn schema(&self) -> Option<&str> {
        Some(SCHEMA)
    }
}

gamechain_sdk::export_module!(MoveBoard, schema = SCHEMA);

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::MockCtx;

    #[test]
    fn a_post_emits_an_event_and_stores_nothing() {
        let mut ctx = MockCtx::new("moveboard");
        let op = json!({"kind":"post","game":"g1","type":1,"payload":"{\"n\":0}"});
        ctx.submit(&MoveBoard, "alice", op).unwrap();
        assert!(ctx.kv.state.keys().all(|k| !k.starts_with("m/moveboard/")));
        let (kind, data) = ctx.events.last().unwrap();
        assert_eq!(kind, "posted");
        // What it accepted and emitted is what its schema says.
        let schema = gamechain_sdk::schema::Schema::parse(SCHEMA).unwrap();
        for (op, ok) in &ctx.kv.trace.ops {
            assert!(ok);
            schema.check_op(op).unwrap();
        }
        schema.check_event(kind, data).unwrap();
        let view = ctx.view(&MoveBoard, &Query::new()).unwrap();
        schema.check_view(None, &Query::new(), &view).unwrap();
        assert_eq!(data["from"], "alice");
        assert_eq!(data["payload"], "{\"n\":0}");
    }

    #[test]
    fn oversized_payloads_and_bad_game_ids_are_refused() {
        let mut ctx = MockCtx::new("moveboard");
        let big = "x".repeat(MAX_PAYLOAD_BYTES + 1);
        let e = ctx
            .submit(
                &MoveBoard,
                "a",
                json!({"kind":"post","game":"g","type":1,"payload":big}),
            )
            .unwrap_err();
        assert!(e.to_string().contains("the limit is 8192"), "{e}");
        let e = ctx
            .submit(
                &MoveBoard,
                "a",
                json!({"kind":"post","game":"G!","type":1,"payload":""}),
            )
            .unwrap_err();
        assert!(e.to_string().contains("game must be"), "{e}");
    }
}
