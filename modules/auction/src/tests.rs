//! Native tests of the sealed-bid auction over `MockCtx`, with the SDK's stand-in envelopes
//! (`gamechain_sdk::mock_seal`): the chain's envelopes and their proofs are tested in the runtime
//! and in the process tests.

use super::*;
use gamechain_sdk::schedule::round_key;
use gamechain_sdk::schema::Schema;
use gamechain_sdk::{mock_seal, MockCtx, SealBinding};

const SELLER: &str = "seller";
const ALICE: &str = "alice";
const BOB: &str = "bob";
const CAROL: &str = "carol";
const EVE: &str = "eve";
const EVERYONE: [&str; 5] = [SELLER, ALICE, BOB, CAROL, EVE];
const START: u128 = 1_000;

fn escrow() -> String {
    escrow_account(ID)
}

/// A chain at height 10 where `SELLER` put up an auction (round 15) with `op`'s fields over
/// `{kind: create, lot: "a lamp", seal_blocks: 5}`.
fn auction_with(fields: Value) -> (MockCtx, String) {
    let mut ctx = MockCtx::new(ID);
    for who in EVERYONE {
        ctx.set_balance(who, GOLD, START);
    }
    ctx.height = 10;
    let mut op = json!({"kind": "create", "lot": "a lamp", "seal_blocks": 5});
    for (k, v) in fields.as_object().unwrap() {
        op[k] = v.clone();
    }
    ctx.submit(&Auction, SELLER, op).unwrap();
    let id = ctx.txid[..16].to_string();
    (ctx, id)
}

fn auction(deposit: &str) -> (MockCtx, String) {
    auction_with(json!({ "deposit": deposit }))
}

fn record(ctx: &MockCtx, id: &str) -> AuctionRecord {
    serde_json::from_value(
        ctx.view(&Auction, &Query::from([("id".into(), id.into())]))
            .unwrap(),
    )
    .unwrap()
}

fn sealed_plain(sender: &str, id: &str, round: u64, plain: &[u8; 32]) -> String {
    let binding = SealBinding {
        module: ID,
        sender,
        tag: seal_tag(id),
        round,
        beacon_key: &mock_seal::MOCK_BEACON_KEY,
    };
    hex::encode(mock_seal::seal(&binding, plain))
}

/// `sender`'s envelope of a bid of `amount` for auction `id`, sealed to `round`.
fn sealed(sender: &str, id: &str, round: u64, amount: u64) -> String {
    sealed_plain(sender, id, round, &plaintext(amount))
}

fn bid_with(ctx: &mut MockCtx, id: &str, who: &str, hex: &str) -> Result<(), ActionError> {
    ctx.submit(
        &Auction,
        who,
        json!({"kind": "bid", "id": id, "sealed": hex}),
    )
}

/// `who` bids `amount` in auction `id` of round 15.
fn bid(ctx: &mut MockCtx, id: &str, who: &str, amount: u64) -> Result<(), ActionError> {
    bid_with(ctx, id, who, &sealed(who, id, 15, amount))
}

fn add_seats(ctx: &mut MockCtx, id: &str, who: &str, n: u64) -> Result<(), ActionError> {
    ctx.submit(
        &Auction,
        who,
        json!({"kind": "add_seats", "id": id, "n": n}),
    )
}

fn run_round(ctx: &mut MockCtx, round: u64) -> Vec<(u64, Result<(), ActionError>)> {
    ctx.height = round;
    ctx.run_scheduled(&Auction, 0, Some([7; 48]))
}

fn gold(ctx: &MockCtx, who: &str) -> u128 {
    ctx.balance(who, GOLD)
}

/// Every account's GOLD plus the escrow: constant.
fn total_gold(ctx: &MockCtx) -> u128 {
    EVERYONE.iter().map(|w| gold(ctx, w)).sum::<u128>() + gold(ctx, &escrow())
}

fn events(ctx: &MockCtx, kind: &str) -> Vec<Value> {
    ctx.events
        .iter()
        .filter(|(k, _)| k == kind)
        .map(|(_, d)| d.clone())
        .collect()
}

