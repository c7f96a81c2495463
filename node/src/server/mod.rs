//! The node's outside: the HTTP API of `node/API.md` and its WebSocket, the JSON errors and
//! their status codes, the per-IP rate limit, and the node's lifecycle.
//!
//! | file | owns |
//! |---|---|
//! | `api.rs` | the axum router and handlers |
//! | `admission.rs` | [`admission::Admission`]: the worker threads that admit posted transactions (single and batches) |
//! | `openapi.rs` | `GET /v1/openapi.json`: the API's OpenAPI document (`node/openapi.json`), held in step with the router by its tests |
//! | `api_error.rs` | [`api_error::ApiError`]: the JSON errors; the mapping of the core's domain errors to HTTP statuses |
//! | `http_io.rs` | the API's listener and connections: hyper's own bare `400`/`414`/`431` answers rewritten to JSON; the `max_connections` cap and count |
//! | `feed.rs` | [`feed::BlockFeed`]: committed blocks serialised once into one shared buffer for all subscribers, and the bytes published |
//! | `rate_limit.rs` | the per-IP token bucket |
//! | `state.rs` | [`state::AppState`]: what every handler gets |
//! | `ws.rs` | `GET /v1/ws`, the block subscription: the upgrade, 16 KiB fragments of the shared buffer, the per-subscriber bounds (blocks, bytes, send time) and the `max_ws_subscribers` cap |
//! | `game_feed/` | `GET /v1/ws/events`: one module's events (a game's, a player's) live, resumable from a height (`events.rs`: which events match, the messages) |
//! | `transcript/` | `GET /v1/games/<module>/<id>/transcript`: a game's transactions, receipts, signed headers and inclusion proofs, for `gamechain verify --game` and the `/verify/` page (`build.rs`: assembly; `cache.rs`: answers kept and builds in flight; `budget.rs`: each client IP's budget of transcript work; `slots.rs`: the build slots; `work.rs`: the node's transcript state and bounds; the JSON is `gamechain_chain::wire::transcript`) |
//! | `relay/` | `GET /v1/relay/<game>`: signed channel moves relayed between a game's players off-chain (each connection one seat's, proved by a hello its game key signed; signature and seat checked, bounded, nothing stored) |
//! | `replica.rs` | `gamechain node --follow URL`: the follower's API and follow task |
//! | `web.rs` | the embedded pages: explorer, games, SDK bundle |
//! | `node.rs` | [`node::NodeHandle`], [`node::run_node`]: start, run, clean shutdown |

pub mod admission;
pub mod api;
pub mod api_error;
pub mod feed;
pub mod game_feed;
pub mod http_io;
pub mod node;
pub mod openapi;
pub mod rate_limit;
pub mod relay;
pub mod replica;
pub mod state;
pub mod transcript;
pub mod web;
pub mod ws;
