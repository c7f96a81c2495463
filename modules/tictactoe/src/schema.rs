//! Tic-tac-toe's schema (`docs/modules.md`, "Schema"): its ops, events and views as the crate's
//! top documentation lists them, embedded in `tictactoe.wasm` as `gamechain.schema`.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "tictactoe";
    ops {
        "create" "Opens a game; the creator plays x and moves first." {
            stake: amount [optional] "each player's stake in GOLD base units, default 0, at most 100000",
            opponent: address [optional nullable] "the only address that may join; null or absent for anyone",
        },
        "join" "Joins an open game as o, paying the same stake." { id: hex "the game id" },
        "move" "Marks a cell." {
            id: hex "the game id",
            cell: u32 "0 (top-left) to 8 (bottom-right)",
        },
        "cancel" "The creator cancels an open game; the stake goes back." { id: hex "the game id" },
        "claim_timeout" "Wins a game whose other player has not moved for 150 blocks." {
            id: hex "the game id",
        },
    }
    events {
        "tictactoe.created" "A game was opened." {
            id: hex, x: address "the creator", stake: amount, opponent: address [nullable],
        },
        "tictactoe.joined" "A second player joined." { id: hex, o: address "the joiner" },
        "tictactoe.moved" "A mark was placed." {
            id: hex,
            by: address "the mover",
            cell: u32,
            board: string "nine characters after the move: . empty, x, o",
            turn: enum("x", "o") "who moves next",
        },
        "tictactoe.finished" "A game ended (line, draw, timeout or cancel); its escrow is paid out." {
            id: hex,
            result: enum("x_won", "o_won", "draw", "cancelled"),
            winner: address [nullable],
            reason: enum("line", "draw", "timeout", "cancelled"),
            payout: amount "what the winner received, or what each player got back",
        },
    }
    views {
        "game" "One game, every field present (null when unset)." { id: hex } => object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, board: string, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("line", "draw", "timeout", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, moves: u32,
        },
        "open" "The games waiting for any opponent: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            open: string "any value",
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, board: string, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("line", "draw", "timeout", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, moves: u32,
        }), next: hex [optional] },
        "player" "The games an address created or joined: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            player: address,
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, board: string, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("line", "draw", "timeout", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, moves: u32,
        }), next: hex [optional] },
        "info" "The module's constants." {} => object {
            game: string, timeout_blocks: u64, max_stake: amount,
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
