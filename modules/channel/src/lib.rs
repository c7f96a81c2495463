//! The channel (module id `channel`): a lobby where two players escrow a stake, and the channel
//! that settles their off-chain game by its rules module. docs/channels.md is the guide; this
//! crate owns the on-chain half.
//!
//! | file | owns |
//! |---|---|
//! | `lib.rs` | [`Channel`]: the ops, their checks, the payouts |
//! | `game.rs` | the records ([`Offer`], [`Game`]) and the bounds |
//! | `message.rs` | the canonical texts players sign ([`Domain`]) and [`state_hash`] |
//! | `rules.rs` | calls into a rules module and the replay of signed moves |
//!
//! Ops (`kind`): `offer`, `join`, `cancel`, `settle`, `settle_cooperative`, `checkpoint`,
//! `challenge`, `respond`, `respond_from_checkpoint`, `claim_forfeit`, `prove_equivocation`,
//! `withdraw`. Views: `{"offer":"<id>"}`, `{"game":"<id>"}`, `{"domain":""}`. Stakes are GOLD.

pub mod game;
pub mod message;
pub mod rules;

use gamechain_sdk::prelude::*;

pub use game::*;
pub use message::{state_hash, Domain};
use rules::{domain, upgraded, Rules, SignedMove};

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

/// Ends `game` with `winner` (`None` = draw): at once (`final_now`) or after one window.
fn conclude(ctx: &mut dyn Ctx, game: &mut Game, winner: Option<u8>, how: &str, final_now: bool) {
    let height = ctx.height();
    let final_at = if final_now {
        height
    } else {
        height + game.window
    };
    game.status = if final_now { "settled" } else { "concluding" }.into();
    game.challenge = None;
    game.outcome = Some(Outcome {
        winner,
        how: how.into(),
        final_at,
    });
    let winner_addr = winner.map(|s| game.players[s as usize].clone());
    ctx.emit(
        if final_now {
            "game_settled"
        } else {
            "game_concluding"
        },
        json!({ "game": game.id, "winner": winner_addr, "how": how, "final_at": final_at }),
    );
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
fn challenge_or_conclude(ctx: &mut dyn Ctx, game: &mut Game, step: Step, moves: u64, state: &[u8]) {
    let due = match step {
        Step::Over(winner) => return conclude(ctx, game, winner, "history", false),
        Step::Due(due) => due,
    };
    let deadline = ctx.height() + game.window;
    game.status = "challenged".into();
    game.challenge = Some(Challenge {
        due,
        moves,
        state: hex::encode(state),
        deadline,
    });
    ctx.emit(
        "game_challenged",
        json!({
            "game": game.id,
            "due": game.players[due as usize],
            "move": moves,
            "state_hash": state_hash(state),
            "deadline": deadline,
        }),
    );
}

impl Channel {
    fn offer(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        let rules_id = op_str(op, "rules")?.to_string();
        let stake = op_amount(op, "stake")?;
        if stake == 0 {
            return Err(ActionError::invalid("stake must be above 0"));
        }
        let window = u64_field(op, "window")?;
        if !(MIN_WINDOW_BLOCKS..=MAX_WINDOW_BLOCKS).contains(&window) {
            return Err(ActionError::invalid(format!(
                "window must be {MIN_WINDOW_BLOCKS}-{MAX_WINDOW_BLOCKS} blocks"
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
        Rules::new(&*ctx, &rules_id).check_usable()?;
        let rules_code = rules::code_hash(&*ctx, &rules_id);
        ctx.escrow_in(sender, GOLD, stake)?;
        let n: u64 = ctx.get_json(NEXT_OFFER)?.unwrap_or(0);
        ctx.put_json(NEXT_OFFER, &(n + 1));
        let offer = Offer {
            id: format!("{n:016x}"),
            creator: sender.into(),
            signer,
            rules: rules_id,
            rules_code,
            stake: Amount(stake),
            window,
            guard,
            status: "open".into(),
        };
        ctx.put_json(&offer_key(&offer.id), &offer);
        ctx.emit(
            "offer_created",
            json!({ "offer": offer.id, "creator": sender, "rules": offer.rules,
                    "stake": offer.stake, "window": window }),
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
        if let Some(why) = upgraded(&*ctx, &offer.rules, offer.rules_code.as_deref()) {
            return Err(ActionError::conflict(format!(
                "{}: its creator may cancel it",
                why.replace("since the game opened", "since the offer was made")
            )));
        }
        if let Some(guard) = &offer.guard {
            let input = json!({ "offer": offer.id, "who": sender, "rules": offer.rules,
                                "stake": offer.stake });
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
        ctx.escrow_in(sender, GOLD, offer.stake.0)?;
        offer.status = "filled".into();
        ctx.put_json(&offer_key(&offer.id), &offer);
        let game = Game {
            id: offer.id.clone(),
            rules: offer.rules.clone(),
            rules_code: offer.rules_code.clone(),
            stake: offer.stake,
            window: offer.window,
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
                    "rules": game.rules, "stake": game.stake, "window": game.window }),
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
        ctx.escrow_out(sender, GOLD, offer.stake.0)?;
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
            Ok((0, rules.initial_state()?))
        }
    }

    fn settle(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        match (&game.status[..], &game.challenge) {
            ("open", _) => {}
            ("challenged", Some(c)) if ctx.height() <= c.deadline => {}
            ("challenged", Some(c)) => {
                return Err(ActionError::conflict(format!(
                    "the challenge deadline passed at height {}: the forfeit stands",
                    c.deadline
                )))
            }
            (status, _) => return Err(ActionError::conflict(format!("the game is {status}"))),
        }
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
        conclude(ctx, &mut game, winner, "history", false);
        save_game(ctx, &game);
        Ok(())
    }

    fn settle_cooperative(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        if game.status != "open" && game.status != "challenged" {
            return Err(ActionError::conflict(format!(
                "the game is {}",
                game.status
            )));
        }
        let state = hex_field(op, "state", MAX_STATE_BYTES)?;
        let valid_until = u64_field(op, "valid_until")?;
        if ctx.height() > valid_until {
            return Err(ActionError::invalid(format!(
                "the agreement expired at height {valid_until}"
            )));
        }
        let sigs = two_sigs(op)?;
        let msg = domain(&*ctx).final_message(&game.id, &state_hash(&state), valid_until);
        for seat in 0..2 {
            if !ctx.verify_signed(&game.signers[seat], msg.as_bytes(), &sigs[seat]) {
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
        conclude(ctx, &mut game, winner, "cooperative", true);
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
        for seat in 0..2 {
            if !ctx.verify_signed(&game.signers[seat], msg.as_bytes(), &sigs[seat]) {
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
        challenge_or_conclude(ctx, &mut game, step, n, &state);
        save_game(ctx, &game);
        Ok(())
    }

    fn respond(&self, ctx: &mut dyn Ctx, op: &Value, from_cp: bool) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        let challenge = match (&game.status[..], &game.challenge) {
            ("challenged", Some(c)) => c.clone(),
            (status, _) => return Err(ActionError::conflict(format!("the game is {status}"))),
        };
        if ctx.height() > challenge.deadline {
            return Err(ActionError::conflict(format!(
                "the challenge deadline passed at height {}",
                challenge.deadline
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
        challenge_or_conclude(ctx, &mut game, step, n, &state);
        save_game(ctx, &game);
        Ok(())
    }

    fn claim_forfeit(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        let challenge = match (&game.status[..], &game.challenge) {
            ("challenged", Some(c)) => c.clone(),
            (status, _) => return Err(ActionError::conflict(format!("the game is {status}"))),
        };
        if ctx.height() <= challenge.deadline {
            return Err(ActionError::conflict(format!(
                "the due player may answer until height {}",
                challenge.deadline
            )));
        }
        // Under upgraded rules the due player could not answer: no forfeit, the game is void.
        Rules::of_game(&*ctx, &game)?;
        conclude(ctx, &mut game, Some(1 - challenge.due), "forfeit", true);
        save_game(ctx, &game);
        Ok(())
    }

    fn prove_equivocation(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        let height = ctx.height();
        let open = matches!(&game.status[..], "open" | "challenged")
            || (game.status == "concluding" && !game.is_final(height));
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
        conclude(ctx, &mut game, Some(1 - seat), "equivocation", true);
        save_game(ctx, &game);
        Ok(())
    }

    fn withdraw(&self, ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
        let mut game = load_game(&*ctx, op)?;
        if !game.is_final(ctx.height()) {
            if let Some(why) = upgraded(&*ctx, &game.rules, game.rules_code.as_deref()) {
                return Self::void(ctx, &mut game, &why);
            }
            return Err(ActionError::conflict(match &game.outcome {
                Some(o) => format!("the result is final at height {}", o.final_at),
                None => "the game has no result".into(),
            }));
        }
        if game.paid {
            return Err(ActionError::conflict("the stakes were paid out already"));
        }
        let outcome = game.outcome.clone().expect("final games have an outcome");
        let stake = game.stake.0;
        match outcome.winner {
            Some(w) => ctx.escrow_out(&game.players[w as usize], GOLD, stake * 2)?,
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

impl Channel {
    /// Ends `game`, whose rules module was upgraded before a final result (`why`), as void:
    /// each stake back to its player, at once, exactly once.
    fn void(ctx: &mut dyn Ctx, game: &mut Game, why: &str) -> Result<(), ActionError> {
        let stake = game.stake.0;
        ctx.escrow_out(&game.players[0], GOLD, stake)?;
        ctx.escrow_out(&game.players[1], GOLD, stake)?;
        game.outcome = Some(Outcome {
            winner: None,
            how: "void".into(),
            final_at: ctx.height(),
        });
        game.challenge = None;
        game.paid = true;
        game.status = "settled".into();
        ctx.emit("game_void", json!({ "game": game.id, "why": why }));
        ctx.emit("paid", json!({ "game": game.id, "winner": null }));
        save_game(ctx, game);
        Ok(())
    }
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
            let game: Option<Value> = state.module_json(self.id(), &game_key(id))?;
            return game.ok_or_else(|| ActionError::not_found(format!("game {id}")));
        }
        let chain = state
            .read_raw(rules::GENESIS_KEY)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        Ok(json!({ "chain": chain, "module": self.id(),
                   "min_window": MIN_WINDOW_BLOCKS, "max_window": MAX_WINDOW_BLOCKS }))
    }
}

gamechain_sdk::export_module!(Channel);