/// Every accepted op, every event and every view answer so far matches the schema.
fn matches_schema(ctx: &MockCtx) {
    let schema = Schema::parse(SCHEMA).unwrap();
    for (op, ok) in &ctx.kv.trace.ops {
        if *ok {
            schema.check_op(op).unwrap();
        }
    }
    for (kind, data) in &ctx.events {
        schema.check_event(kind, data).unwrap();
    }
    for (query, answer) in ctx.kv.trace.views() {
        schema.check_view(None, &query, &answer).unwrap();
    }
}

#[test]
fn the_highest_bid_wins_and_gold_is_conserved() {
    let (mut ctx, id) = auction("500");
    let total = total_gold(&ctx);
    let a = record(&ctx, &id);
    assert_eq!((a.round, a.seats.len(), a.status), (15, 2, Status::Open));
    // Anyone adds a third seat, in the same round.
    add_seats(&mut ctx, &id, CAROL, 1).unwrap();
    bid(&mut ctx, &id, ALICE, 300).unwrap();
    bid(&mut ctx, &id, BOB, 450).unwrap();
    bid(&mut ctx, &id, CAROL, 200).unwrap();
    assert_eq!(gold(&ctx, &escrow()), 1_500, "three equal deposits");
    assert_eq!(total_gold(&ctx), total);
    let a = record(&ctx, &id);
    let bidders: Vec<_> = a.seats.iter().map(|s| s.bidder.as_deref()).collect();
    assert_eq!(bidders, [Some(ALICE), Some(BOB), Some(CAROL)]);
    assert!(a
        .seats
        .iter()
        .all(|s| s.sealed && !s.opened && s.bid.is_none()));
    assert_eq!(
        events(&ctx, "auction.bid")[1],
        json!({"id": id, "seat": 1, "bidder": BOB}),
        "never the amount"
    );
    // Nothing opens before the round.
    ctx.height = 14;
    assert!(ctx.run_scheduled(&Auction, 0, Some([7; 48])).is_empty());
    let ran = run_round(&mut ctx, 15);
    assert_eq!(ran.len(), 4, "three openings, then the closing call");
    assert!(ran.iter().all(|(_, r)| r.is_ok()), "{ran:?}");
    let a = record(&ctx, &id);
    let bids: Vec<_> = a.seats.iter().map(|s| s.bid).collect();
    assert_eq!(
        bids,
        [Some(Amount(300)), Some(Amount(450)), Some(Amount(200))]
    );
    assert_eq!(a.status, Status::Closed);
    assert_eq!(
        (a.winner.as_deref(), a.price),
        (Some(BOB), Some(Amount(450)))
    );
    assert_eq!(
        events(&ctx, "auction.finished"),
        [json!({"id": id, "winner": BOB, "price": "450"})]
    );
    assert_eq!(gold(&ctx, SELLER), START + 450);
    assert_eq!(gold(&ctx, BOB), START - 450);
    assert_eq!((gold(&ctx, ALICE), gold(&ctx, CAROL)), (START, START));
    assert_eq!(gold(&ctx, &escrow()), 0);
    assert_eq!(total_gold(&ctx), total);
    matches_schema(&ctx);
}

#[test]
fn a_bid_above_the_deposit_or_below_the_reserve_is_void_and_forfeits_its_deposit() {
    let (mut ctx, id) = auction_with(json!({"deposit": "500", "reserve": "100", "seats": 2}));
    add_seats(&mut ctx, &id, ALICE, 2).unwrap();
    bid(&mut ctx, &id, ALICE, 501).unwrap();
    bid(&mut ctx, &id, BOB, 99).unwrap();
    bid(&mut ctx, &id, CAROL, 100).unwrap();
    bid(&mut ctx, &id, EVE, u64::MAX).unwrap();
    let total = total_gold(&ctx);
    run_round(&mut ctx, 15);
    let a = record(&ctx, &id);
    let bids: Vec<_> = a.seats.iter().map(|s| s.bid).collect();
    assert_eq!(bids, [None, None, Some(Amount(100)), None]);
    assert!(a.seats.iter().all(|s| s.opened));
    assert_eq!(
        events(&ctx, "auction.opened")[0],
        json!({"id": id, "seat": 0, "bidder": ALICE, "bid": null})
    );
    assert_eq!(
        (a.winner.as_deref(), a.price),
        (Some(CAROL), Some(Amount(100)))
    );
    // The price, and the three void bids' deposits (junk that took seats).
    assert_eq!(gold(&ctx, SELLER), START + 100 + 3 * 500);
    assert_eq!(gold(&ctx, CAROL), START - 100);
    for who in [ALICE, BOB, EVE] {
        assert_eq!(
            gold(&ctx, who),
            START - 500,
            "{who}'s deposit went to the seller"
        );
    }
    assert_eq!(total_gold(&ctx), total);
    matches_schema(&ctx);
}

