//! The move store: one JSON file per game, `<dir>/<game id>.json` (default dir
//! `./gamechain-channels`), holding everything a player needs to prove what happened without
//! the node's help: the game id, the signing domain (from which the game tag follows), the
//! seats' players and game keys, the code hash the game's rules are pinned to (and the module id
//! the offer named, if any), the window, and every signed move (ours and the opponent's) in
//! order, plus any second signed move the opponent made for a position we hold (an equivocation
//! proof).
//!
//! Writes are atomic (`<game>.json.tmp`, fsync, rename, fsync of the directory): after a crash
//! the file is the old record or the new one, never a mix. A move we sign is saved before it is
//! sent. `<game>.lock` is held (`flock`) while a command reads, changes and saves a record, so a
//! `watch` and a `move` on the same game never lose each other's writes. The rules code is
//! cached as `<dir>/rules/<code hash>.wasm` (checked against its hash on every read).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use gamechain_channel_protocol as protocol;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::ChannelError;

/// Largest record file read, bytes (64 moves of the largest data are about 150 KB).
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

/// The record format written by this client (2: windows in ms, rules pinned by code hash, the
/// game tag; version 1 records, of games with windows in blocks, are refused).
pub const RECORD_VERSION: u32 = 2;

/// One signed move as held: the move number, the data (lowercase hex), the game key's signature
/// (base64), the seat that made it, and for our own moves whether the board has carried it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldMove {
    /// The move number.
    pub n: u64,
    /// The move data, lowercase hex.
    pub data: String,
    /// The mover's game-key signature of the move text, base64.
    pub sig: String,
    /// The seat that made it (`mover_at(n)`).
    pub seat: u8,
    /// Our own move: whether a block carries it (a board post, or an op's history). Received
    /// moves: true.
    pub posted: bool,
    /// Our own move: whether the node's relay handed it to a connection of the opponent's seat
    /// (its client, at once, off-chain). Absent in records written before the relay.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relayed: bool,
}

impl HeldMove {
    /// The move as ops and the board carry it: `{"n","data","sig"}`.
    pub fn wire(&self) -> Value {
        json!({ "n": self.n, "data": self.data, "sig": self.sig })
    }
}

/// The signing domain (docs/channels.md, "Signed moves").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainRecord {
    /// The chain's genesis hash, hex, as the channel's view `{}` returns it.
    pub chain: String,
    /// The channel module's id.
    pub module: String,
}

impl DomainRecord {
    /// As the channel protocol's [`protocol::Domain`].
    pub fn domain(&self) -> protocol::Domain {
        protocol::Domain {
            chain: self.chain.clone(),
            module: self.module.clone(),
        }
    }
}

/// Everything kept about one game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameRecord {
    /// [`RECORD_VERSION`].
    pub version: u32,
    /// The game id (= its offer id), 16 hex digits.
    pub game: String,
    /// The signing domain.
    pub domain: DomainRecord,
    /// The move board's module id (where moves are posted and read).
    pub board: String,
    /// Our player address.
    pub me: String,
    /// The key file signing our moves when it is not `--key`'s (absolute path; the secret is
    /// never copied here).
    pub game_key_file: Option<PathBuf>,
    /// Seat 0's and seat 1's player addresses (seat 1 empty while the offer is open).
    pub players: [String; 2],
    /// Seat 0's and seat 1's game keys (addresses).
    pub signers: [String; 2],
    /// The rules module id the offer named, if it named one (informational).
    pub rules: Option<String>,
    /// SHA-256 of the rules code the game plays by (lowercase hex): the offer's `rules_code`,
    /// the only code this client runs for the game.
    pub rules_code_hash: String,
    /// Each player's stake, GOLD base units (`0`: unstaked).
    pub stake: String,
    /// The response window, milliseconds of block time.
    pub window_ms: u64,
    /// Whether the game is open (both seats known).
    pub opened: bool,
    /// The last block height read from the board for this game.
    pub scanned: u64,
    /// Every signed move, in order: `moves[i].n == i`.
    pub moves: Vec<HeldMove>,
    /// Second signed moves of the opponent for positions in `moves` (at most one per position):
    /// equivocation proofs.
    pub conflicts: Vec<HeldMove>,
}

