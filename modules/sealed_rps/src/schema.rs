//! Sealed rock-paper-scissors' schema (`docs/modules.md`, "Schema"): its ops, events and views as
//! the crate's top documentation lists them, embedded in `sealed_rps.wasm` as `gamechain.schema`.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "sealed_rps";
    ops {
        "create" "Opens a game; the creator plays x." {
            stake: amount [optional] "each player's stake in GOLD base units, default 0, at most 100000",
            opponent: address [optional nullable] "the only address that may join; null or absent for anyone",
            seal_blocks: u64 [optional] "blocks from the join to the round that opens both moves, 2 to 600 (default 20)",
        },
        "join" "Joins an open game as o, paying the same stake; fixes the round and reserves both seats." {
            id: hex "the game id",
        },
        "move" "Hands in the sender's move sealed to the game's round (tag <id>/<x|o>)." {
            id: hex "the game id",
            sealed: hex "the 224-byte envelope, 448 lowercase hex characters",
        },
        "cancel" "The creator cancels an open game; the stake goes back." { id: hex "the game id" },
    }
    events {
        "sealed_rps.created" "A game was opened." {
            id: hex, x: address "the creator", stake: amount, opponent: address [nullable],
            seal_blocks: u64,
        },
        "sealed_rps.joined" "A second player joined." { id: hex, o: address "the joiner" },
        "sealed_rps.round" "The round that opens both moves, and each seat's sealed call." {
            id: hex, round: u64 "the height whose beacon opens the moves",
            x_call: u64, o_call: u64,
        },
        "sealed_rps.sealed" "A player handed in a sealed move (never the move itself)." {
            id: hex, seat: enum("x", "o"),
        },
        "sealed_rps.opened" "The chain opened a seat's sealed move in the round's block." {
            id: hex, seat: enum("x", "o"), move: enum("rock", "paper", "scissors", "void"),
        },
        "sealed_rps.revealed" "Both moves, as the round opened them." {
            id: hex, x_move: enum("rock", "paper", "scissors", "void"),
            o_move: enum("rock", "paper", "scissors", "void"),
        },
        "sealed_rps.finished" "A game ended; its escrow is paid out." {
            id: hex,
            result: enum("x_won", "o_won", "draw", "cancelled"),
            winner: address [nullable],
            reason: enum("reveal", "void", "cancelled"),
            payout: amount "what the winner received, or what each player got back",
        },
    }
    views {
        "game" "One game, every field present (null when unset)." { id: hex } => object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("reveal", "void", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, seal_blocks: u64,
            round: u64 [nullable], x_call: u64 [nullable], o_call: u64 [nullable],
            settle_call: u64 [nullable], x_sealed: bool, o_sealed: bool,
            x_move: enum("rock", "paper", "scissors", "void") [nullable],
            o_move: enum("rock", "paper", "scissors", "void") [nullable],
        },
        "open" "The games waiting for any opponent: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            open: string "any value",
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("reveal", "void", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, seal_blocks: u64,
            round: u64 [nullable], x_call: u64 [nullable], o_call: u64 [nullable],
            settle_call: u64 [nullable], x_sealed: bool, o_sealed: bool,
            x_move: enum("rock", "paper", "scissors", "void") [nullable],
            o_move: enum("rock", "paper", "scissors", "void") [nullable],
        }), next: hex [optional] },
        "player" "The games an address created or joined: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            player: address,
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("reveal", "void", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, seal_blocks: u64,
            round: u64 [nullable], x_call: u64 [nullable], o_call: u64 [nullable],
            settle_call: u64 [nullable], x_sealed: bool, o_sealed: bool,
            x_move: enum("rock", "paper", "scissors", "void") [nullable],
            o_move: enum("rock", "paper", "scissors", "void") [nullable],
        }), next: hex [optional] },
        "info" "The module's constants." {} => object {
            game: string, max_stake: amount, default_seal_blocks: u64,
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
