//! The channel's schema (`docs/modules.md`, "Schema"; the guide is `docs/channels.md`): its ops,
//! events and views as `lib.rs` reads and writes them, embedded in `channel.wasm` as
//! `gamechain.schema`. Ids are the offer's 16 hex digits (a game has its offer's id); in ops,
//! states, move data and code hashes are hex of either case (declared `string`: the channel
//! decodes them), in events and views always lowercase (`hex`); signatures are base64 Divi
//! signed messages; times are block time in milliseconds. `tests/tests/channels.rs` checks
//! every op it sends that succeeds, its events and every view answer against this schema.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "channel";
    ops {
        "offer" "Opens an offer: a stake in escrow, the rules by module id or code hash, a dispute window." {
            stake: amount "GOLD base units; 0 for an unstaked game",
            window_ms: u64 "the dispute window, 300000 (5 minutes) to 259200000 (3 days)",
            rules: string [optional nullable] "the rules module's id (its code is pinned now)",
            rules_code: string [optional nullable] "the rules' code hash, 64 hex digits (either case)",
            guard: object { module: string, entry: string } [optional nullable] "a pure entry point that must answer true to a join",
            signer: address [optional nullable] "the key that signs the creator's moves; default the creator",
        },
        "join" "Takes an open offer, paying the same stake; the game opens." {
            offer: hex "the offer id",
            signer: address [optional nullable] "the key that signs the joiner's moves; default the joiner",
        },
        "cancel" "The creator cancels an open offer; the stake goes back." { offer: hex "the offer id" },
        "settle" "Settles from a history of signed moves that ends the game." {
            game: hex,
            from_checkpoint: bool [optional] "start from the co-signed checkpoint, default false",
            moves: array(object { n: u64, data: string "hex, either case", sig: string }) [optional] "at most 64 signed moves",
        },
        "settle_cooperative" "Settles on a final state both signers signed." {
            game: hex, state: string "hex (either case), at most 4096 bytes", valid_until_ms: u64,
            sigs: array(string) "seat 0's then seat 1's signature",
        },
        "checkpoint" "Records a state both signers signed after a number of moves." {
            game: hex, moves: u64, state: string "hex (either case), at most 4096 bytes",
            sigs: array(string) "seat 0's then seat 1's signature",
        },
        "challenge" "A player asks the seat due to move to answer within the window." {
            game: hex,
            from_checkpoint: bool [optional],
            moves: array(object { n: u64, data: string "hex, either case", sig: string }) [optional],
        },
        "respond" "Answers a challenge with the moves from the start." {
            game: hex, moves: array(object { n: u64, data: string "hex, either case", sig: string }) [optional],
        },
        "respond_from_checkpoint" "Answers a challenge with the moves from the checkpoint." {
            game: hex, moves: array(object { n: u64, data: string "hex, either case", sig: string }) [optional],
        },
        "claim_forfeit" "Ends a challenged game whose due seat did not answer in time." { game: hex },
        "prove_equivocation" "Two different moves signed by one player for the same position: that player loses." {
            game: hex,
            a: object { n: u64, data: string "hex, either case", sig: string },
            b: object { n: u64, data: string "hex, either case", sig: string },
            prev_a: string "the previous state hash a was signed over",
            prev_b: string "the same for b",
        },
        "withdraw" "Pays out a staked game whose result is final." { game: hex },
    }
    events {
        "offer_created" "An offer was opened." {
            offer: hex, creator: address, rules: string [nullable], rules_code: hex,
            stake: amount, window_ms: u64,
        },
        "offer_filled" "An offer was taken." { offer: hex, joiner: address },
        "offer_cancelled" "An offer was cancelled." { offer: hex },
        "game_opened" "A game opened from a taken offer." {
            game: hex, players: array(address) "seat 0, seat 1", signers: array(address),
            rules: string [nullable], rules_code: hex, tag: hex "the 32-byte game tag",
            stake: amount, window_ms: u64,
        },
        "game_checkpoint" "A co-signed checkpoint was recorded." {
            game: hex, moves: u64, state_hash: hex,
        },
        "game_challenged" "A seat must move before the deadline." {
            game: hex, due: address, move: u64, state_hash: hex, deadline_ms: u64,
        },
        "game_responded" "A challenge was answered." { game: hex, moves: u64 },
        "game_settled" "A result that stands now." {
            game: hex, winner: address [nullable] "null for a draw", how: string,
            final_at_ms: u64, state_hash: hex [nullable],
        },
        "game_concluding" "A result that stands after the window unless disproved." {
            game: hex, winner: address [nullable] "null for a draw", how: string,
            final_at_ms: u64, state_hash: hex [nullable],
        },
        "equivocation" "A player signed two moves for one position." {
            game: hex, player: address, move: u64,
        },
        "paid" "A staked game's escrow was paid out." { game: hex, winner: address [nullable] },
    }
    views {
        "offer" "One offer." { offer: hex } => object {
            id: hex, creator: address, signer: address, rules: string [nullable],
            rules_code: hex, stake: amount, window_ms: u64,
            guard: object { module: string, entry: string } [nullable],
            status: enum("open", "filled", "cancelled"),
        },
        "game" "One game, with whether its result is final at block time at_ms." {
            game: hex, at_ms: string [optional] "a block time in milliseconds",
        } => object {
            id: hex, rules: string [nullable], rules_code: hex, tag: hex, stake: amount,
            window_ms: u64, players: array(address), signers: array(address),
            status: enum("open", "challenged", "concluding", "settled"),
            checkpoint: object { moves: u64, state: hex } [nullable],
            challenge: object { due: u32 "a seat", moves: u64, state: hex, deadline_ms: u64 } [nullable],
            outcome: object {
                winner: u32 [nullable] "a seat, null for a draw", how: string, final_at_ms: u64,
                state_hash: hex [nullable],
            } [nullable],
            paid: bool,
            final: bool "whether the result stands at at_ms (without it: only settled)",
            final_state_hash: hex [nullable],
        },
        "player" "An address's unstaked results." { player: address } => object {
            player: address, wins: u64, losses: u64, draws: u64,
        },
        "domain" "The signing domain: the chain and this module." {} => object {
            chain: string, module: string, min_window_ms: u64, max_window_ms: u64,
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_parses() {
        let schema = gamechain_sdk::schema::Schema::parse(super::SCHEMA).unwrap();
        assert_eq!(schema.module, "channel");
    }
}
