//! The channel (module id `channel`): a lobby where two players escrow a stake, and the channel
//! that settles their off-chain game by its rules. docs/channels.md is the guide; this crate
//! owns the on-chain half. What clients share with it (the signing texts, the records and their
//! bounds) is `gamechain-channel-protocol` (`modules/channel/protocol`), re-exported here:
//! [`game`] is its records and bounds ([`Offer`], [`Game`], [`Standing`], …).
//!
//! | file | owns |
//! |---|---|
//! | `lib.rs` | [`Channel`]: the ops, their checks, the payouts, the views |
//! | `message.rs` | the canonical texts players sign ([`Domain`]), the game tag, [`state_hash`]: re-exported and pinned by a test |
//! | `rules.rs` | calls into the rules by code hash and the replay of signed moves |
//! | `schema.rs` | [`SCHEMA`]: the ops, events and views for machines (`docs/modules.md`, "Schema") |
//!
//! The rules are pinned by code: an offer names them by module id (resolved once, with
//! `module_code_hash`) or by code hash, records the hash, and every later rules call is
//! `call_code` of that hash, which runs with no state. Windows and deadlines are block time in
//! milliseconds (`Ctx::block_time_ms`), never heights, so sending transactions cannot move them.
//!
//! Ops (`kind`): `offer`, `join`, `cancel`, `settle`, `settle_cooperative`, `checkpoint`,
//! `challenge`, `respond`, `respond_from_checkpoint`, `claim_forfeit`, `prove_equivocation`,
//! `withdraw`. Views: `{"offer":"<id>"}`, `{"game":"<id>"[,"at_ms":"<ms>"]}`,
//! `{"player":"<address>"}`, `{}` for the signing domain. Stakes are GOLD; a stake of 0 is an
//! unstaked game.

pub use gamechain_channel_protocol::game;
pub mod message;
pub mod rules;
mod schema;
pub use schema::SCHEMA;

use gamechain_sdk::prelude::*;

pub use game::*;
pub use message::{state_hash, Domain};
use rules::{domain, parse_code_hash, rules_name, Rules, SignedMove};

/// The module value.
pub struct Channel;

/// `next_offer`: the next offer number.
const NEXT_OFFER: &str = "next_offer";

fn offer_key(id: &str) -> String {
    format!("offer/{id}")
}

fn game_key(id: &str) -> String {
    format!("game/{id}")
}

fn player_key(address: &str) -> String {
    format!("player/{address}")
}

fn load_game(ctx: &dyn Ctx, op: &Value) -> Result<Game, ActionError> {
    let id = op_str(op, "game")?;
    ctx.get_json(&game_key(id))?
        .ok_or_else(|| ActionError::not_found(format!("game {id}")))
}

fn save_game(ctx: &mut dyn Ctx, game: &Game) {
    ctx.put_json(&game_key(&game.id), game);
}

fn hex_field(op: &Value, field: &str, max: usize) -> Result<Vec<u8>, ActionError> {
    let text = op_str(op, field)?;
    if text.len() > 2 * max {
        return Err(ActionError::invalid(format!("{field} is over {max} bytes")));
    }
    hex::decode(text).map_err(|_| ActionError::invalid(format!("{field} must be hex")))
}

fn u64_field(op: &Value, field: &str) -> Result<u64, ActionError> {
    op.get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| ActionError::invalid(format!("{field} must be a non-negative integer")))
}

fn moves_field(op: &Value) -> Result<Vec<SignedMove>, ActionError> {
    let moves = match op.get("moves") {
        None => return Ok(Vec::new()),
        Some(v) => v
            .as_array()
            .ok_or_else(|| ActionError::invalid("moves must be an array"))?,
    };
    if moves.len() > MAX_MOVES_PER_OP {
        return Err(ActionError::invalid(format!(
            "{} moves, the limit is {MAX_MOVES_PER_OP} per op: checkpoint longer games",
            moves.len()
        )));
    }
    moves.iter().map(SignedMove::from_json).collect()
}