#[test]
fn an_envelope_for_another_round_is_refused_and_a_bad_plaintext_is_void() {
    let (mut ctx, id) = auction("500");
    let before = ctx.kv.state.clone();
    // Sealed to round 16, not the auction's: refused before it is stored, nothing escrowed.
    let e = bid_with(&mut ctx, &id, BOB, &sealed(BOB, &id, 16, 50)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the sealed move is not bound to this game, seat, round and player"
    );
    let e = bid_with(&mut ctx, &id, BOB, &"00".repeat(224)).unwrap_err();
    assert_eq!(e.to_string(), "invalid: the sealed move is malformed");
    for bad in ["ab".to_string(), sealed(BOB, &id, 15, 50).to_uppercase()] {
        let e = bid_with(&mut ctx, &id, BOB, &bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid: `sealed` must be 448 lowercase hex characters"
        );
    }
    assert_eq!(ctx.kv.state, before, "every refusal changed nothing");
    // Alice's plaintext is a bid of 0 with junk after it: void. Bob's 50 wins.
    let mut zero = [0xffu8; 32];
    zero[..8].copy_from_slice(&0u64.to_be_bytes());
    bid_with(&mut ctx, &id, ALICE, &sealed_plain(ALICE, &id, 15, &zero)).unwrap();
    bid(&mut ctx, &id, BOB, 50).unwrap();
    run_round(&mut ctx, 15);
    let a = record(&ctx, &id);
    assert_eq!((a.seats[0].bid, a.seats[1].bid), (None, Some(Amount(50))));
    assert_eq!(
        (a.winner.as_deref(), a.price),
        (Some(BOB), Some(Amount(50)))
    );
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB)),
        (START - 500, START - 50),
        "Alice's void bid forfeits its deposit"
    );
}

#[test]
fn a_copy_of_another_bidders_envelope_is_refused() {
    let (mut ctx, id) = auction("500");
    let alice = sealed(ALICE, &id, 15, 300);
    bid_with(&mut ctx, &id, ALICE, &alice).unwrap();
    // Bob hands in Alice's envelope as his own: bound to Alice.
    let e = bid_with(&mut ctx, &id, BOB, &alice).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the sealed move is not bound to this game, seat, round and player"
    );
    assert_eq!(gold(&ctx, BOB), START, "nothing escrowed");
    // An envelope Bob made for another auction of the same round does not bind here either.
    ctx.submit(
        &Auction,
        CAROL,
        json!({"kind": "create", "lot": "a chair", "deposit": "500", "seal_blocks": 5}),
    )
    .unwrap();
    let other = ctx.txid[..16].to_string();
    assert_eq!(record(&ctx, &other).round, 15);
    let e = bid_with(&mut ctx, &id, BOB, &sealed(BOB, &other, 15, 300)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the sealed move is not bound to this game, seat, round and player"
    );
}

#[test]
fn the_seller_cannot_bid_and_nobody_bids_twice() {
    let (mut ctx, id) = auction("500");
    let e = bid(&mut ctx, &id, SELLER, 100).unwrap_err();
    assert_eq!(e.to_string(), "not allowed: the seller cannot bid");
    bid(&mut ctx, &id, ALICE, 100).unwrap();
    let e = bid(&mut ctx, &id, ALICE, 200).unwrap_err();
    assert_eq!(e.to_string(), "conflict: alice has bid already");
    let a = record(&ctx, &id);
    assert_eq!(a.seats[1].bidder, None, "the second seat is still free");
    assert_eq!(gold(&ctx, ALICE), START - 500);
    // A bidder who cannot pay the deposit takes no seat.
    ctx.set_balance(EVE, GOLD, 499);
    let e = bid(&mut ctx, &id, EVE, 100).unwrap_err();
    assert_eq!(e.to_string(), "insufficient GOLD: need 500, have 499");
    assert_eq!(record(&ctx, &id).seats[1].bidder, None);
}

