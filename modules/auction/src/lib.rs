//! # A sealed-bid auction: every bid opens at once, nobody sees another's first
//!
//! A seller puts up a **lot** (a name: the module sells nothing itself, it decides who pays what)
//! and fixes a **deposit**. The create fixes a **round** (a block height `seal_blocks` ahead) and
//! reserves a number of **seats** in it: one sealed call per seat ([`Ctx::schedule_sealed`]),
//! plus an ordinary closing call at the same height. A bidder escrows exactly the deposit, takes
//! the first free seat and hands in a bid sealed to the round (`bid {id, sealed}`; an envelope
//! from `gamechain seal` or the JS SDK's `sealMove`). In the round's block the chain opens every
//! envelope with that block's beacon, before anything else runs, and hands the bids to the
//! module; the closing call then sells the lot to the highest valid bid. Module id `auction`
//! (`docs/sealed-moves.md`).
//!
//! Why this is fair: until the round's beacon exists nobody can open a sealed bid (on validators
//! no coalition short of the threshold; on a single sequencer only the sequencer, see the docs),
//! so no bidder can outbid another by a unit, and the seller cannot learn the bids to set a
//! price. Every bidder escrows the same deposit, so the escrow reveals nothing of a bid either;
//! the deposit is also the highest bid the auction takes. A sealed bid cannot be changed (one
//! per address, one per seat), copied (its proof binds it to this module, the sender, the
//! auction and the round: another bidder's copy is refused) or withheld: it is sealed in the
//! same transaction that takes the seat, and a bid that does not open, or opens to a bid the
//! auction does not take (zero, above the deposit, below the reserve), is **void** and its
//! deposit goes to the seller: taking seats with junk bids to keep real bidders out costs the
//! one who does it. The seats were reserved with the auction, so nobody can fill the round with
//! other sealed calls to keep a bid out; anyone may reserve more while the round is ahead
//! (`add_seats`), if the round has room.
//!
//! ## Plaintext
//!
//! 32 bytes ([`plaintext`]): bytes 0..8 are the bid in GOLD base units, a big-endian u64; the
//! rest is ignored (the encryption is randomised, so equal bids give unrelated envelopes). A bid
//! is **valid** when it is more than 0, at least the reserve and at most the deposit; anything
//! else is void.
//!
//! ## Ops
//!
//! Every op: `kind` missing or not a string → ``invalid: missing string field `kind` ``; an
//! unknown kind → ``invalid: unknown auction op `<kind>` ``; ops with an `id` load the auction
//! first (``invalid: missing string field `id` ``, `not found: auction <id>`).
//!
//! - **`create`** `{lot, deposit, reserve?, seats?, seal_blocks?}`, by the seller: ``invalid:
//!   missing string field `lot` ``, `invalid: lot must be 1 to 64 characters`; `deposit` a
//!   decimal string of GOLD base units (``invalid: missing string field `deposit` ``, ``invalid:
//!   `deposit` must be a decimal string of base units``), `invalid: deposit must be from 1 to
//!   100000 base units`; `reserve` (default 0) likewise, `invalid: reserve must be at most the
//!   deposit`; `seats` (default
//!   [`DEFAULT_SEATS`]) `invalid: seats must be an integer from 1 to 3`; `seal_blocks` (default
//!   [`DEFAULT_SEAL_BLOCKS`]) `invalid: seal_blocks must be an integer from 2 to 600`; `conflict:
//!   auction <id> exists` (the id is the first 16 hex characters of the txid). The round is
//!   `height + seal_blocks` (a full round refuses the create; a block later it picks the next
//!   round); the create reserves the seats (payload `<id>/<seat>`, [`OPEN_FUEL`] each) and the closing call
//!   (payload `<id>`, [`CLOSE_FUEL`]), all paid by this transaction; a create that cannot
//!   reserve fails whole (`invalid: <the schedule error>`). Emits `auction.created {id, seller,
//!   lot, deposit, reserve, seats, round, calls, close_call}` (`calls`: each seat's sealed call).
//! - **`add_seats`** `{id, n}`, by anyone: `invalid: n must be an integer from 1 to 4`,
//!   `invalid: the round has come: no seat can be added`, `invalid: an auction has at most 12
//!   seats`; the seats go into the auction's round (it is fixed: a full round is `invalid:
//!   <the schedule error>`). Emits `auction.seats_added {id, seats, calls}` (`seats`: the new
//!   total; `calls`: the new seats' sealed calls).
//! - **`bid`** `{id, sealed}`: `not allowed: the seller cannot bid`, `invalid: the round has
//!   come: bids are closed` (height ≥ round), `conflict: <address> has bid already`, `invalid:
//!   every seat of this auction is taken`, ``invalid: `sealed` must be 448 lowercase hex
//!   characters``, `insufficient GOLD: …` (the deposit moves into escrow `module:auction`); then
//!   the chain's seal refusals as `invalid: <text>` (`… malformed`, `… not bound to this game,
//!   seat, round and player`). The bid takes the first free seat; its tag is the auction id
//!   ([`seal_tag`]), so an envelope does not depend on the seat it lands in. Emits `auction.bid
//!   {id, seat, bidder}` (never the amount).
//!
//! ## The round
//!
//! Each seat's sealed call (`invalid: stale opening` unless the auction is open and this is the
//! seat's call) records the seat's `bid` (the valid amount, or `null` when void or empty), sets
//! `opened` and emits `auction.opened {id, seat, bidder, bid}`. The closing call (`invalid: stale
//! close` unless the auction is open and this is its closing call) sells: the highest valid bid
//! wins, equal bids go to the lower seat (the earlier bidder). The winner pays the bid to the
//! seller out of the deposit and gets the rest back; every other valid bidder gets the deposit
//! back; a void bid's deposit goes to the seller; no valid bid: nothing is sold. Emits `auction.finished {id,
//! winner, price}` (both `null` when nothing was sold). The escrow `module:auction` holds
//! exactly the deposits of the auctions still open.
//!
//! ## Fuel
//!
//! Reserving a sealed seat costs the scheduling (20,000), the opening in the round's block
//! (2,000,000) and the call's fuel ([`OPEN_FUEL`]) — `SCHEDULE_BASE` and `SEAL_OPEN_BASE` of
//! `runtime/vm/src/gas.rs` — so four seats and the closing call would pass a chain's `fuel_apply`
//! of 10,000,000. A create therefore reserves at most [`MAX_CREATE_SEATS`] (with the closing call
//! about 8.5 million) and an `add_seats` at most [`MAX_ADD_SEATS`]. The module never reads the
//! chain's count of a round (`sched/r/…`) nor tries other rounds: how full a round is depends on
//! other games, and a game's execution must depend on its own transactions only, or `verify
//! --game` could not re-execute it from its transcript.
//!
//! ## State keys (under `m/auction/`)
//!
//! `auction/<id>` (JSON [`AuctionRecord`]), `open/<id>` (while the round is ahead).
//!
//! ## Views (`GET /v1/games/auction?…`)
//!
//! `?id=<id>`: the auction, every field (`not found: auction <id>`). `?open=` (with `after=`,
//! `limit=` 1 to 50): `{"auctions": […], "next"?: <id>}`, the auctions whose round has not come,
//! in id order. No parameter: `{"game":"auction","max_deposit":"100000","default_seats":2,
//! "max_seats":12,"default_seal_blocks":20}`.

