//! The HTTP/WebSocket API: batches, the game feed, limits, logs, metrics, the OpenAPI document
//! (schemathesis), the move relay and slow or silent WebSocket subscribers.

mod batch;
mod game_feed;
mod limits;
mod logs;
mod metrics;
mod openapi;
mod relay;
mod ws_memory;
mod ws_stall;