#[test]
fn bids_after_the_round_are_refused() {
    let (mut ctx, id) = auction("500");
    bid(&mut ctx, &id, ALICE, 100).unwrap();
    ctx.height = 15;
    let e = bid(&mut ctx, &id, BOB, 100).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the round has come: bids are closed"
    );
    let e = add_seats(&mut ctx, &id, BOB, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the round has come: no seat can be added"
    );
    run_round(&mut ctx, 15);
    ctx.height = 16;
    let e = bid(&mut ctx, &id, BOB, 100).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the round has come: bids are closed"
    );
    assert_eq!(record(&ctx, &id).winner.as_deref(), Some(ALICE));
}

#[test]
fn when_every_seat_is_taken_a_bidder_adds_one() {
    let (mut ctx, id) = auction_with(json!({"deposit": "500", "seats": 1}));
    bid(&mut ctx, &id, ALICE, 100).unwrap();
    let e = bid(&mut ctx, &id, BOB, 200).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: every seat of this auction is taken"
    );
    assert_eq!(gold(&ctx, BOB), START, "nothing escrowed");
    add_seats(&mut ctx, &id, BOB, 1).unwrap();
    assert_eq!(
        events(&ctx, "auction.seats_added")[0]["seats"],
        json!(2),
        "the new total"
    );
    bid(&mut ctx, &id, BOB, 200).unwrap();
    run_round(&mut ctx, 15);
    let a = record(&ctx, &id);
    assert_eq!(
        (a.winner.as_deref(), a.price),
        (Some(BOB), Some(Amount(200)))
    );
    matches_schema(&ctx);
}

#[test]
fn add_seats_checks_its_bounds() {
    let (mut ctx, id) = auction("500");
    for n in [json!(0), json!(5), json!("1"), Value::Null] {
        let e = ctx
            .submit(
                &Auction,
                ALICE,
                json!({"kind": "add_seats", "id": id, "n": n}),
            )
            .unwrap_err();
        assert_eq!(e.to_string(), "invalid: n must be an integer from 1 to 4");
    }
    let e = add_seats(&mut ctx, "0000000000000000", ALICE, 1).unwrap_err();
    assert_eq!(e.to_string(), "not found: auction 0000000000000000");
    // 2 + 5 × 2 = 12 seats, every one in the round.
    for _ in 0..5 {
        add_seats(&mut ctx, &id, ALICE, 2).unwrap();
    }
    let e = add_seats(&mut ctx, &id, ALICE, 1).unwrap_err();
    assert_eq!(e.to_string(), "invalid: an auction has at most 12 seats");
    let a = record(&ctx, &id);
    assert_eq!(a.seats.len(), MAX_SEATS);
    let round = ctx.read_raw(&round_key(15)).unwrap();
    assert_eq!(
        String::from_utf8(round).unwrap(),
        format!("12 {}", 12 * OPEN_FUEL)
    );
}

#[test]
fn add_seats_does_not_leave_a_full_round() {
    let mut ctx = MockCtx::new(ID);
    ctx.height = 10;
    let mut ids = Vec::new();
    // 32 auctions of 2 seats fill round 15 (64 sealed calls).
    for n in 0..32 {
        let op = json!({"kind": "create", "lot": format!("lot {n}"), "deposit": "10",
                        "seal_blocks": 5});
        ctx.submit(&Auction, SELLER, op).unwrap();
        ids.push(ctx.txid[..16].to_string());
    }
    assert!(ids.iter().all(|id| record(&ctx, id).round == 15));
    let e = add_seats(&mut ctx, &ids[0], ALICE, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: this round already holds 64 sealed calls or their fuel: choose a later round"
    );
    assert_eq!(record(&ctx, &ids[0]).seats.len(), 2);
}

