//! [`Player`]: one player's client of channel games. Every operation that touches a game takes
//! the game's store lock, reads the board up to the head first ([`Player::sync`], so it acts on
//! every move it could know), and saves before it sends: a move is signed, saved (fsynced) and
//! only then posted, so after a crash `move` re-sends the saved move and refuses to sign a
//! different one for the same position (that would be equivocation). Histories sent to the
//! channel (`settle`, `challenge`, `respond`) are the held moves, checked locally first: a
//! settlement whose history does not end the game, a challenge on our own turn, a forfeit before
//! the deadline and a proof without two signed moves are refused before anything is sent.
//!
//! Results are plain structs; the node's `cli/channel.rs` prints them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gamechain_channel_protocol as protocol;
use gamechain_client::client::{Block, BlockRef, Client, ClientError, Included};
use gamechain_client::read_key_file;
use gamechain_client::relay::{RelayEvent, RelayMove, RelaySeat, RELAY_MODULE};
use gamechain_runtime::chain::{sign_message, Action, SecretKey};
use gamechain_sdk::Amount;
use serde_json::{json, Value};

use crate::board::{post_op, seen_in, Seen};
use crate::check::{check_received, Received, Refusal};
use crate::error::{refused, ChannelError};
use crate::genesis_rules::{self, Playing};
use crate::rules::{LocalRules, Replay};
use crate::store::{DomainRecord, GameRecord, HeldMove, MoveStore, RECORD_VERSION};
use crate::MAX_MOVES_HELD;

/// Most blocks one [`Player::sync`] reads (a node that claims an endless chain cannot keep a
/// command busy forever; `watch` and the next command go on from where it stopped).
pub const MAX_BLOCKS_PER_SYNC: u64 = 10_000;

/// Longest `move` waits for the node's relay (its greeting, then its answer to the move) before
/// posting the move to the board instead.
pub const RELAY_WAIT: Duration = Duration::from_secs(2);

/// How move `m` travels through the relay.
pub fn relay_move_of(m: &HeldMove) -> RelayMove {
    RelayMove {
        n: m.n,
        data: m.data.clone(),
        sig: m.sig.clone(),
    }
}

/// How a [`Player`] reaches the chain and where it keeps its moves.
#[derive(Debug, Clone)]
pub struct PlayerOptions {
    /// The node's base URL.
    pub node: String,
    /// The move store's directory.
    pub dir: PathBuf,
    /// The channel module's id.
    pub channel: String,
    /// The move board module's id.
    pub board: String,
    /// The player's key (sends transactions; its address is the player). Read-only commands
    /// need none.
    pub key: Option<SecretKey>,
    /// How long to wait for each transaction's receipt.
    pub receipt_timeout: Duration,
}

/// One player's client.
#[derive(Debug)]
pub struct Player {
    client: Client,
    store: MoveStore,
    channel: String,
    board: String,
    key: Option<SecretKey>,
    timeout: Duration,
    /// Rules loaded so far, by code hash (a `watch` loads them once).
    rules: Mutex<BTreeMap<String, Arc<LocalRules>>>,
}

/// An offer made: its id (also the game's), the block it is in, the rules code it pins.
#[derive(Debug, Clone)]
pub struct Offered {
    /// The offer id.
    pub offer: String,
    /// The block height.
    pub height: u64,
    /// The rules code hash the offer pinned.
    pub rules_code: String,
}

/// How an offer names its rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RulesRef {
    /// A module id: the code it runs now is fetched, checked, and pinned (the offer sends both
    /// the id and that code hash, so the chain refuses it if the module ran other code by then).
    Module(String),
    /// A code hash (64 hex): that code is fetched by hash, checked, and pinned.
    Code(String),
}

/// A game joined.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The game id.
    pub game: String,
    /// Seat 0's player (the creator).
    pub creator: String,
    /// Stake per player, GOLD base units.
    pub stake: String,
    /// Response window, ms of block time.
    pub window_ms: u64,
    /// The rules code the game plays by.
    pub rules_code: String,
}

/// What one read of the board found.
#[derive(Debug, Clone, Default)]
pub struct SyncReport {
    /// Moves received, checked and stored (their numbers).
    pub received: Vec<u64>,
    /// Posts refused: `(height, poster, why)`. None of them is stored.
    pub refused: Vec<(u64, String, String)>,
    /// Second signed moves of the opponent kept as equivocation proofs (their numbers).
    pub equivocations: Vec<u64>,
    /// Our own moves the board carried (now marked posted).
    pub confirmed: Vec<u64>,
    /// Channel events about the game: `(height, kind, data)`.
    pub events: Vec<(u64, String, Value)>,
    /// The height read up to: the head, or [`MAX_BLOCKS_PER_SYNC`] blocks further than the
    /// last read (the next read goes on from there).
    pub head: u64,
    /// Moves held after the read.
    pub held: u64,
}

/// A move made or re-sent.
#[derive(Debug, Clone)]
pub struct Moved {
    /// The move number.
    pub n: u64,
    /// The data, hex.
    pub data: String,
    /// The signed move's JSON as it travels.
    pub signed: String,
    /// True when the move was signed earlier (after a crash, or sent again) and only re-sent.
    pub resent: bool,
    /// The height of the board post's block, when posted.
    pub posted_at: Option<u64>,
    /// How many of the opponent's connections the relay handed it to (then it is not posted).
    pub relayed_to: Option<u64>,
    /// Why the relay did not carry it, when it was tried and did not.
    pub relay_note: Option<String>,
    /// The height of an on-chain response the move was also sent as (the game was challenged
    /// on this move).
    pub responded_at: Option<u64>,
    /// Whether the game is over after it.
    pub over: bool,
}

/// A history settlement sent.
#[derive(Debug, Clone)]
pub struct Settled {
    /// Moves in the history.
    pub moves: usize,
    /// The winner's address, `None` for a draw.
    pub winner: Option<String>,
    /// The block time (ms) from which the result is final.
    pub final_at_ms: u64,
}

/// A challenge sent (or a history that ended the game instead).
#[derive(Debug, Clone)]
pub struct Challenged {
    /// The player who must answer (`None` when the history ended the game).
    pub due: Option<String>,
    /// The move number owed.
    pub move_number: u64,
    /// The last block time (ms) to answer at.
    pub deadline_ms: u64,
    /// The block time (ms) of the challenge's block.
    pub at_ms: u64,
}

/// A response sent.
#[derive(Debug, Clone)]
pub struct Responded {
    /// The first move number sent.
    pub from: u64,
    /// Moves sent.
    pub moves: usize,
    /// The block height.
    pub height: u64,
    /// What follows: the next challenge's `(due player, move, deadline_ms)`, or `None` when
    /// the moves ended the game (it concludes by history).
    pub next: Option<(String, u64, u64)>,
    /// The block time (ms) of the response's block.
    pub at_ms: u64,
}