use gamechain_sdk::prelude::*;
use gamechain_sdk::schedule::SEALED_BYTES;
use gamechain_sdk::table::page_params;

mod schema;
pub use schema::SCHEMA;

/// The module id.
pub const ID: &str = "auction";
/// Largest deposit, in GOLD base units (1000 GOLD).
pub const MAX_DEPOSIT: u128 = 100_000;
/// Longest lot name, characters.
pub const MAX_LOT_CHARS: usize = 64;
/// Seats a create reserves by default.
pub const DEFAULT_SEATS: u64 = 2;
/// Most seats one create reserves (module docs, "Fuel").
pub const MAX_CREATE_SEATS: u64 = 3;
/// Most seats one `add_seats` reserves (module docs, "Fuel").
pub const MAX_ADD_SEATS: u64 = 4;
/// Most seats of one auction.
pub const MAX_SEATS: usize = 12;
/// Blocks from the create to the round, by default.
pub const DEFAULT_SEAL_BLOCKS: u64 = 20;
/// Fewest blocks from the create to the round.
pub const MIN_SEAL_BLOCKS: u64 = 2;
/// Most blocks from the create to the round.
pub const MAX_SEAL_BLOCKS: u64 = 600;
/// Fuel of each seat's opening call (records one bid: a few tens of thousands).
pub const OPEN_FUEL: u64 = 300_000;
/// Fuel of the closing call (up to 13 payouts).
pub const CLOSE_FUEL: u64 = 1_500_000;
/// Most auctions a list view scans.
const LIST_LIMIT: usize = 50;

