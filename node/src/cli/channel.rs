//! `gamechain channel …`: a player's channel games (docs/channels.md, "Playing with the CLI").
//! Each subcommand is one [`Player`] operation printed as short lines on stdout; failures are a
//! [`CliError`]: a local refusal (nothing sent) or a store/rules problem exits 1, a node error
//! exits 1 with its `code: message`, a transaction the chain refused exits 3.

use std::io::Write;
use std::time::Duration;

use gamechain_chain::key_file::read_key_file;
use gamechain_player::player::{Responded, SyncReport, WatchStep};
use gamechain_player::time::{describe_deadline, format_duration_ms, format_time_ms};
use gamechain_player::watch::{watch, WatchEnd, WatchEvent, WatchOptions};
use gamechain_player::{Backoff, ChannelError, Player, PlayerOptions, RulesRef};

use crate::cli::args::{ChannelArgs, ChannelCommand};
use crate::cli::error::CliError;
use crate::cli::escrow_guard::{check_escrow, op_stake};

impl From<ChannelError> for CliError {
    fn from(e: ChannelError) -> Self {
        match e {
            ChannelError::Client(e) => CliError::Client(e),
            ChannelError::TxFailed(m) => CliError::TxFailed(m),
            other => CliError::Usage(other.to_string()),
        }
    }
}

fn player(common: &ChannelArgs) -> Result<Player, CliError> {
    let key = match &common.key {
        Some(path) => Some(read_key_file(path).map_err(CliError::Usage)?),
        None => None,
    };
    Ok(Player::new(PlayerOptions {
        node: common.node.url.clone(),
        dir: common.dir.clone(),
        channel: common.channel.clone(),
        board: common.board.clone(),
        key,
        receipt_timeout: Duration::from_secs(common.timeout),
    })?)
}

fn line(out: &mut dyn Write, text: impl AsRef<str>) -> Result<(), CliError> {
    writeln!(out, "{}", text.as_ref())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Usage(format!("cannot write the output: {e}")))
}

fn winner_text(winner: &Option<String>) -> String {
    match winner {
        Some(w) => format!("{w} wins"),
        None => "a draw".to_string(),
    }
}

fn print_sync(out: &mut dyn Write, report: &SyncReport) -> Result<(), CliError> {
    for n in &report.received {
        line(out, format!("received move {n}: checked and stored"))?;
    }
    for (height, from, why) in &report.refused {
        line(
            out,
            format!("refused a post by {from} at block {height}: {why}"),
        )?;
    }
    for n in &report.equivocations {
        line(
            out,
            format!(
                "equivocation: a second signed move {n} by the opponent, kept (`channel prove`)"
            ),
        )?;
    }
    for (height, kind, data) in &report.events {
        line(out, format!("block {height}: {kind} {data}"))?;
    }
    Ok(())
}

fn print_responded(out: &mut dyn Write, r: &Responded) -> Result<(), CliError> {
    let last = r.from + r.moves as u64 - 1;
    line(
        out,
        format!(
            "answered the challenge with moves {}..{last} at block {}",
            r.from, r.height
        ),
    )?;
    match &r.next {
        Some((due, n, deadline)) => line(
            out,
            format!(
                "challenge passes: {due} owes move {n} by {}",
                describe_deadline(*deadline, r.at_ms)
            ),
        ),
        None => line(out, "the moves end the game: concluding by history"),
    }
}

fn print_watch_step(
    out: &mut dyn Write,
    game: &str,
    step: &WatchStep,
    status: &mut String,
) -> Result<(), CliError> {
    print_sync(out, &step.sync)?;
    if let Some((n, e)) = &step.proved {
        line(
            out,
            format!(
                "equivocation on move {n} proven: {}; final at block {}",
                winner_text(&e.winner),
                e.height
            ),
        )?;
    }
    if let Some(r) = &step.responded {
        print_responded(out, r)?;
    }
    if let Some(e) = &step.refused {
        line(out, format!("our transaction was refused: {e}"))?;
    }
    if let Some((n, deadline)) = step.owed {
        line(
            out,
            format!(
                "challenged: we owe move {n} by {}; make it (`channel move`) and it is sent as the answer",
                describe_deadline(deadline, step.now_ms)
            ),
        )?;
    }
    if let Some((n, deadline)) = step.missed {
        line(
            out,
            format!(
                "the challenge on move {n} was not answered by {}: the opponent may claim the forfeit",
                format_time_ms(deadline)
            ),
        )?;
    }
    if let Some(s) = step.status.as_ref().filter(|s| *s != status) {
        line(out, format!("game {game} is {s}"))?;
        *status = s.clone();
    }
    Ok(())
}