/// A game ended by the channel at once (forfeit, equivocation) or paid out.
#[derive(Debug, Clone)]
pub struct Ended {
    /// The winner's address, `None` for a draw.
    pub winner: Option<String>,
    /// The block height.
    pub height: u64,
}

/// What `show` prints: the record, the local position and the chain's view.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The record.
    pub record: GameRecord,
    /// Moves held.
    pub n: u64,
    /// The current state's hash.
    pub state_hash: String,
    /// `Some(winner)` when the held moves end the game (`Some(None)`: a draw).
    pub over: Option<Option<u8>>,
    /// The seat due to move, when not over.
    pub due: Option<u8>,
    /// The channel's view of the game, when it answered.
    pub view: Option<protocol::Game>,
    /// The head height.
    pub head: u64,
    /// The head block's time (ms): what deadlines are measured against.
    pub head_time_ms: u64,
    /// The code the rules module the offer named runs now, when it differs from the code the
    /// game plays by (an upgrade since: the game is not affected).
    pub rules_changed: Option<String>,
    /// Whether the result is final at the head's time, and its final state hash.
    pub final_state: Option<(bool, Option<String>)>,
}

/// What the watchtower did after reading a block (or after a reconnect, or on a tick).
#[derive(Debug, Clone, Default)]
pub struct WatchStep {
    /// What reading the block found (empty for a tick).
    pub sync: SyncReport,
    /// A challenge on our seat answered with held moves.
    pub responded: Option<Responded>,
    /// An equivocation of the opponent proven (the move number and the result).
    pub proved: Option<(u64, Ended)>,
    /// A challenge on our seat we cannot answer yet: `(move owed, deadline_ms)`.
    pub owed: Option<(u64, u64)>,
    /// A challenge on our seat whose deadline passed unanswered: `(move owed, deadline_ms)`.
    pub missed: Option<(u64, u64)>,
    /// A transaction of ours the chain refused (someone answered first, …): its error.
    pub refused: Option<String>,
    /// The game's status on chain (`None` when not asked this step).
    pub status: Option<String>,
    /// The block time (ms) the step judged deadlines by.
    pub now_ms: u64,
    /// Whether the result is final (nothing more can happen but `withdraw`).
    pub final_result: bool,
}

/// What the watchtower remembers between steps: the channel's last view of the game and the
/// challenges and proofs it has acted on or reported.
#[derive(Debug, Default)]
pub struct WatchState {
    /// Challenges `(move, deadline_ms)` answered, or whose answer the chain refused.
    tried: BTreeSet<(u64, u64)>,
    /// Challenges we could not answer yet, already reported.
    reported: BTreeSet<(u64, u64)>,
    /// Challenges whose deadline passed, already reported.
    missed: BTreeSet<(u64, u64)>,
    /// Equivocation proofs sent (move numbers).
    proved: BTreeSet<u64>,
    /// The channel's view at the last act.
    view: Option<protocol::Game>,
    /// Something is owed or failed half-way: act again on the next tick.
    pending: bool,
}

impl WatchState {
    /// Whether the next tick should act (a challenge we could not answer yet, or an action
    /// that failed half-way).
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// Marks that the next tick must act (an act failed before it finished).
    pub fn set_pending(&mut self) {
        self.pending = true;
    }
}

fn read_key(path: &Path) -> Result<SecretKey, ChannelError> {
    read_key_file(path).map_err(ChannelError::Refused)
}

fn event<'a>(included: &'a Included, kind: &str) -> Option<&'a Value> {
    included
        .receipt
        .events
        .iter()
        .find(|e| e.kind == kind)
        .map(|e| &e.data)
}