/// The module: `gamechain_sdk::export_module!(Auction)` exports it as wasm.
#[derive(Debug, Clone, Copy, Default)]
pub struct Auction;

/// An auction's life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Created; bids until the round, sold by the closing call.
    Open,
    /// The closing call ran: sold, or nothing sold.
    Closed,
}

/// One seat of an auction: a sealed call in its round and at most one bid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// The seat's sealed call.
    pub call: u64,
    /// Who took the seat; `null` while free.
    pub bidder: Option<String>,
    /// Whether a sealed bid was handed in (always with the bidder: the bid seals it).
    pub sealed: bool,
    /// Whether the round opened the seat.
    pub opened: bool,
    /// The opened bid when valid; `null` before the opening, and when void or empty.
    pub bid: Option<Amount>,
}

/// One auction, stored as JSON at `auction/<id>` and returned by the views.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuctionRecord {
    /// The first 16 hex characters of the creating transaction's txid.
    pub id: String,
    /// The seller's address: paid the winning bid.
    pub seller: String,
    /// What is sold (a name, 1 to 64 characters).
    pub lot: String,
    /// What every bidder escrows, GOLD base units: also the highest bid taken.
    pub deposit: Amount,
    /// The lowest bid taken (bids are more than 0 whatever it is).
    pub reserve: Amount,
    /// Life-cycle state.
    pub status: Status,
    /// Height of the block that created the auction.
    pub created_height: u64,
    /// Blocks from the create to the round asked for.
    pub seal_blocks: u64,
    /// The height whose beacon opens every bid, and the closing call's.
    pub round: u64,
    /// The closing call.
    pub close_call: u64,
    /// The seats in order; a seat's index is its number.
    pub seats: Vec<Seat>,
    /// The buyer's address; `null` until sold (and when nothing was sold).
    pub winner: Option<String>,
    /// The winning bid; `null` until sold (and when nothing was sold).
    pub price: Option<Amount>,
}

impl GameModule for Auction {
    fn id(&self) -> &'static str {
        ID
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "create" => create(ctx, sender, op),
            "add_seats" => add_seats(ctx, op),
            "bid" => bid(ctx, sender, op),
            other => Err(ActionError::invalid(format!(
                "unknown auction op `{other}`"
            ))),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        if let Some(id) = query.get("id") {
            let auction = state
                .module_json::<AuctionRecord>(ID, &auction_key(id))?
                .ok_or_else(|| ActionError::not_found(format!("auction {id}")))?;
            return serde_json::to_value(&auction)
                .map_err(|e| ActionError::Internal(e.to_string()));
        }
        if query.contains_key("open") {
            return open_view(state, query);
        }
        Ok(json!({
            "game": ID,
            "max_deposit": Amount(MAX_DEPOSIT),
            "default_seats": DEFAULT_SEATS,
            "max_seats": MAX_SEATS,
            "default_seal_blocks": DEFAULT_SEAL_BLOCKS,
        }))
    }

    fn scheduled(&self, ctx: &mut dyn Ctx, call: &ScheduledCall) -> Result<(), ActionError> {
        match call.sealed {
            Some(opened) => record_opening(ctx, call, opened),
            None => close(ctx, call),
        }
    }

    fn schema(&self) -> Option<&str> {
        Some(SCHEMA)
    }
}

gamechain_sdk::export_module!(Auction, schema = SCHEMA);

/// The key of auction `id`'s record.
pub fn auction_key(id: &str) -> String {
    format!("auction/{id}")
}

/// The key listing auction `id` while its round is ahead.
pub fn open_key(id: &str) -> String {
    format!("open/{id}")
}

/// The tag every sealed bid of auction `id` is bound to: the id's 16 hex characters. The proof
/// also binds the sender and the round, so a copy by another bidder is refused.
pub fn seal_tag(id: &str) -> &[u8] {
    id.as_bytes()
}