/// Runs one `channel` subcommand, printing to `out`.
pub async fn run(command: ChannelCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        ChannelCommand::Offer {
            common,
            rules,
            rules_code,
            stake,
            window,
            window_ms,
            game_key,
            allow_mutable,
        } => {
            let p = player(&common)?;
            check_escrow(p.client(), &common.channel, Some(stake.0), allow_mutable).await?;
            // `--rules-code` names the code: the rules themselves, or (with `--rules`) the code
            // that module must run; either way the player accepts that code.
            let which = match (rules, &rules_code) {
                (Some(id), _) => RulesRef::Module(id),
                (None, Some(hash)) => RulesRef::Code(hash.clone()),
                (None, None) => {
                    return Err(CliError::Usage(
                        "name the rules: --rules ID or --rules-code HASH".into(),
                    ))
                }
            };
            let window_ms = window_ms.unwrap_or(window);
            let o = p
                .offer(
                    &which,
                    stake,
                    window_ms,
                    game_key.as_deref(),
                    rules_code.as_deref(),
                )
                .await?;
            let name = match &which {
                RulesRef::Module(id) => id.clone(),
                RulesRef::Code(_) => "rules".to_string(),
            };
            let staked = if stake.0 == 0 {
                "unstaked".to_string()
            } else {
                format!("stake {stake}")
            };
            line(
                out,
                format!(
                    "offer {}: {name} (code {}), {staked}, window {} (block {}); waiting for a join",
                    o.offer,
                    o.rules_code,
                    format_duration_ms(window_ms),
                    o.height
                ),
            )?;
            line(
                out,
                format!("moves kept in {}", p.store().path(&o.offer).display()),
            )
        }
        ChannelCommand::Join {
            common,
            offer,
            game_key,
            allow_mutable,
            rules_code,
        } => {
            let p = player(&common)?;
            if !allow_mutable {
                let op = serde_json::json!({"kind": "join", "offer": offer});
                let stake = op_stake(p.client(), &common.channel, &op).await?;
                check_escrow(p.client(), &common.channel, stake, allow_mutable).await?;
            }
            let j = p
                .join(&offer, game_key.as_deref(), rules_code.as_deref())
                .await?;
            line(
                out,
                format!(
                    "joined game {} as seat 1 against {}: stake {}, window {}, rules code {}",
                    j.game,
                    j.creator,
                    j.stake,
                    format_duration_ms(j.window_ms),
                    j.rules_code
                ),
            )?;
            line(
                out,
                format!("moves kept in {}", p.store().path(&j.game).display()),
            )
        }
        ChannelCommand::Move {
            common,
            game,
            data,
            no_post,
            no_relay,
            game_key,
        } => {
            let bytes = hex::decode(&data)
                .map_err(|_| CliError::Usage(format!("move data `{data}` is not hex")))?;
            let p = player(&common)?;
            let m = p
                .make_move(&game, &bytes, no_post, !no_relay, game_key.as_deref())
                .await?;
            let what = if m.resent {
                format!("move {} ({}) was signed already", m.n, m.data)
            } else {
                format!("move {} ({}) signed and stored", m.n, m.data)
            };
            let fallback = match &m.relay_note {
                Some(why) => format!(" (relay: {why})"),
                None => String::new(),
            };
            match (m.relayed_to, m.posted_at) {
                (Some(to), _) => line(
                    out,
                    format!(
                        "{what}, sent through the relay to the other player ({to} connection{})",
                        if to == 1 { "" } else { "s" }
                    ),
                )?,
                (None, Some(h)) if m.resent => {
                    line(out, format!("{what}: re-sent at block {h}{fallback}"))?
                }
                (None, Some(h)) => line(out, format!("{what}, posted at block {h}{fallback}"))?,
                (None, None) => line(out, format!("{what}, not posted: {}", m.signed))?,
            }
            if let Some(h) = m.responded_at {
                line(
                    out,
                    format!("answered the challenge on move {} at block {h}", m.n),
                )?;
            }
            if m.over {
                line(out, "the game is over: settle it (`channel settle`)")?;
            }
            Ok(())
        }
        ChannelCommand::Sync { common, game, from } => {
            let report = player(&common)?.sync(&game, from).await?;
            print_sync(out, &report)?;
            line(
                out,
                format!(
                    "read up to block {}: {} moves held",
                    report.head, report.held
                ),
            )
        }
        ChannelCommand::Watch {
            common,
            game,
            poll_ms,
            stop_after,
        } => {
            let p = player(&common)?;
            let options = WatchOptions {
                tick: Duration::from_millis(poll_ms.max(10)),
                stop_after: (stop_after > 0).then(|| Duration::from_secs(stop_after)),
                backoff: Backoff::new(),
            };
            line(out, format!("watching game {game}"))?;
            let mut status = String::new();
            let end = watch(&p, &game, options, |event| {
                let printed = match event {
                    WatchEvent::Connected { from } => {
                        line(out, format!("reading blocks from {from} (block feed open)"))
                    }
                    WatchEvent::Step(step) => print_watch_step(out, &game, step, &mut status),
                    WatchEvent::Relay { peers } => line(
                        out,
                        format!("relay: the other player has {peers} connection(s)"),
                    ),
                    WatchEvent::RelayOff { why } => line(
                        out,
                        format!("relay: not used ({why}); the block feed carries the moves"),
                    ),
                    WatchEvent::Resent { n, to } => line(
                        out,
                        format!(
                            "move {n} re-sent through the relay to the other player ({to} connection(s))"
                        ),
                    ),
                    WatchEvent::Retrying { what, error, wait } => {
                        eprintln!(
                            "watch: {what}: {error}; trying again in {:.1} s",
                            wait.as_secs_f64()
                        );
                        Ok(())
                    }
                };
                printed.map_err(|e| ChannelError::Store(e.to_string()))
            })
            .await?;
            match end {
                WatchEnd::Final => line(out, format!("game {game}: the result is final")),
                WatchEnd::Stopped => line(out, format!("stopped after {stop_after} s")),
            }
        }
        ChannelCommand::Settle { common, game } => {
            let s = player(&common)?.settle(&game).await?;
            line(
                out,
                format!(
                    "settled by history ({} moves): {}; final at {} (block time {}), then withdraw",
                    s.moves,
                    winner_text(&s.winner),
                    format_time_ms(s.final_at_ms),
                    s.final_at_ms
                ),
            )
        }
        ChannelCommand::Challenge { common, game } => {
            let c = player(&common)?.challenge(&game).await?;
            match c.due {
                Some(due) => line(
                    out,
                    format!(
                        "challenged: {due} owes move {} by {} (block time {})",
                        c.move_number,
                        describe_deadline(c.deadline_ms, c.at_ms),
                        c.deadline_ms
                    ),
                ),
                None => line(out, "the moves end the game: concluding by history"),
            }
        }
        ChannelCommand::Respond { common, game } => {
            let r = player(&common)?.respond(&game).await?;
            print_responded(out, &r)
        }
        ChannelCommand::Forfeit { common, game } => {
            let e = player(&common)?.forfeit(&game).await?;
            line(
                out,
                format!(
                    "forfeit claimed: {}; final at block {}",
                    winner_text(&e.winner),
                    e.height
                ),
            )
        }
        ChannelCommand::Prove { common, game } => {
            let (n, e) = player(&common)?.prove(&game).await?;
            line(
                out,
                format!(
                    "equivocation on move {n} proven: {}; final at block {}",
                    winner_text(&e.winner),
                    e.height
                ),
            )
        }
        ChannelCommand::Withdraw { common, game } => {
            let e = player(&common)?.withdraw(&game).await?;
            match e.winner {
                Some(w) => line(
                    out,
                    format!("paid out at block {}: {w} gets both stakes", e.height),
                ),
                None => line(
                    out,
                    format!(
                        "paid out at block {}: a draw, each stake refunded",
                        e.height
                    ),
                ),
            }
        }
        ChannelCommand::Cancel { common, offer } => {
            let h = player(&common)?.cancel(&offer).await?;
            line(
                out,
                format!("offer {offer} cancelled at block {h}: stake refunded"),
            )
        }
        ChannelCommand::Show { common, game } => {
            let p = player(&common)?;
            let s = p.show(&game).await?;
            let r = &s.record;
            let me = r.my_seat();
            let who = |seat: u8| {
                let you = if Some(seat) == me { " (you)" } else { "" };
                format!("seat {seat} {}{you}", r.players[seat as usize])
            };
            let stake = if r.stake == "0" {
                "unstaked".to_string()
            } else {
                format!("stake {}", r.stake)
            };
            line(
                out,
                format!(
                    "game {game}: {} (code {}), {stake}, window {}",
                    r.rules_name(),
                    r.rules_code_hash,
                    format_duration_ms(r.window_ms)
                ),
            )?;
            line(out, who(0))?;
            line(out, who(1))?;
            line(out, format!("moves held: {} (state {})", s.n, s.state_hash))?;
            match (s.over, s.due) {
                (Some(Some(w)), _) => line(out, format!("over: {} wins", who(w)))?,
                (Some(None), _) => line(out, "over: a draw")?,
                (None, Some(d)) => line(out, format!("turn: {} (move {})", who(d), s.n))?,
                (None, None) => {}
            }
            for m in r.moves.iter().filter(|m| !m.posted) {
                if m.relayed {
                    line(
                        out,
                        format!(
                            "sent through the relay, not on the board: move {} ({})",
                            m.n, m.data
                        ),
                    )?;
                } else {
                    line(out, format!("not posted yet: move {} ({})", m.n, m.data))?;
                }
            }
            for c in &r.conflicts {
                line(
                    out,
                    format!("equivocation proof held: move {} (`channel prove`)", c.n),
                )?;
            }
            if let Some(h) = &s.rules_changed {
                line(
                    out,
                    format!(
                        "note: {} now runs code {h}; this game plays by code {} (pinned at the offer), whatever the module runs",
                        r.rules_name(),
                        r.rules_code_hash
                    ),
                )?;
            }
            match &s.view {
                None => line(out, "on chain: no such game")?,
                Some(g) => {
                    let mut text = format!(
                        "on chain at height {} ({}): {}",
                        s.head,
                        format_time_ms(s.head_time_ms),
                        g.status
                    );
                    if let Some(c) = g.challenge.as_ref().filter(|_| g.status == "challenged") {
                        text.push_str(&format!(
                            ", {} owes move {} by {}",
                            g.players[c.due as usize],
                            c.moves,
                            describe_deadline(c.deadline_ms, s.head_time_ms)
                        ));
                    }
                    if let Some(o) = &g.outcome {
                        let winner = o.winner.map(|w| g.players[w as usize].clone());
                        text.push_str(&format!(
                            ", {} ({}), final at {}",
                            winner_text(&winner),
                            o.how,
                            describe_deadline(o.final_at_ms, s.head_time_ms)
                        ));
                    }
                    if let Some((fin, hash)) = &s.final_state {
                        if *fin {
                            text.push_str(", final");
                            if let Some(h) = hash {
                                text.push_str(&format!(" (state {h})"));
                            }
                        }
                    }
                    if g.paid {
                        text.push_str(", paid out");
                    }
                    line(out, text)?;
                }
            }
            line(out, format!("store: {}", p.store().path(&game).display()))
        }
    }
}