fn winner_of(data: Option<&Value>) -> Option<String> {
    data.and_then(|d| d.get("winner"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn is_final(game: &protocol::Game, now_ms: u64) -> bool {
    game.is_final(now_ms) || game.paid
}

/// The time of the head block (ms): what deadlines are measured against.
pub async fn head_time_ms(client: &Client) -> Result<u64, ChannelError> {
    Ok(client.block(BlockRef::Latest).await?.header.header.time_ms)
}

impl Player {
    /// A player. Errors: a bad node URL, a store directory that cannot be created.
    pub fn new(options: PlayerOptions) -> Result<Player, ChannelError> {
        Ok(Player {
            client: Client::new(&options.node)?,
            store: MoveStore::open(&options.dir)?,
            channel: options.channel,
            board: options.board,
            key: options.key,
            timeout: options.receipt_timeout,
            rules: Mutex::default(),
        })
    }

    /// The store.
    pub fn store(&self) -> &MoveStore {
        &self.store
    }

    /// The node client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn key(&self) -> Result<&SecretKey, ChannelError> {
        self.key
            .as_ref()
            .ok_or_else(|| refused("this command needs the player's key: --key FILE"))
    }

    /// Sends `op` to `module` with `--key` and waits for its receipt; a receipt with `ok: false`
    /// is [`ChannelError::TxFailed`]. A `bad_nonce` (another command of the same key sent a
    /// transaction between our nonce look-up and our post) is retried.
    async fn send(&self, module: &str, op: Value) -> Result<Included, ChannelError> {
        let key = self.key()?;
        let mut tries = 0;
        let included = loop {
            let action = Action::game(module, &op);
            match self.client.send_and_wait(key, action, self.timeout).await {
                Err(e) if e.code() == Some("bad_nonce") && tries < 10 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50 * tries)).await;
                }
                other => break other?,
            }
        };
        if !included.receipt.ok {
            return Err(ChannelError::TxFailed(
                included.receipt.error.clone().unwrap_or_default(),
            ));
        }
        Ok(included)
    }

    async fn send_channel(&self, op: Value) -> Result<Included, ChannelError> {
        self.send(&self.channel.clone(), op).await
    }

    /// The time (ms) of the block at `height`.
    async fn block_time(&self, height: u64) -> Result<u64, ChannelError> {
        Ok(self
            .client
            .block(BlockRef::Height(height))
            .await?
            .header
            .header
            .time_ms)
    }

    async fn domain(&self) -> Result<DomainRecord, ChannelError> {
        let view = self.client.view(&self.channel, &[]).await?;
        let chain = view
            .get("chain")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty() && c.len() <= 128)
            .ok_or_else(|| refused(format!("module {} has no signing domain", self.channel)))?;
        // The signed text names the module the channel runs as (its deployed id), which is the
        // id ops are sent to.
        Ok(DomainRecord {
            chain: chain.to_string(),
            module: self.channel.clone(),
        })
    }

    /// The channel's view of `game`; `None` when it has no such game.
    pub async fn game_view(&self, game: &str) -> Result<Option<protocol::Game>, ChannelError> {
        match self.client.view(&self.channel, &[("game", game)]).await {
            Ok(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| refused(format!("the channel's view of game {game}: {e}"))),
            Err(e) if e.code() == Some("not_found") => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn resolve_game_key(path: Option<&Path>) -> Result<Option<(SecretKey, PathBuf)>, ChannelError> {
        match path {
            None => Ok(None),
            Some(p) => {
                let key = read_key(p)?;
                let abs = std::fs::canonicalize(p)
                    .map_err(|e| refused(format!("cannot read {}: {e}", p.display())))?;
                Ok(Some((key, abs)))
            }
        }
    }

    /// Offers a game of `rules` (checked locally first: the code fetched by hash, hashed,
    /// usable) with `stake` per player (`0`: unstaked) and a window of `window_ms` of block
    /// time; `game_key` signs our moves instead of `--key`. The offer pins the code checked
    /// (`rules_code`; with a module id the chain refuses the offer if the module runs other code
    /// by then). Code that no genesis module runs is refused unless `accept_code` is its exact
    /// hash ([`genesis_rules`](crate::genesis_rules)); with a module id, an `accept_code` that is
    /// not the code the module runs is refused as well. Nothing is sent before these checks. The
    /// record is created at once (seat 1 unknown until a join).
    pub async fn offer(
        &self,
        rules: &RulesRef,
        stake: Amount,
        window_ms: u64,
        game_key: Option<&Path>,
        accept_code: Option<&str>,
    ) -> Result<Offered, ChannelError> {
        let me = self.key()?.address();
        if !(protocol::MIN_WINDOW_MS..=protocol::MAX_WINDOW_MS).contains(&window_ms) {
            return Err(refused(format!(
                "the window must be {}-{} ms (5 minutes to 3 days); nothing was sent",
                protocol::MIN_WINDOW_MS,
                protocol::MAX_WINDOW_MS
            )));
        }
        let (module, local) = match rules {
            RulesRef::Module(id) => (
                Some(id.clone()),
                LocalRules::fetch_module(&self.client, &self.store, id).await?,
            ),
            RulesRef::Code(hash) => {
                let hash = hash.to_ascii_lowercase();
                let name = format!("code {}…", hash.get(..16).unwrap_or(&hash));
                (
                    None,
                    LocalRules::fetch(&self.client, &self.store, &name, &hash).await?,
                )
            }
        };
        if let (RulesRef::Module(id), Some(given)) = (rules, accept_code) {
            if !given.eq_ignore_ascii_case(local.code_hash()) {
                return Err(refused(format!(
                    "rules module {id} runs code {}, not the --rules-code given ({given}); \
                     nothing was sent",
                    local.code_hash()
                )));
            }
        }
        let modules = self.client.modules().await?;
        if let Some(why) = genesis_rules::refusal(
            Playing::Offer,
            local.code_hash(),
            &modules,
            module.as_deref(),
            accept_code,
        ) {
            return Err(refused(why));
        }
        // The game id (and so its tag) is the channel's next counter: checked with the chain's
        // own tag there; here with a zero tag, which no usable rules depend on to start.
        local.check_usable(&[0; 32])?;
        let domain = self.domain().await?;
        let game_key = Self::resolve_game_key(game_key)?;
        let signer = game_key.as_ref().map_or(me.clone(), |(k, _)| k.address());
        let mut op = json!({"kind":"offer","rules":module,"rules_code":local.code_hash(),
                            "stake":stake.to_string(),"window_ms":window_ms});
        if game_key.is_some() {
            op["signer"] = json!(signer);
        }
        let included = self.send_channel(op).await?;
        let offer = event(&included, "offer_created")
            .and_then(|d| d.get("offer"))
            .and_then(Value::as_str)
            .ok_or_else(|| refused("the offer's receipt names no offer"))?
            .to_string();
        let record = GameRecord {
            version: RECORD_VERSION,
            game: offer.clone(),
            domain,
            board: self.board.clone(),
            me: me.clone(),
            game_key_file: game_key.map(|(_, p)| p),
            players: [me, String::new()],
            signers: [signer, String::new()],
            rules: module,
            rules_code_hash: local.code_hash().to_string(),
            stake: stake.to_string(),
            window_ms,
            opened: false,
            scanned: included.height,
            moves: Vec::new(),
            conflicts: Vec::new(),
        };
        let _lock = self.store.lock(&offer)?;
        self.store.save(&record)?;
        Ok(Offered {
            offer,
            height: included.height,
            rules_code: local.code_hash().to_string(),
        })
    }

    /// Joins offer `offer` (its pinned rules code fetched by hash and checked locally first,
    /// with the game's own tag); `game_key` signs our moves instead of `--key`. The game runs
    /// the code the offer pinned, whatever it is: code that no genesis module runs is refused,
    /// nothing sent, unless `accept_code` is that exact hash
    /// ([`genesis_rules`](crate::genesis_rules)). Creates the game's record.
    pub async fn join(
        &self,
        offer: &str,
        game_key: Option<&Path>,
        accept_code: Option<&str>,
    ) -> Result<Joined, ChannelError> {
        let me = self.key()?.address();
        let view = self.client.view(&self.channel, &[("offer", offer)]).await?;
        let o: protocol::Offer = serde_json::from_value(view)
            .map_err(|e| refused(format!("the channel's view of offer {offer}: {e}")))?;
        if o.status != "open" {
            return Err(refused(format!("offer {offer} is {}", o.status)));
        }
        let modules = self.client.modules().await?;
        if let Some(why) = genesis_rules::refusal(
            Playing::Join(offer),
            &o.rules_code,
            &modules,
            o.rules.as_deref(),
            accept_code,
        ) {
            return Err(refused(why));
        }
        let name = o.rules.clone().unwrap_or_else(|| {
            format!("code {}…", o.rules_code.get(..16).unwrap_or(&o.rules_code))
        });
        let local = LocalRules::fetch(&self.client, &self.store, &name, &o.rules_code).await?;
        let domain = self.domain().await?;
        local.check_usable(&domain.domain().game_tag(offer))?;
        let game_key = Self::resolve_game_key(game_key)?;
        let mut op = json!({"kind":"join","offer":offer});
        if let Some((k, _)) = &game_key {
            op["signer"] = json!(k.address());
        }
        let included = self.send_channel(op).await?;
        let game = self
            .game_view(offer)
            .await?
            .ok_or_else(|| refused(format!("game {offer} did not open")))?;
        let record = GameRecord {
            version: RECORD_VERSION,
            game: offer.to_string(),
            domain,
            board: self.board.clone(),
            me,
            game_key_file: game_key.map(|(_, p)| p),
            players: game.players.clone(),
            signers: game.signers.clone(),
            rules: game.rules.clone(),
            rules_code_hash: game.rules_code.clone(),
            stake: game.stake.to_string(),
            window_ms: game.window_ms,
            opened: true,
            scanned: included.height.saturating_sub(1),
            moves: Vec::new(),
            conflicts: Vec::new(),
        };
        let _lock = self.store.lock(offer)?;
        self.store.save(&record)?;
        Ok(Joined {
            game: offer.to_string(),
            creator: o.creator,
            stake: o.stake.to_string(),
            window_ms: o.window_ms,
            rules_code: o.rules_code,
        })
    }

    /// `game`'s record, created from the channel's view when there is none (`from`: the height
    /// to read the board from), completed when its offer has been joined since. Call with the
    /// lock held. Errors: the game is not open, or `--key` is not one of its players.
    async fn record(&self, game: &str, from: Option<u64>) -> Result<GameRecord, ChannelError> {
        let mut changed = true;
        let mut record = match self.store.load(game)? {
            Some(r) => {
                changed = false;
                r
            }
            None => {
                let me = self
                    .key
                    .as_ref()
                    .ok_or_else(|| {
                        refused(format!(
                            "no record of game {game} in {}: pass --key FILE to start one",
                            self.store.dir().display()
                        ))
                    })?
                    .address();
                let view = self.game_view(game).await?.ok_or_else(|| {
                    refused(format!(
                        "game {game} is not open (no such game on the channel)"
                    ))
                })?;
                GameRecord {
                    version: RECORD_VERSION,
                    game: game.to_string(),
                    domain: self.domain().await?,
                    board: self.board.clone(),
                    me,
                    game_key_file: None,
                    players: view.players.clone(),
                    signers: view.signers.clone(),
                    rules: view.rules.clone(),
                    rules_code_hash: view.rules_code.clone(),
                    stake: view.stake.to_string(),
                    window_ms: view.window_ms,
                    opened: true,
                    scanned: from.unwrap_or(1).saturating_sub(1),
                    moves: Vec::new(),
                    conflicts: Vec::new(),
                }
            }
        };
        if !record.opened {
            let Some(view) = self.game_view(game).await? else {
                let offer = self.client.view(&self.channel, &[("offer", game)]).await?;
                let status = offer["status"].as_str().unwrap_or("unknown");
                return Err(refused(match status {
                    "open" => format!("game {game} is not open yet: offer {game} waits for a join"),
                    other => format!("offer {game} is {other}: there is no game"),
                }));
            };
            record.players = view.players.clone();
            record.signers = view.signers.clone();
            record.opened = true;
            changed = true;
        }
        if record.my_seat().is_none() {
            return Err(refused(format!(
                "{} is not a player of game {game} ({} vs {})",
                record.me, record.players[0], record.players[1]
            )));
        }
        if let Some(h) = from.filter(|&h| h <= record.scanned) {
            record.scanned = h.saturating_sub(1);
            changed = true;
        }
        if changed {
            self.store.save(&record)?;
        }
        Ok(record)
    }

    async fn rules_of(&self, record: &GameRecord) -> Result<Arc<LocalRules>, ChannelError> {
        let hash = &record.rules_code_hash;
        if let Some(rules) = self.rules.lock().expect("not poisoned").get(hash) {
            return Ok(rules.clone());
        }
        let rules = Arc::new(
            LocalRules::fetch(&self.client, &self.store, &record.rules_name(), hash).await?,
        );
        self.rules
            .lock()
            .expect("not poisoned")
            .insert(hash.clone(), rules.clone());
        Ok(rules)
    }

    /// Reads the board (and the channel's events) from the record's last read height to the
    /// head: every post for the game is checked ([`check_received`]) and kept only when it
    /// passes; the record is saved as it goes. Call with the lock held.
    async fn sync_locked(
        &self,
        record: &mut GameRecord,
        rules: &LocalRules,
        replay: &mut Replay,
    ) -> Result<SyncReport, ChannelError> {
        let head = self
            .client
            .status()
            .await?
            .height
            .min(record.scanned.saturating_add(MAX_BLOCKS_PER_SYNC));
        let mut report = SyncReport {
            head,
            ..SyncReport::default()
        };
        let mut dirty = false;
        while record.scanned < head {
            let height = record.scanned + 1;
            let block = self.client.block(BlockRef::Height(height)).await?;
            dirty |= Self::absorb(record, rules, replay, &block, &mut report)?;
            record.scanned = height;
            if dirty || height.is_multiple_of(64) || height == head {
                self.store.save(record)?;
                dirty = false;
            }
        }
        report.held = record.moves.len() as u64;
        Ok(report)
    }

    /// Reads one block for the game: every signed move it carries (board posts, the moves of
    /// channel ops) is checked ([`check_received`]) and kept only when it passes (a second move
    /// of the opponent for a held position is kept as an equivocation proof); the channel's
    /// events are reported. Does not save or advance `scanned`; returns whether the record
    /// changed.
    fn absorb(
        record: &mut GameRecord,
        rules: &LocalRules,
        replay: &mut Replay,
        block: &Block,
        report: &mut SyncReport,
    ) -> Result<bool, ChannelError> {
        let mut dirty = false;
        let channel_id = record.domain.module.clone();
        let board_id = record.board.clone();
        for seen in seen_in(block, &record.game, &channel_id, &board_id) {
            let (height, from, payloads) = match seen {
                Seen::Post {
                    height,
                    from,
                    payload,
                } => match serde_json::from_str::<Value>(&payload) {
                    Ok(v) => (height, from, vec![v]),
                    Err(_) => {
                        let why = Refusal::NotAMove("not JSON".into()).to_string();
                        report.refused.push((height, from, why));
                        continue;
                    }
                },
                Seen::OpMoves {
                    height,
                    from,
                    moves,
                } => (height, from, moves),
                Seen::Oversized { height, from } => {
                    let why = format!("a post over {} bytes", crate::MAX_PAYLOAD_BYTES);
                    report.refused.push((height, from, why));
                    continue;
                }
                Seen::Event { height, kind, data } => {
                    report.events.push((height, kind, data));
                    continue;
                }
            };
            for value in payloads {
                match Self::take(record, rules, replay, &value, true, report)? {
                    Ok(changed) => dirty |= changed,
                    Err(why) => report.refused.push((height, from.clone(), why.to_string())),
                }
            }
        }
        Ok(dirty)
    }

    /// Checks one received move (`{"n","data","sig"}`) and keeps it when it passes: the next
    /// move is stored, a held one of ours is marked posted when `on_chain` (a block carried it),
    /// a second signed move of the opponent for a held position is kept as a proof. `Ok(Ok(true))`
    /// when the record changed, `Ok(Err(why))` for a move that must not be kept.
    fn take(
        record: &mut GameRecord,
        rules: &LocalRules,
        replay: &mut Replay,
        value: &Value,
        on_chain: bool,
        report: &mut SyncReport,
    ) -> Result<Result<bool, Refusal>, ChannelError> {
        let my_seat = record.my_seat();
        // A move that makes the game's rules trap or run out of fuel is refused like an
        // illegal one: whoever sent it cannot stop a watchtower that way.
        let checked = match check_received(rules, record, replay, value) {
            Err(ChannelError::Rules(why)) => {
                return Ok(Err(Refusal::NotAMove(format!(
                    "the rules failed on it: {why}"
                ))))
            }
            other => other?,
        };
        match checked {
            Ok(Received::Next(mut m)) => {
                let data = hex::decode(&m.data).expect("checked hex");
                let next = match rules.apply_move(replay.state(), m.n, m.seat, &data) {
                    Err(ChannelError::Rules(why)) => {
                        return Ok(Err(Refusal::NotAMove(format!(
                            "the rules failed on it: {why}"
                        ))))
                    }
                    other => other?,
                };
                replay.states.push(next);
                report.received.push(m.n);
                if Some(m.seat) == my_seat {
                    // Ours again (a store restored from elsewhere): posted only if a block has it.
                    m.posted = on_chain;
                    if on_chain {
                        report.confirmed.push(m.n);
                    }
                }
                record.moves.push(m);
                Ok(Ok(true))
            }
            Ok(Received::Held(n)) => {
                let m = &mut record.moves[n as usize];
                if on_chain && !m.posted {
                    m.posted = true;
                    report.confirmed.push(n);
                    return Ok(Ok(true));
                }
                Ok(Ok(false))
            }
            Ok(Received::Equivocation(m)) => {
                report.equivocations.push(m.n);
                record.conflicts.push(m);
                Ok(Ok(true))
            }
            Err(why) => Ok(Err(why)),
        }
    }

    /// A move the relay brought (`{"n","data","sig"}`, checked by the node but not trusted):
    /// checked and kept as a board post would be (see [`Player::sync`]), without reading the
    /// board. Errors: the store's, the rules'.
    pub async fn receive_relayed(
        &self,
        game: &str,
        value: &Value,
    ) -> Result<SyncReport, ChannelError> {
        let _lock = self.store.lock(game)?;
        let mut record = self.record(game, None).await?;
        let rules = self.rules_of(&record).await?;
        let mut replay = rules.replay(&record.tag(), &record.moves)?;
        let mut report = SyncReport {
            head: record.scanned,
            ..SyncReport::default()
        };
        match Self::take(&mut record, &rules, &mut replay, value, false, &mut report)? {
            Ok(true) => self.store.save(&record)?,
            Ok(false) => {}
            Err(why) => report
                .refused
                .push((record.scanned, "relay".to_string(), why.to_string())),
        }
        report.held = record.moves.len() as u64;
        Ok(report)
    }

    /// Our latest move when it is the game's last one (the opponent has not answered it yet), as
    /// the relay carries it, with the state hash before it: what a watcher re-sends when the
    /// opponent's client connects.
    pub async fn latest_own_move(
        &self,
        game: &str,
    ) -> Result<Option<(RelayMove, String)>, ChannelError> {
        let _lock = self.store.lock(game)?;
        let record = self.record(game, None).await?;
        let seat = record.my_seat();
        let Some(last) = record.moves.last().filter(|m| Some(m.seat) == seat) else {
            return Ok(None);
        };
        let rules = self.rules_of(&record).await?;
        let replay = rules.replay(&record.tag(), &record.moves)?;
        let prev = replay.hash_before(last.n).expect("held move");
        Ok(Some((relay_move_of(last), prev)))
    }

    /// Who we are on `record`'s relay: the chain, our seat and its game key (`game_key`, else
    /// the record's game key file, else `--key`), to sign a hello each time it connects.
    /// Errors: we are not a player, the key is not our seat's, a channel the relay does not
    /// serve.
    fn relay_seat_of(
        &self,
        record: &GameRecord,
        game_key: Option<&Path>,
    ) -> Result<RelaySeat, ChannelError> {
        if record.domain.module != RELAY_MODULE {
            return Err(refused(format!(
                "the node's relay serves module {RELAY_MODULE} only, not {}",
                record.domain.module
            )));
        }
        let seat = record.my_seat().ok_or_else(|| {
            refused(format!(
                "{} plays no seat of game {}",
                record.me, record.game
            ))
        })?;
        Ok(RelaySeat {
            chain: record.domain.chain.clone(),
            seat,
            key: self.signing_key(record, seat, game_key)?,
        })
    }

    /// Who we are on `game`'s relay (see `relay_seat_of`): what the watch opens it with.
    pub async fn relay_seat(&self, game: &str) -> Result<RelaySeat, ChannelError> {
        let _lock = self.store.lock(game)?;
        let record = self.record(game, None).await?;
        self.relay_seat_of(&record, None)
    }

    /// Hands held move `i` to the node's relay as `seat`: the number of the opponent's
    /// connections that got it, `Err(why)` when none did (the opponent is not connected, the
    /// relay refused or could not be reached within [`RELAY_WAIT`]): the caller then posts it
    /// to the board.
    async fn relay_move(
        &self,
        record: &GameRecord,
        seat: &RelaySeat,
        prev: &str,
        i: usize,
    ) -> Result<u64, String> {
        let mv = relay_move_of(&record.moves[i]);
        let attempt = async {
            let mut relay = self
                .client
                .relay(&record.game, seat)
                .await
                .map_err(|e| e.to_string())?;
            // The greeting says how many connections the opponent has: none, no send.
            loop {
                match relay.next().await.map_err(|e| e.to_string())? {
                    Some(RelayEvent::Peers { count: 0 }) => {
                        return Err("the other player is not connected to the relay".to_string())
                    }
                    Some(RelayEvent::Peers { .. }) => break,
                    Some(_) => continue,
                    None => return Err("the relay closed the connection".to_string()),
                }
            }
            relay.send(&mv, prev).await.map_err(|e| e.to_string())?;
            loop {
                match relay.next().await.map_err(|e| e.to_string())? {
                    Some(RelayEvent::Relayed { n, to, .. }) if n == mv.n => {
                        return if to > 0 {
                            Ok(to)
                        } else {
                            Err("the other player's connections left before it arrived".to_string())
                        }
                    }
                    Some(RelayEvent::Error { error, message }) => {
                        return Err(format!("the relay refused it: {error}: {message}"))
                    }
                    Some(_) => continue,
                    None => return Err("the relay closed the connection".to_string()),
                }
            }
        };
        match tokio::time::timeout(RELAY_WAIT, attempt).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer from the relay in {RELAY_WAIT:?}")),
        }
    }

    /// Opens `game` under its lock: the record, its rules, the held moves replayed, the board
    /// read to the head.
    async fn open_game(
        &self,
        game: &str,
        from: Option<u64>,
    ) -> Result<(GameRecord, Arc<LocalRules>, Replay, SyncReport), ChannelError> {
        let mut record = self.record(game, from).await?;
        let rules = self.rules_of(&record).await?;
        let mut replay = rules.replay(&record.tag(), &record.moves)?;
        let report = self.sync_locked(&mut record, &rules, &mut replay).await?;
        Ok((record, rules, replay, report))
    }

    /// Reads the board for `game` (from `from` when given, else where the last read stopped),
    /// checking and storing received moves.
    pub async fn sync(&self, game: &str, from: Option<u64>) -> Result<SyncReport, ChannelError> {
        let _lock = self.store.lock(game)?;
        let (_, _, _, report) = self.open_game(game, from).await?;
        Ok(report)
    }

    fn signing_key(
        &self,
        record: &GameRecord,
        seat: u8,
        game_key: Option<&Path>,
    ) -> Result<SecretKey, ChannelError> {
        let (key, from) = match game_key.or(record.game_key_file.as_deref()) {
            Some(path) => (read_key(path)?, path.display().to_string()),
            None => (self.key()?.clone(), "--key".to_string()),
        };
        let expected = &record.signers[seat as usize];
        if key.address() != *expected {
            return Err(refused(format!(
                "seat {seat}'s game key is {expected}, but {from} holds {}: pass --game-key FILE",
                key.address()
            )));
        }
        Ok(key)
    }

    /// Posts held move `m` to the board; marks it posted and saves.
    async fn post(&self, record: &mut GameRecord, i: usize) -> Result<u64, ChannelError> {
        let payload = record.moves[i].wire().to_string();
        let board = record.board.clone();
        let included = self.send(&board, post_op(&record.game, &payload)).await?;
        record.moves[i].posted = true;
        self.store.save(record)?;
        Ok(included.height)
    }

    /// Makes move `data` in `game`: signs it over the current state (after reading the board),
    /// saves it, then sends it (unless `no_post`): through the node's relay first when `relay`
    /// (as our seat, signing the relay's hello with the game key: straight to the opponent's
    /// client when it is connected), else or when no connection of the opponent took it
    /// (whatever else of ours is connected, a `watch`), posted to the move board; and answers a
    /// challenge on this move with it.
    /// When we signed a move for this position already, the same data re-sends it, other data is
    /// refused (equivocation). Refused too: not our turn, the game over, an illegal move.
    pub async fn make_move(
        &self,
        game: &str,
        data: &[u8],
        no_post: bool,
        relay: bool,
        game_key: Option<&Path>,
    ) -> Result<Moved, ChannelError> {
        if data.len() > protocol::MAX_MOVE_BYTES {
            return Err(refused(format!(
                "move data is over {} bytes",
                protocol::MAX_MOVE_BYTES
            )));
        }
        let _lock = self.store.lock(game)?;
        let (mut record, rules, replay, _) = self.open_game(game, None).await?;
        let seat = record.my_seat().expect("checked by record()");
        let n = replay.n();
        let data_hex = hex::encode(data);
        let over = rules.is_over(replay.state())?;
        let due = if over { None } else { Some(rules.mover_at(n)?) };
        let last_mine = record
            .moves
            .last()
            .filter(|m| m.seat == seat)
            .map(|m| (m.n, m.data.clone()));
        let (i, resent) = match (due, last_mine) {
            (_, Some((k, held))) if due != Some(seat) => {
                if held != data_hex {
                    return Err(refused(format!(
                        "move {k} is signed already for this position (data {held}); signing \
                         {data_hex} too would be equivocation: nothing was sent (repeat the \
                         same move to re-send it)"
                    )));
                }
                (k as usize, true)
            }
            (None, _) => return Err(refused("the game is over: settle it (`channel settle`)")),
            (Some(d), _) if d != seat => {
                return Err(refused(format!(
                    "it is {}'s turn (move {n}): wait for their move (`channel sync`)",
                    record.players[d as usize]
                )))
            }
            (Some(_), _) => {
                if record.moves.len() >= MAX_MOVES_HELD {
                    return Err(refused(format!(
                        "this client holds at most {MAX_MOVES_HELD} moves per game"
                    )));
                }
                if !rules.validate_move(replay.state(), n, seat, data)? {
                    return Err(refused(format!(
                        "move {n}: {data_hex} is not a legal move; nothing was signed"
                    )));
                }
                let key = self.signing_key(&record, seat, game_key)?;
                let prev = protocol::state_hash(replay.state());
                let msg = record.domain.domain().move_message(
                    &record.game,
                    n,
                    &prev,
                    &record.players[seat as usize],
                    data,
                );
                record.moves.push(HeldMove {
                    n,
                    data: data_hex.clone(),
                    sig: sign_message(&key, msg),
                    seat,
                    posted: false,
                    relayed: false,
                });
                // Saved (fsynced) before anything is sent.
                self.store.save(&record)?;
                (n as usize, false)
            }
        };
        let k = i as u64;
        let signed = record.moves[i].wire().to_string();
        let over_after = if resent {
            over
        } else {
            let after = rules.apply_move(replay.state(), n, seat, data)?;
            rules.is_over(&after)?
        };
        let mut moved = Moved {
            n: k,
            data: data_hex,
            signed,
            resent,
            posted_at: None,
            relayed_to: None,
            relay_note: None,
            responded_at: None,
            over: over_after,
        };
        if no_post {
            return Ok(moved);
        }
        if relay {
            let prev = replay.hash_before(k).expect("a held move");
            let sent = match self.relay_seat_of(&record, game_key) {
                Ok(seat) => self.relay_move(&record, &seat, &prev, i).await,
                Err(e) => Err(e.to_string()),
            };
            match sent {
                Ok(to) => {
                    moved.relayed_to = Some(to);
                    if !record.moves[i].relayed {
                        record.moves[i].relayed = true;
                        self.store.save(&record)?;
                    }
                }
                Err(why) => moved.relay_note = Some(why),
            }
        }
        if moved.relayed_to.is_none() {
            moved.posted_at = Some(self.post(&mut record, i).await?);
        }
        // A challenge owed on this very move: answer it on chain as well.
        if let Some(view) = self.game_view(game).await? {
            if let Some(c) = view
                .challenge
                .as_ref()
                .filter(|c| c.moves == k && c.due == seat)
            {
                let now = head_time_ms(&self.client).await?;
                if view.status == "challenged" && now <= c.deadline_ms {
                    let replay = rules.replay(&record.tag(), &record.moves)?;
                    if let Some(r) = self.respond_with(&record, &replay, &view).await? {
                        moved.responded_at = Some(r.height);
                    }
                }
            }
        }
        Ok(moved)
    }

    /// The held moves that answer `view`'s challenge: they start at the challenged move and our
    /// state there is the challenged state. `None` when we hold none.
    fn answer(
        record: &GameRecord,
        replay: &Replay,
        view: &protocol::Game,
    ) -> Option<(u64, Vec<Value>)> {
        let c = view.challenge.as_ref()?;
        if view.status != "challenged" || record.moves.len() as u64 <= c.moves {
            return None;
        }
        let ours = replay.states.get(c.moves as usize)?;
        if hex::encode(ours) != c.state {
            return None;
        }
        let end = record.moves.len().min(c.moves as usize + MAX_MOVES_HELD);
        let moves = record.moves[c.moves as usize..end]
            .iter()
            .map(HeldMove::wire)
            .collect();
        Some((c.moves, moves))
    }

    async fn respond_with(
        &self,
        record: &GameRecord,
        replay: &Replay,
        view: &protocol::Game,
    ) -> Result<Option<Responded>, ChannelError> {
        let Some((from, moves)) = Self::answer(record, replay, view) else {
            return Ok(None);
        };
        let count = moves.len();
        let op = json!({"kind":"respond","game":record.game,"moves":moves});
        let included = self.send_channel(op).await?;
        let next = event(&included, "game_challenged").map(|d| {
            (
                d["due"].as_str().unwrap_or("").to_string(),
                d["move"].as_u64().unwrap_or(0),
                d["deadline_ms"].as_u64().unwrap_or(0),
            )
        });
        let at_ms = self.block_time(included.height).await?;
        Ok(Some(Responded {
            from,
            moves: count,
            height: included.height,
            next,
            at_ms,
        }))
    }

    /// Settles `game` by history: the held moves, which must end the game (checked locally).
    pub async fn settle(&self, game: &str) -> Result<Settled, ChannelError> {
        let _lock = self.store.lock(game)?;
        let (record, rules, replay, _) = self.open_game(game, None).await?;
        if !rules.is_over(replay.state())? {
            let due = rules.mover_at(replay.n())?;
            return Err(refused(format!(
                "the history does not end the game: {} moves held, {} to move; nothing was sent",
                replay.n(),
                record.players[due as usize]
            )));
        }
        let moves: Vec<Value> = record.moves.iter().map(HeldMove::wire).collect();
        let count = moves.len();
        let included = self
            .send_channel(json!({"kind":"settle","game":game,"moves":moves}))
            .await?;
        let data = event(&included, "game_concluding");
        Ok(Settled {
            moves: count,
            winner: winner_of(data),
            final_at_ms: data.and_then(|d| d["final_at_ms"].as_u64()).unwrap_or(0),
        })
    }

    /// Challenges the opponent to make the move they owe, with the held moves as the history.
    /// Refused locally on our own turn and when the moves end the game (settle instead).
    pub async fn challenge(&self, game: &str) -> Result<Challenged, ChannelError> {
        let _lock = self.store.lock(game)?;
        let (record, rules, replay, _) = self.open_game(game, None).await?;
        let seat = record.my_seat().expect("checked by record()");
        if rules.is_over(replay.state())? {
            return Err(refused(
                "the held moves end the game: settle it (`channel settle`)",
            ));
        }
        let n = replay.n();
        if rules.mover_at(n)? == seat {
            return Err(refused(format!(
                "it is your own turn (move {n}): make your move"
            )));
        }
        let moves: Vec<Value> = record.moves.iter().map(HeldMove::wire).collect();
        let included = self
            .send_channel(json!({"kind":"challenge","game":game,"moves":moves}))
            .await?;
        let at_ms = self.block_time(included.height).await?;
        Ok(match event(&included, "game_challenged") {
            Some(d) => Challenged {
                due: d["due"].as_str().map(str::to_string),
                move_number: d["move"].as_u64().unwrap_or(n),
                deadline_ms: d["deadline_ms"].as_u64().unwrap_or(0),
                at_ms,
            },
            None => Challenged {
                due: None,
                move_number: n,
                deadline_ms: 0,
                at_ms,
            },
        })
    }

    /// The channel's record of `game` and its open challenge; refused when there is no such
    /// game or it is not challenged.
    async fn challenged_view(
        &self,
        game: &str,
    ) -> Result<(protocol::Game, protocol::Challenge), ChannelError> {
        let view = self
            .game_view(game)
            .await?
            .ok_or_else(|| refused(format!("no game {game} on the channel")))?;
        match (view.status.as_str(), &view.challenge) {
            ("challenged", Some(c)) => {
                let c = c.clone();
                Ok((view, c))
            }
            (status, _) => Err(refused(format!("game {game} is {status}, not challenged"))),
        }
    }

    /// Answers the open challenge of `game` with the held moves from the challenged move on
    /// (anyone may answer). Refused when the game is not challenged or we hold no such move.
    pub async fn respond(&self, game: &str) -> Result<Responded, ChannelError> {
        let _lock = self.store.lock(game)?;
        let (record, _, replay, _) = self.open_game(game, None).await?;
        let (view, c) = self.challenged_view(game).await?;
        let c = &c;
        match self.respond_with(&record, &replay, &view).await? {
            Some(r) => Ok(r),
            None => Err(refused(format!(
                "we hold no move {} continuing the challenged state: make it first (`channel move`)",
                c.moves
            ))),
        }
    }

    /// Claims the forfeit of the player who did not answer a challenge by its deadline.
    pub async fn forfeit(&self, game: &str) -> Result<Ended, ChannelError> {
        let (view, c) = self.challenged_view(game).await?;
        let c = &c;
        let now = head_time_ms(&self.client).await?;
        if now <= c.deadline_ms {
            return Err(refused(format!(
                "{} may answer until {}: nothing was sent",
                view.players[c.due as usize],
                crate::time::describe_deadline(c.deadline_ms, now)
            )));
        }
        let included = self
            .send_channel(json!({"kind":"claim_forfeit","game":game}))
            .await?;
        Ok(Ended {
            winner: winner_of(event(&included, "game_settled")),
            height: included.height,
        })
    }

    /// Proves the opponent's equivocation from the store: two different moves signed by their
    /// game key for one position. Refused when the store holds none.
    pub async fn prove(&self, game: &str) -> Result<(u64, Ended), ChannelError> {
        let _lock = self.store.lock(game)?;
        let (record, _, replay, _) = self.open_game(game, None).await?;
        let Some(b) = record.conflicts.first() else {
            return Err(refused(format!(
                "no equivocation held for game {game}: nothing was sent"
            )));
        };
        Ok((b.n, self.send_proof(&record, &replay, b).await?))
    }

    /// Withdraws a final game's stakes (to the winner, or one each for a draw).
    pub async fn withdraw(&self, game: &str) -> Result<Ended, ChannelError> {
        let included = self
            .send_channel(json!({"kind":"withdraw","game":game}))
            .await?;
        Ok(Ended {
            winner: winner_of(event(&included, "paid")),
            height: included.height,
        })
    }

    /// Cancels our open offer (the stake comes back at once).
    pub async fn cancel(&self, offer: &str) -> Result<u64, ChannelError> {
        let included = self
            .send_channel(json!({"kind":"cancel","offer":offer}))
            .await?;
        Ok(included.height)
    }

    /// The record of `game`, the position its moves reach, and the channel's view. Reads the
    /// board first when `--key` is given or the record exists (never signs or sends).
    pub async fn show(&self, game: &str) -> Result<Shown, ChannelError> {
        let _lock = self.store.lock(game)?;
        let (record, rules, replay, report) = self.open_game(game, None).await?;
        let state = replay.state();
        let over = if rules.is_over(state)? {
            Some(rules.winner(state)?)
        } else {
            None
        };
        let due = match over {
            Some(_) => None,
            None => Some(rules.mover_at(replay.n())?),
        };
        let head_time_ms = self.block_time(report.head).await?;
        let (view, final_state) = match self.game_view_at(game, head_time_ms).await? {
            Some((g, fin, hash)) => (Some(g), Some((fin, hash))),
            None => (None, None),
        };
        let current = match &record.rules {
            None => None,
            Some(id) => match self.client.module(id).await {
                Ok(m) => Some(m.code_hash),
                Err(ClientError::Api { .. }) => None,
                Err(e) => return Err(e.into()),
            },
        };
        Ok(Shown {
            n: replay.n(),
            state_hash: protocol::state_hash(state),
            over,
            due,
            view,
            head: report.head,
            head_time_ms,
            rules_changed: current.filter(|h| *h != record.rules_code_hash),
            final_state,
            record,
        })
    }

    /// The channel's view of `game` at block time `at_ms`: the record, whether its result is
    /// final then, and the final state hash; `None` when there is no such game.
    pub async fn game_view_at(
        &self,
        game: &str,
        at_ms: u64,
    ) -> Result<Option<(protocol::Game, bool, Option<String>)>, ChannelError> {
        let at = at_ms.to_string();
        let query = [("game", game), ("at_ms", at.as_str())];
        let v = match self.client.view(&self.channel, &query).await {
            Ok(v) => v,
            Err(e) if e.code() == Some("not_found") => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let fin = v.get("final").and_then(Value::as_bool).unwrap_or(false);
        let hash = v
            .get("final_state_hash")
            .and_then(Value::as_str)
            .map(str::to_string);
        let g: protocol::Game = serde_json::from_value(v)
            .map_err(|e| refused(format!("the channel's view of game {game}: {e}")))?;
        Ok(Some((g, fin, hash)))
    }

    /// The height up to which `game`'s record has read the chain (creating the record from the
    /// channel's view when there is none).
    pub async fn scanned(&self, game: &str) -> Result<u64, ChannelError> {
        let _lock = self.store.lock(game)?;
        Ok(self.record(game, None).await?.scanned)
    }

    /// The watchtower reads `block` (the next one after the record's last read; an older one is
    /// skipped): its moves and the channel's events about the game, checked and stored as
    /// `sync` does, without asking the node for anything. Errors: a block that is not the next
    /// one (the caller reads the gap first), the store's.
    pub async fn watch_block(&self, game: &str, block: &Block) -> Result<SyncReport, ChannelError> {
        let _lock = self.store.lock(game)?;
        let mut record = self.record(game, None).await?;
        let height = block.height();
        let mut report = SyncReport {
            head: record.scanned.max(height),
            ..SyncReport::default()
        };
        if height <= record.scanned {
            report.head = record.scanned;
            report.held = record.moves.len() as u64;
            return Ok(report);
        }
        if height != record.scanned + 1 {
            return Err(ChannelError::Store(format!(
                "block {height} read before block {} of game {game}",
                record.scanned + 1
            )));
        }
        let rules = self.rules_of(&record).await?;
        let mut replay = rules.replay(&record.tag(), &record.moves)?;
        Self::absorb(&mut record, &rules, &mut replay, block, &mut report)?;
        record.scanned = height;
        self.store.save(&record)?;
        report.held = record.moves.len() as u64;
        Ok(report)
    }

    /// The watchtower acts at block time `now_ms`: with `refresh` (or when it has none) it asks
    /// the channel for the game, then sends the proof of an equivocation the store holds (a
    /// challenge whose history contradicts a held move is one: the contradicting move is kept
    /// when the challenge is read), and answers a challenge due on our seat with the held moves
    /// continuing the challenged state; either way it reports a challenge it cannot answer yet,
    /// a deadline missed, and whether the result is final.
    pub async fn watch_act(
        &self,
        game: &str,
        now_ms: u64,
        state: &mut WatchState,
        refresh: bool,
    ) -> Result<WatchStep, ChannelError> {
        let mut step = WatchStep {
            now_ms,
            ..WatchStep::default()
        };
        let refresh = refresh || state.view.is_none();
        if refresh {
            let view = self
                .game_view(game)
                .await?
                .ok_or_else(|| refused(format!("no game {game} on the channel")))?;
            step.status = Some(view.status.clone());
            state.view = Some(view);
            state.pending = false;
        }
        let view = state.view.clone().expect("set above");
        if is_final(&view, now_ms) {
            step.final_result = true;
            return Ok(step);
        }
        let _lock = self.store.lock(game)?;
        let record = self.record(game, None).await?;
        let seat = record.my_seat().expect("checked by record()");
        if refresh {
            if let Some(b) = record
                .conflicts
                .iter()
                .find(|c| !state.proved.contains(&c.n))
                .cloned()
            {
                state.proved.insert(b.n);
                let rules = self.rules_of(&record).await?;
                let replay = rules.replay(&record.tag(), &record.moves)?;
                match self.send_proof(&record, &replay, &b).await {
                    Ok(ended) => {
                        step.proved = Some((b.n, ended));
                        step.final_result = true;
                        return Ok(step);
                    }
                    Err(ChannelError::TxFailed(e)) => step.refused = Some(e),
                    Err(e) => {
                        state.proved.remove(&b.n);
                        return Err(e);
                    }
                }
            }
        }
        let Some(c) = view
            .challenge
            .as_ref()
            .filter(|c| view.status == "challenged" && c.due == seat)
        else {
            return Ok(step);
        };
        let key = (c.moves, c.deadline_ms);
        if now_ms > c.deadline_ms {
            if state.missed.insert(key) {
                step.missed = Some(key);
            }
            return Ok(step);
        }
        if !refresh || state.tried.contains(&key) {
            return Ok(step);
        }
        let rules = self.rules_of(&record).await?;
        let replay = rules.replay(&record.tag(), &record.moves)?;
        match self.respond_with(&record, &replay, &view).await {
            Ok(Some(r)) => {
                state.tried.insert(key);
                state.view = None;
                step.responded = Some(r);
            }
            // Not held yet: told once; answered as soon as the move is in the store.
            Ok(None) => {
                state.pending = true;
                if state.reported.insert(key) {
                    step.owed = Some(key);
                }
            }
            Err(ChannelError::TxFailed(e)) => {
                state.tried.insert(key);
                state.view = None;
                step.refused = Some(e);
            }
            Err(e) => return Err(e),
        }
        Ok(step)
    }

    /// Sends `prove_equivocation` with held move `b.n` and the opponent's other move `b`.
    async fn send_proof(
        &self,
        record: &GameRecord,
        replay: &Replay,
        b: &HeldMove,
    ) -> Result<Ended, ChannelError> {
        let a = &record.moves[b.n as usize];
        let prev = replay
            .hash_before(b.n)
            .expect("conflicts are for held positions");
        let op = json!({"kind":"prove_equivocation","game":record.game,"a":a.wire(),"b":b.wire(),
                        "prev_a":prev,"prev_b":prev});
        let included = self.send_channel(op).await?;
        Ok(Ended {
            winner: winner_of(event(&included, "game_settled")),
            height: included.height,
        })
    }
}