#[test]
fn a_full_round_refuses_the_create_and_a_block_later_takes_the_next_round() {
    let mut ctx = MockCtx::new(ID);
    ctx.height = 10;
    let create = |ctx: &mut MockCtx, seats: u64| {
        let op = json!({"kind": "create", "lot": "x", "deposit": "10", "seats": seats,
                        "seal_blocks": 5});
        ctx.submit(&Auction, SELLER, op)
            .map(|()| record(ctx, &ctx.txid[..16].to_string()).round)
    };
    // 31 auctions of 2 seats and one of 1: 63 sealed calls in round 15.
    let mut rounds: Vec<u64> = (0..31).map(|_| create(&mut ctx, 2).unwrap()).collect();
    rounds.push(create(&mut ctx, 1).unwrap());
    assert!(rounds.iter().all(|r| *r == 15), "{rounds:?}");
    // Two seats do not fit: refused whole, nothing left behind; one still does.
    let e = create(&mut ctx, 2).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: this round already holds 64 sealed calls or their fuel: choose a later round"
    );
    assert_eq!(create(&mut ctx, 1).unwrap(), 15);
    ctx.height = 11;
    assert_eq!(create(&mut ctx, 2).unwrap(), 16);
    let used =
        |ctx: &MockCtx, round| String::from_utf8(ctx.read_raw(&round_key(round)).unwrap()).unwrap();
    assert_eq!(used(&ctx, 15), format!("64 {}", 64 * OPEN_FUEL));
    assert_eq!(used(&ctx, 16), format!("2 {}", 2 * OPEN_FUEL));
}

#[test]
fn ties_go_to_the_earlier_seat() {
    let (mut ctx, id) = auction("500");
    bid(&mut ctx, &id, ALICE, 200).unwrap();
    bid(&mut ctx, &id, BOB, 200).unwrap();
    run_round(&mut ctx, 15);
    let a = record(&ctx, &id);
    assert_eq!(
        (a.winner.as_deref(), a.price),
        (Some(ALICE), Some(Amount(200)))
    );
    assert_eq!((gold(&ctx, ALICE), gold(&ctx, BOB)), (START - 200, START));

    let seat = |bidder: Option<&str>, bid: Option<u128>| Seat {
        call: 1,
        bidder: bidder.map(str::to_string),
        sealed: bidder.is_some(),
        opened: true,
        bid: bid.map(Amount),
    };
    assert_eq!(winning_seat(&[]), None);
    assert_eq!(
        winning_seat(&[seat(Some("a"), None), seat(None, None)]),
        None
    );
    assert_eq!(
        winning_seat(&[
            seat(Some("a"), Some(5)),
            seat(Some("b"), Some(7)),
            seat(Some("c"), Some(7)),
            seat(Some("d"), Some(6)),
        ]),
        Some(1)
    );
}

#[test]
fn nothing_is_sold_without_a_valid_bid() {
    let (mut ctx, id) = auction_with(json!({"deposit": "500", "reserve": "300"}));
    let total = total_gold(&ctx);
    bid(&mut ctx, &id, ALICE, 299).unwrap();
    bid(&mut ctx, &id, BOB, 0).unwrap();
    let ran = run_round(&mut ctx, 15);
    assert!(ran.iter().all(|(_, r)| r.is_ok()), "{ran:?}");
    let a = record(&ctx, &id);
    assert_eq!((a.status, a.winner, a.price), (Status::Closed, None, None));
    assert_eq!(
        events(&ctx, "auction.finished"),
        [json!({"id": id, "winner": null, "price": null})]
    );
    // Both bids were void (below the reserve, zero): their deposits went to the seller.
    assert_eq!(gold(&ctx, SELLER), START + 1_000);
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB)),
        (START - 500, START - 500)
    );
    assert_eq!(total_gold(&ctx), total);

    // An auction nobody bid in closes as well; its empty seats open to nothing.
    let (mut ctx, id) = auction("500");
    let ran = run_round(&mut ctx, 15);
    assert_eq!(ran.len(), 3);
    assert!(ran.iter().all(|(_, r)| r.is_ok()), "{ran:?}");
    assert_eq!(
        events(&ctx, "auction.opened")[1],
        json!({"id": id, "seat": 1, "bidder": null, "bid": null})
    );
    assert_eq!(record(&ctx, &id).status, Status::Closed);
    assert_eq!(gold(&ctx, SELLER), START);
    matches_schema(&ctx);
}

