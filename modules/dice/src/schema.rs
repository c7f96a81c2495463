//! The dice duel's schema (`docs/modules.md`, "Schema"): its ops, events and views as the crate's
//! top documentation lists them, embedded in `dice.wasm` as `gamechain.schema`.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "dice";
    ops {
        "create" "Opens a duel; the creator plays x." {
            stake: amount [optional] "each player's stake in GOLD base units, default 0, at most 100000",
            opponent: address [optional nullable] "the only address that may join; null or absent for anyone",
        },
        "join" "Joins an open duel as o, paying the same stake; the chain rolls in the next block." {
            id: hex "the game id",
        },
        "cancel" "The creator cancels an open duel; the stake goes back." { id: hex "the game id" },
        "claim_refund" "Refunds both stakes of a duel whose roll has not run 150 blocks after it was due." {
            id: hex "the game id",
        },
    }
    events {
        "dice.created" "A duel was opened." {
            id: hex, x: address "the creator", stake: amount, opponent: address [nullable],
        },
        "dice.joined" "A second player joined; the roll is scheduled." { id: hex, o: address "the joiner" },
        "dice.roll_scheduled" "The chain will roll at this height." {
            id: hex, call: u64 "the scheduled call's id", height: u64 "the block that rolls",
        },
        "dice.rolled" "The chain rolled two dice for each player from the block's beacon." {
            id: hex,
            x_dice: array(u32) "x's two dice, 1 to 6",
            o_dice: array(u32) "o's two dice, 1 to 6",
            x_total: u32,
            o_total: u32,
        },
        "dice.finished" "A duel ended (roll, refund or cancel); its escrow is paid out." {
            id: hex,
            result: enum("x_won", "o_won", "draw", "cancelled"),
            winner: address [nullable],
            reason: enum("roll", "refund", "cancelled"),
            payout: amount "what the winner received, or what each player got back",
        },
    }
    views {
        "game" "One duel, every field present (null when unset)." { id: hex } => object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("roll", "refund", "cancelled") [nullable],
            created_height: u64, last_move_height: u64,
            roll_call: u64 [nullable], roll_height: u64 [nullable],
            x_dice: array(u32), o_dice: array(u32),
        },
        "open" "The duels waiting for any opponent: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            open: string "any value",
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("roll", "refund", "cancelled") [nullable],
            created_height: u64, last_move_height: u64,
            roll_call: u64 [nullable], roll_height: u64 [nullable],
            x_dice: array(u32), o_dice: array(u32),
        }), next: hex [optional] },
        "player" "The duels an address created or joined: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            player: address,
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("roll", "refund", "cancelled") [nullable],
            created_height: u64, last_move_height: u64,
            roll_call: u64 [nullable], roll_height: u64 [nullable],
            x_dice: array(u32), o_dice: array(u32),
        }), next: hex [optional] },
        "info" "The module's constants." {} => object {
            game: string, max_stake: amount, roll_fuel: u64, refund_after_blocks: u64,
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_parses() {
        let schema = gamechain_sdk::schema::Schema::parse(super::SCHEMA).unwrap();
        assert_eq!(schema.module, crate::ID);
    }
}
