//! The m,n,k game's schema (`docs/modules.md`, "Schema"): its ops, events and views as the
//! crate's top documentation lists them, embedded in `mnk.wasm` as `gamechain.schema`.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "mnk";
    ops {
        "create" "Opens a game on a rows x cols board, k in a row wins; the creator plays x." {
            rows: u32 "1 to 19",
            cols: u32 "1 to 19",
            k: u32 "1 to the larger of rows and cols",
            stake: amount [optional] "each player's stake in GOLD base units, default 0, at most 100000",
            opponent: address [optional nullable] "the only address that may join; null or absent for anyone",
        },
        "join" "Joins an open game as o, paying the same stake." { id: hex "the game id" },
        "move" "Marks a cell, 0-indexed from the top-left." {
            id: hex "the game id",
            row: u32 "0 to rows - 1",
            col: u32 "0 to cols - 1",
        },
        "resign" "Concedes: the other player wins." { id: hex "the game id" },
        "cancel" "The creator cancels an open game; the stake goes back." { id: hex "the game id" },
        "claim_timeout" "Wins a game whose other player has not moved for 150 blocks." {
            id: hex "the game id",
        },
    }
    events {
        "mnk.created" "A game was opened." {
            id: hex, x: address "the creator", stake: amount, opponent: address [nullable],
            rows: u32, cols: u32, k: u32,
        },
        "mnk.joined" "A second player joined." { id: hex, o: address "the joiner" },
        "mnk.moved" "A mark was placed and logged." {
            id: hex,
            by: address "the mover",
            row: u32,
            col: u32,
            board: string "rows x cols characters after the move, row by row: . empty, x, o",
            turn: enum("x", "o") "who moves next",
            seq: u32 "the move's log record",
            hash: hex "the record's SHA-256",
        },
        "mnk.resigned" "A player resigned (logged)." {
            id: hex, by: address "the resigner", seq: u32, hash: hex,
        },
        "mnk.finished" "A game ended (line, draw, resign, timeout or cancel); its escrow is paid out." {
            id: hex,
            result: enum("x_won", "o_won", "draw", "cancelled"),
            winner: address [nullable],
            reason: enum("line", "draw", "resign", "timeout", "cancelled"),
            payout: amount "what the winner received, or what each player got back",
        },
    }
    views {
        "game" "One game, every field present (null when unset)." { id: hex } => object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, rows: u32, cols: u32, k: u32, board: string, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("line", "draw", "resign", "timeout", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, moves: u32,
            last_move: object { row: u32, col: u32 } [nullable],
            log_len: u32, log_head: hex "SHA-256 of the last log record",
        },
        "log" "A game's hash-chained log, at most 100 records in seq order." {
            log: hex "the game id",
            after: string [optional] "a record seq: only later records",
        } => object {
            id: hex,
            head: hex "the game's log_head",
            entries: array(object {
                event: object {
                    game: hex, seq: u32, prevHash: string "hex, empty for the start",
                    player: enum("X", "O"), action: enum("start", "move", "resign"),
                    status: enum("in_progress", "win", "draw"),
                    move: object { row: u32, col: u32 } [optional],
                    protocol: string [optional],
                    rules: object { rows: u32, cols: u32, winLength: u32 } [optional],
                },
                hash: hex,
            }),
        },
        "open" "The games waiting for any opponent: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            open: string "any value",
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, rows: u32, cols: u32, k: u32, board: string, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("line", "draw", "resign", "timeout", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, moves: u32,
            last_move: object { row: u32, col: u32 } [nullable],
            log_len: u32, log_head: hex,
        }), next: hex [optional] },
        "player" "The games an address created or joined: one page of at most 50 in game-id order, sorted by creation height; next, when present, is the after of the next page." {
            player: address,
            after: hex [optional] "start after this game id (a previous page's next)",
            limit: string [optional] "games scanned per page, 1 to 50 (default 50)",
        } => object { games: array(object {
            id: hex, x: address, o: address [nullable], opponent: address [nullable],
            stake: amount, rows: u32, cols: u32, k: u32, board: string, turn: enum("x", "o"),
            status: enum("open", "playing", "finished", "cancelled"),
            winner: address [nullable],
            result: enum("x_won", "o_won", "draw", "cancelled") [nullable],
            reason: enum("line", "draw", "resign", "timeout", "cancelled") [nullable],
            created_height: u64, last_move_height: u64, moves: u32,
            last_move: object { row: u32, col: u32 } [nullable],
            log_len: u32, log_head: hex,
        }), next: hex [optional] },
        "info" "The module's constants." {} => object {
            game: string, timeout_blocks: u64, max_stake: amount, max_side: u32,
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