#[test]
fn create_checks_its_fields() {
    let (mut ctx, _) = auction("500");
    let refuse = |ctx: &mut MockCtx, fields: Value| {
        let mut op = json!({"kind": "create", "lot": "a lamp", "deposit": "500"});
        for (k, v) in fields.as_object().unwrap() {
            op[k] = v.clone();
        }
        ctx.submit(&Auction, SELLER, op).unwrap_err().to_string()
    };
    let cases = [
        (json!({"lot": null}), "invalid: missing string field `lot`"),
        (
            json!({"lot": ""}),
            "invalid: lot must be 1 to 64 characters",
        ),
        (
            json!({"lot": "é".repeat(65)}),
            "invalid: lot must be 1 to 64 characters",
        ),
        (
            json!({"deposit": null}),
            "invalid: missing string field `deposit`",
        ),
        (
            json!({"deposit": 500}),
            "invalid: missing string field `deposit`",
        ),
        (
            json!({"deposit": "5e2"}),
            "invalid: `deposit` must be a decimal string of base units",
        ),
        (
            json!({"deposit": "0"}),
            "invalid: deposit must be from 1 to 100000 base units",
        ),
        (
            json!({"deposit": "100001"}),
            "invalid: deposit must be from 1 to 100000 base units",
        ),
        (
            json!({"reserve": "-1"}),
            "invalid: `reserve` must be a decimal string of base units",
        ),
        (
            json!({"reserve": "501"}),
            "invalid: reserve must be at most the deposit",
        ),
        (
            json!({"seats": 0}),
            "invalid: seats must be an integer from 1 to 3",
        ),
        (
            json!({"seats": 4}),
            "invalid: seats must be an integer from 1 to 3",
        ),
        (
            json!({"seal_blocks": 1}),
            "invalid: seal_blocks must be an integer from 2 to 600",
        ),
        (
            json!({"seal_blocks": 601}),
            "invalid: seal_blocks must be an integer from 2 to 600",
        ),
    ];
    for (fields, text) in cases {
        assert_eq!(refuse(&mut ctx, fields.clone()), text, "{fields}");
    }
    // 64 characters (not bytes) is a lot name.
    ctx.submit(
        &Auction,
        SELLER,
        json!({"kind": "create", "lot": "é".repeat(64), "deposit": "100000", "reserve": "100000"}),
    )
    .unwrap();
    let a = record(&ctx, &ctx.txid[..16]);
    assert_eq!((a.seats.len(), a.seal_blocks, a.round), (2, 20, 30));
    let e = ctx
        .submit(&Auction, SELLER, json!({"kind": "sell"}))
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid: unknown auction op `sell`");
    let e = ctx
        .submit(&Auction, SELLER, json!({"kind": "bid"}))
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid: missing string field `id`");
    matches_schema(&ctx);
}

