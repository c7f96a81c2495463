//! The canonical texts players sign (docs/channels.md, "Signed moves"), defined in
//! `gamechain-channel-protocol` (`modules/channel/protocol`) so that clients build them with
//! the same functions and a client and the chain cannot disagree: a move, a final agreement
//! (cooperative settlement or draw offer) and a checkpoint, and the text whose SHA-256 is a
//! game's tag. The test below pins them: they are this module's consensus rules.

pub use gamechain_channel_protocol::message::{state_hash, Domain};

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn a_move_text_is_fixed() {
        let d = Domain {
            chain: "ab".into(),
            module: "channel".into(),
        };
        assert_eq!(
            d.move_message("0000000000000001", 3, "cd", "yAlice", &[4]),
            "gamechain channel move v1\nchain: ab\nmodule: channel\ngame: 0000000000000001\n\
             move: 3\nprev: cd\nmover: yAlice\ndata: 04"
        );
        assert_eq!(
            d.final_message("g", "ef", 9),
            "gamechain channel final v2\nchain: ab\nmodule: channel\ngame: g\nstate: ef\nvalid_until_ms: 9"
        );
        assert_eq!(
            d.game_tag_text("0000000000000001"),
            "gamechain channel game v1\nchain: ab\nmodule: channel\ngame: 0000000000000001"
        );
        assert_eq!(
            d.game_tag("0000000000000001").to_vec(),
            Sha256::digest(d.game_tag_text("0000000000000001")).to_vec()
        );
        assert_ne!(
            d.game_tag("0000000000000001"),
            d.game_tag("0000000000000002")
        );
        assert_eq!(
            state_hash(&[]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
