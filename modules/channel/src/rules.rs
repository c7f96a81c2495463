//! Calls into a game's rules module (`call_pure`, each with [`RULES_FUEL`]) and the replay of
//! signed moves: each move must follow the last state, be the seat's turn (`mover_at`), carry a
//! valid signature by that seat's game key over its canonical text (`message.rs`), and be valid
//! by the rules; the channel refuses any move after the game is over, whatever the rules say.

use gamechain_sdk::prelude::*;
use gamechain_sdk::rules::{encode_move, DRAW};

use crate::game::{Game, MAX_MOVE_BYTES, MAX_STATE_BYTES, RULES_FUEL};
use crate::message::{state_hash, Domain};

/// The state key holding the chain's genesis hash (hex text), the chain part of the domain.
pub const GENESIS_KEY: &str = "chain/genesis";

/// The signing domain as the chain sees it.
pub fn domain(ctx: &dyn Ctx) -> Domain {
    Domain {
        chain: ctx
            .read_raw(GENESIS_KEY)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default(),
        module: ctx.module().to_string(),
    }
}

/// One signed move as it appears in ops: `{"n":<u64>,"data":"<hex>","sig":"<base64>"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedMove {
    /// The move number.
    pub n: u64,
    /// The move data.
    pub data: Vec<u8>,
    /// The game key's signature (base64) of the move's canonical text.
    pub sig: String,
}

impl SignedMove {
    /// Reads a move from its JSON.
    pub fn from_json(v: &Value) -> Result<Self, ActionError> {
        let n = v
            .get("n")
            .and_then(Value::as_u64)
            .ok_or_else(|| ActionError::invalid("a move needs n, a non-negative integer"))?;
        let data = v
            .get("data")
            .and_then(Value::as_str)
            .ok_or_else(|| ActionError::invalid("a move needs data, hex"))?;
        if data.len() > 2 * MAX_MOVE_BYTES {
            return Err(ActionError::invalid(format!(
                "move {n}: data is over {MAX_MOVE_BYTES} bytes"
            )));
        }
        let data = hex::decode(data)
            .map_err(|_| ActionError::invalid(format!("move {n}: data must be hex")))?;
        let sig = v
            .get("sig")
            .and_then(Value::as_str)
            .filter(|s| s.len() <= 200)
            .ok_or_else(|| ActionError::invalid(format!("move {n}: sig must be a signature")))?
            .to_string();
        Ok(Self { n, data, sig })
    }
}

/// The code hash (lowercase hex) module `id` runs now; `None` when there is no such module.
pub fn code_hash(ctx: &dyn Ctx, id: &str) -> Option<String> {
    ctx.module_code_hash(id).map(hex::encode)
}

/// Why the rules module `id` no longer runs `pinned`, the code a game or offer recorded (its
/// owner upgraded it since); `None` while it does, and for a record made before pinning
/// (`pinned` absent).
pub fn upgraded(ctx: &dyn Ctx, id: &str, pinned: Option<&str>) -> Option<String> {
    let pinned = pinned?;
    let now = code_hash(ctx, id);
    if now.as_deref() == Some(pinned) {
        return None;
    }
    let short = |h: &str| h.get(..16).unwrap_or(h).to_string();
    Some(format!(
        "the rules module {id} was upgraded since the game opened (code {}…, now {})",
        short(pinned),
        now.map_or("none".into(), |h| format!("{}…", short(&h)))
    ))
}

/// A game's rules module, called from an op.
pub struct Rules<'a> {
    ctx: &'a dyn Ctx,
    id: &'a str,
}

impl<'a> Rules<'a> {
    /// The rules module `id`.
    pub fn new(ctx: &'a dyn Ctx, id: &'a str) -> Self {
        Self { ctx, id }
    }

    /// The rules of `game`, refused (`invalid`, the text says the game is void and `withdraw`
    /// refunds both stakes) when the module no longer runs the code the game opened with.
    pub fn of_game(ctx: &'a dyn Ctx, game: &'a Game) -> Result<Self, ActionError> {
        match upgraded(ctx, &game.rules, game.rules_code.as_deref()) {
            Some(why) => Err(ActionError::invalid(format!(
                "{why}: the game is void, withdraw refunds both stakes"
            ))),
            None => Ok(Self::new(ctx, &game.rules)),
        }
    }