/// The payload of seat `seat`'s sealed call: `<id>/<seat>`.
pub fn seat_payload(id: &str, seat: usize) -> String {
    format!("{id}/{seat}")
}

/// The 32-byte plaintext of a bid of `amount` GOLD base units: bytes 0..8 big-endian, the rest
/// zero (any rest is ignored).
pub fn plaintext(amount: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..8].copy_from_slice(&amount.to_be_bytes());
    out
}

/// The bid an opened plaintext carries, when the auction takes it: more than 0, at least
/// `reserve`, at most `deposit`.
pub fn valid_bid(opened: &[u8; 32], reserve: Amount, deposit: Amount) -> Option<Amount> {
    let mut be = [0u8; 8];
    be.copy_from_slice(&opened[..8]);
    let bid = u128::from(u64::from_be_bytes(be));
    (bid > 0 && bid >= reserve.0 && bid <= deposit.0).then_some(Amount(bid))
}

/// The winning seat of opened bids: the highest, the lowest seat among equal ones; `None` when
/// no bid is valid.
pub fn winning_seat(seats: &[Seat]) -> Option<usize> {
    let mut best: Option<(usize, Amount)> = None;
    for (i, seat) in seats.iter().enumerate() {
        if let (Some(_), Some(bid)) = (&seat.bidder, seat.bid) {
            if best.is_none_or(|(_, top)| bid > top) {
                best = Some((i, bid));
            }
        }
    }
    best.map(|(i, _)| i)
}

fn load(ctx: &dyn Ctx, op: &Value) -> Result<AuctionRecord, ActionError> {
    let id = op_str(op, "id")?;
    ctx.get_json::<AuctionRecord>(&auction_key(id))?
        .ok_or_else(|| ActionError::not_found(format!("auction {id}")))
}

fn save(ctx: &mut dyn Ctx, auction: &AuctionRecord) {
    ctx.put_json(&auction_key(&auction.id), auction);
}

/// An optional integer field from `min` to `max`, `default` when absent or null.
fn op_range(
    op: &Value,
    field: &str,
    default: u64,
    (min, max): (u64, u64),
) -> Result<u64, ActionError> {
    match op.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                ActionError::invalid(format!("{field} must be an integer from {min} to {max}"))
            }),
    }
}

/// Reserves seats `from..from + n` of auction `id` in `round`: their calls, or the first
/// refusal with every seat of this batch cancelled again.
fn reserve_seats(
    ctx: &mut dyn Ctx,
    id: &str,
    round: u64,
    from: usize,
    n: u64,
) -> Result<Vec<u64>, ScheduleError> {
    let mut calls = Vec::new();
    for seat in from..from + n as usize {
        match ctx.schedule_sealed(round, seat_payload(id, seat).as_bytes(), OPEN_FUEL) {
            Ok(call) => calls.push(call),
            Err(e) => {
                for call in calls {
                    ctx.cancel_scheduled(call);
                }
                return Err(e);
            }
        }
    }
    Ok(calls)
}

fn create(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let lot = op_str(op, "lot")?;
    if lot.is_empty() || lot.chars().count() > MAX_LOT_CHARS {
        return Err(ActionError::invalid("lot must be 1 to 64 characters"));
    }
    let deposit = op_amount(op, "deposit")?;
    if !(1..=MAX_DEPOSIT).contains(&deposit) {
        return Err(ActionError::invalid(format!(
            "deposit must be from 1 to {MAX_DEPOSIT} base units"
        )));
    }
    let reserve = op_amount_or_zero(op, "reserve")?;
    if reserve > deposit {
        return Err(ActionError::invalid("reserve must be at most the deposit"));
    }
    let seats = op_range(op, "seats", DEFAULT_SEATS, (1, MAX_CREATE_SEATS))?;
    let seal_blocks = op_range(
        op,
        "seal_blocks",
        DEFAULT_SEAL_BLOCKS,
        (MIN_SEAL_BLOCKS, MAX_SEAL_BLOCKS),
    )?;
    let id = ctx
        .txid()
        .get(..16)
        .ok_or_else(|| ActionError::Internal("txid is too short".into()))?
        .to_string();
    if ctx.get(&auction_key(&id)).is_some() {
        return Err(ActionError::conflict(format!("auction {id} exists")));
    }
    let height = ctx.height();
    // One round, fixed by the creation's height: never chosen by looking at how full rounds are
    // (other games' state), so `verify --game` re-executes the creation exactly. A full round
    // refuses the creation whole; creating again a block later picks the next round.
    let round = height + seal_blocks;
    let calls = reserve_seats(ctx, &id, round, 0, seats)?;
    let close_call = ctx.schedule(At::Height(round), id.as_bytes(), CLOSE_FUEL)?;
    let auction = AuctionRecord {
        id,
        seller: sender.to_string(),
        lot: lot.to_string(),
        deposit: Amount(deposit),
        reserve: Amount(reserve),
        status: Status::Open,
        created_height: height,
        seal_blocks,
        round,
        close_call,
        seats: calls
            .iter()
            .map(|&call| Seat {
                call,
                bidder: None,
                sealed: false,
                opened: false,
                bid: None,
            })
            .collect(),
        winner: None,
        price: None,
    };
    save(ctx, &auction);
    ctx.put(&open_key(&auction.id), b"1".to_vec());
    ctx.emit(
        "auction.created",
        json!({ "id": auction.id, "seller": auction.seller, "lot": auction.lot,
                "deposit": auction.deposit, "reserve": auction.reserve, "seats": seats,
                "round": round, "calls": calls, "close_call": close_call }),
    );
    Ok(())
}