/// The two signatures of `sigs` (an array of two base64 texts).
fn two_sigs(op: &Value) -> Result<[String; 2], ActionError> {
    let bad = || ActionError::invalid("sigs must be two signatures, seat 0's then seat 1's");
    let sigs = op.get("sigs").and_then(Value::as_array).ok_or_else(bad)?;
    match sigs.as_slice() {
        [a, b] => Ok([
            a.as_str().ok_or_else(bad)?.to_string(),
            b.as_str().ok_or_else(bad)?.to_string(),
        ]),
        _ => Err(bad()),
    }
}

/// Adds (`add`) or takes back an unstaked game's result in its players'
/// standings.
fn tally(ctx: &mut dyn Ctx, game: &Game, winner: Option<u8>, add: bool) -> Result<(), ActionError> {
    for seat in 0..2u8 {
        let key = player_key(&game.players[seat as usize]);
        let mut s: Standing = ctx.get_json(&key)?.unwrap_or_default();
        let field = match winner {
            None => &mut s.draws,
            Some(w) if w == seat => &mut s.wins,
            Some(_) => &mut s.losses,
        };
        *field = if add {
            field.saturating_add(1)
        } else {
            field.saturating_sub(1)
        };
        ctx.put_json(&key, &s);
    }
    Ok(())
}

/// Ends `game` with `winner` (`None` = draw) at the state hashing to `final_state` (`None`:
/// none agreed): at once (`final_now`) or one window later. An unstaked game's result goes
/// into its players' standings (a concluding result it replaces is taken back first).
fn conclude(
    ctx: &mut dyn Ctx,
    game: &mut Game,
    winner: Option<u8>,
    how: &str,
    final_now: bool,
    final_state: Option<String>,
) -> Result<(), ActionError> {
    if game.unstaked() {
        if let Some(previous) = game.outcome.clone() {
            tally(ctx, game, previous.winner, false)?;
        }
        tally(ctx, game, winner, true)?;
    }
    let now = ctx.block_time_ms();
    let final_at_ms = if final_now {
        now
    } else {
        now.saturating_add(game.window_ms)
    };
    game.status = if final_now { "settled" } else { "concluding" }.into();
    game.challenge = None;
    game.outcome = Some(Outcome {
        winner,
        how: how.into(),
        final_at_ms,
        state_hash: final_state.clone(),
    });
    let winner_addr = winner.map(|s| game.players[s as usize].clone());
    ctx.emit(
        if final_now {
            "game_settled"
        } else {
            "game_concluding"
        },
        json!({ "game": game.id, "winner": winner_addr, "how": how, "final_at_ms": final_at_ms,
                "state_hash": final_state }),
    );
    Ok(())
}

/// What follows a replayed history: the game is over (with this winner), or a seat is due.
enum Step {
    Over(Option<u8>),
    Due(u8),
}

fn next_step(rules: &Rules<'_>, moves: u64, state: &[u8]) -> Result<Step, ActionError> {
    Ok(if rules.is_over(state)? {
        Step::Over(rules.winner(state)?)
    } else {
        Step::Due(rules.mover_at(moves)?)
    })
}

/// After moves reached `state` (`moves` made): a final state concludes by history; otherwise a
/// challenge against the seat due next, with a fresh window.
fn challenge_or_conclude(
    ctx: &mut dyn Ctx,
    game: &mut Game,
    step: Step,
    moves: u64,
    state: &[u8],
) -> Result<(), ActionError> {
    let due = match step {
        Step::Over(winner) => {
            return conclude(ctx, game, winner, "history", false, Some(state_hash(state)))
        }
        Step::Due(due) => due,
    };
    let deadline_ms = ctx.block_time_ms().saturating_add(game.window_ms);
    game.status = "challenged".into();
    game.challenge = Some(Challenge {
        due,
        moves,
        state: hex::encode(state),
        deadline_ms,
    });
    ctx.emit(
        "game_challenged",
        json!({
            "game": game.id,
            "due": game.players[due as usize],
            "move": moves,
            "state_hash": state_hash(state),
            "deadline_ms": deadline_ms,
        }),
    );
    Ok(())
}

