//! The sealed-bid auction's schema (`docs/modules.md`, "Schema"): its ops, events and views as
//! the crate's top documentation lists them, embedded in `auction.wasm` as `gamechain.schema`.

gamechain_sdk::schema! {
    /// The module's schema, compact JSON (format version 1).
    pub const SCHEMA = "auction";
    ops {
        "create" "Puts a lot up; fixes the round and reserves its seats and closing call." {
            lot: string "what is sold, 1 to 64 characters",
            deposit: amount "what every bidder escrows in GOLD base units, 1 to 100000: also the highest bid taken",
            reserve: amount [optional] "the lowest bid taken, at most the deposit (default 0)",
            seats: u64 [optional] "sealed seats reserved, 1 to 3 (default 2)",
            seal_blocks: u64 [optional] "blocks from the create to the round that opens every bid, 2 to 600 (default 20)",
        },
        "add_seats" "Reserves more seats in the auction's round (anyone, before the round, at most 12 in all)." {
            id: hex "the auction id",
            n: u64 "seats to add, 1 to 4",
        },
        "bid" "Escrows the deposit, takes the first free seat and hands in a bid sealed to the round (tag: the auction id)." {
            id: hex "the auction id",
            sealed: hex "the 224-byte envelope, 448 lowercase hex characters",
        },
    }
    events {
        "auction.created" "An auction was put up." {
            id: hex, seller: address, lot: string, deposit: amount, reserve: amount,
            seats: u64, round: u64 "the height whose beacon opens the bids",
            calls: array(u64) "each seat's sealed call", close_call: u64,
        },
        "auction.seats_added" "More seats were reserved." {
            id: hex, seats: u64 "the auction's seats now",
            calls: array(u64) "the new seats' sealed calls",
        },
        "auction.bid" "A bidder took a seat with a sealed bid (never the amount)." {
            id: hex, seat: u64, bidder: address,
        },
        "auction.opened" "The chain opened a seat in the round's block." {
            id: hex, seat: u64, bidder: address [nullable],
            bid: amount [nullable] "the valid bid; null when void or empty",
        },
        "auction.finished" "The auction closed; every deposit is paid out." {
            id: hex, winner: address [nullable], price: amount [nullable],
        },
    }
    views {
        "auction" "One auction, every field present (null when unset)." { id: hex } => object {
            id: hex, seller: address, lot: string, deposit: amount, reserve: amount,
            status: enum("open", "closed"), created_height: u64, seal_blocks: u64,
            round: u64, close_call: u64,
            seats: array(object {
                call: u64, bidder: address [nullable], sealed: bool, opened: bool,
                bid: amount [nullable],
            }),
            winner: address [nullable], price: amount [nullable],
        },
        "open" "The auctions whose round has not come: one page of at most 50 in id order; next, when present, is the after of the next page." {
            open: string "any value",
            after: hex [optional] "start after this auction id (a previous page's next)",
            limit: string [optional] "auctions per page, 1 to 50 (default 50)",
        } => object { auctions: array(object {
            id: hex, seller: address, lot: string, deposit: amount, reserve: amount,
            status: enum("open", "closed"), created_height: u64, seal_blocks: u64,
            round: u64, close_call: u64,
            seats: array(object {
                call: u64, bidder: address [nullable], sealed: bool, opened: bool,
                bid: amount [nullable],
            }),
            winner: address [nullable], price: amount [nullable],
        }), next: hex [optional] },
        "info" "The module's constants." {} => object {
            game: string, max_deposit: amount, default_seats: u64, max_seats: u64,
            default_seal_blocks: u64,
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