fn add_seats(ctx: &mut dyn Ctx, op: &Value) -> Result<(), ActionError> {
    let mut auction = load(ctx, op)?;
    let n = match op.get("n").and_then(Value::as_u64) {
        Some(n) if (1..=MAX_ADD_SEATS).contains(&n) => n,
        _ => {
            return Err(ActionError::invalid(format!(
                "n must be an integer from 1 to {MAX_ADD_SEATS}"
            )))
        }
    };
    if auction.status != Status::Open || ctx.height() >= auction.round {
        return Err(ActionError::invalid(
            "the round has come: no seat can be added",
        ));
    }
    if auction.seats.len() + n as usize > MAX_SEATS {
        return Err(ActionError::invalid(format!(
            "an auction has at most {MAX_SEATS} seats"
        )));
    }
    // The round is fixed: no later height to try (a full round refuses, and the seats this
    // batch reserved are freed again).
    let calls = reserve_seats(ctx, &auction.id, auction.round, auction.seats.len(), n)?;
    auction.seats.extend(calls.iter().map(|&call| Seat {
        call,
        bidder: None,
        sealed: false,
        opened: false,
        bid: None,
    }));
    save(ctx, &auction);
    ctx.emit(
        "auction.seats_added",
        json!({ "id": auction.id, "seats": auction.seats.len(), "calls": calls }),
    );
    Ok(())
}

fn bid(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut auction = load(ctx, op)?;
    if sender == auction.seller {
        return Err(ActionError::unauthorized("the seller cannot bid"));
    }
    if auction.status != Status::Open || ctx.height() >= auction.round {
        return Err(ActionError::invalid("the round has come: bids are closed"));
    }
    if auction
        .seats
        .iter()
        .any(|s| s.bidder.as_deref() == Some(sender))
    {
        return Err(ActionError::conflict(format!("{sender} has bid already")));
    }
    let seat = auction
        .seats
        .iter()
        .position(|s| s.bidder.is_none())
        .ok_or_else(|| ActionError::invalid("every seat of this auction is taken"))?;
    let sealed = op_str(op, "sealed")?;
    let bytes = match hex::decode(sealed) {
        Ok(b) if b.len() == SEALED_BYTES && !has_upper(sealed) => b,
        _ => {
            return Err(ActionError::invalid(
                "`sealed` must be 448 lowercase hex characters",
            ))
        }
    };
    ctx.escrow_in(sender, GOLD, auction.deposit.0)?;
    ctx.seal(auction.seats[seat].call, &bytes, seal_tag(&auction.id))?;
    let taken = &mut auction.seats[seat];
    taken.bidder = Some(sender.to_string());
    taken.sealed = true;
    save(ctx, &auction);
    ctx.emit(
        "auction.bid",
        json!({ "id": auction.id, "seat": seat, "bidder": sender }),
    );
    Ok(())
}

fn has_upper(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_uppercase())
}