/// The rules an offer names: `rules` (a module id, resolved now to the code it runs) and/or
/// `rules_code` (a code hash); when both are given they must agree. `(module id, code hash hex,
/// code hash)`.
fn offered_rules(
    ctx: &dyn Ctx,
    op: &Value,
) -> Result<(Option<String>, String, [u8; 32]), ActionError> {
    let text = |field: &str| match op.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ActionError::invalid(format!("{field} must be a string"))),
    };
    let (module, given) = (text("rules")?, text("rules_code")?);
    let given = match given {
        None => None,
        Some(h) => Some(
            parse_code_hash(&h)
                .ok_or_else(|| ActionError::invalid("rules_code must be 64 hex digits"))?,
        ),
    };
    let code = match (&module, given) {
        (None, None) => {
            return Err(ActionError::invalid(
                "name the rules: rules (a module id) or rules_code (a code hash)",
            ))
        }
        (None, Some(code)) => code,
        (Some(id), given) => {
            let runs = ctx.module_code_hash(id).ok_or_else(|| {
                ActionError::invalid(format!("rules module {id} is not usable: no such module"))
            })?;
            if let Some(code) = given.filter(|g| *g != runs) {
                return Err(ActionError::conflict(format!(
                    "rules module {id} runs code {}, not the rules_code given ({})",
                    hex::encode(runs),
                    hex::encode(code)
                )));
            }
            runs
        }
    };
    Ok((module, hex::encode(code), code))
}

impl Channel {
    fn offer(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        let stake = op_amount(op, "stake")?;
        let window_ms = u64_field(op, "window_ms")?;
        if !(MIN_WINDOW_MS..=MAX_WINDOW_MS).contains(&window_ms) {
            return Err(ActionError::invalid(format!(
                "window_ms must be {MIN_WINDOW_MS}-{MAX_WINDOW_MS} (5 minutes to 3 days)"
            )));
        }
        let guard = match op.get("guard") {
            None | Some(Value::Null) => None,
            Some(g) => Some(
                serde_json::from_value::<Guard>(g.clone())
                    .map_err(|_| ActionError::invalid("guard must be {\"module\",\"entry\"}"))?,
            ),
        };
        let signer = match op.get("signer") {
            None | Some(Value::Null) => sender.to_string(),
            Some(_) => op_str(op, "signer")?.to_string(),
        };
        let (module, code_hex, code) = offered_rules(&*ctx, op)?;
        let n: u64 = ctx.get_json(NEXT_OFFER)?.unwrap_or(0);
        let id = format!("{n:016x}");
        let tag = domain(&*ctx).game_tag(&id);
        Rules::new(&*ctx, code, rules_name(module.as_deref(), &code_hex)).check_usable(&tag)?;
        if stake > 0 {
            ctx.escrow_in(sender, GOLD, stake)?;
        }
        ctx.put_json(NEXT_OFFER, &(n + 1));
        let offer = Offer {
            id,
            creator: sender.into(),
            signer,
            rules: module,
            rules_code: code_hex,
            stake: Amount(stake),
            window_ms,
            guard,
            status: "open".into(),
        };
        ctx.put_json(&offer_key(&offer.id), &offer);
        ctx.emit(
            "offer_created",
            json!({ "offer": offer.id, "creator": sender, "rules": offer.rules,
                    "rules_code": offer.rules_code, "stake": offer.stake,
                    "window_ms": window_ms }),
        );
        Ok(())
    }

    fn load_offer(ctx: &dyn Ctx, op: &Value) -> Result<Offer, ActionError> {
        let id = op_str(op, "offer")?;
        ctx.get_json(&offer_key(id))?
            .ok_or_else(|| ActionError::not_found(format!("offer {id}")))
    }

