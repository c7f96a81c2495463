//! Which rules code a player agrees to play (docs/channels.md, "Rules that trap when their
//! author loses"). Rules that trap, or run out of fuel, on a position their author loses make
//! every op carrying the winning move fail, so the winner loses by forfeit, and a game pinned to
//! that code cannot be rescued. So `join` and `offer` play, by themselves, only code that a
//! **genesis** module of the chain runs (`GET /v1/modules` lists it with `"owner": "system"`):
//! immutable, built from the repository, reviewed once for everyone. Any other code is refused
//! before anything is sent, unless the player named that exact hash (`--rules-code HASH`).
//! Code is genesis code by its hash, whatever module id (if any) the offer named.

use gamechain_client::ModuleInfo;

/// The owner `GET /v1/modules` gives every genesis module.
pub const GENESIS_OWNER: &str = "system";

/// What is being refused: joining an offer (its id) or making an offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Playing<'a> {
    /// `join` of this offer.
    Join(&'a str),
    /// `offer`.
    Offer,
}

/// Whether `code_hash` is the code of a genesis module in `modules` (the node's module list).
pub fn is_genesis_code(code_hash: &str, modules: &[ModuleInfo]) -> bool {
    modules
        .iter()
        .any(|m| m.owner == GENESIS_OWNER && m.code_hash.eq_ignore_ascii_case(code_hash))
}

/// What `code_hash` is, for a person: the module that runs it (`named`, the module id the offer
/// names, first when it does) and its owner, or that no module runs it.
pub fn describe_code(code_hash: &str, modules: &[ModuleInfo], named: Option<&str>) -> String {
    let mut running: Vec<&ModuleInfo> = modules
        .iter()
        .filter(|m| m.code_hash.eq_ignore_ascii_case(code_hash))
        .collect();
    running.sort_by_key(|m| Some(m.id.as_str()) != named);
    match running.as_slice() {
        [] => "code no module runs now".to_string(),
        [m] => format!("the code module {} runs (owner {})", m.id, m.owner),
        [m, more @ ..] => format!(
            "the code module {} runs (owner {}) and {} other module(s)",
            m.id,
            m.owner,
            more.len()
        ),
    }
}

/// `None` when the player may play `code_hash`: it is genesis code, or `accepted` names it
/// (case aside). Otherwise the refusal, one line: what the code is, that it is no genesis
/// module's, why that matters, that nothing was sent, and how to opt in.
pub fn refusal(
    playing: Playing<'_>,
    code_hash: &str,
    modules: &[ModuleInfo],
    named: Option<&str>,
    accepted: Option<&str>,
) -> Option<String> {
    if is_genesis_code(code_hash, modules)
        || accepted.is_some_and(|a| a.eq_ignore_ascii_case(code_hash))
    {
        return None;
    }
    let what = describe_code(code_hash, modules, named);
    let head = match playing {
        Playing::Join(offer) => {
            format!("refusing to join offer {offer}: its rules code {code_hash} is {what}")
        }
        Playing::Offer => format!("refusing to offer rules code {code_hash}: it is {what}"),
    };
    Some(format!(
        "{head}, not the code of a genesis module: such rules may trap when their author loses, \
         and you would lose by forfeit; nothing was sent (read that code, then pass \
         --rules-code {code_hash} to play it anyway)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_runtime::chain::UpgradePolicy;

    fn module(id: &str, code: &str, owner: &str) -> ModuleInfo {
        ModuleInfo {
            id: id.into(),
            abi_version: 1,
            code_hash: code.into(),
            deployed_height: u64::from(owner != GENESIS_OWNER),
            owner: owner.into(),
            policy: if owner == GENESIS_OWNER {
                UpgradePolicy::Immutable
            } else {
                UpgradePolicy::Owner
            },
            pending_upgrade: None,
            upgraded_height: None,
        }
    }

    fn chain() -> Vec<ModuleInfo> {
        let (g, t) = ("aa".repeat(32), "bb".repeat(32));
        vec![
            module("copy", &g, "yBob"),
            module("rps_rules", &g, GENESIS_OWNER),
            module("trap", &t, "yMallory"),
            module("trap2", &t, "yEve"),
        ]
    }

    #[test]
    fn genesis_code_is_played_by_its_hash_whatever_module_names_it() {
        let g = "aa".repeat(32);
        let modules = chain();
        assert!(is_genesis_code(&g, &modules));
        assert!(is_genesis_code(&g.to_uppercase(), &modules));
        for named in [None, Some("rps_rules"), Some("copy"), Some("gone")] {
            assert_eq!(
                refusal(Playing::Join("01"), &g, &modules, named, None),
                None
            );
            assert_eq!(refusal(Playing::Offer, &g, &modules, named, None), None);
        }
        // A module owned by someone that runs no genesis code is not genesis.
        assert!(!is_genesis_code(&"bb".repeat(32), &modules));
        assert!(!is_genesis_code(&g, &modules[..1]));
    }

    #[test]
    fn other_code_is_refused_in_one_line_unless_its_exact_hash_is_named() {
        let (t, other) = ("bb".repeat(32), "cc".repeat(32));
        let modules = chain();
        let join = refusal(
            Playing::Join("0000000000000003"),
            &t,
            &modules,
            Some("trap2"),
            None,
        );
        assert_eq!(
            join.as_deref(),
            Some(
                format!(
                    "refusing to join offer 0000000000000003: its rules code {t} is the code \
                     module trap2 runs (owner yEve) and 1 other module(s), not the code of a \
                     genesis module: such rules may trap when their author loses, and you would \
                     lose by forfeit; nothing was sent (read that code, then pass --rules-code \
                     {t} to play it anyway)"
                )
                .as_str()
            )
        );
        let offer = refusal(Playing::Offer, &other, &modules, None, Some(&t)).unwrap();
        assert!(
            offer.starts_with(&format!(
                "refusing to offer rules code {other}: it is code no module runs now, not the \
                 code of a genesis module"
            )),
            "{offer}"
        );
        assert!(!offer.contains('\n'));
        assert_eq!(
            refusal(Playing::Offer, &t, &modules, None, Some(&t.to_uppercase())),
            None
        );
        assert_eq!(
            refusal(Playing::Join("01"), &t, &modules, None, Some(&t)),
            None
        );
        assert!(refusal(Playing::Join("01"), &t, &[], None, None).is_some());
    }
}