/// A seat's sealed call: records what its bid opened to.
fn record_opening(
    ctx: &mut dyn Ctx,
    call: &ScheduledCall,
    opened: Unsealed,
) -> Result<(), ActionError> {
    let stale = || ActionError::invalid("stale opening");
    let payload = core::str::from_utf8(&call.payload).map_err(|_| stale())?;
    let (id, seat) = payload.rsplit_once('/').ok_or_else(stale)?;
    let seat: usize = seat.parse().map_err(|_| stale())?;
    let mut auction: AuctionRecord = ctx.get_json(&auction_key(id))?.ok_or_else(stale)?;
    let (reserve, deposit) = (auction.reserve, auction.deposit);
    let open = auction.status == Status::Open;
    let entry = auction.seats.get_mut(seat).ok_or_else(stale)?;
    if !open || entry.call != call.id || entry.opened {
        return Err(stale());
    }
    entry.opened = true;
    entry.bid = match (opened, &entry.bidder) {
        (Unsealed::Opened(plain), Some(_)) => valid_bid(&plain, reserve, deposit),
        _ => None,
    };
    let (bidder, bid) = (entry.bidder.clone(), entry.bid);
    save(ctx, &auction);
    // The round has come: the auction takes no more bids.
    ctx.delete(&open_key(&auction.id));
    ctx.emit(
        "auction.opened",
        json!({ "id": auction.id, "seat": seat, "bidder": bidder, "bid": bid }),
    );
    Ok(())
}

/// The closing call: sells to the highest valid bid and pays every deposit out.
fn close(ctx: &mut dyn Ctx, call: &ScheduledCall) -> Result<(), ActionError> {
    let stale = || ActionError::invalid("stale close");
    let id = core::str::from_utf8(&call.payload).map_err(|_| stale())?;
    let mut auction: AuctionRecord = ctx.get_json(&auction_key(id))?.ok_or_else(stale)?;
    if auction.status != Status::Open || auction.close_call != call.id {
        return Err(stale());
    }
    // The openings ran first in the round's block; a seat without one is void.
    for seat in &mut auction.seats {
        if !seat.opened {
            seat.opened = true;
            seat.bid = None;
        }
    }
    let deposit = auction.deposit.0;
    let winner = winning_seat(&auction.seats);
    // A valid losing bid gets its deposit back; a bid that did not open to one the auction
    // takes (void, zero, above the deposit, below the reserve) forfeits it to the seller, so
    // filling an auction's seats with junk bids to keep real ones out costs the filler.
    let mut forfeited: u128 = 0;
    for (i, seat) in auction.seats.iter().enumerate() {
        let Some(bidder) = &seat.bidder else { continue };
        let back = match (winner == Some(i), seat.bid) {
            (true, Some(price)) => {
                ctx.escrow_out(&auction.seller, GOLD, price.0)?;
                deposit - price.0
            }
            (false, Some(_)) => deposit,
            (_, None) => {
                forfeited += deposit;
                0
            }
        };
        if back > 0 {
            ctx.escrow_out(bidder, GOLD, back)?;
        }
    }
    if forfeited > 0 {
        ctx.escrow_out(&auction.seller, GOLD, forfeited)?;
    }
    if let Some(i) = winner {
        auction.winner = auction.seats[i].bidder.clone();
        auction.price = auction.seats[i].bid;
    }
    auction.status = Status::Closed;
    save(ctx, &auction);
    ctx.delete(&open_key(&auction.id));
    ctx.emit(
        "auction.finished",
        json!({ "id": auction.id, "winner": auction.winner, "price": auction.price }),
    );
    Ok(())
}

/// `?open=`: one page of the auctions whose round has not come, in id order.
fn open_view(state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
    let (after, limit) = page_params(query, LIST_LIMIT)?;
    let prefix = module_key(ID, "open/");
    let start = after.map(|id| format!("{prefix}{id}"));
    let keys = state.scan_raw(&prefix, start.as_deref(), limit);
    let next = (keys.len() == limit)
        .then(|| keys.last().map(|(key, _)| key[prefix.len()..].to_string()))
        .flatten();
    let mut auctions = Vec::new();
    for (key, _) in keys {
        if let Some(a) =
            state.module_json::<AuctionRecord>(ID, &auction_key(&key[prefix.len()..]))?
        {
            auctions.push(a);
        }
    }
    Ok(match next {
        None => json!({ "auctions": auctions }),
        Some(next) => json!({ "auctions": auctions, "next": next }),
    })
}

#[cfg(test)]
mod tests;