    fn join(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        let mut offer = Self::load_offer(&*ctx, op)?;
        if offer.status != "open" {
            return Err(ActionError::conflict(format!(
                "offer {} is {}",
                offer.id, offer.status
            )));
        }
        if offer.creator == sender {
            return Err(ActionError::invalid("you cannot join your own offer"));
        }
        if let Some(guard) = &offer.guard {
            let input = json!({ "offer": offer.id, "who": sender, "rules": offer.rules,
                                "rules_code": offer.rules_code, "stake": offer.stake });
            let answer = ctx.call_pure(
                &guard.module,
                &guard.entry,
                input.to_string().as_bytes(),
                GUARD_FUEL,
            );
            match answer {
                Ok(bytes) if bytes == b"true" => {}
                Ok(_) => {
                    return Err(ActionError::unauthorized(format!(
                        "the offer's guard {}.{} refuses {sender}",
                        guard.module, guard.entry
                    )))
                }
                Err(e) => {
                    return Err(ActionError::unauthorized(format!(
                        "the offer's guard {}.{} failed: {e}",
                        guard.module, guard.entry
                    )))
                }
            }
        }
        let signer = match op.get("signer") {
            None | Some(Value::Null) => sender.to_string(),
            Some(_) => op_str(op, "signer")?.to_string(),
        };
        if offer.stake.0 > 0 {
            ctx.escrow_in(sender, GOLD, offer.stake.0)?;
        }
        offer.status = "filled".into();
        ctx.put_json(&offer_key(&offer.id), &offer);
        let game = Game {
            id: offer.id.clone(),
            rules: offer.rules.clone(),
            rules_code: offer.rules_code.clone(),
            tag: hex::encode(domain(&*ctx).game_tag(&offer.id)),
            stake: offer.stake,
            window_ms: offer.window_ms,
            players: [offer.creator.clone(), sender.to_string()],
            signers: [offer.signer.clone(), signer],
            status: "open".into(),
            checkpoint: None,
            challenge: None,
            outcome: None,
            paid: false,
        };
        save_game(ctx, &game);
        ctx.emit(
            "offer_filled",
            json!({ "offer": offer.id, "joiner": sender }),
        );
        ctx.emit(
            "game_opened",
            json!({ "game": game.id, "players": game.players, "signers": game.signers,
                    "rules": game.rules, "rules_code": game.rules_code, "tag": game.tag,
                    "stake": game.stake, "window_ms": game.window_ms }),
        );
        Ok(())
    }

    fn cancel(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        let mut offer = Self::load_offer(&*ctx, op)?;
        if offer.creator != sender {
            return Err(ActionError::unauthorized(
                "only the creator may cancel an offer",
            ));
        }
        if offer.status != "open" {
            return Err(ActionError::conflict(format!(
                "offer {} is {}",
                offer.id, offer.status
            )));
        }
        if offer.stake.0 > 0 {
            ctx.escrow_out(sender, GOLD, offer.stake.0)?;
        }
        offer.status = "cancelled".into();
        ctx.put_json(&offer_key(&offer.id), &offer);
        ctx.emit("offer_cancelled", json!({ "offer": offer.id }));
        Ok(())
    }

    /// The starting point of a history: the co-signed checkpoint or the initial state.
    fn start(
        game: &Game,
        rules: &Rules<'_>,
        from_checkpoint: bool,
    ) -> Result<(u64, Vec<u8>), ActionError> {
        if from_checkpoint {
            let cp = game
                .checkpoint
                .as_ref()
                .ok_or_else(|| ActionError::invalid("the game has no checkpoint"))?;
            Ok((cp.moves, hex::decode(&cp.state).unwrap_or_default()))
        } else {
            let tag = parse_code_hash(&game.tag)
                .ok_or_else(|| ActionError::internal("the game's tag is not 32 bytes of hex"))?;
            Ok((0, rules.initial_state(&tag)?))
        }
    }

    fn settle(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        Self::before_any_deadline(&*ctx, &game)?;
        let from_cp = op
            .get("from_checkpoint")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let moves = moves_field(op)?;
        let rules = Rules::of_game(&*ctx, &game)?;
        let (n0, s0) = Self::start(&game, &rules, from_cp)?;
        let (_, state) = rules.replay(&domain(&*ctx), &game, n0, s0, &moves)?;
        if !rules.is_over(&state)? {
            return Err(ActionError::invalid("the history does not end the game"));
        }
        let winner = rules.winner(&state)?;
        conclude(
            ctx,
            &mut game,
            winner,
            "history",
            false,
            Some(state_hash(&state)),
        )?;
        save_game(ctx, &game);
        Ok(())
    }

