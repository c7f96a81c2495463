//! The HTTP/WebSocket API: batches, the game feed, limits, logs, metrics, the OpenAPI document
//! (schemathesis), the move relay, slow or silent WebSocket subscribers and transcript spam.

mod batch;
mod game_feed;
mod limits;
mod logs;
mod metrics;
mod openapi;
mod relay;
mod state_proof;
mod transcript_spam;
mod ws_memory;
mod ws_stall;