impl GameRecord {
    /// The game's tag: what the rules' `initial_state` gets (`protocol::Domain::game_tag`).
    pub fn tag(&self) -> [u8; 32] {
        self.domain.domain().game_tag(&self.game)
    }

    /// How messages name the rules: the module id the offer named, or the code hash.
    pub fn rules_name(&self) -> String {
        match &self.rules {
            Some(id) => id.clone(),
            None => format!("code {}…", self.rules_code_hash.get(..16).unwrap_or("")),
        }
    }

    /// Our seat (0 or 1), once we are a player.
    pub fn my_seat(&self) -> Option<u8> {
        self.players
            .iter()
            .position(|p| !p.is_empty() && *p == self.me)
            .map(|s| s as u8)
    }
}

/// A directory of game records.
#[derive(Debug, Clone)]
pub struct MoveStore {
    dir: PathBuf,
}

/// An exclusive lock on one game's record, released when dropped.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> ChannelError {
    ChannelError::Store(format!("cannot {what} {}: {e}", path.display()))
}

/// Whether `game` may name a record file: 1–64 of `0-9a-f` (no path can be smuggled in).
pub fn valid_game_id(game: &str) -> bool {
    !game.is_empty()
        && game.len() <= 64
        && game
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl MoveStore {
    /// The store in `dir`, created if missing. Errors: [`ChannelError::Store`].
    pub fn open(dir: &Path) -> Result<MoveStore, ChannelError> {
        fs::create_dir_all(dir.join("rules")).map_err(|e| io_error(dir, "create", e))?;
        Ok(MoveStore {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `game`'s record lives.
    pub fn path(&self, game: &str) -> PathBuf {
        self.dir.join(format!("{game}.json"))
    }

    fn check_id(game: &str) -> Result<(), ChannelError> {
        if valid_game_id(game) {
            Ok(())
        } else {
            Err(ChannelError::Refused(format!(
                "`{game}` is not a game id (16 hex digits, e.g. 0000000000000003)"
            )))
        }
    }

    /// Takes `game`'s lock (waits while another command holds it).
    pub fn lock(&self, game: &str) -> Result<StoreLock, ChannelError> {
        Self::check_id(game)?;
        let path = self.dir.join(format!("{game}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error(&path, "open", e))?;
        // SAFETY: `flock` has no memory-safety preconditions; the descriptor is open and owned
        // by `file`, which outlives the lock (closing it releases the lock).
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io_error(&path, "lock", std::io::Error::last_os_error()));
        }
        Ok(StoreLock { _file: file })
    }

    /// `game`'s record, `None` when there is none. Errors: unreadable, too large or not a
    /// record.
    pub fn load(&self, game: &str) -> Result<Option<GameRecord>, ChannelError> {
        Self::check_id(game)?;
        let path = self.path(game);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, "read", e)),
        };
        let mut text = Vec::new();
        file.take(MAX_RECORD_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|e| io_error(&path, "read", e))?;
        if text.len() as u64 > MAX_RECORD_BYTES {
            return Err(ChannelError::Store(format!(
                "{} is over {MAX_RECORD_BYTES} bytes",
                path.display()
            )));
        }
        let record: GameRecord = serde_json::from_slice(&text).map_err(|e| {
            ChannelError::Store(format!("{} is not a game record: {e}", path.display()))
        })?;
        if record.version != RECORD_VERSION || record.game != game {
            return Err(ChannelError::Store(format!(
                "{} is not a version {RECORD_VERSION} record of game {game}",
                path.display()
            )));
        }
        Ok(Some(record))
    }

    /// Saves `record` atomically and durably (temp file, fsync, rename, fsync of the directory).
    pub fn save(&self, record: &GameRecord) -> Result<(), ChannelError> {
        Self::check_id(&record.game)?;
        let text = serde_json::to_vec_pretty(record).expect("records serialise");
        self.write_atomic(&self.path(&record.game), &text)
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), ChannelError> {
        let tmp = path.with_extension(format!(
            "{}.tmp",
            path.extension().and_then(|e| e.to_str()).unwrap_or("")
        ));
        let mut file = File::create(&tmp).map_err(|e| io_error(&tmp, "create", e))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| io_error(&tmp, "write", e))?;
        drop(file);
        fs::rename(&tmp, path).map_err(|e| io_error(path, "replace", e))?;
        let dir = path.parent().unwrap_or(&self.dir);
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error(dir, "sync", e))
    }

    fn code_path(&self, code_hash: &str) -> PathBuf {
        self.dir.join("rules").join(format!("{code_hash}.wasm"))
    }

    /// The cached rules code of `code_hash`, when cached and its bytes hash to it.
    pub fn cached_code(&self, code_hash: &str) -> Option<Vec<u8>> {
        if code_hash.len() != 64 || !code_hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let path = self.code_path(code_hash);
        let len = fs::metadata(&path).ok()?.len();
        if len > gamechain_runtime::chain::MAX_CODE_BYTES as u64 {
            return None;
        }
        let wasm = fs::read(path).ok()?;
        (hex::encode(Sha256::digest(&wasm)) == code_hash).then_some(wasm)
    }

    /// Caches rules code (already checked against `code_hash`).
    pub fn cache_code(&self, code_hash: &str, wasm: &[u8]) -> Result<(), ChannelError> {
        self.write_atomic(&self.code_path(code_hash), wasm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> GameRecord {
        GameRecord {
            version: RECORD_VERSION,
            game: "0000000000000007".into(),
            domain: DomainRecord {
                chain: "ab".into(),
                module: "channel".into(),
            },
            board: "moveboard".into(),
            me: "yA".into(),
            game_key_file: None,
            players: ["yA".into(), "yB".into()],
            signers: ["yA".into(), "yB".into()],
            rules: Some("ttt_rules".into()),
            rules_code_hash: "00".repeat(32),
            stake: "100".into(),
            window_ms: 300_000,
            opened: true,
            scanned: 3,
            moves: vec![HeldMove {
                n: 0,
                data: "04".into(),
                sig: "s".into(),
                seat: 0,
                posted: false,
                relayed: true,
            }],
            conflicts: Vec::new(),
        }
    }

    #[test]
    fn channel_records_round_trip_atomically_and_refuse_bad_ids() {
        let tmp = tempfile::tempdir().unwrap();
        let store = MoveStore::open(tmp.path()).unwrap();
        assert_eq!(store.load("0000000000000007").unwrap(), None);
        let rec = record();
        let _lock = store.lock(&rec.game).unwrap();
        store.save(&rec).unwrap();
        assert_eq!(store.load(&rec.game).unwrap(), Some(rec.clone()));
        assert!(!store.path(&rec.game).with_extension("json.tmp").exists());
        assert_eq!(rec.my_seat(), Some(0));
        assert_eq!(rec.moves[0].wire(), json!({"n":0,"data":"04","sig":"s"}));
        for bad in ["../x", "", "ABC", "00 1"] {
            assert!(
                matches!(store.load(bad), Err(ChannelError::Refused(_))),
                "{bad}"
            );
        }
        std::fs::write(store.path("0000000000000008"), b"{}").unwrap();
        assert!(matches!(
            store.load("0000000000000008"),
            Err(ChannelError::Store(_))
        ));
    }

    #[test]
    fn channel_rules_cache_checks_the_hash() {
        let tmp = tempfile::tempdir().unwrap();
        let store = MoveStore::open(tmp.path()).unwrap();
        let wasm = b"\0asm fake".to_vec();
        let hash = hex::encode(Sha256::digest(&wasm));
        store.cache_code(&hash, &wasm).unwrap();
        assert_eq!(store.cached_code(&hash), Some(wasm));
        std::fs::write(store.code_path(&hash), b"other").unwrap();
        assert_eq!(store.cached_code(&hash), None, "a changed file is not used");
    }
}