    /// Refuses a settlement unless the game is open, or challenged and its deadline not passed
    /// (after it the forfeit stands).
    fn before_any_deadline(ctx: &dyn Ctx, game: &Game) -> Result<(), ActionError> {
        match (&game.status[..], &game.challenge) {
            ("open", _) => Ok(()),
            ("challenged", Some(c)) if ctx.block_time_ms() <= c.deadline_ms => Ok(()),
            ("challenged", Some(c)) => Err(ActionError::conflict(format!(
                "the challenge deadline passed at block time {}: the forfeit stands",
                c.deadline_ms
            ))),
            (status, _) => Err(ActionError::conflict(format!("the game is {status}"))),
        }
    }

    fn settle_cooperative(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        Self::before_any_deadline(&*ctx, &game)?;
        let state = hex_field(op, "state", MAX_STATE_BYTES)?;
        let valid_until_ms = u64_field(op, "valid_until_ms")?;
        if ctx.block_time_ms() > valid_until_ms {
            return Err(ActionError::invalid(format!(
                "the agreement expired at block time {valid_until_ms}"
            )));
        }
        let sigs = two_sigs(op)?;
        let msg = domain(&*ctx).final_message(&game.id, &state_hash(&state), valid_until_ms);
        for (seat, (signer, sig)) in game.signers.iter().zip(&sigs).enumerate() {
            if !ctx.verify_signed(signer, msg.as_bytes(), sig) {
                return Err(ActionError::unauthorized(format!(
                    "the agreement is not signed by seat {seat}'s key"
                )));
            }
        }
        let rules = Rules::of_game(&*ctx, &game)?;
        let winner = if rules.is_over(&state)? {
            rules.winner(&state)?
        } else {
            None
        };
        conclude(
            ctx,
            &mut game,
            winner,
            "cooperative",
            true,
            Some(state_hash(&state)),
        )?;
        save_game(ctx, &game);
        Ok(())
    }

    fn checkpoint(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        if game.status != "open" && game.status != "challenged" {
            return Err(ActionError::conflict(format!(
                "the game is {}",
                game.status
            )));
        }
        let moves = u64_field(op, "moves")?;
        let state = hex_field(op, "state", MAX_STATE_BYTES)?;
        if let Some(cp) = &game.checkpoint {
            if moves <= cp.moves {
                return Err(ActionError::conflict(format!(
                    "a checkpoint at move {} exists already",
                    cp.moves
                )));
            }
        }
        let sigs = two_sigs(op)?;
        let msg = domain(&*ctx).checkpoint_message(&game.id, moves, &state_hash(&state));
        for (seat, (signer, sig)) in game.signers.iter().zip(&sigs).enumerate() {
            if !ctx.verify_signed(signer, msg.as_bytes(), sig) {
                return Err(ActionError::unauthorized(format!(
                    "the checkpoint is not signed by seat {seat}'s key"
                )));
            }
        }
        game.checkpoint = Some(Snapshot {
            moves,
            state: hex::encode(&state),
        });
        ctx.emit(
            "game_checkpoint",
            json!({ "game": game.id, "moves": moves, "state_hash": state_hash(&state) }),
        );
        save_game(ctx, &game);
        Ok(())
    }

    fn challenge(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        let seat = game
            .seat_of(sender)
            .ok_or_else(|| ActionError::unauthorized("only a player may challenge"))?;
        if game.status != "open" {
            return Err(ActionError::conflict(format!(
                "the game is {}",
                game.status
            )));
        }
        let from_cp = op
            .get("from_checkpoint")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let moves = moves_field(op)?;
        let rules = Rules::of_game(&*ctx, &game)?;
        let (n0, s0) = Self::start(&game, &rules, from_cp)?;
        let (n, state) = rules.replay(&domain(&*ctx), &game, n0, s0, &moves)?;
        if let Some(cp) = &game.checkpoint {
            if n < cp.moves {
                return Err(ActionError::invalid(format!(
                    "the moves must reach the checkpoint at move {}",
                    cp.moves
                )));
            }
        }
        let step = next_step(&rules, n, &state)?;
        if matches!(step, Step::Due(due) if due == seat) {
            return Err(ActionError::invalid("it is your own turn: make your move"));
        }
        challenge_or_conclude(ctx, &mut game, step, n, &state)?;
        save_game(ctx, &game);
        Ok(())
    }