#[test]
fn the_open_view_lists_auctions_until_their_round() {
    let (mut ctx, first) = auction("500");
    ctx.height = 12;
    let mut ids = vec![first.clone()];
    for _ in 0..2 {
        ctx.submit(
            &Auction,
            SELLER,
            json!({"kind": "create", "lot": "a lamp", "deposit": "500", "seal_blocks": 5}),
        )
        .unwrap();
        ids.push(ctx.txid[..16].to_string());
    }
    ids.sort();
    let open = |ctx: &MockCtx, params: &[(&str, &str)]| {
        let mut q = Query::from([("open".to_string(), String::new())]);
        for (k, v) in params {
            q.insert(k.to_string(), v.to_string());
        }
        ctx.view(&Auction, &q)
    };
    let listed = |v: &Value| -> Vec<String> {
        v["auctions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = open(&ctx, &[]).unwrap();
    assert_eq!(listed(&all), ids);
    assert!(all.get("next").is_none());
    let page = open(&ctx, &[("limit", "2")]).unwrap();
    assert_eq!(listed(&page), ids[..2]);
    assert_eq!(page["next"], json!(ids[1]));
    let rest = open(&ctx, &[("limit", "2"), ("after", &ids[1])]).unwrap();
    assert_eq!(listed(&rest), ids[2..]);
    assert_eq!(
        open(&ctx, &[("limit", "51")]).unwrap_err().to_string(),
        "invalid: limit must be an integer from 1 to 50"
    );
    // The first auction's round (15) comes; the others' (17) has not.
    run_round(&mut ctx, 15);
    let left = listed(&open(&ctx, &[]).unwrap());
    assert_eq!(left.len(), 2);
    assert!(!left.contains(&first));
    assert_eq!(
        ctx.view(&Auction, &Query::new()).unwrap(),
        json!({"game": "auction", "max_deposit": "100000", "default_seats": 2,
               "max_seats": 12, "default_seal_blocks": 20})
    );
    let e = ctx
        .view(&Auction, &Query::from([("id".into(), "ffff".into())]))
        .unwrap_err();
    assert_eq!(e.to_string(), "not found: auction ffff");
    matches_schema(&ctx);
}

#[test]
fn stale_calls_are_refused() {
    let (mut ctx, id) = auction("500");
    let a = record(&ctx, &id);
    let opening = |payload: String, id: u64| ScheduledCall {
        id,
        payload: payload.into_bytes(),
        sealed: Some(Unsealed::Void),
    };
    for call in [
        opening(seat_payload(&id, 0), a.seats[1].call),
        opening(seat_payload(&id, 2), a.seats[0].call),
        opening(format!("{id}/x"), a.seats[0].call),
        opening("0000000000000000/0".into(), a.seats[0].call),
    ] {
        let e = Auction.scheduled(&mut ctx, &call).unwrap_err();
        assert_eq!(e.to_string(), "invalid: stale opening");
    }
    let closing = ScheduledCall {
        id: a.seats[0].call,
        payload: id.clone().into_bytes(),
        sealed: None,
    };
    let e = Auction.scheduled(&mut ctx, &closing).unwrap_err();
    assert_eq!(e.to_string(), "invalid: stale close");
    run_round(&mut ctx, 15);
    // Once closed, its own calls are stale too.
    let closing = ScheduledCall {
        id: a.close_call,
        ..closing
    };
    let e = Auction.scheduled(&mut ctx, &closing).unwrap_err();
    assert_eq!(e.to_string(), "invalid: stale close");
    let e = Auction
        .scheduled(&mut ctx, &opening(seat_payload(&id, 0), a.seats[0].call))
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid: stale opening");
}

/// The chain's charges (`runtime/vm/src/gas.rs`): `SCHEDULE_BASE`, `SEAL_OPEN_BASE`; a new
/// chain's `fuel_apply` (`runtime/chain/src/genesis/params.rs`).
const SCHEDULE_BASE: u64 = 20_000;
const SEAL_OPEN_BASE: u64 = 2_000_000;
const FUEL_APPLY: u64 = 10_000_000;

#[test]
fn a_create_and_an_add_seats_fit_in_fuel_apply() {
    let seat = SCHEDULE_BASE + SEAL_OPEN_BASE + OPEN_FUEL;
    let close = SCHEDULE_BASE + CLOSE_FUEL;
    // Half a million left for the op's own work (a few tens of thousands).
    assert!(MAX_CREATE_SEATS * seat + close + 500_000 <= FUEL_APPLY);
    assert!(MAX_ADD_SEATS * seat + 500_000 <= FUEL_APPLY);
    // One more seat would not fit.
    assert!((MAX_CREATE_SEATS + 1) * seat + close > FUEL_APPLY);
    assert!((MAX_ADD_SEATS + 1) * seat + 100_000 > FUEL_APPLY);
}

#[test]
fn plaintexts_carry_a_big_endian_bid() {
    let p = plaintext(0x0102);
    assert_eq!(&p[..8], &[0, 0, 0, 0, 0, 0, 1, 2]);
    assert_eq!(valid_bid(&p, Amount(0), Amount(258)), Some(Amount(258)));
    assert_eq!(valid_bid(&p, Amount(0), Amount(257)), None);
    assert_eq!(valid_bid(&p, Amount(259), Amount(300)), None);
    assert_eq!(valid_bid(&plaintext(0), Amount(0), Amount(300)), None);
}