    fn call(&self, entry: &str, input: &[u8]) -> Result<Vec<u8>, ActionError> {
        self.ctx
            .call_pure(self.id, entry, input, RULES_FUEL)
            .map_err(|e| ActionError::invalid(format!("rules module {} {entry}: {e}", self.id)))
    }

    fn flag(&self, entry: &str, input: &[u8]) -> Result<bool, ActionError> {
        match self.call(entry, input)?.as_slice() {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(ActionError::invalid(format!(
                "rules module {} {entry}: not a 0/1 answer",
                self.id
            ))),
        }
    }

    /// `initial_state`.
    pub fn initial_state(&self) -> Result<Vec<u8>, ActionError> {
        let s = self.call("initial_state", &[])?;
        if s.len() > MAX_STATE_BYTES {
            return Err(ActionError::invalid(format!(
                "rules module {}: a state over {MAX_STATE_BYTES} bytes",
                self.id
            )));
        }
        Ok(s)
    }

    /// `mover_at`: a seat, or `invalid` when the rules name none (the seed's `BadRules`).
    pub fn mover_at(&self, n: u64) -> Result<u8, ActionError> {
        match self.call("mover_at", &n.to_le_bytes())?.as_slice() {
            [s] if *s <= 1 => Ok(*s),
            _ => Err(ActionError::invalid(format!(
                "rules module {} named no seat for move {n}",
                self.id
            ))),
        }
    }

    /// `is_over`.
    pub fn is_over(&self, state: &[u8]) -> Result<bool, ActionError> {
        self.flag("is_over", state)
    }

    /// `winner` of a final state: a seat, `None` for a draw.
    pub fn winner(&self, state: &[u8]) -> Result<Option<u8>, ActionError> {
        match self.call("winner", state)?.as_slice() {
            [s] if *s <= 1 => Ok(Some(*s)),
            [DRAW] => Ok(None),
            _ => Err(ActionError::invalid(format!(
                "rules module {} named no winner",
                self.id
            ))),
        }
    }

    /// The lobby's usability check: `mover_at(0)` is a seat and the initial state is not over.
    pub fn check_usable(&self) -> Result<(), ActionError> {
        let unusable = |e: ActionError| {
            let why = e.to_string();
            let why = why.strip_prefix("invalid: ").unwrap_or(&why).to_string();
            ActionError::invalid(format!("rules module {} is not usable: {why}", self.id))
        };
        let s = self.initial_state().map_err(unusable)?;
        self.mover_at(0).map_err(unusable)?;
        if self.is_over(&s).map_err(unusable)? {
            return Err(ActionError::invalid(format!(
                "rules module {} is not usable: its initial state is over",
                self.id
            )));
        }
        Ok(())
    }

    /// Plays `moves` from `state` (after `n0` moves) for `game`: `(moves made, state)` after
    /// the last one, or the first failure.
    pub fn replay(
        &self,
        domain: &Domain,
        game: &Game,
        n0: u64,
        mut state: Vec<u8>,
        moves: &[SignedMove],
    ) -> Result<(u64, Vec<u8>), ActionError> {
        let mut n = n0;
        for m in moves {
            if m.n != n {
                return Err(ActionError::invalid(format!(
                    "expected move {n}, got move {}",
                    m.n
                )));
            }
            if self.is_over(&state)? {
                return Err(ActionError::invalid(format!(
                    "move {n} comes after the game is over"
                )));
            }
            let seat = self.mover_at(n)?;
            let (player, key) = (&game.players[seat as usize], &game.signers[seat as usize]);
            let msg = domain.move_message(&game.id, n, &state_hash(&state), player, &m.data);
            if !self.ctx.verify_signed(key, msg.as_bytes(), &m.sig) {
                return Err(ActionError::unauthorized(format!(
                    "move {n} is not signed by {player}'s game key"
                )));
            }
            let input = encode_move(n, seat, &state, &m.data);
            if !self.flag("validate_move", &input)? {
                return Err(ActionError::invalid(format!(
                    "move {n} is not a legal move"
                )));
            }
            state = self.call("apply_move", &input)?;
            if state.len() > MAX_STATE_BYTES {
                return Err(ActionError::invalid(format!(
                    "rules module {}: a state over {MAX_STATE_BYTES} bytes",
                    self.id
                )));
            }
            n += 1;
        }
        Ok((n, state))
    }
}
