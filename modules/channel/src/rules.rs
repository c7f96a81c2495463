//! Calls into a game's rules by their code hash (`call_code`, no state, each with
//! [`RULES_FUEL`]) and the replay of signed moves: each move must follow the last state, be the
//! seat's turn (`mover_at`), carry a valid signature by that seat's game key over its canonical
//! text (`message.rs`), and be valid by the rules; the channel refuses any move after the game
//! is over, whatever the rules say.

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

/// The rules a game plays by: the code of hash `code` (fixed at the offer), called by hash
/// (`call_code`, [`RULES_FUEL`] per call) with no state, so neither an upgrade of the module
/// that named it nor any state change alters a game in progress. `name` is how errors name it:
/// `rules module <id>` when the offer named a module, else `rules code <first 16 hex>…`.
pub struct Rules<'a> {
    ctx: &'a dyn Ctx,
    code: [u8; 32],
    name: String,
}

/// The 32 bytes of a lowercase or uppercase hex code hash; `None` when it is not 64 hex digits.
pub fn parse_code_hash(hex_text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    (hex_text.len() == 64)
        .then(|| hex::decode_to_slice(hex_text, &mut out).ok())
        .flatten()
        .map(|()| out)
}

/// How errors name the rules: `rules module <id>`, or `rules code <first 16 hex>…`.
pub fn rules_name(module: Option<&str>, code_hex: &str) -> String {
    match module {
        Some(id) => format!("rules module {id}"),
        None => format!("rules code {}…", code_hex.get(..16).unwrap_or(code_hex)),
    }
}

impl<'a> Rules<'a> {
    /// The rules of code `code`, named `name` in errors.
    pub fn new(ctx: &'a dyn Ctx, code: [u8; 32], name: String) -> Self {
        Self { ctx, code, name }
    }

    /// The rules `game` plays by: the code hash recorded at its offer.
    pub fn of_game(ctx: &'a dyn Ctx, game: &Game) -> Result<Self, ActionError> {
        let code = parse_code_hash(&game.rules_code)
            .ok_or_else(|| ActionError::internal("the game's rules_code is not a code hash"))?;
        Ok(Self::new(
            ctx,
            code,
            rules_name(game.rules.as_deref(), &game.rules_code),
        ))
    }

    fn call(&self, entry: &str, input: &[u8]) -> Result<Vec<u8>, ActionError> {
        self.ctx
            .call_code(&self.code, entry, input, RULES_FUEL)
            .map_err(|e| ActionError::invalid(format!("{} {entry}: {e}", self.name)))
    }

    fn flag(&self, entry: &str, input: &[u8]) -> Result<bool, ActionError> {
        match self.call(entry, input)?.as_slice() {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(ActionError::invalid(format!(
                "{} {entry}: not a 0/1 answer",
                self.name
            ))),
        }
    }

    /// `initial_state` of the game tagged `tag`.
    pub fn initial_state(&self, tag: &[u8; 32]) -> Result<Vec<u8>, ActionError> {
        let s = self.call("initial_state", tag)?;
        self.bounded(s)
    }

    fn bounded(&self, s: Vec<u8>) -> Result<Vec<u8>, ActionError> {
        if s.len() > MAX_STATE_BYTES {
            return Err(ActionError::invalid(format!(
                "{}: a state over {MAX_STATE_BYTES} bytes",
                self.name
            )));
        }
        Ok(s)
    }

    /// `mover_at`: a seat, or `invalid` when the rules name none (the seed's `BadRules`).
    pub fn mover_at(&self, n: u64) -> Result<u8, ActionError> {
        match self.call("mover_at", &n.to_le_bytes())?.as_slice() {
            [s] if *s <= 1 => Ok(*s),
            _ => Err(ActionError::invalid(format!(
                "{} named no seat for move {n}",
                self.name
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
                "{} named no winner",
                self.name
            ))),
        }
    }

    /// The lobby's usability check for the game tagged `tag`: the code is stored and loads,
    /// `initial_state` answers, `mover_at(0)` is a seat and the initial state is not over.
    pub fn check_usable(&self, tag: &[u8; 32]) -> Result<(), ActionError> {
        let unusable = |e: ActionError| {
            let why = e.to_string();
            let why = why.strip_prefix("invalid: ").unwrap_or(&why).to_string();
            ActionError::invalid(format!("{} is not usable: {why}", self.name))
        };
        let s = self.initial_state(tag).map_err(unusable)?;
        self.mover_at(0).map_err(unusable)?;
        if self.is_over(&s).map_err(unusable)? {
            return Err(ActionError::invalid(format!(
                "{} is not usable: its initial state is over",
                self.name
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
            state = self.bounded(self.call("apply_move", &input)?)?;
            n += 1;
        }
        Ok((n, state))
    }
}