    fn respond(&self, ctx: &mut dyn Ctx, op: &Value, from_cp: bool) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        let challenge = match (&game.status[..], &game.challenge) {
            ("challenged", Some(c)) => c.clone(),
            (status, _) => return Err(ActionError::conflict(format!("the game is {status}"))),
        };
        if ctx.block_time_ms() > challenge.deadline_ms {
            return Err(ActionError::conflict(format!(
                "the challenge deadline passed at block time {}",
                challenge.deadline_ms
            )));
        }
        let moves = moves_field(op)?;
        let rules = Rules::of_game(&*ctx, &game)?;
        let (n0, s0) = if from_cp {
            match &game.checkpoint {
                Some(cp) if cp.moves > challenge.moves => {
                    (cp.moves, hex::decode(&cp.state).unwrap_or_default())
                }
                _ => {
                    return Err(ActionError::invalid(
                        "no checkpoint later than the challenged move",
                    ))
                }
            }
        } else {
            if moves.is_empty() {
                return Err(ActionError::invalid("a response needs at least one move"));
            }
            (
                challenge.moves,
                hex::decode(&challenge.state).unwrap_or_default(),
            )
        };
        let (n, state) = rules.replay(&domain(&*ctx), &game, n0, s0, &moves)?;
        let step = next_step(&rules, n, &state)?;
        ctx.emit("game_responded", json!({ "game": game.id, "moves": n }));
        challenge_or_conclude(ctx, &mut game, step, n, &state)?;
        save_game(ctx, &game);
        Ok(())
    }

    fn claim_forfeit(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        let challenge = match (&game.status[..], &game.challenge) {
            ("challenged", Some(c)) => c.clone(),
            (status, _) => return Err(ActionError::conflict(format!("the game is {status}"))),
        };
        if ctx.block_time_ms() <= challenge.deadline_ms {
            return Err(ActionError::conflict(format!(
                "the due player may answer until block time {}",
                challenge.deadline_ms
            )));
        }
        let stalled = Some(state_hash(
            &hex::decode(&challenge.state).unwrap_or_default(),
        ));
        conclude(
            ctx,
            &mut game,
            Some(1 - challenge.due),
            "forfeit",
            true,
            stalled,
        )?;
        save_game(ctx, &game);
        Ok(())
    }

    fn prove_equivocation(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        let now = ctx.block_time_ms();
        let open = matches!(&game.status[..], "open" | "challenged")
            || (game.status == "concluding" && !game.is_final(now));
        if !open {
            return Err(ActionError::conflict(format!(
                "the game is {} and final",
                game.status
            )));
        }
        let field = |name: &str| {
            op.get(name)
                .ok_or_else(|| ActionError::invalid(format!("{name} is required")))
                .and_then(SignedMove::from_json)
        };
        let (a, b) = (field("a")?, field("b")?);
        let (prev_a, prev_b) = (op_str(op, "prev_a")?, op_str(op, "prev_b")?);
        if a.n != b.n || prev_a != prev_b {
            return Err(ActionError::invalid(
                "the moves are not for the same move number and previous state",
            ));
        }
        if a.data == b.data {
            return Err(ActionError::invalid("the moves are the same move"));
        }
        let d = domain(&*ctx);
        let seat = (0..2u8).find(|&s| {
            let (player, key) = (&game.players[s as usize], &game.signers[s as usize]);
            [&a, &b].iter().all(|m| {
                let msg = d.move_message(&game.id, m.n, prev_a, player, &m.data);
                ctx.verify_signed(key, msg.as_bytes(), &m.sig)
            })
        });
        let seat = seat.ok_or_else(|| ActionError::invalid("no player's key signed both moves"))?;
        ctx.emit(
            "equivocation",
            json!({ "game": game.id, "player": game.players[seat as usize], "move": a.n }),
        );
        conclude(ctx, &mut game, Some(1 - seat), "equivocation", true, None)?;
        save_game(ctx, &game);
        Ok(())
    }

    fn withdraw(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        if game.unstaked() {
            return Err(ActionError::conflict(format!(
                "game {} is unstaked: there is nothing to pay",
                game.id
            )));
        }
        if !game.is_final(ctx.block_time_ms()) {
            return Err(ActionError::conflict(match &game.outcome {
                Some(o) => format!("the result is final at block time {}", o.final_at_ms),
                None => "the game has no result".into(),
            }));
        }
        if game.paid {
            return Err(ActionError::conflict("the stakes were paid out already"));
        }
        let outcome = game.outcome.clone().expect("final games have an outcome");
        let stake = game.stake.0;
        match outcome.winner {
            Some(w) => {
                let both = stake
                    .checked_mul(2)
                    .ok_or_else(|| ActionError::internal("the stakes overflow"))?;
                ctx.escrow_out(&game.players[w as usize], GOLD, both)?
            }
            None => {
                ctx.escrow_out(&game.players[0], GOLD, stake)?;
                ctx.escrow_out(&game.players[1], GOLD, stake)?;
            }
        }
        game.paid = true;
        game.status = "settled".into();
        ctx.emit(
            "paid",
            json!({ "game": game.id,
                    "winner": outcome.winner.map(|w| game.players[w as usize].clone()) }),
        );
        save_game(ctx, &game);
        Ok(())
    }
}

/// The game view: the record plus `final` (whether the result stands at block time `at_ms`;
/// without `at_ms` only a result that no time can change, status `settled`, counts) and
/// `final_state_hash` (the outcome's state hash once final, else `null`).
fn game_view(game: Game, at_ms: Option<u64>) -> Value {
    let final_now = game.is_final(at_ms.unwrap_or(0));
    let final_state_hash = game
        .outcome
        .as_ref()
        .filter(|_| final_now)
        .and_then(|o| o.state_hash.clone());
    let mut v = serde_json::to_value(&game).expect("records serialise");
    v["final"] = json!(final_now);
    v["final_state_hash"] = json!(final_state_hash);
    v
}

impl GameModule for Channel {
    fn id(&self) -> &'static str {
        "channel"
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "offer" => self.offer(ctx, sender, op),
            "join" => self.join(ctx, sender, op),
            "cancel" => self.cancel(ctx, sender, op),
            "settle" => self.settle(ctx, op),
            "settle_cooperative" => self.settle_cooperative(ctx, op),
            "checkpoint" => self.checkpoint(ctx, op),
            "challenge" => self.challenge(ctx, sender, op),
            "respond" => self.respond(ctx, op, false),
            "respond_from_checkpoint" => self.respond(ctx, op, true),
            "claim_forfeit" => self.claim_forfeit(ctx, op),
            "prove_equivocation" => self.prove_equivocation(ctx, op),
            "withdraw" => self.withdraw(ctx, op),
            other => Err(ActionError::invalid(format!("unknown kind {other}"))),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        if let Some(id) = query.get("offer") {
            let offer: Option<Value> = state.module_json(self.id(), &offer_key(id))?;
            return offer.ok_or_else(|| ActionError::not_found(format!("offer {id}")));
        }
        if let Some(id) = query.get("game") {
            let at_ms = match query.get("at_ms") {
                None => None,
                Some(t) => Some(t.parse::<u64>().map_err(|_| {
                    ActionError::invalid("at_ms must be a block time in milliseconds")
                })?),
            };
            let game: Option<Game> = state.module_json(self.id(), &game_key(id))?;
            let game = game.ok_or_else(|| ActionError::not_found(format!("game {id}")))?;
            return Ok(game_view(game, at_ms));
        }
        if let Some(player) = query.get("player") {
            let s: Standing = state
                .module_json(self.id(), &player_key(player))?
                .unwrap_or_default();
            return Ok(
                json!({ "player": player, "wins": s.wins, "losses": s.losses,
                              "draws": s.draws }),
            );
        }
        let chain = state
            .read_raw(rules::GENESIS_KEY)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        Ok(json!({ "chain": chain, "module": self.id(),
                   "min_window_ms": MIN_WINDOW_MS, "max_window_ms": MAX_WINDOW_MS }))
    }

    fn schema(&self) -> Option<&str> {
        Some(SCHEMA)
    }
}

gamechain_sdk::export_module!(Channel, schema = SCHEMA);
